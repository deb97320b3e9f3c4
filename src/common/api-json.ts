import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { K8S_JSON_SHAPES, Shape } from './k8s-json-shapes';

/**
 * Converts resolved typed props (`k8s.KubeStatefulSetProps` and what they hold) to API JSON with
 * exactly the result of cdk8s-plus-28's `toJson_<struct>`: the same fields in the same order, the
 * same renames (`clusterIp` → `clusterIP`), quantities unwrapped, undefined fields left out.
 * Those converters rebuild the object once per field (a spread per field), a fifth of synth time
 * for a StatefulSet's pod template; this is one pass over a table derived from them
 * (scripts/gen-k8s-json-shapes.js; a test keeps the table and the results equal to theirs).
 */
export function toApiJson(value: any, struct: string): any {
  return convertStruct(value, compiled(struct));
}

/** How a field converts; the codes of `Shape` in k8s-json-shapes.ts, resolved once per struct. */
export const enum Kind { AsIs, Value, Date, Struct, Array, ArrayOfStruct, Map, MapOfValue, MapOfArray, MapOfStruct }

/** A struct's table, ready for converting: typed name → field index, and per field its API name and kind. */
export interface Compiled {
  readonly name: string;
  readonly index: Map<string, number>;
  readonly api: string[];
  readonly kind: Kind[];
  readonly inner: Array<Compiled | undefined>;
}

const COMPILED = new Map<string, Compiled>();

export function compiled(struct: string): Compiled {
  let c = COMPILED.get(struct);
  if (c) return c;
  const fields = K8S_JSON_SHAPES[struct];
  if (!fields) throw new Error(`no API JSON shape for ${struct}; add its root to scripts/gen-k8s-json-shapes.js`);
  c = { name: struct, index: new Map(), api: [], kind: [], inner: [] };
  COMPILED.set(struct, c); // before the fields, so that recursive structs (JSONSchemaProps) end
  for (const [api, typed, shape] of fields) {
    const [kind, inner] = kindOf(shape);
    c.index.set(typed, c.api.length);
    c.api.push(api);
    c.kind.push(kind);
    c.inner.push(inner === undefined ? undefined : compiled(inner));
  }
  return c;
}

function kindOf(shape: Shape): [Kind, string?] {
  if (shape === 0) return [Kind.AsIs];
  if (shape === 'v') return [Kind.Value];
  if (shape === 'd') return [Kind.Date];
  if (typeof shape === 'string') return [Kind.Struct, shape];
  const inner = shape[1];
  if (shape[0] === 'a') return inner === undefined ? [Kind.Array] : [Kind.ArrayOfStruct, inner];
  if (inner === undefined) return [Kind.Map];
  if (inner === 'v') return [Kind.MapOfValue];
  if (inner === 'a') return [Kind.MapOfArray];
  return [Kind.MapOfStruct, inner];
}

export function convertStruct(value: any, c: Compiled): any {
  if (value === undefined) return undefined;
  // Anything but an object takes cdk8s-plus's own converter, so even odd input behaves as there.
  if (value === null || typeof value !== 'object') return (k8s as any)[`toJson_${c.name}`](value);
  // Only the fields the value has (a handful of a PodSpec's forty), placed in the table's order.
  let slots: unknown[] | undefined;
  for (const key in value) {
    const i = c.index.get(key);
    if (i === undefined) continue;
    const v = convertField(value[key], c.kind[i], c.inner[i]);
    if (v !== undefined) (slots ??= [])[i] = v;
  }
  const out: any = {};
  if (slots) for (let i = 0; i < slots.length; i++) if (slots[i] !== undefined) out[c.api[i]] = slots[i];
  return out;
}

function convertField(v: any, kind: Kind, inner: Compiled | undefined): any {
  switch (kind) {
    case Kind.AsIs: return v;
    case Kind.Value: return v?.value;
    case Kind.Date: return v?.toISOString();
    case Kind.Struct: return convertStruct(v, inner!);
    case Kind.Array: return v?.map((y: any) => y);
    case Kind.ArrayOfStruct: return v?.map((y: any) => convertStruct(y, inner!));
    default: return convertMap(v, kind, inner);
  }
}

export function convertMap(v: any, kind: Kind, inner: Compiled | undefined): any {
  if (v === undefined) return undefined;
  const out: any = {};
  const keys = Object.keys(v as object);
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k];
    const x = v[key];
    if (x === undefined) continue;
    const converted = kind === Kind.Map ? x : kind === Kind.MapOfValue ? x?.value : kind === Kind.MapOfArray ? x?.map((y: any) => y) : convertStruct(x, inner!);
    // As in the converters' `{ ...r, [key]: value }`: present even when the converted value is
    // undefined, and an own key even when it is "__proto__".
    if (key === '__proto__') Object.defineProperty(out, key, { value: converted, enumerable: true, writable: true, configurable: true });
    else out[key] = converted;
  }
  return out;
}
