import * as fs from 'fs';
import * as path from 'path';
import { apisFor, FLOOR_API, KubeVersion, NEWEST_API } from './kube-versions';

/**
 * A strict validator for Kubernetes objects against the official OpenAPI definitions, acting like
 * an API server with `fieldValidation=Strict`: unknown fields, wrong types and missing required fields
 * are errors; a null is what the server's decoder makes of it, an absent field (held against a real
 * server in test/cluster/strict-schema-differential.test.ts). The definitions are vendored in ./schemas
 * (scripts/vendor-k8s-schemas.js).
 */
export type Schema = {
  $ref?: string;
  type?: string;
  format?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  oneOf?: Schema[];
  'x-kubernetes-group-version-kind'?: Array<{ group: string; version: string; kind: string }>;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
};

export type { KubeVersion };

const cache = new Map<KubeVersion, { defs: Record<string, Schema>; byGvk: Map<string, string> }>();

function load(version: KubeVersion) {
  let entry = cache.get(version);
  if (!entry) {
    const file = path.join(__dirname, 'schemas', `k8s-v${version}.json`);
    const defs: Record<string, Schema> = JSON.parse(fs.readFileSync(file, 'utf8')).definitions;
    const byGvk = new Map<string, string>();
    for (const [name, def] of Object.entries(defs)) {
      for (const gvk of def['x-kubernetes-group-version-kind'] ?? []) {
        // Prefer the concrete type over the generic meta.v1 ones (DeleteOptions, WatchEvent...).
        const key = gvkKey(gvk.group, gvk.version, gvk.kind);
        if (!byGvk.has(key) || !name.startsWith('io.k8s.apimachinery')) byGvk.set(key, name);
      }
    }
    entry = { defs, byGvk };
    cache.set(version, entry);
  }
  return entry;
}

/** The API definitions of a Kubernetes version, by name (`io.k8s.api.core.v1.Container`). */
export function definitionsOf(version: KubeVersion): Readonly<Record<string, Schema>> {
  return load(version).defs;
}

function gvkKey(group: string, version: string, kind: string) {
  return `${group}/${version}/${kind}`;
}

/** The name of a built-in kind's definition in a version's API (`io.k8s.api.apps.v1.StatefulSet`), if it has one. */
export function definitionNameOf(version: KubeVersion, apiVersion: string, kind: string): string | undefined {
  const [group, ver] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return load(version).byGvk.get(gvkKey(group, ver, kind));
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * Kinds outside the core API that the library may emit or users commonly pair with it; their
 * schemas are not vendored, so they are checked only for metadata.
 */
const KNOWN_CUSTOM_KINDS = new Set([
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PodMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
  'keda.sh/v1alpha1/ScaledObject',
  'keda.sh/v1alpha1/TriggerAuthentication',
  'scheduling.x-k8s.io/v1alpha1/PodGroup',
  'scheduling.volcano.sh/v1beta1/PodGroup',
  'kueue.x-k8s.io/v1beta1/LocalQueue',
  'kueue.x-k8s.io/v1beta1/ClusterQueue',
  'k8s.cni.cncf.io/v1/NetworkAttachmentDefinition',
  // InferenceGateway's; their vendored CRDs check them in full (crd-schema.ts).
  'inference.networking.k8s.io/v1/InferencePool',
  'llm-d.ai/v1alpha2/InferenceObjective',
  'llm-d.ai/v1alpha2/InferenceModelRewrite',
  'gateway.networking.k8s.io/v1/HTTPRoute',
]);

/** Whether an apiVersion/kind is one this validator checks only for metadata. */
export function isKnownCustomKind(apiVersion: string, kind: string): boolean {
  return KNOWN_CUSTOM_KINDS.has(`${apiVersion}/${kind}`);
}

/** The Kubernetes versions whose API definitions ship with the library. */
export const KUBE_VERSIONS: readonly KubeVersion[] = [FLOOR_API, NEWEST_API];

/** Returns the list of errors for one object; empty when valid. */
export function strictErrors(obj: any, version: KubeVersion = FLOOR_API): string[] {
  const errors: string[] = [];
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return ['object: not a Kubernetes object'];
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return ['object: apiVersion and kind are required'];
  const [group, ver] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const who = `${kind}/${obj.metadata?.name ?? '?'}`;
  checkMetadata(obj.metadata, who, errors);
  if (KNOWN_CUSTOM_KINDS.has(gvkKey(group, ver, kind))) return errors;
  const { defs, byGvk } = load(version);
  const defName = byGvk.get(gvkKey(group, ver, kind));
  if (!defName) {
    const custom =
      group.includes('.') && !group.endsWith('.k8s.io')
        ? ' (a custom resource: its CRD schema is not known to this validator)'
        : '';
    return [...errors, `${who}: ${apiVersion} ${kind} does not exist in Kubernetes ${version}${custom}`];
  }
  walk(obj, { $ref: `#/definitions/${defName}` }, who, defs, errors);
  return errors;
}

/**
 * The fields of a built-in object whose schema type is string but whose value is a number or a
 * boolean: what YAML 1.1 makes of `on`, `no`, `1.10` or `0644` unquoted. The API server cannot
 * decode them ("cannot unmarshal number into ... of type string"), so kubectl's apply fails.
 * Custom resources and unknown kinds are not checked (their schema is not here).
 */
export function nonStringScalars(obj: any, version: KubeVersion = FLOOR_API): Array<{ path: string; value: unknown }> {
  const out: Array<{ path: string; value: unknown }> = [];
  if (obj === null || typeof obj !== 'object' || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string')
    return out;
  const defName = definitionNameOf(version, obj.apiVersion, obj.kind);
  if (defName) scalars(obj, { $ref: `#/definitions/${defName}` }, '', load(version).defs, out);
  return out;
}

function scalars(
  value: unknown,
  schema: Schema,
  at: string,
  defs: Record<string, Schema>,
  out: Array<{ path: string; value: unknown }>,
): void {
  if (value === null || value === undefined) return;
  const s = resolveRef(schema, defs);
  if (s.oneOf) return;
  const type = s.type ?? (s.properties ? 'object' : undefined);
  const join = (k: string) => (at ? `${at}.${k}` : k);
  if (type === 'string') {
    if (typeof value === 'number' || typeof value === 'boolean') out.push({ path: at, value });
  } else if (type === 'array' && s.items && Array.isArray(value)) {
    value.forEach((x, i) => scalars(x, s.items!, `${at}[${i}]`, defs, out));
  } else if (type === 'object' && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    if (s.properties) {
      for (const k of Object.keys(obj)) if (s.properties[k]) scalars(obj[k], s.properties[k], join(k), defs, out);
    } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      for (const k of Object.keys(obj)) scalars(obj[k], s.additionalProperties, join(k), defs, out);
    }
  }
}

function checkMetadata(meta: any, who: string, errors: string[]) {
  if (!meta || typeof meta.name !== 'string' || !DNS1123_SUBDOMAIN.test(meta.name) || meta.name.length > 253) {
    errors.push(`${who}: metadata.name must be a DNS-1123 subdomain`);
  }
  for (const [k, v] of Object.entries<any>(meta?.labels ?? {})) {
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
      errors.push(`${who}: label ${k}=${v} is not a valid label value`);
  }
}

/** The schema a `$ref` chain ends at. */
export function resolveRef(schema: Schema, defs: Readonly<Record<string, Schema>>): Schema {
  let s = schema;
  while (s.$ref) {
    const name = s.$ref.replace('#/definitions/', '');
    const next = defs[name];
    if (!next) throw new Error(`schema reference ${s.$ref} not found`);
    s = next;
  }
  return s;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const t = typeOf(value);
  return t === type || (type === 'number' && t === 'integer');
}

/**
 * apimachinery's quantity grammar (`k8s.io/apimachinery/pkg/api/resource`, `ParseQuantity`): the
 * API server refuses to decode a quantity string that does not match it.
 */
export const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$/;

const QUANTITY_SUFFIX: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * Whether a quantity (number or string) is a whole number: extended resources cannot be split (IsIntegerResourceName).
 */
export function isWholeQuantity(q: unknown): boolean {
  if (typeof q === 'number') return Number.isInteger(q);
  if (typeof q !== 'string' || !QUANTITY.test(q)) return false;
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(.*)$/.exec(q)!;
  const exp = /^[eE]([+-]?\d+)$/.exec(m[2]);
  const value = Number(m[1]) * (exp ? 10 ** Number(exp[1]) : QUANTITY_SUFFIX[m[2]]);
  return Math.abs(value - Math.round(value)) < 1e-9;
}
const QUANTITY_REF = '#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity';

function walk(value: unknown, schema: Schema, at: string, defs: Record<string, Schema>, errors: string[]): void {
  const s = resolveRef(schema, defs);
  if (value === null) {
    // The server's JSON decoder (encoding/json semantics) leaves a null's target at its zero value: the
    // field counts as absent, and a struct decoded from null lacks every required field.
    for (const req of s.required ?? []) errors.push(`${at}: missing required field "${req}"`);
    return;
  }
  if (
    schema.$ref === QUANTITY_REF &&
    ((typeof value === 'string' && !QUANTITY.test(value)) || (typeof value === 'number' && !Number.isFinite(value)))
  ) {
    errors.push(`${at}: ${JSON.stringify(value)} is not a Kubernetes quantity such as 1, "500m" or "16Gi"`);
    return;
  }
  if (s.oneOf) {
    if (!s.oneOf.some(alt => alt.type && matchesType(value, alt.type))) {
      errors.push(`${at}: expected ${s.oneOf.map(a => a.type).join(' or ')}, got ${typeOf(value)}`);
    }
    return;
  }
  const type = s.type ?? (s.properties ? 'object' : undefined);
  if (!type) return; // free-form (RawExtension, JSON)
  if (!matchesType(value, type)) {
    errors.push(`${at}: expected ${type}, got ${typeOf(value)} ${JSON.stringify(value)}`);
    return;
  }
  if (type === 'array' && s.items) {
    (value as unknown[]).forEach((item, i) => walk(item, s.items!, `${at}[${i}]`, defs, errors));
    return;
  }
  if (type !== 'object') return;
  const obj = value as Record<string, unknown>;
  if (s.properties) {
    for (const req of s.required ?? []) {
      if (obj[req] === undefined || obj[req] === null) errors.push(`${at}: missing required field "${req}"`);
    }
    for (const [key, child] of Object.entries(obj)) {
      const prop = s.properties[key];
      if (!prop) {
        errors.push(`${at}: unknown field "${key}"`);
        continue;
      }
      walk(child, prop, `${at}.${key}`, defs, errors);
    }
  } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    for (const [key, child] of Object.entries(obj)) walk(child, s.additionalProperties, `${at}.${key}`, defs, errors);
  }
}

/** Throws with every error when any object is invalid for any of the given versions. */
export function expectStrictlyValid(objects: any[], versions: readonly KubeVersion[] = KUBE_VERSIONS): void {
  const errors = objects.flatMap(o =>
    apisFor(o?.apiVersion, versions).flatMap(v => strictErrors(o, v).map(e => `[${v}] ${e}`)),
  );
  if (errors.length > 0) throw new Error(`strict validation failed:\n  ${errors.join('\n  ')}`);
}
