// What `kubectl get -o yaml` returns for an applied manifest, written from the server's side
// (core/v1, apps/v1, batch/v1 and storage/v1 defaults.go, the registry strategies and admission
// plugins) and independent of the guard's own normalize.ts, so the tests can catch it missing one.

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
const setDefault = (o: any, k: string, v: unknown) => {
  if (o[k] === undefined || o[k] === null || o[k] === '') o[k] = v;
};

/** resource.Quantity's canonical form, as the server writes it back. */
export function canonicalQuantity(q: unknown): string {
  const s = String(q);
  const m = /^([0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/.exec(s);
  if (!m) return s;
  const n = Number(m[1]);
  const unit = m[2] ?? '';
  if (/i$/.test(unit)) {
    const units = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    let v = n * 1024 ** units.indexOf(unit);
    let i = 0;
    while (i < units.length - 1 && v % 1024 === 0 && v >= 1024) {
      v /= 1024;
      i++;
    }
    return Number.isInteger(v) ? `${v}${units[i]}` : s;
  }
  const exps: Record<string, number> = { m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
  const milli = Math.round(n * 10 ** (exps[unit] + 3));
  const si = ['m', '', 'k', 'M', 'G', 'T', 'P', 'E'];
  let v = milli;
  let i = 0;
  while (i < si.length - 1 && v % 1000 === 0 && v !== 0) {
    v /= 1000;
    i++;
  }
  return `${v}${si[i]}`;
}

function quantities(resources: any): void {
  for (const k of ['limits', 'requests']) {
    if (isObject(resources?.[k]))
      for (const r of Object.keys(resources[k])) resources[k][r] = canonicalQuantity(resources[k][r]);
  }
}

/** SetDefaults_Container over parsers.ParseImageName: `name:latest@sha256:...` keeps the tag latest (Always). */
function pullPolicy(image: string): string {
  const [name, digest] = image.split('@');
  const last = name.slice(name.lastIndexOf('/') + 1);
  if (!last.includes(':')) return digest === undefined ? 'Always' : 'IfNotPresent';
  return last.endsWith(':latest') ? 'Always' : 'IfNotPresent';
}

function liveContainer(c: any): void {
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  setDefault(c, 'imagePullPolicy', pullPolicy(c.image));
  if (c.resources === undefined) c.resources = {};
  quantities(c.resources);
  for (const p of c.ports ?? []) setDefault(p, 'protocol', 'TCP');
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
    if (!probe) continue;
    setDefault(probe, 'timeoutSeconds', 1);
    setDefault(probe, 'periodSeconds', 10);
    setDefault(probe, 'successThreshold', 1);
    setDefault(probe, 'failureThreshold', 3);
    if (probe.httpGet) setDefault(probe.httpGet, 'scheme', 'HTTP');
  }
  for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) setDefault(e.valueFrom.fieldRef, 'apiVersion', 'v1');
}

function livePodSpec(spec: any): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'enableServiceLinks', true);
  // The deprecated alias the server writes next to serviceAccountName (core/v1 conversion).
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) liveContainer(c);
  for (const v of spec.volumes ?? []) {
    for (const src of ['secret', 'configMap', 'downwardAPI', 'projected'])
      if (v[src]) setDefault(v[src], 'defaultMode', 420);
    if (v.emptyDir?.sizeLimit) v.emptyDir.sizeLimit = canonicalQuantity(v.emptyDir.sizeLimit);
  }
}

function liveTemplate(t: any): void {
  t.metadata = { ...(t.metadata ?? {}), creationTimestamp: null };
  livePodSpec(t.spec);
}

function liveClaimSpec(spec: any): void {
  setDefault(spec, 'volumeMode', 'Filesystem');
  if (spec.dataSource && !spec.dataSourceRef) spec.dataSourceRef = clone(spec.dataSource);
  quantities(spec.resources);
}

export interface LiveOptions {
  /** The Job has started (status.startTime set). @default true */
  readonly jobStarted?: boolean;
  /** The PVC phase. @default 'Bound' */
  readonly pvcPhase?: string;
}

/** The manifest as the cluster returns it after `kubectl apply`. */
export function liveExport(manifest: any, options: LiveOptions = {}): any {
  const live = clone(manifest);
  const uid = `uid-${live.metadata.name}`;
  live.metadata = {
    ...live.metadata,
    namespace: live.metadata.namespace ?? 'ml',
    uid,
    resourceVersion: '81234',
    generation: 4,
    creationTimestamp: '2026-11-01T10:00:00Z',
    managedFields: [
      {
        manager: 'kubectl-client-side-apply',
        operation: 'Update',
        apiVersion: live.apiVersion,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': {} },
      },
    ],
    annotations: {
      ...(live.metadata.annotations ?? {}),
      'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(manifest),
    },
  };
  const spec = live.spec;
  switch (live.kind) {
    case 'StatefulSet':
      setDefault(spec, 'replicas', 1);
      setDefault(spec, 'podManagementPolicy', 'OrderedReady');
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'updateStrategy', { type: 'RollingUpdate' });
      if (spec.updateStrategy.type === 'RollingUpdate')
        spec.updateStrategy.rollingUpdate = { partition: 0, ...(spec.updateStrategy.rollingUpdate ?? {}) };
      setDefault(spec, 'persistentVolumeClaimRetentionPolicy', { whenDeleted: 'Retain', whenScaled: 'Retain' });
      spec.volumeClaimTemplates = (spec.volumeClaimTemplates ?? []).map((t: any) => {
        const out = {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          ...t,
          metadata: { ...t.metadata, creationTimestamp: null },
          status: { phase: 'Pending' },
        };
        liveClaimSpec(out.spec);
        return out;
      });
      liveTemplate(spec.template);
      live.status = {
        replicas: spec.replicas,
        readyReplicas: spec.replicas,
        availableReplicas: spec.replicas,
        currentRevision: `${live.metadata.name}-7d9`,
        updateRevision: `${live.metadata.name}-7d9`,
        observedGeneration: 4,
        collisionCount: 0,
      };
      break;
    case 'Deployment':
      setDefault(spec, 'replicas', 1);
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'progressDeadlineSeconds', 600);
      setDefault(spec, 'strategy', {
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' },
      });
      live.metadata.annotations['deployment.kubernetes.io/revision'] = '3';
      liveTemplate(spec.template);
      live.status = { replicas: spec.replicas, observedGeneration: 4 };
      break;
    case 'Job': {
      setDefault(spec, 'parallelism', 1);
      if (spec.completions === undefined && manifest.spec.parallelism === undefined) spec.completions = 1;
      setDefault(spec, 'backoffLimit', 6);
      setDefault(spec, 'completionMode', 'NonIndexed');
      setDefault(spec, 'suspend', false);
      setDefault(spec, 'podReplacementPolicy', 'TerminatingOrFailed');
      // The Job strategy's generated selector and the labels it adds to the template.
      spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
      spec.template.metadata = { ...(spec.template.metadata ?? {}) };
      spec.template.metadata.labels = {
        ...(spec.template.metadata.labels ?? {}),
        'batch.kubernetes.io/controller-uid': uid,
        'batch.kubernetes.io/job-name': live.metadata.name,
        'controller-uid': uid,
        'job-name': live.metadata.name,
      };
      live.metadata.labels = {
        ...(live.metadata.labels ?? {}),
        'batch.kubernetes.io/controller-uid': uid,
        'batch.kubernetes.io/job-name': live.metadata.name,
        'controller-uid': uid,
        'job-name': live.metadata.name,
      };
      liveTemplate(spec.template);
      live.status =
        options.jobStarted === false
          ? {}
          : { startTime: '2026-11-01T10:00:01Z', active: 1, ready: 0, uncountedTerminatedPods: {} };
      break;
    }
    case 'CronJob':
      setDefault(spec, 'concurrencyPolicy', 'Allow');
      setDefault(spec, 'suspend', false);
      setDefault(spec, 'successfulJobsHistoryLimit', 3);
      setDefault(spec, 'failedJobsHistoryLimit', 1);
      spec.jobTemplate.metadata = { creationTimestamp: null, ...(spec.jobTemplate.metadata ?? {}) };
      setDefault(spec.jobTemplate.spec, 'backoffLimit', 6);
      liveTemplate(spec.jobTemplate.spec.template);
      live.status = { lastScheduleTime: '2026-11-01T10:00:00Z' };
      break;
    case 'Service': {
      setDefault(spec, 'type', 'ClusterIP');
      setDefault(spec, 'sessionAffinity', 'None');
      const headless = spec.clusterIP === 'None';
      setDefault(spec, 'clusterIP', '10.96.12.34');
      if (!spec.clusterIPs || spec.clusterIPs.length === 0) spec.clusterIPs = [spec.clusterIP];
      spec.ipFamilies = spec.ipFamilies?.length ? spec.ipFamilies : ['IPv4'];
      setDefault(spec, 'ipFamilyPolicy', 'SingleStack');
      setDefault(spec, 'internalTrafficPolicy', 'Cluster');
      for (const p of spec.ports ?? []) {
        setDefault(p, 'protocol', 'TCP');
        setDefault(p, 'targetPort', p.port);
      }
      if (headless) spec.clusterIPs = ['None'];
      live.status = { loadBalancer: {} };
      break;
    }
    case 'PersistentVolumeClaim':
      liveClaimSpec(spec);
      setDefault(spec, 'storageClassName', 'standard');
      spec.volumeName = spec.volumeName || `pvc-${uid}`;
      live.metadata.annotations['pv.kubernetes.io/bind-completed'] = 'yes';
      live.metadata.finalizers = ['kubernetes.io/pvc-protection'];
      live.status =
        options.pvcPhase === 'Pending'
          ? { phase: 'Pending' }
          : { phase: 'Bound', accessModes: spec.accessModes, capacity: { storage: spec.resources.requests.storage } };
      break;
    case 'StorageClass':
      setDefault(live, 'reclaimPolicy', 'Delete');
      setDefault(live, 'volumeBindingMode', 'Immediate');
      delete live.metadata.namespace;
      break;
    case 'Secret':
      setDefault(live, 'type', 'Opaque');
      if (live.stringData) {
        live.data = { ...(live.data ?? {}) };
        for (const [k, v] of Object.entries(live.stringData)) live.data[k] = Buffer.from(String(v)).toString('base64');
        delete live.stringData;
      }
      break;
    case 'PodDisruptionBudget':
      live.status = {
        currentHealthy: 1,
        desiredHealthy: 1,
        disruptionsAllowed: 0,
        expectedPods: 1,
        observedGeneration: 4,
      };
      break;
    case 'ServiceAccount':
    case 'Role':
    case 'RoleBinding':
    case 'ConfigMap':
    default:
      break;
  }
  return live;
}

export const list = (items: any[]) => ({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items });
