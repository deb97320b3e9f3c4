import { metadataErrors } from './crd-metadata';
import { CrdSchema, vendoredKind, vendoredKinds } from './crd-registry';

export { isVendoredKind, vendoredKinds } from './crd-registry';
export type { CrdSchema, CrdSource, VendoredKind } from './crd-registry';

/**
 * A strict validator for custom resources against the CRDs of pinned releases (./crds), acting
 * like an API server with `fieldValidation=Strict`: the CRD's structural schema decides which
 * fields exist (pruning would drop the others, so strict validation refuses them), and the
 * OpenAPI value validations (type, format, enum, pattern, bounds, lengths, counts, anyOf/oneOf/
 * allOf/not, list types) apply as the server applies them, each keyword to values of its type.
 *
 * Not evaluated: `x-kubernetes-validations` (CEL rules). They need a CEL engine with the
 * Kubernetes library (quantity, url, format...); approximating a few rules by hand would pass
 * objects the server refuses and look like coverage it is not, so none is evaluated;
 * `crdRulesNotEvaluated` lists those that apply to an object, so a test can show what is left to
 * the server. (Transition rules such as `self == oldSelf` need the old object as well: the guard
 * reads those from CRDs, src/guard/crd.ts.) Nor are the projects' admission webhooks checked,
 * except the name rules crd-metadata.ts records.
 *
 * Stricter than the server, on purpose: a null in a field that is not nullable is an error (the
 * server drops it silently, which hides the bug that wrote it), and an integer outside its
 * int32/int64 format is an error (the server stores it, the controller's Go types cannot read it).
 */

/**
 * What one walk collects, and whether it reports unknown fields (not inside anyOf alternatives).
 * `rules` collects the CEL rules of the schema nodes the object has a value at.
 */
interface Walk {
  readonly errors: string[];
  readonly strictFields: boolean;
  readonly rules?: string[];
}

/** Returns the errors of one custom resource, each naming the object and the path; empty when valid. */
export function crdErrors(obj: unknown): string[] {
  return validate(obj).errors;
}

/**
 * The CEL rules (`x-kubernetes-validations`) this validator does not evaluate but the server
 * would, for the fields the object sets: `JobSet/train: spec: <the rule's message>`.
 */
export function crdRulesNotEvaluated(obj: unknown): string[] {
  return validate(obj).rules;
}

function validate(obj: unknown): { errors: string[]; rules: string[] } {
  const rules: string[] = [];
  const errors = walkObject(obj, rules);
  return { errors, rules };
}

function walkObject(obj: unknown, rules: string[]): string[] {
  if (!isPlainObject(obj)) return ['The object is not a Kubernetes object (an object with apiVersion and kind).'];
  const { apiVersion, kind, metadata } = obj;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    return ['The object has no apiVersion or kind: both are required strings.'];
  }
  const name = isPlainObject(metadata) && typeof metadata.name === 'string' ? metadata.name : '?';
  const who = `${kind}/${name}`;
  const crd = vendoredKind(apiVersion, kind);
  if (!crd) return [`${who}: ${notVendored(apiVersion, kind)}`];
  const walk: Walk = { errors: metadataErrors(metadata, crd.group, kind, crd.namespaced), strictFields: true, rules };
  // The server validates ObjectMeta itself (crd-metadata.ts); a CRD may add constraints on the
  // name, which apply on top, so metadata is walked for values only.
  const root = crd.schema;
  const metaSchema = root.properties?.metadata;
  if (metaSchema?.properties && isPlainObject(metadata)) {
    check(metadata, metaSchema, 'metadata', { errors: walk.errors, strictFields: false });
  }
  const rest = Object.fromEntries(Object.entries(obj).filter(([k]) => k !== 'metadata'));
  check(rest, { ...root, required: root.required?.filter(r => r !== 'metadata') }, '', walk);
  rules.splice(0, rules.length, ...rules.map(r => `${who}: ${r}`));
  return walk.errors.map(e => `${who}: ${e}`);
}

/**
 * The errors of a value against one schema node, with unknown fields reported: for constructs that
 * check a fragment, and for tests of keywords the vendored CRDs do not use. `at` prefixes paths.
 */
export function schemaErrors(value: unknown, schema: CrdSchema, at = ''): string[] {
  const walk: Walk = { errors: [], strictFields: true };
  check(value, schema, at, walk);
  return walk.errors;
}

/** Throws, listing every error, when any object is not a valid custom resource of a vendored kind. */
export function expectCrdValid(objects: readonly unknown[]): void {
  const errors = objects.flatMap(o => crdErrors(o));
  if (errors.length > 0) throw new Error(`Custom resource validation failed:\n  ${errors.join('\n  ')}`);
}

function notVendored(apiVersion: string, kind: string): string {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const others = vendoredKinds().filter(k => k.group === group && k.kind === kind);
  if (others.length > 0) {
    const s = others[0].source;
    return (
      `${apiVersion} ${kind} is not served by the vendored CRD (${s.repo} ${s.tag} serves ` +
      `${others.map(k => `${k.group}/${k.version}`).join(', ')}).`
    );
  }
  return `no CRD serving ${apiVersion} ${kind} is vendored (src/validation/crds/README.md lists those that are).`;
}

function check(value: unknown, s: CrdSchema, at: string, walk: Walk): void {
  const { errors } = walk;
  if (value === null) {
    // The server drops a null field that is not nullable (PruneNonNullableNullsWithoutDefaults), so
    // a required one goes missing, and refuses a null list item; either way it is a writer's bug.
    if (!s.nullable) errors.push(`${name(at)} is null, which its schema does not allow (leave the field out instead)`);
    return;
  }
  if (!typeErrors(value, s, at, errors)) return;
  for (const v of s['x-kubernetes-validations'] ?? []) {
    walk.rules?.push(`${name(at)}: ${(v.message ?? v.rule).replace(/\s+/g, ' ')}`);
  }
  if (s.enum && !s.enum.some(e => same(e, value))) {
    errors.push(`${name(at)} must be one of ${s.enum.map(e => JSON.stringify(e)).join(', ')} (got ${got(value)})`);
  }
  if (typeof value === 'string') checkString(value, s, at, errors);
  else if (typeof value === 'number') checkNumber(value, s, at, errors);
  else if (Array.isArray(value)) checkArray(value, s, at, walk);
  else if (isPlainObject(value)) checkObject(value, s, at, walk);
  checkAlternatives(value, s, at, walk);
}

/** Whether the value has the schema's type; records the error when not. */
function typeErrors(value: unknown, s: CrdSchema, at: string, errors: string[]): boolean {
  if (s['x-kubernetes-int-or-string']) {
    if (typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))) return true;
    errors.push(`${name(at)} must be an integer or a string (got ${got(value)})`);
    return false;
  }
  if (!s.type || hasType(value, s.type)) return true;
  errors.push(`${name(at)} must be ${ARTICLE[s.type]} ${s.type} (got ${got(value)})`);
  return false;
}

const ARTICLE: Record<NonNullable<CrdSchema['type']>, string> = {
  object: 'an',
  array: 'an',
  integer: 'an',
  string: 'a',
  number: 'a',
  boolean: 'a',
};

function hasType(value: unknown, type: NonNullable<CrdSchema['type']>): boolean {
  switch (type) {
    case 'object':
      return isPlainObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
  }
}

function checkString(value: string, s: CrdSchema, at: string, errors: string[]): void {
  // Go counts a string's length in runes (utf8.RuneCountInString), not UTF-16 units.
  const length = [...value].length;
  if (s.minLength !== undefined && length < s.minLength) {
    errors.push(`${name(at)} must be at least ${s.minLength} characters long (got ${got(value)})`);
  }
  if (s.maxLength !== undefined && length > s.maxLength) {
    errors.push(`${name(at)} must be at most ${s.maxLength} characters long (got ${length} characters)`);
  }
  if (s.pattern !== undefined && !goRegExp(s.pattern).test(value)) {
    errors.push(`${name(at)} must match the pattern ${s.pattern} (got ${got(value)})`);
  }
  const format = s.format === undefined ? undefined : STRING_FORMATS[s.format];
  if (format && !format.test(value)) errors.push(`${name(at)} must be ${format.says} (got ${got(value)})`);
}

/**
 * The string formats the vendored CRDs use, and a few common ones, as kube-openapi checks them.
 * Others (uri, hostname, cidr...) are not checked: none of the vendored CRDs uses them.
 */
const STRING_FORMATS: Record<string, { test: (v: string) => boolean; says: string }> = {
  'date-time': {
    test: v =>
      /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(v) && !isNaN(Date.parse(v)),
    says: 'an RFC 3339 date-time such as 2026-01-02T15:04:05Z',
  },
  date: { test: v => /^\d{4}-\d{2}-\d{2}$/.test(v) && !isNaN(Date.parse(v)), says: 'a date such as 2026-01-02' },
  byte: { test: v => /^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(v), says: 'base64 data' },
  uuid: {
    test: v => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v),
    says: 'a UUID',
  },
};

/** The integer formats, by the range the controllers' Go types can hold. */
const INTEGER_FORMATS: Record<string, { min: number; below: number; says: string }> = {
  int32: { min: -(2 ** 31), below: 2 ** 31, says: 'a 32-bit integer' },
  // 2 ** 63 - 1 is not a double (it rounds up to 2 ** 63), so the bound is exclusive.
  int64: { min: -(2 ** 63), below: 2 ** 63, says: 'a 64-bit integer' },
};

function checkNumber(value: number, s: CrdSchema, at: string, errors: string[]): void {
  if (s.minimum !== undefined && (s.exclusiveMinimum ? value <= s.minimum : value < s.minimum)) {
    errors.push(`${name(at)} must be ${s.exclusiveMinimum ? 'greater than' : 'at least'} ${s.minimum} (got ${value})`);
  }
  if (s.maximum !== undefined && (s.exclusiveMaximum ? value >= s.maximum : value > s.maximum)) {
    errors.push(`${name(at)} must be ${s.exclusiveMaximum ? 'less than' : 'at most'} ${s.maximum} (got ${value})`);
  }
  if (s.multipleOf !== undefined && !Number.isInteger(value / s.multipleOf)) {
    errors.push(`${name(at)} must be a multiple of ${s.multipleOf} (got ${value})`);
  }
  const format = s.format === undefined ? undefined : INTEGER_FORMATS[s.format];
  if (format && Number.isInteger(value) && (value < format.min || value >= format.below)) {
    errors.push(`${name(at)} must fit in ${format.says} (got ${value})`);
  }
}

function checkArray(value: unknown[], s: CrdSchema, at: string, walk: Walk): void {
  const { errors } = walk;
  if (s.minItems !== undefined && value.length < s.minItems) {
    errors.push(`${name(at)} must have at least ${plural(s.minItems, 'item')} (got ${value.length})`);
  }
  if (s.maxItems !== undefined && value.length > s.maxItems) {
    errors.push(`${name(at)} must have at most ${plural(s.maxItems, 'item')} (got ${value.length})`);
  }
  if (s.items) value.forEach((item, i) => check(item, s.items!, `${at}[${i}]`, walk));
  duplicateErrors(value, s, at, errors);
}

/**
 * The server refuses duplicates in a list of type set, two items with the same keys in a list of
 * type map (a missing key counts as its default), and any duplicate under uniqueItems.
 */
function duplicateErrors(value: unknown[], s: CrdSchema, at: string, errors: string[]): void {
  const listType = s['x-kubernetes-list-type'];
  const mapKeys = s['x-kubernetes-list-map-keys'] ?? [];
  if (listType !== 'set' && listType !== 'map' && !s.uniqueItems) return;
  const seen = new Map<string, number>();
  value.forEach((item, i) => {
    let id: string;
    if (listType === 'map') {
      if (!isPlainObject(item)) return;
      id = canonical(mapKeys.map(k => item[k] ?? s.items?.properties?.[k]?.default));
    } else {
      id = canonical(item);
    }
    const first = seen.get(id);
    if (first === undefined) {
      seen.set(id, i);
    } else if (listType === 'map') {
      const keys = mapKeys.map(k => `${k}=${got((item as Record<string, unknown>)[k])}`).join(', ');
      errors.push(`${at}[${i}] has the same key (${keys}) as ${at}[${first}]: ${name(at)} is a list of type map`);
    } else {
      errors.push(`${at}[${i}] duplicates ${at}[${first}] (${got(item)}): ${name(at)} must not hold an item twice`);
    }
  });
}

function checkObject(value: Record<string, unknown>, s: CrdSchema, at: string, walk: Walk): void {
  const { errors } = walk;
  const keys = Object.keys(value);
  if (s.minProperties !== undefined && keys.length < s.minProperties) {
    errors.push(`${name(at)} must have at least ${plural(s.minProperties, 'field')} (got ${keys.length})`);
  }
  if (s.maxProperties !== undefined && keys.length > s.maxProperties) {
    errors.push(`${name(at)} must have at most ${plural(s.maxProperties, 'field')} (got ${keys.length})`);
  }
  for (const req of s.required ?? []) {
    // The server applies defaults before it validates: a defaulted field is never missing.
    if (!(req in value) && s.properties?.[req]?.default === undefined) errors.push(`${join(at, req)} is required`);
  }
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  for (const key of keys) {
    const prop = s.properties?.[key];
    if (prop) {
      check(value[key], prop, join(at, key), walk);
    } else if (typeof s.additionalProperties === 'object') {
      check(value[key], s.additionalProperties, join(at, key), walk);
    } else if (
      walk.strictFields &&
      !preserve &&
      s.additionalProperties !== true &&
      !(embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata'))
    ) {
      errors.push(`${join(at, key)} is not a field of the schema (unknown field ${JSON.stringify(key)})`);
    }
  }
}

/**
 * anyOf, oneOf, allOf and not. In a structural schema their alternatives only add value
 * validations to fields the schema already declares (no types, except the int-or-string pair), so
 * alternatives are walked without reporting unknown fields.
 */
function checkAlternatives(value: unknown, s: CrdSchema, at: string, walk: Walk): void {
  const attempt = (alt: CrdSchema) => {
    const inner: Walk = { errors: [], strictFields: false };
    check(value, alt, at, inner);
    return inner.errors;
  };
  for (const alt of s.allOf ?? []) walk.errors.push(...attempt(alt));
  if (s.anyOf) {
    const tries = s.anyOf.map(attempt);
    if (!tries.some(t => t.length === 0)) {
      walk.errors.push(
        `${name(at)} must match at least one of the schema's anyOf alternatives ` +
          `(${tries.map(t => t.join('; ')).join(' | ')})`,
      );
    }
  }
  if (s.oneOf) {
    const tries = s.oneOf.map(attempt);
    const matches = tries.filter(t => t.length === 0).length;
    if (matches !== 1) {
      walk.errors.push(`${name(at)} must match exactly one of the schema's oneOf alternatives (matches ${matches})`);
    }
  }
  if (s.not && attempt(s.not).length === 0) {
    walk.errors.push(`${name(at)} must not match the schema's "not" alternative (got ${got(value)})`);
  }
}

const regexps = new Map<string, RegExp>();

/**
 * A CRD's pattern is a Go RE2 regexp, matched unanchored like JavaScript's test. The vendored
 * patterns use one RE2 feature JavaScript spells differently, a leading (?i) flag group; any other
 * flag group or POSIX class is refused rather than silently mistranslated.
 */
export function goRegExp(pattern: string): RegExp {
  let re = regexps.get(pattern);
  if (!re) {
    let source = pattern;
    let flags = 'u';
    const lead = /^(\^?)\(\?i\)/.exec(source);
    if (lead) {
      source = lead[1] + source.slice(lead[0].length);
      flags += 'i';
    }
    if (/\(\?[a-zA-Z-]+[):]/.test(source) || source.includes('[[:') || /\\[zAQE]/.test(source)) {
      throw new Error(`The pattern ${pattern} uses a Go regexp feature this validator does not translate.`);
    }
    re = new RegExp(source, flags);
    regexps.set(pattern, re);
  }
  return re;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** JSON with sorted keys: equal values give equal strings, for enum and duplicate checks. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map(k => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

function same(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/** A path step: `.key` for names, `["key"]` for map keys such as label names. */
function join(at: string, key: string): string {
  if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key)) return at ? `${at}.${key}` : key;
  return `${at}[${JSON.stringify(key)}]`;
}

/** The path as errors print it: the root object is "the object". */
function name(at: string): string {
  return at || 'the object';
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** A value as errors quote it, shortened when long. */
function got(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
