// Immutable fields of custom resources, read from their CRDs when the input carries them: a
// property whose `x-kubernetes-validations` has the transition rule `self == oldSelf` (the idiom
// JobSet, KEDA and most operators use; LeaderWorkerSet v0.10.0 has none) may not change once set. The server
// evaluates transition rules only when the old and the new object both have the value
// (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go).
import { GuardCheck, type FieldRule } from './rules';
import type { KubeObject } from './normalize';

const SELF_EQUALS_OLD_SELF = /^\s*\(?\s*(?:self\s*==\s*oldSelf|oldSelf\s*==\s*self)\s*\)?\s*$/;

export interface CelRule extends FieldRule {
  /** The schema type, which the server prints as the invalid value. */
  readonly type: string;
  /** The structural schema of the value at `path`, whose `default`s the server applies first. */
  readonly schema?: unknown;
}

const isMap = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);

/**
 * A value with its structural schema's defaults applied, as the server defaults a custom resource
 * on read and on write before validating (apiextensions-apiserver pkg/apiserver/schema/defaulting):
 * an absent value takes its `default` when its parent exists, and absent properties of objects
 * (and of list items) take theirs, recursively. @internal
 */
export function withDefaults(value: unknown, schema: any, parentExists: boolean): unknown {
  if (!isMap(schema)) return value;
  if (value === undefined) {
    if (!parentExists || schema.default === undefined) return undefined;
    value = JSON.parse(JSON.stringify(schema.default));
  }
  if (isMap(value) && isMap(schema.properties)) {
    const out: Record<string, unknown> = { ...value };
    for (const [k, child] of Object.entries(schema.properties)) {
      const v = withDefaults(out[k], child, true);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  if (Array.isArray(value) && isMap(schema.items)) return value.map(i => withDefaults(i, schema.items, true));
  return value;
}

/** The structural schema of the value at a dotted path of properties, or undefined. @internal */
export function schemaAt(root: unknown, path: string): unknown {
  let node: any = root;
  for (const k of path.split('.')) {
    node = isMap(node) && isMap(node.properties) ? node.properties[k] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** `self.a.b == oldSelf.a.b` on an object: the same rule, on a field below it. */
const FIELD_EQUALS_OLD_FIELD = /^\s*self\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*==\s*oldSelf\.\1\s*$/;

function walk(schema: any, path: string[], out: CelRule[]): void {
  const at = (node: any, fields: string[]) => fields.reduce((n, f) => n?.properties?.[f], node);
  if (!schema || typeof schema !== 'object') return;
  for (const v of schema['x-kubernetes-validations'] ?? []) {
    if (typeof v?.rule !== 'string') continue;
    const field = FIELD_EQUALS_OLD_FIELD.exec(v.rule)?.[1];
    if ((SELF_EQUALS_OLD_SELF.test(v.rule) && path.length > 0) || field) {
      // The server names the schema node the rule sits on, not the field the rule reads.
      const node = path.join('.');
      out.push({
        path: [...path, ...(field ? field.split('.') : [])].join('.'),
        ...(field ? { reportPath: node } : {}),
        check: GuardCheck.CEL_SELF_EQUALS_OLD_SELF,
        type: String(schema.type ?? 'object'),
        schema: field ? at(schema, field.split('.')) : schema,
        source:
          'x-kubernetes-validations transition rule in the CustomResourceDefinition (apiextensions-apiserver CEL validation)',
        message: `${node ? `${node}: ` : ''}Invalid value: "${schema.type ?? 'object'}": ${typeof v.message === 'string' && v.message ? v.message : `failed rule: ${v.rule}`}`,
      });
    }
  }
  for (const [k, child] of Object.entries(schema.properties ?? {})) walk(child, [...path, k], out);
}

/** `group/kind` → version → rules, from every CustomResourceDefinition in the input. */
export function celRules(objects: readonly KubeObject[]): Map<string, Map<string, CelRule[]>> {
  const out = new Map<string, Map<string, CelRule[]>>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition' || !String(o.apiVersion).startsWith('apiextensions.k8s.io/')) continue;
    const group = o.spec?.group;
    const kind = o.spec?.names?.kind;
    if (typeof group !== 'string' || typeof kind !== 'string') continue;
    const byVersion = new Map<string, CelRule[]>();
    for (const v of o.spec?.versions ?? []) {
      const rules: CelRule[] = [];
      walk(v?.schema?.openAPIV3Schema ?? o.spec?.validation?.openAPIV3Schema, [], rules);
      byVersion.set(String(v?.name), rules);
    }
    out.set(`${group}/${kind}`, byVersion);
  }
  return out;
}

/**
 * `group/kind` → version → the structural schema (openAPIV3Schema) of every CustomResourceDefinition
 * in the input: the server defaults a custom resource from it on read and on write (withDefaults).
 */
export function crdSchemas(objects: readonly KubeObject[]): Map<string, Map<string, unknown>> {
  const out = new Map<string, Map<string, unknown>>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition' || !String(o.apiVersion).startsWith('apiextensions.k8s.io/')) continue;
    const group = o.spec?.group;
    const kind = o.spec?.names?.kind;
    if (typeof group !== 'string' || typeof kind !== 'string') continue;
    const byVersion = new Map<string, unknown>();
    for (const v of o.spec?.versions ?? []) {
      const schema = v?.schema?.openAPIV3Schema ?? o.spec?.validation?.openAPIV3Schema;
      if (isMap(schema)) byVersion.set(String(v?.name), schema);
    }
    out.set(`${group}/${kind}`, byVersion);
  }
  return out;
}
