// Values the API server cannot decode into a built-in kind's Go types: a bool or number in a
// string field (YAML 1.1 reads `yes`, `0644`, `1.10` so), and a string, bool or fraction in an
// integer field (`replicas: "3"`). The server fails the whole request on decode, before
// validation, and kubectl applies nothing from the file. Read against the vendored floor (1.32) API
// definitions; IntOrString and Quantity (oneOf string or number) take either.
import { definitionsOf, type Schema } from '../validation/strict-schema';
import { FLOOR_API } from '../validation/kube-versions';

/** A value of the wrong JSON type for its field. */
export interface DecodeError {
  readonly path: string;
  readonly value: unknown;
  /** The type the field decodes into: string, integer, number or boolean. */
  readonly expected: string;
}

let byGvk: Map<string, string> | undefined;
const RESOLVED = new Map<string, Schema>();
/** A schema with its `$ref`s followed, each reference resolved once per process. */
function resolved(schema: Schema): Schema {
  if (!schema.$ref) return schema;
  let s = RESOLVED.get(schema.$ref);
  if (!s) {
    const defs = definitionsOf(FLOOR_API);
    s = schema;
    while (s.$ref) s = defs[s.$ref.slice('#/definitions/'.length)] ?? {};
    RESOLVED.set(schema.$ref, s);
  }
  return s;
}
function definitionOf(apiVersion: string, kind: string): string | undefined {
  if (!byGvk) {
    byGvk = new Map();
    for (const [name, def] of Object.entries(definitionsOf(FLOOR_API)))
      for (const g of def['x-kubernetes-group-version-kind'] ?? []) {
        const key = `${g.group ? `${g.group}/` : ''}${g.version}/${g.kind}`;
        // The concrete type, not the generic meta.v1 ones (DeleteOptions, WatchEvent...).
        if (!byGvk.has(key) || !name.startsWith('io.k8s.apimachinery')) byGvk.set(key, name);
      }
  }
  return byGvk.get(`${apiVersion}/${kind}`);
}

const wrongType = (expected: string, v: unknown): boolean => {
  switch (expected) {
    case 'string':
      return typeof v === 'number' || typeof v === 'boolean';
    case 'integer':
      return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && !Number.isInteger(v));
    case 'number':
      return typeof v === 'string' || typeof v === 'boolean';
    case 'boolean':
      return typeof v === 'string' || typeof v === 'number';
    default:
      return false;
  }
};

/** The first value in `obj` that does not decode into its field's type, if any. */
export function firstDecodeError(obj: { apiVersion: string; kind: string }): DecodeError | undefined {
  const name = definitionOf(obj.apiVersion, obj.kind);
  if (!name) return undefined;
  let found: DecodeError | undefined;
  // The path is written out only for the value found: most objects have none.
  const keys: Array<string | number> = [];
  const pathOf = () => {
    let at = '';
    for (const k of keys) at = typeof k === 'number' ? `${at}[${k}]` : at ? `${at}.${k}` : k;
    return at;
  };
  const into = (k: string | number, v: unknown, sub: Schema): void => {
    keys.push(k);
    walk(v, sub);
    keys.pop();
  };
  const walk = (value: unknown, schema: Schema): void => {
    if (found || value === null || value === undefined) return;
    const s = resolved(schema);
    if (s.oneOf) return;
    const type = s.type ?? (s.properties ? 'object' : undefined);
    if (type === undefined) return;
    if (wrongType(type, value)) {
      found = { path: pathOf(), value, expected: type };
      return;
    }
    if (type === 'array' && s.items && Array.isArray(value)) value.forEach((x, i) => into(i, x, s.items!));
    else if (type === 'object' && typeof value === 'object' && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      if (s.properties) {
        for (const k of Object.keys(o)) if (s.properties[k]) into(k, o[k], s.properties[k]);
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        for (const k of Object.keys(o)) into(k, o[k], s.additionalProperties);
      }
    }
  };
  walk(obj, { $ref: `#/definitions/${name}` });
  return found;
}
