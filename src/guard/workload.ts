// What a workload's manifest says about its pods: the template, replicas (or the range an
// autoscaler may set), GPUs per pod and the startup budget. Shared by the plan and the warnings.
import type { KubeObject } from './normalize';
import { GPU_CLAIM_COMPONENT, LABEL_COMPONENT } from '../common/labels';
import { GPU_RESOURCE_PATTERN } from '../common/gpu-names';
import { groupOf, isObject } from './object';

// No value import of normalize.ts: the plan's formatters load with the package, the engine only when it runs.
const arr = (x: unknown): any[] => (Array.isArray(x) ? x : []);
const isLiveExport = (o: KubeObject) => (require('./normalize') as typeof import('./normalize')).isLiveExport(o);

/** A count that an autoscaler may move: equal ends when it is fixed. */
export interface Range {
  readonly min: number;
  readonly max: number;
}

/** Extended resources counted as GPUs: NVIDIA's and AMD's device plugins, Intel's, and MIG slices. */
export const GPU_RESOURCE = GPU_RESOURCE_PATTERN;
/** Kubernetes' defaults (pkg/apis/core/v1/defaults.go): grace period 30 s; probe period 10 s, failureThreshold 3. */
export const DEFAULT_GRACE = 30;
export const DEFAULT_PERIOD = 10;
export const DEFAULT_FAILURES = 3;
export const WORKLOADS = new Set(['apps/StatefulSet', 'apps/Deployment', 'apps/DaemonSet', 'apps/ReplicaSet']);
export const LWS = 'leaderworkerset.x-k8s.io/LeaderWorkerSet';
/**
 * The first server minor whose kube-controller-manager honours a StatefulSet's maxUnavailable by
 * default: MaxUnavailableStatefulSet, alpha (off) from 1.24, beta (on) from 1.35 (KEP-961,
 * pkg/features/versioned_kube_features.go).
 */
export const STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON = 35;

export const num = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) ? v : d);
export const kindKey = (o: KubeObject) => `${groupOf(o)}/${o.kind}`;

/** The pod template of a workload kind the plan knows, or undefined. */
export function templateOf(o: KubeObject): any {
  const k = kindKey(o);
  if (WORKLOADS.has(k) || k === 'batch/Job') return o.spec?.template;
  if (k === 'batch/CronJob') return o.spec?.jobTemplate?.spec?.template;
  if (k === '/Pod') return { metadata: o.metadata, spec: o.spec };
  if (k === LWS) return o.spec?.leaderWorkerTemplate;
  return undefined;
}

/** The pod specs of a template (a LeaderWorkerSet has a leader's and the workers'). */
export function podSpecs(o: KubeObject): any[] {
  const t = templateOf(o);
  if (kindKey(o) === LWS) return [t?.leaderTemplate?.spec ?? t?.workerTemplate?.spec, t?.workerTemplate?.spec];
  return [t?.spec];
}

const isSidecar = (c: any) => c?.restartPolicy === 'Always';

/** GPUs each ResourceClaimTemplate (`namespace/name`) gives a pod: its requests' ExactCount devices of a GPU class. */
export type ClaimCounts = ReadonlyMap<string, number>;
export const NO_CLAIMS: ClaimCounts = new Map();
/**
 * DeviceClasses counted as GPUs in a template the library did not make: NVIDIA's `gpu.nvidia.com` and
 * `mig.nvidia.com`, AMD's and Intel's.
 */
const GPU_CLASS = /gpu|^mig\./;

/** The GPUs per pod of every ResourceClaimTemplate in `objects` (resource.k8s.io, any version's request shape). */
export function claimCounts(objects: readonly KubeObject[]): ClaimCounts {
  const out = new Map<string, number>();
  for (const o of objects) {
    if (o.kind !== 'ResourceClaimTemplate' || groupOf(o) !== 'resource.k8s.io') continue;
    // The library's own claim templates hold GPUs whatever their class is named.
    const ours = o.metadata.labels?.[LABEL_COMPONENT] === GPU_CLAIM_COMPONENT;
    const gpus = arr(o.spec?.spec?.devices?.requests).reduce((n: number, r: any) => {
      // v1 nests the request in `exactly`; v1beta1 has its fields on the request itself.
      const e = isObject(r?.exactly) ? r.exactly : r;
      const mode = e?.allocationMode ?? 'ExactCount';
      const gpu = ours || GPU_CLASS.test(String(e?.deviceClassName ?? ''));
      return gpu && mode === 'ExactCount' ? n + num(e?.count, 1) : n;
    }, 0);
    out.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, gpus);
  }
  return out;
}

/**
 * GPUs a pod asks for, by the scheduler's rule (KEP-753): the regular containers and the native
 * sidecars add up; an init container that runs to completion needs its own plus the sidecars started
 * before it; the pod asks for the larger.
 */
export function gpusOfPod(spec: any, claims: ClaimCounts = NO_CLAIMS, namespace = ''): number {
  const gpus = (c: any) =>
    Object.entries({ ...(c?.resources?.requests ?? {}), ...(c?.resources?.limits ?? {}) })
      .filter(([k]) => GPU_RESOURCE.test(k))
      .reduce((n, [, v]) => n + (Number(v) || 0), 0);
  let sidecars = 0;
  let initPeak = 0;
  for (const c of arr(spec?.initContainers)) {
    if (isSidecar(c)) sidecars += gpus(c);
    else initPeak = Math.max(initPeak, sidecars + gpus(c));
  }
  const main = arr(spec?.containers).reduce((n: number, c: any) => n + gpus(c), 0);
  // Each claim made from a template is the pod's own; the scheduler allocates every claim the pod names.
  const claimed = arr(spec?.resourceClaims).reduce(
    (n: number, c: any) => n + (claims.get(`${namespace}/${c?.resourceClaimTemplateName}`) ?? 0),
    0,
  );
  return Math.max(main + sidecars, initPeak) + claimed;
}

/**
 * The startup budget: the longest startup probe among the regular containers (initialDelay +
 * period × failureThreshold), after the native sidecars' startup probes, which the kubelet waits
 * for one after another before it starts the next container. 0 when no regular container has one:
 * the time is unknown.
 */
export function startupOf(spec: any): number {
  const budget = (c: any) => {
    const p = c?.startupProbe;
    if (!isObject(p)) return 0;
    return (
      num(p.initialDelaySeconds, 0) + num(p.periodSeconds, DEFAULT_PERIOD) * num(p.failureThreshold, DEFAULT_FAILURES)
    );
  };
  const main = arr(spec?.containers).reduce((s: number, c: any) => Math.max(s, budget(c)), 0);
  if (main === 0) return 0;
  return arr(spec?.initContainers)
    .filter(isSidecar)
    .reduce((s: number, c: any) => s + budget(c), main);
}

/** Replicas the autoscalers in `objects` may set, by target (`namespace/kind/name`). */
export function autoscaled(objects: readonly KubeObject[]): Map<string, Range> {
  const out = new Map<string, Range>();
  for (const o of objects) {
    const ns = o.metadata.namespace ?? '';
    if (o.kind === 'HorizontalPodAutoscaler' && isObject(o.spec?.scaleTargetRef)) {
      const t = o.spec.scaleTargetRef;
      out.set(`${ns}/${t.kind}/${t.name}`, { min: num(o.spec.minReplicas, 1), max: num(o.spec.maxReplicas, 1) });
    }
    // KEDA ScaledObject: scaleTargetRef.kind defaults to Deployment; minReplicaCount 0, maxReplicaCount 100.
    if (o.kind === 'ScaledObject' && groupOf(o) === 'keda.sh' && isObject(o.spec?.scaleTargetRef)) {
      const t = o.spec.scaleTargetRef;
      out.set(`${ns}/${t.kind ?? 'Deployment'}/${t.name}`, {
        min: num(o.spec.minReplicaCount, 0),
        max: num(o.spec.maxReplicaCount, 100),
      });
    }
  }
  return out;
}

/**
 * Replicas of a workload: the manifest's, the live object's when the manifest leaves them to an
 * autoscaler, or its range.
 */
export function replicasOf(o: KubeObject, live: KubeObject | undefined, scalers: Map<string, Range>): Range {
  const k = kindKey(o);
  if (k === '/Pod' || k === 'batch/CronJob') return { min: 1, max: 1 };
  if (k === 'batch/Job') {
    const p = num(o.spec?.parallelism, 1);
    return { min: p, max: p };
  }
  if (k === 'apps/DaemonSet') return { min: 1, max: 1 };
  const scaler = scalers.get(`${o.metadata.namespace ?? ''}/${o.kind}/${o.metadata.name}`);
  if (typeof o.spec?.replicas === 'number' && !scaler) return { min: o.spec.replicas, max: o.spec.replicas };
  if (live && isLiveExport(live) && typeof live.spec?.replicas === 'number')
    return { min: live.spec.replicas, max: live.spec.replicas };
  if (scaler) return scaler;
  return { min: 1, max: 1 };
}

export const rangeText = (r: Range, f: (n: number) => string = String) =>
  r.min === r.max ? f(r.min) : `${f(r.min)}–${f(r.max)}`;

/**
 * GPUs of one replica: a pod, or a LeaderWorkerSet's group (the leader, whose template defaults to
 * the workers', and `leaderWorkerTemplate.size - 1` workers).
 */
export function unitGpus(o: KubeObject, claims: ClaimCounts = NO_CLAIMS): number {
  if (templateOf(o) === undefined) return 0;
  const specs = podSpecs(o);
  const ns = o.metadata.namespace ?? '';
  if (kindKey(o) === LWS)
    return (
      gpusOfPod(specs[0], claims, ns) +
      (num(o.spec?.leaderWorkerTemplate?.size, 1) - 1) * gpusOfPod(specs[1], claims, ns)
    );
  return gpusOfPod(specs[0], claims, ns);
}

/** What one replica is: a pod, or a LeaderWorkerSet's group. */
export const unitOf = (o: KubeObject): 'pod' | 'group' => (kindKey(o) === LWS ? 'group' : 'pod');

/** The longest a replica takes to stop: the largest terminationGracePeriodSeconds of its pods. */
export const drainOf = (o: KubeObject) =>
  Math.max(...podSpecs(o).map(s => num(s?.terminationGracePeriodSeconds, DEFAULT_GRACE)));

/** GPUs a workload holds: per pod (or group) times its replicas (a range under an autoscaler). */
export function gpuRange(o: KubeObject, scalers: Map<string, Range>, claims: ClaimCounts = NO_CLAIMS): Range {
  const per = unitGpus(o, claims);
  const r = replicasOf(o, o, scalers);
  return { min: r.min * per, max: r.max * per };
}
