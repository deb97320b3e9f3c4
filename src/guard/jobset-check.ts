// The JobSet webhook's replicatedJobs check (GuardCheck.JOBSET_REPLICATED_JOBS), kept apart from
// checks.ts so that the JobSet facts stay in one place with jobset-rules.ts.
import { KUEUE_QUEUE_LABEL } from '../common/kueue';
import { semanticEqual } from './equal';
import { clone, isLiveExport, type KubeObject } from './normalize';
import { isObject } from './object';
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
 */
export function checkReplicatedJobs(
  rule: FieldRule,
  p: { before: KubeObject; after: KubeObject; b: KubeObject; a: KubeObject },
  bv: unknown,
  av: unknown,
  emit: (rule: FieldRule, path: string, before: unknown, after: unknown) => void,
): void {
  let olds = bv;
  let news = av;
  const suspended = jobSetSuspended(p.before, p.after, p.b, p.a);
  if ((suspended.old || suspended.new) && Array.isArray(bv) && Array.isArray(av)) {
    const names = new Set(bv.map((r: any) => r?.name));
    const exempt = new Set(av.map((r: any) => r?.name).filter(n => names.has(n)));
    olds = withoutSuspendedMutable(bv, exempt);
    news = withoutSuspendedMutable(av, exempt);
  }
  if (!semanticEqual(olds, news, 'replicatedJobs')) emit(rule, rule.reportPath ?? rule.path, bv, av);
}

/** Copies of the replicated Jobs named in `names` without the fields the webhook exempts. */
function withoutSuspendedMutable(list: unknown[], names: Set<unknown>): unknown[] {
  return list.map((r: any) => {
    const pod = r?.template?.spec?.template;
    if (!names.has(r?.name) || !isObject(pod)) return r;
    const copy = clone(r);
    const t = copy.template.spec.template;
    for (const [holder, field] of JOBSET_SUSPENDED_MUTABLE) if (isObject(t[holder])) delete t[holder][field];
    // ObjectMeta is a struct in Go: an empty one and none are the same.
    if (isObject(t.metadata) && Object.keys(t.metadata).length === 0) delete t.metadata;
    return copy;
  });
}
