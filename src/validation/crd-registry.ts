import * as fs from 'fs';
import * as path from 'path';

/**
 * The CustomResourceDefinitions vendored in ./crds (scripts/vendor-crds.js), indexed by
 * group/version/kind. Only versions the CRD serves are indexed: an object of an unserved version is
 * refused by the API server, so it is not a kind this library can emit.
 */

/** A node of a CRD's structural OpenAPI v3 schema: the keywords the validator reads. */
export interface CrdSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  format?: string;
  description?: string;
  properties?: Record<string, CrdSchema>;
  additionalProperties?: CrdSchema | boolean;
  items?: CrdSchema;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  anyOf?: CrdSchema[];
  oneOf?: CrdSchema[];
  allOf?: CrdSchema[];
  not?: CrdSchema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: Array<{ rule: string; message?: string; messageExpression?: string }>;
}

/** Where a vendored CRD comes from, as crds/sources.json records it. */
export interface CrdSource {
  /** The vendored file, relative to crds/. */
  readonly file: string;
  /** The upstream repository, owner/name. */
  readonly repo: string;
  readonly tag: string;
  readonly commit: string;
  /** The file's path in the upstream repository. */
  readonly path: string;
  readonly vendored: string;
}

/** One served version of a vendored CRD. */
export interface VendoredKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly schema: CrdSchema;
  readonly source: CrdSource;
}

const CRDS = path.join(__dirname, 'crds');

let index: Map<string, VendoredKind> | undefined;

function key(apiVersion: string, kind: string): string {
  return `${apiVersion}/${kind}`;
}

function load(): Map<string, VendoredKind> {
  if (index) return index;
  const sources: CrdSource[] = JSON.parse(fs.readFileSync(path.join(CRDS, 'sources.json'), 'utf8'));
  const built = new Map<string, VendoredKind>();
  for (const source of sources) {
    const crd = JSON.parse(fs.readFileSync(path.join(CRDS, source.file), 'utf8'));
    const { group, names, scope, versions } = crd.spec;
    for (const v of versions) {
      if (!v.served) continue;
      const schema = v.schema?.openAPIV3Schema;
      if (!schema) throw new Error(`The vendored CRD ${source.file} has no openAPIV3Schema for ${v.name}.`);
      built.set(key(`${group}/${v.name}`, names.kind), {
        group,
        version: v.name,
        kind: names.kind,
        namespaced: scope === 'Namespaced',
        schema,
        source,
      });
    }
  }
  index = built;
  return built;
}

/** The served CRD version for an apiVersion and kind, or undefined when none is vendored. */
export function vendoredKind(apiVersion: string, kind: string): VendoredKind | undefined {
  return load().get(key(apiVersion, kind));
}

/** Whether a CRD serving this apiVersion and kind is vendored, so `crdErrors` can check the object. */
export function isVendoredKind(apiVersion: string, kind: string): boolean {
  return load().has(key(apiVersion, kind));
}

/** Every vendored served kind, for listings and for tests that cover them all. */
export function vendoredKinds(): VendoredKind[] {
  return [...load().values()];
}
