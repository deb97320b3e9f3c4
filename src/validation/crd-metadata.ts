/**
 * The checks the API server makes of a custom resource's metadata. A CRD's schema says only
 * `metadata: {type: object}`: the server validates ObjectMeta itself (apimachinery's
 * ValidateObjectMetaAccessor), and with fieldValidation=Strict refuses fields ObjectMeta lacks.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** apimachinery's TotalAnnotationSizeLimitB: keys and values together. */
const ANNOTATIONS_MAX_BYTES = 256 * 1024;

/** ObjectMeta's fields (meta/v1): anything else under metadata is an unknown field. */
const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

/** A rule a kind's name must follow, and the sentence that says it. */
interface NameRule {
  readonly test: (name: string) => boolean;
  readonly says: string;
}

const SUBDOMAIN_RULE: NameRule = {
  test: n => n.length <= 253 && DNS1123_SUBDOMAIN.test(n),
  says: 'a DNS-1123 subdomain (lower-case alphanumerics, "-" and ".", at most 253 characters)',
};

const DNS1035_RULE: NameRule = {
  test: n => n.length <= 63 && DNS1035_LABEL.test(n),
  says: 'a DNS-1035 label (lower-case alphanumerics and "-", starting with a letter, at most 63 characters)',
};

/**
 * Kinds whose controllers want more of the name than the API server does; the server takes any
 * DNS subdomain for a custom resource (NameIsDNSSubdomain).
 * - LeaderWorkerSet: lws's webhook (v0.10.0 pkg/webhooks/leaderworkerset_webhook.go) requires a
 *   DNS-1035 label because the name is also the headless Service's.
 * - JobSet: jobset's webhook (v0.12.0 pkg/webhooks/jobset_webhook.go) requires every generated Job
 *   name, `<jobset>-<replicatedJob>-<index>`, to be a DNS-1035 label, so the name must start with
 *   a letter and hold no dots. (The generated names' length depends on the spec: not checked here.)
 */
const NAME_RULES: Record<string, NameRule> = {
  'leaderworkerset.x-k8s.io/LeaderWorkerSet': DNS1035_RULE,
  'jobset.x-k8s.io/JobSet': DNS1035_RULE,
};

function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    return false;
  }
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME_PART.test(name);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Errors of a custom resource's metadata, each starting with its path (`metadata.name ...`). */
export function metadataErrors(meta: unknown, group: string, kind: string, namespaced: boolean): string[] {
  if (!isPlainObject(meta)) return ['metadata must be an object with at least a name'];
  const errors: string[] = [];
  for (const field of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(field)) errors.push(`metadata.${field} is not a field of ObjectMeta (unknown field)`);
  }
  const rule = NAME_RULES[`${group}/${kind}`] ?? SUBDOMAIN_RULE;
  if (meta.name === undefined) {
    if (typeof meta.generateName !== 'string') errors.push('metadata.name is required');
  } else if (typeof meta.name !== 'string' || !rule.test(meta.name)) {
    errors.push(`metadata.name must be ${rule.says} (got ${JSON.stringify(meta.name)})`);
  }
  if (meta.namespace !== undefined) {
    if (!namespaced) {
      errors.push(`metadata.namespace must be left out: ${kind} is cluster-scoped`);
    } else if (
      typeof meta.namespace !== 'string' ||
      meta.namespace.length > 63 ||
      !DNS1123_LABEL.test(meta.namespace)
    ) {
      errors.push(`metadata.namespace must be a DNS-1123 label (got ${JSON.stringify(meta.namespace)})`);
    }
  }
  labelErrors(meta.labels, errors);
  annotationErrors(meta.annotations, errors);
  if (meta.finalizers !== undefined) {
    if (!Array.isArray(meta.finalizers)) errors.push('metadata.finalizers must be an array of strings');
    else {
      meta.finalizers.forEach((f, i) => {
        if (typeof f !== 'string' || !isQualifiedName(f)) {
          errors.push(
            `metadata.finalizers[${i}] must be a qualified name such as example.com/cleanup ` +
              `(got ${JSON.stringify(f)})`,
          );
        }
      });
    }
  }
  return errors;
}

function labelErrors(labels: unknown, errors: string[]): void {
  if (labels === undefined) return;
  if (!isPlainObject(labels)) {
    errors.push('metadata.labels must be an object of strings');
    return;
  }
  for (const [k, v] of Object.entries(labels)) {
    if (!isQualifiedName(k)) {
      errors.push(`metadata.labels has the key ${JSON.stringify(k)}, which is not a qualified name`);
    }
    if (typeof v !== 'string') {
      errors.push(`metadata.labels.${k} must be a string (got ${JSON.stringify(v)})`);
    } else if (v.length > 63 || !LABEL_VALUE.test(v)) {
      errors.push(
        `metadata.labels.${k} must be a label value: at most 63 alphanumerics, "-", "_" or "." ` +
          `starting and ending with an alphanumeric (got ${JSON.stringify(v)})`,
      );
    }
  }
}

function annotationErrors(annotations: unknown, errors: string[]): void {
  if (annotations === undefined) return;
  if (!isPlainObject(annotations)) {
    errors.push('metadata.annotations must be an object of strings');
    return;
  }
  let bytes = 0;
  for (const [k, v] of Object.entries(annotations)) {
    // ValidateAnnotations lower-cases the key before checking it.
    if (!isQualifiedName(k.toLowerCase())) {
      errors.push(`metadata.annotations has the key ${JSON.stringify(k)}, which is not a qualified name`);
    }
    if (typeof v !== 'string') errors.push(`metadata.annotations.${k} must be a string (got ${JSON.stringify(v)})`);
    else bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (bytes > ANNOTATIONS_MAX_BYTES) {
    errors.push(`metadata.annotations must total at most ${ANNOTATIONS_MAX_BYTES} bytes (got ${bytes})`);
  }
}
