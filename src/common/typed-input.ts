import { compiled, Compiled, Kind } from './api-json';
import { Validator } from './validate';

/**
 * Checks a Kubernetes-typed value a user hands the library (a sidecar `k8s.Container`, a
 * `k8s.Volume`, an affinity, tolerations, spread constraints) against the shape cdk8s-plus-28's
 * converters give it, so nothing is lost on the way to the YAML:
 *
 * - a key the struct does not have is refused with the closest known one (the converter drops it:
 *   `requiredDuringSchedulingIgnoredDuringExecutions` would leave the pods free to go anywhere);
 * - where a Quantity or IntOrString belongs, a plain string or number is refused (the converter
 *   reads its `.value` and writes `null`: `cpu: '100m'` became `cpu: null`);
 * - `null` is refused (cdk8s writes it, or drops the field);
 * - structs, lists and maps must be what they are.
 *
 * Messages name the prop path: `pod.sidecars[0].resources.limits.cpu`.
 */
export function checkTyped(v: Validator, prop: string, value: unknown, struct: string): void {
  walkStruct(v, prop, value, compiled(struct));
}

function walkStruct(v: Validator, prop: string, value: unknown, c: Compiled): void {
  v.plainObject(prop, value);
  const obj = value as Record<string, unknown>;
  v.knownProps(prop, obj, [...c.index.keys()]);
  for (const key of Object.keys(obj)) {
    const x = obj[key];
    if (x === undefined) continue;
    const at = `${prop}.${key}`;
    if (x === null) v.fail(at, 'must not be null: leave it out instead', x);
    const i = c.index.get(key)!;
    walkField(v, at, x, c.kind[i], c.inner[i]);
  }
}

function walkField(v: Validator, at: string, x: unknown, kind: Kind, inner: Compiled | undefined): void {
  switch (kind) {
    case Kind.Value: return union(v, at, x);
    case Kind.Struct: return walkStruct(v, at, x, inner!);
    case Kind.Array:
      if (!Array.isArray(x)) v.fail(at, 'must be an array', x);
      (x as unknown[]).forEach((y, j) => {
        if (y === null || typeof y === 'object') v.fail(`${at}[${j}]`, 'must be a string, number or boolean', y);
      });
      return;
    case Kind.ArrayOfStruct:
      if (!Array.isArray(x)) v.fail(at, 'must be an array', x);
      (x as unknown[]).forEach((y, j) => walkStruct(v, `${at}[${j}]`, y, inner!));
      return;
    case Kind.Map:
    case Kind.MapOfValue:
    case Kind.MapOfArray:
    case Kind.MapOfStruct:
      v.plainObject(at, x);
      for (const [key, y] of Object.entries(x as object)) {
        if (y === undefined) continue;
        const entry = `${at}.${key}`;
        if (y === null) v.fail(entry, 'must not be null: leave it out instead', y);
        if (kind === Kind.MapOfValue) union(v, entry, y);
        else if (kind === Kind.MapOfStruct) walkStruct(v, entry, y, inner!);
        else if (kind === Kind.MapOfArray && !Array.isArray(y)) v.fail(entry, 'must be an array', y);
        else if (kind === Kind.Map && typeof y === 'object') v.fail(entry, 'must be a string, number or boolean', y);
      }
      return;
    default:
      return; // as is (free-form JSON) or a Date: written as given
  }
}

/** A Quantity or IntOrString: the converter keeps only its `.value`. */
function union(v: Validator, at: string, x: unknown): void {
  const value = (x as { value?: unknown } | null)?.value;
  if (typeof x !== 'object' || x === null || (typeof value !== 'string' && typeof value !== 'number')) {
    v.fail(at, 'must be made with k8s.Quantity.fromString()/fromNumber() or k8s.IntOrString.fromString()/fromNumber(): cdk8s-plus-28 writes a plain value here as null', x);
  }
}
