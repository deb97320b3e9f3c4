// The JobSet webhook's replicatedJobs check (GuardCheck.JOBSET_REPLICATED_JOBS), kept apart from
// checks.ts so that the JobSet facts stay in one place with jobset-rules.ts.
import { KUEUE_QUEUE_LABEL } from '../common/kueue';
import { withDefaults } from './crd';
import { semanticEqual } from './equal';
import { goDecoded } from './go-fields';
import { clone, isLiveExport, type KubeObject } from './normalize';
import { get, isObject, set } from './object';
import type { FieldRule } from './rules';

/**
 * The pod-template fields of each replicated Job that may change while the old or the new JobSet
 * is suspended ((*jobSetWebhook).ValidateUpdate, v0.12.0: the fields Kueue writes on admission).
 * Paths under `replicatedJobs[i].template.spec.template`; only the pod template's metadata, not
 * the Job template's, and not affinity (a batch/v1 Job's suspended exemption also has affinity).
 */
export const JOBSET_SUSPENDED_MUTABLE: ReadonlyArray<[holder: 'metadata' | 'spec', field: string]> = [
  ['metadata', 'annotations'],
  ['metadata', 'labels'],
  ['spec', 'nodeSelector'],
  ['spec', 'tolerations'],
  ['spec', 'schedulingGates'],
];

/**
 * What the mutating webhook `mjobset.kb.io`, `(*jobSetWebhook).Default` (v0.12.0,
 * pkg/webhooks/jobset_webhook.go), writes into a JobSet, in place. It runs on CREATE only
 * (config/components/webhook/manifests.yaml): a stored JobSet known only from its manifest has
 * these values where the manifest left them out, and an update is not defaulted again. Of the
 * replicated Jobs, kubectl apply sends the new manifest's list whole (a JSON merge patch replaces
 * lists), so a new manifest that leaves out a value defaulted here changes replicatedJobs; the
 * objects (successPolicy, network, ...) keep the stored values the manifest does not set.
 */
export function jobSetCreateDefaults(o: KubeObject): void {
  const spec = o.spec;
  if (!isObject(spec)) return;
  const unset = (x: unknown) => x === undefined || x === null;
  if (unset(spec.successPolicy)) spec.successPolicy = { operator: 'All' };
  if (unset(spec.startupPolicy)) spec.startupPolicy = { startupPolicyOrder: 'AnyOrder' };
  for (const r of Array.isArray(spec.replicatedJobs) ? spec.replicatedJobs : []) {
    if (!isObject(r)) continue;
    // A nil *CompletionMode; a "" RestartPolicy (a Go string: absent is "").
    if (unset(get(r, 'template.spec.completionMode'))) set(r, 'template.spec.completionMode', 'Indexed');
    const restart = get(r, 'template.spec.template.spec.restartPolicy');
    if (unset(restart) || restart === '') set(r, 'template.spec.template.spec.restartPolicy', 'OnFailure');
  }
  if (!isObject(spec.network)) spec.network = {};
  if (unset(spec.network.enableDNSHostnames)) spec.network.enableDNSHostnames = true;
  if (unset(spec.network.publishNotReadyAddresses)) spec.network.publishNotReadyAddresses = true;
  const rules = isObject(spec.failurePolicy) && Array.isArray(spec.failurePolicy.rules) ? spec.failurePolicy.rules : [];
  rules.forEach((rule: any, i: number) => {
    if (isObject(rule) && (unset(rule.name) || rule.name === '')) rule.name = `failurePolicyRule${i}`;
  });
  for (const policy of Array.isArray(spec.volumeClaimPolicies) ? spec.volumeClaimPolicies : []) {
    if (isObject(policy) && unset(policy.retentionPolicy)) policy.retentionPolicy = { whenDeleted: 'Delete' };
  }
}

/**
 * Whether the webhook sees `spec.suspend: true` on the old object and on the new one. A live
 * export says both. A manifest baseline says them for a JobSet nobody else suspends; a JobSet
 * queued in Kueue is suspended and resumed by Kueue, so its stored `suspend` is unknown: it is
 * taken to be admitted and running (not suspended, where a refusal bites), and the new object is
 * suspended only when the new manifest sets `suspend: true` (kubectl apply's JSON merge patch
 * sends a value that differs from the live one).
 */
export function jobSetSuspended(before: KubeObject, after: KubeObject, b: KubeObject, a: KubeObject) {
  if (isLiveExport(before)) return { old: b.spec?.suspend === true, new: a.spec?.suspend === true };
  const queued = [before, after].some(o => (o.metadata.labels?.[KUEUE_QUEUE_LABEL] ?? '') !== '');
  if (!queued) return { old: b.spec?.suspend === true, new: a.spec?.suspend === true };
  return { old: false, new: after.spec?.suspend === true };
}

/**
 * `spec.replicatedJobs` may not change (apivalidation.ValidateImmutableField), except, while the
 * old or the new JobSet is suspended, the fields in JOBSET_SUSPENDED_MUTABLE of a replicated Job
 * whose name the old JobSet has: the webhook copies the old values into the new spec before it
 * compares, which is the same as leaving them out of both sides.
 *
 * The webhook compares Go values (equality.Semantic.DeepEqual over []ReplicatedJob), decoded from
 * the objects the API server hands it, so both sides are read as it reads them: with the CRD's
 * structural defaults (`p.schema`), which the server applies to the stored object and to the
 * patched one (`groupName: default`, `replicas: 1`, a port's `protocol: TCP`), and as Go decodes
 * them (go-fields.ts): a template's `metadata: {}` or `hostNetwork: false` is no field,
 * `backoffLimit: 0` is one, and quantities compare by value (`8` and `"8"`). A stored JobSet known
 * from its manifest has the mutating webhook's create defaults already (jobSetCreateDefaults).
 */
export function checkReplicatedJobs(
  rule: FieldRule,
  p: { before: KubeObject; after: KubeObject; b: KubeObject; a: KubeObject; schema?: unknown },
  bv: unknown,
  av: unknown,
  emit: (rule: FieldRule, path: string, before: unknown, after: unknown) => void,
): void {
  const schema = (p.schema as any)?.properties?.spec?.properties?.replicatedJobs;
  let olds = withSchemaDefaults(bv, schema);
  let news = withSchemaDefaults(av, schema);
  const suspended = jobSetSuspended(p.before, p.after, p.b, p.a);
  if ((suspended.old || suspended.new) && Array.isArray(olds) && Array.isArray(news)) {
    const names = new Set(olds.map((r: any) => r?.name));
    const exempt = new Set(news.map((r: any) => r?.name).filter(n => names.has(n)));
    olds = withoutSuspendedMutable(olds, exempt);
    news = withoutSuspendedMutable(news, exempt);
  }
  olds = goDecoded(olds, 'replicatedJobs', 'spec');
  news = goDecoded(news, 'replicatedJobs', 'spec');
  if (!semanticEqual(olds, news, 'replicatedJobs')) emit(rule, rule.reportPath ?? rule.path, bv, av);
}

/** A copy of a replicatedJobs list with the CRD's structural defaults. */
function withSchemaDefaults(list: unknown, schema: unknown): unknown {
  return clone(withDefaults(list, schema, true));
}

/** The replicated Jobs named in `names` without the fields the webhook exempts (changed in place). */
function withoutSuspendedMutable(list: unknown[], names: Set<unknown>): unknown[] {
  for (const r of list as any[]) {
    const t = r?.template?.spec?.template;
    if (!names.has(r?.name) || !isObject(t)) continue;
    for (const [holder, field] of JOBSET_SUSPENDED_MUTABLE) if (isObject(t[holder])) delete t[holder][field];
  }
  return list;
}
