import camelCase from 'camelcase';
import { definitionsOf, Schema } from './strict-schema';
import { FLOOR_API } from './kube-versions';
import { Validator } from './validate';

/**
 * Checks a Kubernetes-typed value a user hands the library (a sidecar `k8s.Container`, a
 * `k8s.Volume`, an affinity, tolerations, spread constraints) against the struct cdk8s-plus-32
 * generated for it, so nothing is lost on the way to the YAML:
 *
 * - a key the struct does not have is refused with the closest known one (the converter drops it:
 *   `requiredDuringSchedulingIgnoredDuringExecutions` would leave the pods free to go anywhere);
 * - where a Quantity or IntOrString belongs, a plain string or number is refused (the converter
 *   reads its `.value` and writes `null`: `cpu: '100m'` became `cpu: null`);
 * - `null` is refused (cdk8s writes it, or drops the field);
 * - structs, lists and maps must be what they are.
 *
 * The structs are read from the Kubernetes 1.28 API definitions the library ships: cdk8s-plus-32's
 * types were generated from them by cdk8s's importer (json2jsii), whose field names are
 * `camelcase(apiName)`; a test holds every name against cdk8s-plus-32's converters.
 * Messages name the prop path: `pod.sidecars[0].resources.limits.cpu`.
 */
export function checkTyped(v: Validator, prop: string, value: unknown, struct: string): void {
  walkStruct(v, prop, value, `${CORE_V1}${struct}`);
}

const CORE_V1 = 'io.k8s.api.core.v1.';
const REF = '#/definitions/';
const UNIONS = new Set([
  'io.k8s.apimachinery.pkg.api.resource.Quantity',
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString',
]);

/** A struct's fields by their typed (cdk8s-plus) name, made once per struct. */
const FIELDS = new Map<string, ReadonlyMap<string, Schema>>();

/** The typed field names of an API definition, mapped to each field's schema. */
export function typedFields(definition: string): ReadonlyMap<string, Schema> {
  let fields = FIELDS.get(definition);
  if (!fields) {
    const def = definitionsOf(FLOOR_API)[definition];
    if (!def?.properties) throw new Error(`${definition} is not a struct of the Kubernetes 1.28 API`);
    const made = new Map<string, Schema>();
    for (const [api, schema] of Object.entries(def.properties)) made.set(typedName(api), schema);
    FIELDS.set(definition, (fields = made));
  }
  return fields;
}

/** The name cdk8s's importer gives an API field (json2jsii's `camelcase`, `/` as `_`). */
export function typedName(api: string): string {
  return camelCase(api.replace(/\//, '_'));
}

/** The definition a `$ref` names, without its prefix. */
function refName(schema: Schema): string | undefined {
  return schema.$ref?.startsWith(REF) ? schema.$ref.slice(REF.length) : undefined;
}

function walkStruct(v: Validator, prop: string, value: unknown, definition: string): void {
  v.plainObject(prop, value);
  const fields = typedFields(definition);
  const obj = value as Record<string, unknown>;
  v.knownProps(prop, obj, [...fields.keys()]);
  for (const key of Object.keys(obj)) {
    const x = obj[key];
    if (x === undefined) continue;
    const at = `${prop}.${key}`;
    if (x === null) v.fail(at, 'must not be null: leave it out instead', x);
    walkField(v, at, x, fields.get(key)!);
  }
}

function walkField(v: Validator, at: string, x: unknown, schema: Schema): void {
  const ref = refName(schema);
  if (ref !== undefined) {
    if (UNIONS.has(ref)) return union(v, at, x);
    if (definitionsOf(FLOOR_API)[ref]?.properties) return walkStruct(v, at, x, ref);
    return; // a date or free-form JSON: written as given
  }
  if (schema.type === 'array') {
    if (!Array.isArray(x)) v.fail(at, 'must be an array', x);
    const items = schema.items ?? {};
    (x as unknown[]).forEach((y, j) => item(v, `${at}[${j}]`, y, items));
    return;
  }
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object') {
    v.plainObject(at, x);
    for (const [key, y] of Object.entries(x as object)) {
      if (y === undefined) continue;
      const entry = `${at}.${key}`;
      if (y === null) v.fail(entry, 'must not be null: leave it out instead', y);
      item(v, entry, y, schema.additionalProperties);
    }
  }
}

/** A list item or map value: a struct, a union, a list, or a scalar. */
function item(v: Validator, at: string, y: unknown, schema: Schema): void {
  const ref = refName(schema);
  if (ref !== undefined && (UNIONS.has(ref) || definitionsOf(FLOOR_API)[ref]?.properties))
    return walkField(v, at, y, schema);
  if (schema.type === 'array') {
    if (!Array.isArray(y)) v.fail(at, 'must be an array', y);
    return;
  }
  if (y === null || typeof y === 'object') v.fail(at, 'must be a string, number or boolean', y);
}

/** A Quantity or IntOrString: the converter keeps only its `.value`. */
function union(v: Validator, at: string, x: unknown): void {
  const value = (x as { value?: unknown } | null)?.value;
  if (typeof x !== 'object' || x === null || (typeof value !== 'string' && typeof value !== 'number')) {
    v.fail(
      at,
      'must be made with k8s.Quantity.fromString()/fromNumber() or k8s.IntOrString.fromString()/fromNumber(): cdk8s-plus-32 writes a plain value here as null',
      x,
    );
  }
}
