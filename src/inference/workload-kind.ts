import { Construct } from 'constructs';
import { surgeDeployment } from '../common/deployment';
import { ManifestObject } from '../common/manifest-object';
import { PodTemplate } from '../common/pod-template';
import { STATEFUL_SET } from '../common/stateful-set';
import { Validator } from '../validation/validate';
import { BoundModelCache } from './model-cache';

/** The workload that runs a model server's replicas. */
export enum WorkloadKind {
  /**
   * A Deployment with `maxSurge: 1, maxUnavailable: 0`: an update starts the new pod before the old
   * one drains (one replica keeps serving), a pod on a dead node is replaced without a force-delete,
   * and scale-down removes the pods the ReplicaSet controller ranks least useful (not Ready, newest)
   * instead of the highest ordinal. For a shared (ReadWriteMany) cache or an emptyDir: the servers
   * keep no per-replica state.
   */
  DEPLOYMENT = 'Deployment',
  /**
   * A StatefulSet (Parallel pod management, ordinal pods): needed by a per-replica claim
   * (`ModelCache.persistentClaim()`), which only a StatefulSet's claim template makes. An update
   * deletes each old pod before its replacement starts.
   */
  STATEFUL_SET = 'StatefulSet',
  /**
   * A LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): each replica a group of `nodes` pods, one per
   * node, created, restarted and rolled out as one. The kind of every service with `nodes` > 1, and
   * only of those.
   */
  LEADER_WORKER_SET = 'LeaderWorkerSet',
}

/**
 * The kind the cache needs, or the one asked for: a group (`nodes` > 1) is a LeaderWorkerSet; a
 * per-replica claim needs a StatefulSet (its claim template); every other cache defaults to a
 * Deployment, which replaces pods by surge.
 */
export function resolveWorkloadKind(
  v: Validator,
  given: WorkloadKind | undefined,
  cache: BoundModelCache,
  group: boolean,
): WorkloadKind {
  if (given !== undefined && !Object.values(WorkloadKind).includes(given))
    v.fail('workloadKind', `must be one of ${Object.values(WorkloadKind).join(', ')}`, given);
  if (group) {
    if (given !== undefined && given !== WorkloadKind.LEADER_WORKER_SET)
      v.fail(
        'workloadKind',
        'must be WorkloadKind.LEADER_WORKER_SET (or unset) with nodes > 1: only a LeaderWorkerSet runs a replica as a group of pods',
        given,
      );
    return WorkloadKind.LEADER_WORKER_SET;
  }
  if (given === WorkloadKind.LEADER_WORKER_SET)
    v.fail('workloadKind', 'needs nodes > 1: a replica on one node is a Deployment or a StatefulSet', given);
  const kind = given ?? (cache.claimTemplate ? WorkloadKind.STATEFUL_SET : WorkloadKind.DEPLOYMENT);
  if (kind === WorkloadKind.DEPLOYMENT && cache.claimTemplate) {
    v.fail(
      'workloadKind',
      'must be WorkloadKind.STATEFUL_SET with a per-replica model cache (ModelCache.persistentClaim()): only a StatefulSet makes a claim per replica; use ModelCache.sharedClaim() or emptyDir() to serve from a Deployment',
      given,
    );
  }
  return kind;
}

/**
 * How long one pod replacement of a Deployment may take before the rollout is reported failed
 * (`ProgressDeadlineExceeded`, which Argo CD shows as Degraded): the new pod's wait for the cache and
 * its time to capacity (download when per pod, then the startup budget), plus an old pod's grace
 * period. A shorter deadline fails a rollout that is only loading the model.
 */
export function progressDeadlineSeconds(o: {
  capacitySeconds: number;
  gracePeriodSeconds: number;
  cacheWaitSeconds: number;
}): number {
  return o.cacheWaitSeconds + o.capacitySeconds + o.gracePeriodSeconds;
}

/** What the serving workload is made of, whatever its kind. */
export interface ServingWorkloadObject {
  readonly kind: WorkloadKind;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  /** Undefined when autoscaled: no replicas field, so an apply never resets what the autoscaler chose. */
  readonly replicas?: number;
  readonly template: PodTemplate;
  readonly headlessServiceName: string;
  readonly cache: BoundModelCache;
  readonly progressDeadlineSeconds: number;
}

/** The serving workload: a surge Deployment, or the StatefulSet a per-replica claim needs. */
export function servingWorkloadObject(scope: Construct, o: ServingWorkloadObject): ManifestObject {
  if (o.kind === WorkloadKind.DEPLOYMENT) {
    return surgeDeployment(scope, 'Resource', {
      name: o.name,
      labels: o.labels,
      selector: o.selector,
      replicas: o.replicas,
      template: o.template.toTemplate(),
      progressDeadlineSeconds: o.progressDeadlineSeconds,
    });
  }
  return new ManifestObject(scope, 'Resource', STATEFUL_SET, {
    metadata: { name: o.name, labels: o.labels },
    spec: {
      serviceName: o.headlessServiceName,
      ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
      // Parallel only changes scaling (all replicas start at once); it is immutable, so it is
      // set from creation. Rolling updates still replace one pod at a time.
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      selector: { matchLabels: o.selector },
      template: o.template.toTemplate(),
      ...(o.cache.claimTemplate
        ? {
            volumeClaimTemplates: [
              { ...o.cache.claimTemplate, metadata: { ...o.cache.claimTemplate.metadata, labels: o.labels } },
            ],
            // A model cache is re-downloadable: delete claims with the StatefulSet or on scale-down.
            persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
          }
        : {}),
    },
  });
}
