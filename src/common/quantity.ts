import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';

const UNITS: ReadonlyArray<[string, number]> = [
  ['Ti', 1024 ** 3],
  ['Gi', 1024 ** 2],
  ['Mi', 1024],
  ['Ki', 1],
];

/** A Size as a canonical Kubernetes quantity in the largest whole binary unit, e.g. `100Gi`. */
export function sizeQuantityString(size: Size): string {
  const kib = size.toKibibytes();
  for (const [unit, factor] of UNITS) {
    if (kib % factor === 0) return `${kib / factor}${unit}`;
  }
  return `${Math.ceil(kib)}Ki`;
}

/**
 * A typed quantity. Plain strings or numbers in a JsonPatch are silently synthesized as null by
 * cdk8s (its toJson reads `.value`), so every quantity goes through `k8s.Quantity`.
 */
export function sizeQuantity(size: Size): k8s.Quantity {
  return k8s.Quantity.fromString(sizeQuantityString(size));
}
