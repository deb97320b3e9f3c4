// How a LeaderWorkerSet rolls out, for the plan (plan.ts): what restarts it, how many groups at a
// time, how long a group takes and the GPUs it holds. Read from kubernetes-sigs/lws v0.10.0
// (2161f38): pkg/controllers/leaderworkerset_controller.go (rollingUpdateParameters,
// rollingUpdatePartition, constructLeaderStatefulSetApplyConfiguration), pkg/controllers/
// pod_controller.go and pkg/utils/revision/revision_utils.go (getPatch).
import { LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION, LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION } from '../common/lws';
import { semanticEqual } from './equal';
import { lwsView, scaled } from './lws-check';
import type { KubeObject } from './normalize';
import { isObject } from './object';
import {
  type ClaimCounts,
  NO_CLAIMS,
  num,
  podSpecs,
  type Range,
  STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON,
  startupOf,
  unitGpus,
} from './workload';

/**
 * What a revision of the LeaderWorkerSet holds (getPatch): `leaderWorkerTemplate` and
 * `networkConfig`, each as the server stores it (the CRD's defaults, and the mutating webhook's:
 * restartPolicy RecreateGroupOnPodRestart, the deprecated `Default` stored as `None`, subdomainPolicy
 * Shared). A change to either is a new revision, and every group above the partition is replaced.
 */
export function lwsRevision(o: KubeObject): { leaderWorkerTemplate: unknown; networkConfig: unknown } {
  const t = isObject(o.spec?.leaderWorkerTemplate) ? { ...o.spec.leaderWorkerTemplate } : {};
  t.size = num(t.size, 1);
  t.restartPolicy = t.restartPolicy === undefined ? 'RecreateGroupOnPodRestart' : t.restartPolicy;
  if (t.restartPolicy === 'Default') t.restartPolicy = 'None';
  if (isObject(t.subGroupPolicy)) t.subGroupPolicy = { subGroupPolicyType: 'LeaderWorker', ...t.subGroupPolicy };
  const n = isObject(o.spec?.networkConfig) ? o.spec.networkConfig : {};
  return { leaderWorkerTemplate: t, networkConfig: { ...n, subdomainPolicy: n.subdomainPolicy ?? 'Shared' } };
}

/**
 * Annotations of the LeaderWorkerSet that the controller copies onto every leader pod's template
 * (constructLeaderStatefulSetApplyConfiguration): a change to one changes the leader StatefulSet's
 * template without a new revision, so the StatefulSet controller replaces the leaders, and each
 * leader's group with it.
 */
const LEADER_POD_ANNOTATIONS = [LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION, LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION];

/** What restarts a LeaderWorkerSet's groups: its revision, and the annotations its leader pods carry. */
export function lwsRestartInputs(o: KubeObject): Record<string, unknown> {
  const annotations = isObject(o.metadata?.annotations) ? o.metadata.annotations : {};
  const copied = Object.fromEntries(LEADER_POD_ANNOTATIONS.map(k => [k, annotations[k] ?? null]));
  return { ...lwsRevision(o), metadata: { annotations: copied } };
}

/**
 * Only the leader pods' copied annotations changed: no new revision, so the controller keeps the
 * partition at 0 and creates no surge groups, and the leader StatefulSet replaces its pods in
 * place, maxUnavailable + maxSurge at a time (its maxUnavailable as LWS sets it; one at a time
 * before 1.35). Each replaced leader takes its group out of service: capacity drops even with
 * maxUnavailable 0.
 */
function inPlaceRoll(
  a: KubeObject,
  replicas: Range,
  perStep: number,
  size: number,
  stsHonours: boolean,
  claims: ClaimCounts,
): LwsRollout {
  const per = unitGpus(a, claims);
  return {
    groups: replicas,
    perStep,
    surge: 0,
    steps: n => Math.ceil(Math.max(n, 0) / perStep),
    gpusDuringRollout: { min: replicas.min * per, max: replicas.max * per },
    how: [
      `the leader pods' annotations changed without a new revision: the leader StatefulSet replaces its pods in place, each with its group of ${size} pod(s)`,
      stsHonours
        ? `no surge groups, ${perStep} group(s) out of service at a time`
        : `no surge groups, one group out of service at a time (before 1.${STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON} the leader StatefulSet's maxUnavailable needs the MaxUnavailableStatefulSet feature gate)`,
    ].join('; '),
  };
}

/**
 * A group's startup budget: its pods start together (workers once their leader pod exists), or,
 * with `startupPolicy: LeaderReady`, the workers once the leader is Ready (pod_controller.go).
 */
export function lwsStartup(o: KubeObject): number {
  const [leader, worker] = podSpecs(o);
  const s = [startupOf(leader), startupOf(worker)];
  return o.spec?.startupPolicy === 'LeaderReady' ? s[0] + s[1] : Math.max(...s);
}

export interface LwsRollout {
  /** Groups replaced: those at or above the partition. */
  readonly groups: Range;
  /** Groups replaced together after the first wave. */
  readonly perStep: number;
  /** Surge groups (new revision) created beside the old ones. */
  readonly surge: number;
  /** Waves for `n` groups. */
  readonly steps: (n: number) => number;
  /** The most GPUs held during the rollout (an upper bound). */
  readonly gpusDuringRollout: Range;
  readonly how: string;
}

/**
 * The rolling update of a LeaderWorkerSet whose revision changed. The controller creates the
 * maxSurge groups (capped at replicas) at the new revision first, replaces maxUnavailable old
 * groups beside them, then maxUnavailable + maxSurge at a time as groups become Ready, from the
 * highest index down to the partition, and deletes the surge groups at the end (kept while a
 * partition holds the update). It moves the leader StatefulSet's partition and sets its
 * maxUnavailable to maxUnavailable + maxSurge; a kube-controller-manager without
 * MaxUnavailableStatefulSet (default off before 1.35) ignores that and replaces one leader, so
 * one group, at a time. A group's pods go together: the leader's deletion takes its worker
 * StatefulSet with it, and a new leader gets new workers.
 */
export function lwsRollout(
  b: KubeObject,
  a: KubeObject,
  replicas: Range,
  minor: number | undefined,
  claims: ClaimCounts = NO_CLAIMS,
): LwsRollout {
  const v = lwsView(a);
  // GetScaledValueFromIntOrPercent against spec.replicas: maxUnavailable rounds down, maxSurge up.
  const unavailable = Math.max(scaled(v.maxUnavailable, replicas.max, false) ?? 1, 0);
  const surge = Math.min(Math.max(scaled(v.maxSurge, replicas.max, true) ?? 0, 0), replicas.max);
  const stsHonours = (minor ?? 0) >= STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON;
  const perStep = stsHonours ? Math.max(unavailable + surge, 1) : 1;
  if (semanticEqual(lwsRevision(b), lwsRevision(a)))
    return inPlaceRoll(a, replicas, perStep, v.size, stsHonours, claims);
  const groups = {
    min: Math.max(replicas.min - v.partition, 0),
    max: Math.max(replicas.max - v.partition, 0),
  };
  // The first wave replaces maxUnavailable old groups while the surge groups start; with
  // maxUnavailable 0 it only starts the surge groups.
  const first = stsHonours ? unavailable : Math.min(unavailable, 1);
  const steps = (n: number) =>
    n <= 0 ? 0 : surge > 0 ? 1 + Math.ceil(Math.max(n - first, 0) / perStep) : Math.ceil(n / perStep);
  // Old and new groups side by side: with a changed size or template, count the larger of the two.
  const per = Math.max(unitGpus(a, claims), unitGpus(b, claims));
  const gpusDuringRollout = {
    min: replicas.min * per + surge * unitGpus(a, claims),
    max: replicas.max * per + surge * unitGpus(a, claims),
  };
  const parts = [
    `RollingUpdate by group of ${v.size} pod(s)`,
    `maxUnavailable ${unavailable}, maxSurge ${surge}`,
    ...(v.partition > 0 ? [`groups below the partition ${v.partition} keep the old revision`] : []),
    ...(surge > 0 && v.partition > 0 ? ['the surge groups stay until the partition is 0'] : []),
    ...(!stsHonours && unavailable + surge > 1
      ? [
          `one group at a time: before 1.${STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON} the leader StatefulSet's maxUnavailable needs the MaxUnavailableStatefulSet feature gate`,
        ]
      : []),
    ...(a.spec?.startupPolicy === 'LeaderReady'
      ? ['startupPolicy LeaderReady: workers start after the leader is Ready']
      : []),
  ];
  return { groups, perStep, surge, steps, gpusDuringRollout, how: parts.join('; ') };
}
