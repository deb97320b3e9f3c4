// Facts about Kubernetes kinds the library's checks share: data, one home each.

/** Kinds without a namespace: two of them clash by name alone. */
const CLUSTER_SCOPED: ReadonlySet<string> = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'RuntimeClass',
  'IngressClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'CSIDriver',
  'VolumeSnapshotClass',
  'ClusterQueue',
  'ResourceFlavor',
  'APIService',
]);

export function isClusterScoped(kind: string): boolean {
  return CLUSTER_SCOPED.has(kind);
}

/** Where the built-in kinds that run pods hold their pod spec: kind, then API group ('' for v1). */
const POD_SPEC_PATHS: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>> = new Map([
  ['Pod', new Map([['', ['spec']]])],
  ['PodTemplate', new Map([['', ['template', 'spec']]])],
  ['ReplicationController', new Map([['', ['spec', 'template', 'spec']]])],
  ['Deployment', new Map([['apps', ['spec', 'template', 'spec']]])],
  ['StatefulSet', new Map([['apps', ['spec', 'template', 'spec']]])],
  ['DaemonSet', new Map([['apps', ['spec', 'template', 'spec']]])],
  ['ReplicaSet', new Map([['apps', ['spec', 'template', 'spec']]])],
  ['Job', new Map([['batch', ['spec', 'template', 'spec']]])],
  ['CronJob', new Map([['batch', ['spec', 'jobTemplate', 'spec', 'template', 'spec']]])],
]);

/**
 * Built-in kinds that never hold a pod template. Any other kind (a custom resource such as a
 * JobSet or a LeaderWorkerSet) may embed pod templates anywhere, so it is searched whole.
 */
const PODLESS_KINDS: ReadonlySet<string> = new Set([
  'Service',
  'ServiceAccount',
  'ConfigMap',
  'Secret',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
  'PodDisruptionBudget',
  'PersistentVolumeClaim',
  'PersistentVolume',
  'StorageClass',
  'Namespace',
  'NetworkPolicy',
  'Ingress',
  'IngressClass',
  'PriorityClass',
  'RuntimeClass',
  'HorizontalPodAutoscaler',
  'ServiceMonitor',
  'ScaledObject',
  'LimitRange',
  'ResourceQuota',
  'Endpoints',
  'EndpointSlice',
]);

/** The API group of an apiVersion: '' for the core group (`v1`). */
export function apiGroupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/**
 * Where an object's pods are: the pod spec of a built-in kind that runs pods, the whole object
 * for a kind that may embed pod templates anywhere, nothing for a kind that never holds one.
 */
export function podsOf(json: { apiVersion?: unknown; kind?: unknown }): { podSpec?: unknown; anywhere?: unknown } {
  const kind = String(json.kind);
  if (PODLESS_KINDS.has(kind)) return {};
  const path = POD_SPEC_PATHS.get(kind)?.get(apiGroupOf(String(json.apiVersion)));
  if (!path) return { anywhere: json };
  let node: unknown = json;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return {};
    node = (node as Record<string, unknown>)[key];
  }
  return node !== null && typeof node === 'object' ? { podSpec: node } : {};
}
