import { ApiObject, App, GroupVersionKind, ImplicitTokenResolver, Lazy, LazyResolver, NumberStringUnionResolver } from 'cdk8s';
import { compiled, Compiled, convertMap, convertStruct, Kind } from './api-json';
import { ownerOf } from './unique-objects';
import { readBackAsNumber } from './yaml-scalars';

/**
 * The API JSON of one of the library's objects, as cdk8s and cdk8s-plus-28 would write it
 * (`KubeX.toJson()`: cdk8s resolves every value of the props, sanitizes them, and cdk8s-plus
 * converts the typed result), in one walk instead of three. cdk8s's `resolve` looks up the app and
 * allocates a key path and a context for every value; on a StatefulSet's pod template that is most
 * of the synth time outside YAML writing.
 *
 * The walk does only what the default resolvers would do to plain data (a Quantity or IntOrString
 * becomes its value). Anything else takes cdk8s's own path, so its result and errors are exactly
 * cdk8s's: an app with other resolvers, a `Lazy`, a value with a `resolve()` method (a token), an
 * object that is not plain JSON data, a `__proto__` key, the props cdk8s keeps in a field this
 * walk cannot find, props with a `resolve()` method of their own, and any error met on the way
 * (cdk8s then throws it with the object's path). Returns `undefined` then; tests compare both
 * paths on every object.
 */
export function synthesizeFast(obj: ApiObject, propsStruct: string, gvk?: GroupVersionKind): Record<string, unknown> | undefined {
  const props = (obj as unknown as { props?: Record<string, unknown> }).props;
  if (props === undefined || props === null || !defaultResolvers(obj)) return undefined;
  // cdk8s resolves the props as a whole first: a `resolve` method there makes them a token.
  if (typeof props.resolve === 'function') return undefined;
  const sort = !process.env.CDK8S_DISABLE_SORT; // read per object, as cdk8s's ApiObject.toJson does
  const c = compiled(propsStruct);
  try {
    // The props first: a value that needs cdk8s's own path is found before the metadata's
    // resolution runs (it may run user code, a Lazy label), so that never runs twice.
    const body = fuseStruct(props, c, sort, 'metadata');
    const metadata = fuse(metadataJson(obj.metadata), compiled('ObjectMeta'), sort);
    // The kind's class writes `{ ...GVK, ...converted }`: apiVersion and kind first.
    const out: Record<string, unknown> = gvk ? { apiVersion: gvk.apiVersion, kind: gvk.kind } : {};
    for (const api of c.api) {
      const v = api === 'metadata' ? metadata : body[api];
      if (v !== undefined) out[api] = v;
    }
    return out;
  } catch (e) {
    if (e instanceof ReadBackError) throw new Error(`${ownerOf(obj)}: ${obj.kind}/${obj.name} ${e.message} (got ${JSON.stringify(e.value)})`);
    // FALLBACK, or an error of the walk (a getter that throws, a cycle): cdk8s's own path then
    // gives its result, or its error with the object's path in it.
    return undefined;
  }
}

/** Thrown inside the walk when a value needs cdk8s's own resolution. */
const FALLBACK = Symbol('needs cdk8s resolve');

/** The resolvers every `new App()` has, as their own classes (not subclasses), and no others. */
function defaultResolvers(obj: ApiObject): boolean {
  // The root, as App.of finds it (the construct without a scope), in one look-up.
  const r = (obj.node.root as App).resolvers;
  return Array.isArray(r) && r.length === 3
    && Object.getPrototypeOf(r[0]) === LazyResolver.prototype
    && Object.getPrototypeOf(r[1]) === ImplicitTokenResolver.prototype
    && Object.getPrototypeOf(r[2]) === NumberStringUnionResolver.prototype;
}

/**
 * What cdk8s's resolvers do to a value before looking inside it: a number-or-string union (a
 * Quantity, an IntOrString) becomes `{ value }`. A Lazy or a token leaves the walk.
 */
function head(value: any): any {
  for (;;) {
    // Strings, numbers and booleans are never a Lazy, a token or a union: most values of a manifest.
    if (value === null || value === undefined || (typeof value !== 'object' && typeof value !== 'function')) return value;
    if (value instanceof Lazy || typeof value.resolve === 'function') throw FALLBACK;
    if (value.constructor !== Object) {
      const t = typeof value.value;
      if (t === 'number' || t === 'string') {
        value = { value: value.value };
        continue;
      }
    }
    return value;
  }
}

/**
 * `sanitizeValue(resolve(value))`: resolved, null and undefined left out, keys sorted. With
 * `dropEmpty`, empty arrays and objects are left out too (cdk8s sanitizes metadata that way).
 */
function plain(value: any, sort: boolean, dropEmpty = false): any {
  value = head(value);
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'object') return typeof value === 'string' ? scalar(value) : value;
  if (Array.isArray(value)) {
    if (dropEmpty && value.length === 0) return undefined;
    // push, not new Array(n): a packed array, as `.map` makes, which the YAML writer walks fastest.
    const out = [];
    for (let i = 0; i < value.length; i++) out.push(plain(value[i], sort, dropEmpty));
    return out;
  }
  // cdk8s would leave it unresolved and then refuse it ("can't render non-simple object").
  if (value.constructor !== Object) throw FALLBACK;
  const keys = Object.keys(value);
  if (sort) sortKeys(keys);
  const out: any = {};
  let any = false;
  for (const k of keys) {
    if (k === '__proto__') throw FALLBACK;
    const v = plain(value[k], sort, dropEmpty);
    if (v !== null && v !== undefined) {
      out[scalar(k)] = v;
      any = true;
    }
  }
  return dropEmpty && !any ? undefined : out;
}

/** A string as written, unless kubectl would read it back as a number (see yaml-scalars.ts). */
function scalar(s: string): string {
  const n = readBackAsNumber(s);
  if (n !== undefined) throw new ReadBackError(s, n);
  return s;
}

/** A string value or key kubectl would read back as a number: reported, never written. */
class ReadBackError extends Error {
  constructor(readonly value: string, readonly number: number) {
    super(`holds the string ${JSON.stringify(value)}, which cdk8s writes unquoted (YAML 1.1) and kubectl reads back as the number ${number}: the API server then refuses it in a string field, and in a port name or a map key the number silently replaces it; spell the value differently`);
  }
}

/** The fields cdk8s's `ApiObjectMetadataDefinition` keeps (private there; read here, checked below). */
interface MetadataFields {
  readonly name?: unknown;
  readonly namespace?: unknown;
  readonly labels?: unknown;
  readonly annotations?: unknown;
  readonly finalizers?: unknown;
  readonly ownerReferences?: unknown;
  readonly _additionalAttributes?: Record<string, unknown>;
}

/**
 * `ApiObjectMetadataDefinition.toJson()` for plain data: the same object resolved and sanitized
 * with empty arrays and objects left out and keys always sorted (cdk8s sorts metadata even with
 * CDK8S_DISABLE_SORT). cdk8s's resolve was a third of the library's synth time outside YAML. A
 * metadata object of another shape (another cdk8s release) takes cdk8s's own `toJson`.
 */
function metadataJson(md: ApiObject['metadata']): unknown {
  const m = md as unknown as MetadataFields;
  const extra = m._additionalAttributes;
  if (extra === null || typeof extra !== 'object' || !('labels' in m) || !('annotations' in m) || !('finalizers' in m) || !('ownerReferences' in m)) {
    return md.toJson();
  }
  // What cdk8s resolves is `{ ...extra, name, namespace, annotations, finalizers, ownerReferences,
  // labels }`; its keys are read here without the copy (extra is in dictionary mode after cdk8s's
  // `delete`, so spreading it cost more than the rest of the metadata).
  const keys = Object.keys(extra);
  for (const k of METADATA_FIELDS) if (!Object.prototype.hasOwnProperty.call(extra, k)) keys.push(k);
  sortKeys(keys);
  const out: any = {};
  let any = false;
  for (const k of keys) {
    if (k === '__proto__') throw FALLBACK;
    const v = plain(METADATA_FIELD_SET.has(k) ? (m as unknown as Record<string, unknown>)[k] : extra[k], true, true);
    if (v !== null && v !== undefined) {
      out[k] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

const METADATA_FIELDS = ['name', 'namespace', 'annotations', 'finalizers', 'ownerReferences', 'labels'];
const METADATA_FIELD_SET = new Set(METADATA_FIELDS);


/**
 * `keys.sort()`, in place: the same order (UTF-16 code units, which `<` compares), by insertion for
 * the few keys of a manifest's objects, where the built-in sort's set-up was most of its cost.
 */
function sortKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i];
    let j = i - 1;
    while (j >= 0 && keys[j] > k) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

/** `convertStruct(plain(raw))` without building the intermediate copy of the struct's spine. */
function fuse(raw: any, c: Compiled, sort: boolean): any {
  const v = head(raw);
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) return convertStruct(plain(v, sort), c);
  return fuseStruct(v, c, sort);
}

/** `fuse` of a resolved object, leaving out the field `skip` (the metadata, which is done apart). */
function fuseStruct(v: any, c: Compiled, sort: boolean, skip?: string): any {
  if (v.constructor !== Object) throw FALLBACK;
  let slots: unknown[] | undefined;
  // for-in over own keys: Object.keys' order, without an array per object.
  for (const key in v) {
    if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
    if (key === '__proto__') throw FALLBACK;
    if (key === skip) continue;
    const i = c.index.get(key);
    if (i === undefined) {
      // Not a field of the struct: dropped, but cdk8s resolves it first (and may refuse it).
      plain(v[key], sort);
      continue;
    }
    const f = field(v[key], c.kind[i], c.inner[i], sort);
    if (f !== undefined) (slots ??= [])[i] = f;
  }
  const out: any = {};
  if (slots) for (let i = 0; i < slots.length; i++) if (slots[i] !== undefined) out[c.api[i]] = slots[i];
  return out;
}

/** One field, as cdk8s-plus-28's converter treats its resolved, sanitized value. */
function field(raw: any, kind: Kind, inner: Compiled | undefined, sort: boolean): any {
  switch (kind) {
    case Kind.AsIs: return plain(raw, sort);
    case Kind.Value: return plain(raw, sort)?.value;
    case Kind.Struct: return fuse(raw, inner!, sort);
    case Kind.ArrayOfStruct: {
      const a = head(raw);
      if (a === null || a === undefined) return undefined;
      if (!Array.isArray(a)) throw FALLBACK; // the converter's `.map` would throw its own error
      const out = [];
      for (let i = 0; i < a.length; i++) out.push(fuse(a[i], inner!, sort));
      return out;
    }
    case Kind.Array: {
      const a = plain(raw, sort);
      if (a !== undefined && !Array.isArray(a)) throw FALLBACK;
      // The converter's copy (`.map(y => y)`): `plain` made this array, nothing else holds it.
      return a;
    }
    case Kind.Date: {
      // cdk8s refuses a Date ("can't render non-simple object"), and the converter a string.
      const d = head(raw);
      if (d === null || d === undefined) return undefined;
      throw FALLBACK;
    }
    default: return convertMap(plain(raw, sort), kind, inner);
  }
}
