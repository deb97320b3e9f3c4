// Makes a live export and a manifest comparable: drops what the server adds (status,
// managedFields, resourceVersion, uid, ...) and fills the defaults it applies, so that an
// unchanged object reports nothing.

/** A Kubernetes object as parsed from YAML or JSON. */
export type KubeObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown }; [k: string]: any };

const SERVER_METADATA = ['managedFields', 'resourceVersion', 'uid', 'generation', 'creationTimestamp', 'selfLink', 'ownerReferences', 'finalizers', 'deletionTimestamp', 'deletionGracePeriodSeconds'];

/** Values a server fills into pod templates when the manifest leaves them out. */
const POD_DEFAULTS: Record<string, unknown> = {
  dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30,
};
const CONTAINER_DEFAULTS: Record<string, unknown> = { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' };
const PROBE_DEFAULTS: Record<string, unknown> = { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 };

function clone<T>(x: T): T {
  return x === undefined ? x : JSON.parse(JSON.stringify(x));
}

function dropDefaults(obj: any, defaults: Record<string, unknown>): void {
  if (!obj) return;
  for (const [k, v] of Object.entries(defaults)) if (JSON.stringify(obj[k]) === JSON.stringify(v)) delete obj[k];
}

function isEmptyObject(x: unknown): boolean {
  return x !== null && typeof x === 'object' && !Array.isArray(x) && Object.keys(x as object).length === 0;
}

/** Pod template defaults, removed from both sides where they equal the default. */
function normalizePodTemplate(t: any, jobTemplate: boolean): void {
  if (!t) return;
  if (t.metadata) {
    delete t.metadata.creationTimestamp;
    if (jobTemplate && t.metadata.labels) {
      for (const k of ['controller-uid', 'job-name', 'batch.kubernetes.io/controller-uid', 'batch.kubernetes.io/job-name']) delete t.metadata.labels[k];
    }
  }
  const spec = t.spec;
  if (!spec) return;
  dropDefaults(spec, jobTemplate ? { ...POD_DEFAULTS, restartPolicy: spec.restartPolicy } : POD_DEFAULTS);
  if (isEmptyObject(spec.securityContext)) delete spec.securityContext;
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
    dropDefaults(c, CONTAINER_DEFAULTS);
    if (isEmptyObject(c.resources)) delete c.resources;
    for (const p of c.ports ?? []) if (p.protocol === 'TCP') delete p.protocol;
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      dropDefaults(probe, PROBE_DEFAULTS);
      if (probe?.httpGet?.scheme === 'HTTP') delete probe.httpGet.scheme;
    }
    for (const e of c.env ?? []) if (e.valueFrom?.fieldRef?.apiVersion === 'v1') delete e.valueFrom.fieldRef.apiVersion;
  }
  for (const v of spec.volumes ?? []) {
    for (const src of [v.secret, v.configMap, v.downwardAPI, v.projected]) if (src?.defaultMode === 420) delete src.defaultMode;
  }
}

function normalizeClaim(c: any): any {
  const out = clone(c);
  delete out.status;
  delete out.apiVersion;
  delete out.kind;
  if (out.metadata) for (const k of SERVER_METADATA) delete out.metadata[k];
  if (out.spec?.volumeMode === 'Filesystem') delete out.spec.volumeMode;
  return out;
}

/** A copy of the object with server-added fields removed and defaults made explicit or dropped. */
export function normalize(obj: KubeObject): KubeObject {
  const o = clone(obj);
  delete o.status;
  for (const k of SERVER_METADATA) delete o.metadata[k];
  const annotations = o.metadata.annotations as Record<string, string> | undefined;
  if (annotations) {
    delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
    delete annotations['deprecated.daemonset.template.generation'];
  }
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  switch (`${group}/${o.kind}`) {
    case 'apps/StatefulSet':
      o.spec = o.spec ?? {};
      o.spec.podManagementPolicy = o.spec.podManagementPolicy ?? 'OrderedReady';
      if (o.spec.volumeClaimTemplates) o.spec.volumeClaimTemplates = o.spec.volumeClaimTemplates.map(normalizeClaim);
      normalizePodTemplate(o.spec.template, false);
      break;
    case 'apps/Deployment':
    case 'apps/ReplicaSet':
    case 'apps/DaemonSet':
      normalizePodTemplate(o.spec?.template, false);
      break;
    case 'batch/Job':
      normalizePodTemplate(o.spec?.template, true);
      if (o.spec) o.spec.completionMode = o.spec.completionMode ?? 'NonIndexed';
      break;
    case '/PersistentVolumeClaim':
      if (o.spec?.volumeMode === 'Filesystem') delete o.spec.volumeMode;
      break;
    default:
      break;
  }
  return o;
}

/**
 * Fields a server fills on create and keeps when a later manifest omits them: a manifest that
 * leaves them out does not change them, so the live value stands in for the missing one.
 */
export const SERVER_FILLED: Record<string, readonly string[]> = {
  'batch/Job': ['spec.selector'],
  '/PersistentVolumeClaim': ['spec.volumeName', 'spec.storageClassName'],
  '/Service': ['spec.clusterIP', 'spec.clusterIPs'],
};
