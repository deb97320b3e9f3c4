import { ApiObject, GroupVersionKind } from 'cdk8s';
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
  if (value === undefined) return undefined;
  const fields = K8S_JSON_SHAPES[struct];
  if (!fields) throw new Error(`no API JSON shape for ${struct}; add its root to scripts/gen-k8s-json-shapes.js`);
  // Anything but an object takes cdk8s-plus's own converter, so even odd input behaves as there.
  if (value === null || typeof value !== 'object') return (k8s as any)[`toJson_${struct}`](value);
  const out: any = {};
  for (const [api, typed, shape] of fields) {
    const v = convert(value[typed], shape);
    if (v !== undefined) out[api] = v;
  }
  return out;
}

function convert(v: any, shape: Shape): any {
  if (shape === 0) return v;
  if (typeof shape === 'string') {
    if (shape === 'v') return v?.value;
    if (shape === 'd') return v?.toISOString();
    return toApiJson(v, shape);
  }
  const inner = shape[1];
  if (shape[0] === 'a') return inner === undefined ? v?.map((y: any) => y) : v?.map((y: any) => toApiJson(y, inner));
  if (v === undefined) return undefined;
  const out: any = {};
  for (const [key, x] of Object.entries(v as object)) {
    if (x === undefined) continue;
    const converted = inner === undefined ? x : inner === 'v' ? x?.value : inner === 'a' ? x?.map((y: any) => y) : toApiJson(x, inner);
    // As in the converters' `{ ...r, [key]: value }`: present even when the converted value is
    // undefined, and an own key even when it is "__proto__".
    if (key === '__proto__') Object.defineProperty(out, key, { value: converted, enumerable: true, writable: true, configurable: true });
    else out[key] = converted;
  }
  return out;
}

/** A `k8s.Kube*` class of cdk8s-plus-28, with its GVK and the name of its props' struct. */
interface KubeClass<T extends ApiObject> {
  new (...args: any[]): T;
  readonly GVK: GroupVersionKind;
}

/**
 * The same class, synthesizing its typed props through `toApiJson`: the same JSON, faster. With a
 * JsonPatch escape hatch it synthesizes exactly as the original, which patches before converting.
 */
export function withApiJson<C extends KubeClass<ApiObject>>(Base: C, props: string): C {
  if (!K8S_JSON_SHAPES[props]) throw new Error(`no API JSON shape for ${props}; add it to scripts/gen-k8s-json-shapes.js`);
  const Fast = class extends Base {
    toJson(): any {
      if (patchesOf(this).length > 0) return super.toJson();
      return { ...Base.GVK, ...toApiJson(ApiObject.prototype.toJson.call(this), props) };
    }
  };
  // Errors and the API reference name the class as cdk8s-plus does.
  Object.defineProperty(Fast, 'name', { value: Base.name });
  return Fast;
}

/** The JsonPatch escape hatches added to an object (cdk8s keeps them private). */
export function patchesOf(obj: ApiObject): unknown[] {
  return (obj as unknown as { patches: unknown[] }).patches;
}
