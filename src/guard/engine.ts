// The guard's comparison: one pass over the objects, linear in their number. Required lazily by
// diff.ts so that importing the library costs nothing until the guard runs. What apply stores is
// in apply.ts and carry-forward.ts, how each rule compares in checks.ts, the warnings in warnings.ts.
import { newerApiErrors } from './newer-apis';
import { vendoredKind } from '../validation/crd-registry';
import { applied, applyResult, missingMergeKeys, serverSideApplied, serviceUpdate } from './apply';
import { serverSideApplyErrors } from './ssa';
import { hasPath, missingRequired } from './crd-required';
import { carryForward } from './carry-forward';
import { checkRule, Emit, fill, Pair, queued } from './checks';
import { celRules, crdSchemas, type CelRule } from './crd';
import type { Finding, GuardOptions, GuardResult } from './diff';
import { jobSetCreateDefaults } from './jobset-check';
import { GuardInputError, sourceOf } from './load';
import { isBuiltInGroup, isLiveExport, KubeObject, normalize, statusFacts } from './normalize';
import { describe, groupOf, identity, isObject, namespacesMatch, versionOf } from './object';
import { remedyFor } from './remedy';
import {
  DEFAULT_KUEUE_VERSION,
  kueueVersionOf,
  MIN_KUEUE_VERSION,
  MIN_SERVER_VERSION,
  minorOf,
  rulesFor,
} from './rules';
import { servingBumpWarnings } from './serving-bump';
import { movedKindWarnings } from './moved-kinds';
import {
  byConsequence,
  duplicateKeyWarnings,
  onDeleteReplicas,
  removedWarnings,
  serverSideApplyWarnings,
} from './warnings';

function duplicateError(side: string, o: KubeObject, first: KubeObject): GuardInputError {
  const where = (x: KubeObject) => {
    const s = sourceOf(x);
    return s ? `${s.file}:${s.line}` : 'an input object';
  };
  return new GuardInputError(
    `${where(o)}: ${describe(o)} appears twice in ${side} (first at ${where(first)}); the API server keeps only one, so the comparison would be a guess`,
  );
}

/** Objects by metadata.name; throws when group, kind, namespace and name repeat on one side. */
function indexByName(objects: readonly KubeObject[], side: string): Map<string, KubeObject[]> {
  const index = new Map<string, KubeObject[]>();
  for (const o of objects) {
    if (
      !isObject(o) ||
      typeof o.apiVersion !== 'string' ||
      typeof o.kind !== 'string' ||
      !isObject(o.metadata) ||
      typeof o.metadata.name !== 'string'
    ) {
      throw new GuardInputError(
        `${side}: ${JSON.stringify(o)?.slice(0, 80)} is not a Kubernetes object (needs apiVersion, kind and metadata.name)`,
      );
    }
    const bucket = index.get(o.metadata.name);
    if (!bucket) {
      index.set(o.metadata.name, [o]);
      continue;
    }
    const first = bucket.find(
      c => c.kind === o.kind && c.metadata.namespace === o.metadata.namespace && groupOf(c) === groupOf(o),
    );
    if (first) throw duplicateError(side, o, first);
    bucket.push(o);
  }
  return index;
}

/**
 * The old object and the one an update stores, both normalized: the live or previously applied
 * `before`, and `after` as kubectl apply merges it over `before` with what the server keeps.
 * `merged` is the object sent, before normalization. @internal
 */
export function storedPair(
  before: KubeObject,
  after: KubeObject,
  minor?: number,
): { b: KubeObject; a: KubeObject; merged: KubeObject } {
  const kindKey = `${groupOf(after)}/${after.kind}`;
  const b = normalize(before, minor);
  // A JobSet created from the baseline manifest got its mutating webhook's defaults on create.
  if (kindKey === 'jobset.x-k8s.io/JobSet' && !isLiveExport(before)) jobSetCreateDefaults(b);
  // A live baseline: compare with what the apply stores, not with the bare manifest (fields that
  // controllers and webhooks wrote, such as Kueue's nodeSelector on an admitted Job, stay).
  // A manifest baseline: the stored object is that manifest with the server's defaults, and the
  // manifest is its last-applied configuration; a default the next manifest omits stays.
  const merged = isLiveExport(before)
    ? applied(before, after, minor)
    : {
        ...(applyResult(b, after, before, isBuiltInGroup(groupOf(after), minor)) as KubeObject),
        metadata: after.metadata,
      };
  if (kindKey === '/Service' && isObject(b.spec) && isObject(merged.spec)) serviceUpdate(b.spec, merged.spec);
  const a = normalize(merged, minor);
  carryForward(kindKey, before, b, a);
  return { b, a, merged };
}

/**
 * The comparison behind guard(); `onPair` is given each compared object's normalized pair as soon as
 * it is made, with the server minor version, so that a caller uses it before it is dropped. @internal
 */
export function runGuard(
  beforeObjects: readonly KubeObject[],
  afterObjects: readonly KubeObject[],
  options: GuardOptions = {},
  onPair?: (before: KubeObject, after: KubeObject, pair: { b: KubeObject; a: KubeObject }, minor: number) => void,
): GuardResult {
  const serverVersion = options.serverVersion ?? MIN_SERVER_VERSION;
  const minor = minorOf(serverVersion);
  if (minor === undefined || minor < minorOf(MIN_SERVER_VERSION)!) {
    throw new GuardInputError(
      `server version ${JSON.stringify(serverVersion)} is not supported: give 1.NN, ${MIN_SERVER_VERSION} or newer`,
    );
  }
  const kueueVersion = options.kueueVersion ?? DEFAULT_KUEUE_VERSION;
  const kueue = kueueVersionOf(kueueVersion);
  if (kueue === undefined || kueue[0] < kueueVersionOf(MIN_KUEUE_VERSION)![0]) {
    throw new GuardInputError(
      `Kueue version ${JSON.stringify(kueueVersion)} is not supported: give 0.NN or 0.NN.P, ${MIN_KUEUE_VERSION} (the first with a StatefulSet integration) or newer`,
    );
  }
  const rules = rulesFor(minor, kueue);
  const crdInputs = [...(options.customResourceDefinitions ?? []), ...beforeObjects, ...afterObjects];
  const crdRules = celRules(crdInputs);
  const schemas = crdSchemas(crdInputs);

  // Index `before` by name (short keys, no string building per object), then match group and kind
  // in the small bucket; a manifest without a namespace matches any namespace.
  const index = indexByName(beforeObjects, '--before');
  indexByName(afterObjects, '--after');

  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const matched = new Set<KubeObject>();
  const created: KubeObject[] = [];
  const unchecked = new Set<string>();
  for (const after of afterObjects) {
    const group = groupOf(after);
    const ns = after.metadata.namespace;
    let before: KubeObject | undefined;
    for (const c of index.get(after.metadata.name) ?? []) {
      if (c.kind !== after.kind || groupOf(c) !== group || matched.has(c)) continue;
      if (namespacesMatch(ns, c.metadata.namespace)) {
        before = c;
        break;
      }
    }
    if (!before) {
      created.push(after);
      continue;
    }
    matched.add(before);
    const kindKey = `${groupOf(after)}/${after.kind}`;
    const builtIn = isBuiltInGroup(group, minor);
    let kindRules = [...(rules.get(kindKey) ?? []), ...celRulesFor(crdRules, kindKey, after)];
    if (!rules.has(kindKey) && !crdRules.has(kindKey) && !builtIn) unchecked.add(kindKey);
    // Kueue's webhook rules apply to an object that has, or had, a queue name, except those its
    // webhooks check on every object of the kind (everyObject).
    if (!queued(before) && !queued(after)) kindRules = kindRules.filter(r => r.kueue === undefined || r.everyObject);
    if (after.kind === 'StatefulSet' && groupOf(after) === 'apps') onDeleteReplicas(before, after, warnings);
    // The object as the manifest names it; its namespace is the one it matched in, if it names none.
    const namespace = after.metadata.namespace ?? before.metadata.namespace;
    // An error the rules table does not hold, with its own remedy: an invalid value the apply sends.
    const invalid = (f: Pick<Finding, 'path' | 'before' | 'after' | 'message' | 'remedy' | 'source'>) =>
      errors.push({ severity: 'error', code: 'invalid-field', ...identity(after), namespace, ...f });
    if (options.serverSideApply) {
      const crd = builtIn
        ? undefined
        : (byVersionOf(schemas, kindKey, after) ?? vendoredKind(after.apiVersion, after.kind)?.schema);
      // What this manager applied before: the earlier manifest, or what its managedFields entry owns.
      const previous = isLiveExport(before) ? serverSideApplied(before) : before;
      for (const { podsOnly, ...e } of serverSideApplyErrors(previous, after, crd, builtIn, minor)) {
        if (!podsOnly) invalid({ before: null, after: null, ...e });
        else
          warnings.push({
            severity: 'warning',
            code: 'pods-refused',
            ...identity(after),
            namespace,
            ...e,
            before: null,
            after: null,
            message: `${e.message}: Kubernetes 1.${minor} stores the ${after.kind} (its pod template is validated only from 1.34), but refuses every pod made from it, so the rollout stops at its first replaced pod`,
          });
      }
    }
    if (kindRules.length === 0) continue;
    // Most objects of a large export are mutable Secrets and ConfigMaps: nothing to compare.
    if (
      (kindKey === '/ConfigMap' || (kindKey === '/Secret' && (before.type || 'Opaque') === (after.type || 'Opaque'))) &&
      before.immutable !== true
    )
      continue;
    const { b, a, merged } = storedPair(before, after, minor);
    // The plan reads the same pair rather than merging and normalizing again.
    onPair?.(before, after, { b, a }, minor);
    // The CRD's schema: from the input, else, for a kind whose rules the guard read from a CRD the
    // library vendors (JobSet v0.12.0, LeaderWorkerSet v0.10.0), from that one.
    const schema =
      byVersionOf(schemas, kindKey, after) ??
      (rules.has(kindKey) && !builtIn ? vendoredKind(after.apiVersion, after.kind)?.schema : undefined);
    const pair: Pair = { before, after, b, a, facts: statusFacts(before), schema };
    if (schema && !builtIn)
      // Only what the change takes away: an object stored without the field has it from the webhook.
      for (const path of missingRequired(merged, schema).filter(p => p !== 'metadata' && hasPath(before, p)))
        invalid({
          path,
          before: null,
          after: null,
          message: `${path}: Required value (the CRD schema requires it; on create a mutating webhook may write its zero value, on update nothing does)`,
          remedy: `give \`${path.split('.').pop()}\` a value in the manifest`,
          source: 'the CustomResourceDefinition structural schema (required)',
        });
    let remedy: string | undefined;
    const emit: Emit = (rule, path, bv, av, vars = {}) => {
      remedy ??= remedyFor(before);
      errors.push({
        severity: 'error',
        code: rule.code ?? 'immutable-field',
        ...identity(after),
        namespace,
        path,
        before: bv,
        after: av,
        message: fill(rule.message, { value: av ?? null, path, ...vars }),
        remedy: rule.remedy ?? remedy,
        source: rule.source,
      });
    };
    for (const rule of kindRules) checkRule(rule, pair, emit);
    // kubectl computes a client-side apply's patch itself; server-side apply merges the item anyway.
    if (!options.serverSideApply && builtIn)
      for (const missing of missingMergeKeys(after))
        invalid({
          path: missing.path,
          before: null,
          after: null,
          message: `${missing.path}: the item has no \`${missing.key}\`, the merge key of its list: kubectl apply cannot compute its patch ("does not contain declared merge key: ${missing.key}") and sends nothing`,
          remedy: `give the item its \`${missing.key}\``,
          source: 'strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch), used by kubectl apply',
        });
    if (kindKey === '/Service') headlessKept(before, after, b, a, warnings);
    // ValidateStatefulSetSpec: the apply keeps the server-defaulted rollingUpdate of a StatefulSet
    // whose manifest moves to OnDelete (the field has no retainKeys), and the update is refused.
    if (
      kindKey === 'apps/StatefulSet' &&
      merged.spec?.updateStrategy?.type === 'OnDelete' &&
      merged.spec.updateStrategy.rollingUpdate != null
    ) {
      invalid({
        path: 'spec.updateStrategy.rollingUpdate',
        before: before.spec?.updateStrategy ?? null,
        after: after.spec?.updateStrategy ?? null,
        message: `spec.updateStrategy.rollingUpdate: Invalid value: ${JSON.stringify(merged.spec.updateStrategy.rollingUpdate)}: only allowed for updateStrategy 'RollingUpdate' (kubectl apply keeps the defaulted rollingUpdate of the live object)`,
        remedy:
          'write `rollingUpdate: null` under `updateStrategy` in the manifest: kubectl apply then removes the defaulted field in the same update',
        source: 'ValidateStatefulSetSpec (pkg/apis/apps/validation/validation.go)',
      });
    }
  }

  errors.push(...newerApiErrors(afterObjects, minor));
  movedKindWarnings(beforeObjects, afterObjects, matched, created, warnings);
  removedWarnings(beforeObjects, afterObjects, matched, created, warnings);
  servingBumpWarnings(beforeObjects, matched, created, warnings);
  serverSideApplyWarnings(beforeObjects, matched, warnings);
  duplicateKeyWarnings(afterObjects, warnings);
  return guardResult([...errors, ...byConsequence(warnings)], {
    serverVersion: `1.${minor}`,
    kueueVersion: kueueVersion.replace(/^v/, ''),
    objects: { before: beforeObjects.length, after: afterObjects.length },
    uncheckedKinds: [...unchecked].sort(),
  });
}

/** A guard result holding `findings`, with the facts of the run it came from. */
export function guardResult(
  findings: Finding[],
  run: Pick<GuardResult, 'serverVersion' | 'kueueVersion' | 'objects' | 'uncheckedKinds'>,
): GuardResult {
  const errors = findings.filter(f => f.severity === 'error').length;
  const result = { findings, errors, warnings: findings.length - errors } as GuardResult;
  // Read like any field, but kept out of the enumerable shape so that code written against the
  // first GuardResult ({ findings, errors, warnings }) keeps comparing equal. The object is the
  // guard's own, made just above.
  // eslint-disable-next-line no-restricted-syntax
  Object.defineProperties(result, {
    serverVersion: { value: run.serverVersion, enumerable: false },
    kueueVersion: { value: run.kueueVersion, enumerable: false },
    objects: { value: run.objects, enumerable: false },
    uncheckedKinds: { value: run.uncheckedKinds, enumerable: false },
  });
  return result;
}

function celRulesFor(crdRules: Map<string, Map<string, CelRule[]>>, kindKey: string, o: KubeObject): CelRule[] {
  return byVersionOf(crdRules, kindKey, o) ?? [];
}

/** What a CRD says for the object's version, or for its first version when it lacks that one. */
function byVersionOf<T>(crds: Map<string, Map<string, T>>, kindKey: string, o: KubeObject): T | undefined {
  const byVersion = crds.get(kindKey);
  if (!byVersion) return undefined;
  return byVersion.get(versionOf(o)) ?? [...byVersion.values()][0];
}

/**
 * A headless Service whose new manifest no longer says `clusterIP: None` stays headless: the apply
 * keeps the live `clusterIPs: [None]` (or patchAllocatedValues restores an omitted clusterIP), and
 * the server accepts the update without allocating an address. Allowed, but not what the manifest reads.
 */
function headlessKept(before: KubeObject, after: KubeObject, b: KubeObject, a: KubeObject, out: Finding[]): void {
  const headless = (o: KubeObject) => Array.isArray(o.spec?.clusterIPs) && o.spec.clusterIPs[0] === 'None';
  const says = after.spec?.clusterIP ?? (Array.isArray(after.spec?.clusterIPs) ? after.spec.clusterIPs[0] : undefined);
  if (!headless(b) || !headless(a) || says === 'None' || (a.spec?.type ?? 'ClusterIP') !== 'ClusterIP') return;
  out.push({
    severity: 'warning',
    code: 'service-stays-headless',
    ...identity(after),
    namespace: after.metadata.namespace ?? before.metadata.namespace,
    path: 'spec.clusterIP',
    before: 'None',
    after: says ?? null,
    message:
      'the manifest no longer sets clusterIP: None, but the Service stays headless: the apply keeps the live clusterIPs [None] (patchAllocatedValues restores an omitted clusterIP) and no address is allocated',
    remedy: `to give it a cluster address, delete and re-create the Service (kubectl delete service ${after.metadata.name}${(after.metadata.namespace ?? before.metadata.namespace) ? ` -n ${after.metadata.namespace ?? before.metadata.namespace}` : ''}); to keep it headless, write clusterIP: None in the manifest`,
    source: undefined,
  });
}
