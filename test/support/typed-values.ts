import { K8S_JSON_SHAPES, Shape } from '../../src/common/k8s-json-shapes';

/** A deterministic pseudo-random source, so a failure reproduces. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** What a random typed value may hold where a plain value, or a Quantity or IntOrString, belongs. */
export interface Leaves {
  readonly leaf: (r: () => number) => unknown;
  readonly wrapped: (r: () => number) => unknown;
}

/** Values as resolved props hold them: JSON data and `{ value }` for unions. */
export const RESOLVED_LEAVES: Leaves = {
  leaf: r => [undefined, null, 0, 7, '', 's', true, false, '500m'][Math.floor(r() * 9)],
  wrapped: r => (r() < 0.8 ? { value: r() < 0.5 ? '16Gi' : 8080 } : RESOLVED_LEAVES.leaf(r)),
};

/**
 * A random typed value of a struct (following cdk8s-plus-28's field shapes), with map keys of every
 * awkward kind, fields the struct does not have, and the leaves given.
 */
export function randomValue(struct: string, r: () => number, leaves: Leaves = RESOLVED_LEAVES, depth = 0): any {
  const out: any = {};
  const keys = ['a', 'clusterIp', 'hostIPC', '10', '__proto__', 'z-b', 'nvidia.com/gpu'];
  const leaf = () => leaves.leaf(r);
  const value = (shape: Shape): any => {
    if (shape === 0) return r() < 0.2 ? { nested: leaf(), b: [leaf()] } : leaf();
    if (shape === 'v') return leaves.wrapped(r);
    if (shape === 'd') return r() < 0.5 ? undefined : new Date(1_700_000_000_000);
    if (typeof shape === 'string') return depth > 3 || r() < 0.3 ? undefined : randomValue(shape, r, leaves, depth + 1);
    if (r() < 0.25) return undefined;
    const inner = shape[1];
    if (shape[0] === 'a') return Array.from({ length: Math.floor(r() * 3) }, () => (inner === undefined ? leaf() : randomValue(inner, r, leaves, depth + 1)));
    const map: any = {};
    for (const k of keys.filter(() => r() < 0.4)) {
      const v = inner === undefined ? leaf() : inner === 'v' ? leaves.wrapped(r) : inner === 'a' ? [leaf(), leaf()] : randomValue(inner, r, leaves, depth + 1);
      Object.defineProperty(map, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return map;
  };
  for (const [, typed, shape] of K8S_JSON_SHAPES[struct]) {
    if (r() < 0.5) out[typed] = value(shape);
  }
  if (r() < 0.2) out.notAField = r() < 0.5 ? 'dropped' : leaves.leaf(r);
  return out;
}
