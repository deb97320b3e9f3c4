// Makes a live export and a manifest comparable the way the server compares them: both sides get
// the defaults the server applies (pkg/apis/<group>/v1/defaults.go), the conversions it makes on
// read (serviceAccount, stringData, dataSourceRef), and lose what only the server writes (status,
// managedFields, generated Job selectors). Empty lists and maps equal absent ones, as in
// apimachinery's semantic equality, and so do the zero values of Go's non-pointer fields
// (go-fields.ts). Nothing that a user can change is dropped on one side only.
import { goDecoded } from './go-fields';

/** A Kubernetes object as parsed from YAML or JSON. */
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: any;
};

/** Facts from the old object's status that validation reads (the new object gets the old status). */
export interface StatusFacts {
  /** PVC status.phase, or undefined when the object carries no status (a manifest). */
  readonly pvcPhase?: string;
  readonly pvcCapacity?: unknown;
  /** Job status.startTime is set (the Job has started). */
  readonly jobStarted?: boolean;
  /** A CustomResourceDefinition's Established condition is True. */
  readonly crdEstablished?: boolean;
}

const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'uid',
  'generation',
  'creationTimestamp',
  'selfLink',
  'ownerReferences',
  'finalizers',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];
const SERVER_ANNOTATIONS = [
  'kubectl.kubernetes.io/last-applied-configuration',
  'deprecated.daemonset.template.generation',
  'deployment.kubernetes.io/revision',
  'pv.kubernetes.io/bind-completed',
  'pv.kubernetes.io/bound-by-controller',
  'pv.kubernetes.io/provisioned-by',
  'volume.kubernetes.io/storage-provisioner',
  'volume.beta.kubernetes.io/storage-provisioner',
  'volume.kubernetes.io/selected-node',
  'batch.kubernetes.io/job-tracking',
];
/** Labels the Job controller's strategy adds to a Job's pod template (PrepareForCreate / generateSelector). */
const JOB_GENERATED_LABELS = [
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
];

/** A deep copy of parsed JSON/YAML data (3x faster than a JSON round trip on large exports). */
export function clone<T>(x: T): T {
  if (x === null || typeof x !== 'object') return x;
  if (Array.isArray(x)) {
    const out = new Array(x.length);
    for (let i = 0; i < x.length; i++) out[i] = clone(x[i]);
    return out as unknown as T;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(x)) out[k] = clone((x as Record<string, unknown>)[k]);
  return out as T;
}

const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
/** A list field as a list: malformed input (a number where a list belongs) must not crash the guard. */
export const arr = (x: unknown): any[] => (Array.isArray(x) ? x : []);

function defaults(obj: any, values: Record<string, unknown>): void {
  if (!isObject(obj)) return;
  for (const k in values) {
    const v = values[k];
    if (obj[k] === undefined || obj[k] === null || obj[k] === '')
      obj[k] = v !== null && typeof v === 'object' ? clone(v) : v;
  }
}

/**
 * SetDefaults_Container (pkg/apis/core/v1/defaults.go) with parsers.ParseImageName: the tag is
 * `latest` when the reference has neither tag nor digest; a tag of `latest` pulls Always, even
 * next to a digest (`name:latest@sha256:...`); a bare digest or another tag pulls IfNotPresent.
 */
export function defaultPullPolicy(image: unknown): string {
  const s = String(image ?? '');
  const at = s.indexOf('@');
  const name = at < 0 ? s : s.slice(0, at);
  const last = name.slice(name.lastIndexOf('/') + 1);
  const colon = last.indexOf(':');
  const tag = colon >= 0 ? last.slice(colon + 1) : at < 0 ? 'latest' : '';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultProbe(p: any): void {
  if (!isObject(p)) return;
  defaults(p, { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });
  defaultHandler(p);
}

function defaultHandler(h: any): void {
  if (isObject(h?.httpGet)) defaults(h.httpGet, { scheme: 'HTTP' });
}

function defaultContainer(c: any): void {
  if (!isObject(c)) return;
  defaults(c, {
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: defaultPullPolicy(c.image),
  });
  for (const p of arr(c.ports)) defaults(p, { protocol: 'TCP' });
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) defaultProbe(probe);
  defaultHandler(c.lifecycle?.postStart);
  defaultHandler(c.lifecycle?.preStop);
  for (const e of arr(c.env)) {
    if (isObject(e?.valueFrom?.fieldRef)) defaults(e.valueFrom.fieldRef, { apiVersion: 'v1' });
    // Divisor is a non-pointer Quantity: the server writes its zero value, "0".
    if (isObject(e?.valueFrom?.resourceFieldRef)) defaults(e.valueFrom.resourceFieldRef, { divisor: '0' });
  }
}

const DEFAULT_MODE_SOURCES = ['secret', 'configMap', 'downwardAPI', 'projected'];

/** SetDefaults_PodSpec and the conversions of core/v1 (serviceAccount is the deprecated alias). */
export function defaultPodSpec(spec: any, pod: boolean): void {
  if (!isObject(spec)) return;
  defaults(spec, {
    dnsPolicy: 'ClusterFirst',
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    schedulerName: 'default-scheduler',
    securityContext: {},
    enableServiceLinks: true,
  });
  // The deprecated alias, both ways, as a stored object has it: Convert_v1_PodSpec_To_core_PodSpec
  // fills an empty serviceAccountName from serviceAccount (the name wins when both are set), and
  // Convert_core_PodSpec_To_v1_PodSpec writes serviceAccount = serviceAccountName back (pkg/apis/
  // core/v1/conversion.go). The stored alias is what kubectl apply keeps when a manifest drops
  // serviceAccountName (only fields in last-applied are deleted): the server fills the name back
  // from it, and the template is unchanged.
  if (!spec.serviceAccountName && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  else delete spec.serviceAccount;
  for (const list of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of arr(spec[list])) {
      defaultContainer(c);
      if (spec.hostNetwork === true) for (const p of arr(c?.ports)) defaults(p, { hostPort: p.containerPort });
      // SetDefaults_Pod (pods only, not templates): requests default to limits.
      if (pod && isObject(c?.resources?.limits)) {
        c.resources.requests = { ...c.resources.limits, ...(c.resources.requests ?? {}) };
      }
    }
  }
  for (const v of arr(spec.volumes)) {
    if (!isObject(v)) continue;
    for (const src of DEFAULT_MODE_SOURCES) if (isObject(v[src])) defaults(v[src], { defaultMode: 420 });
    if (isObject(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = '';
    if (isObject(v.ephemeral?.volumeClaimTemplate?.spec))
      defaults(v.ephemeral.volumeClaimTemplate.spec, { volumeMode: 'Filesystem' });
    for (const s of arr(v.projected?.sources)) {
      if (isObject(s?.serviceAccountToken)) defaults(s.serviceAccountToken, { expirationSeconds: 3600 });
      defaultDownwardItems(s?.downwardAPI?.items);
    }
    defaultDownwardItems(v.downwardAPI?.items);
  }
}

/**
 * `serviceAccount` where it mirrors `serviceAccountName` on both sides, as in every normalized pod
 * spec: its change is the name's change (core.PodSpec, which validation compares, has no alias),
 * so a report names it once, as serviceAccountName.
 */
export const mirroredAlias = (key: string, b: any, a: any): boolean =>
  key === 'serviceAccount' &&
  b?.serviceAccount === b?.serviceAccountName &&
  a?.serviceAccount === a?.serviceAccountName;

function defaultDownwardItems(items: unknown): void {
  for (const i of Array.isArray(items) ? items : []) {
    if (isObject(i?.fieldRef)) defaults(i.fieldRef, { apiVersion: 'v1' });
    if (isObject(i?.resourceFieldRef)) defaults(i.resourceFieldRef, { divisor: '0' });
  }
}

function defaultTemplate(t: any): void {
  if (!isObject(t)) return;
  if (isObject(t.metadata)) delete t.metadata.creationTimestamp;
  defaultPodSpec(t.spec, false);
}

/** A PVC spec as the server stores it: volumeMode, and dataSource mirrored into dataSourceRef. */
function defaultClaimSpec(spec: any): void {
  if (!isObject(spec)) return;
  defaults(spec, { volumeMode: 'Filesystem' });
  // EnforceDataSourceBackwardsCompatibility (pkg/api/persistentvolumeclaim/util.go).
  if (isObject(spec.dataSource) && !spec.dataSourceRef) spec.dataSourceRef = clone(spec.dataSource);
  else if (isObject(spec.dataSourceRef) && !spec.dataSource && !spec.dataSourceRef.namespace) {
    spec.dataSource = { ...spec.dataSourceRef };
  }
}

function claimTemplate(c: any): any {
  if (!isObject(c)) return c;
  delete c.status;
  delete c.apiVersion;
  delete c.kind;
  if (isObject(c.metadata)) for (const k of SERVER_METADATA) delete c.metadata[k];
  defaultClaimSpec(c.spec);
  return c;
}

function base64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

/** Reads the status facts validation needs before normalize drops status. */
export function statusFacts(o: KubeObject): StatusFacts {
  const s = o.status;
  if (!isObject(s)) return {};
  return {
    pvcPhase: s.phase,
    pvcCapacity: s.capacity?.storage,
    jobStarted: s.startTime !== undefined && s.startTime !== null,
    crdEstablished: arr(s.conditions).some((c: any) => c?.type === 'Established' && c?.status === 'True'),
  };
}

/** True when the object was read from the cluster rather than from a manifest. */
export function isLiveExport(o: KubeObject): boolean {
  const m = o.metadata as Record<string, unknown>;
  // kubectl writes the last-applied annotation into the cluster's copy: a sanitized export keeps it.
  const lastApplied =
    (m.annotations as Record<string, unknown> | undefined)?.['kubectl.kubernetes.io/last-applied-configuration'] !==
    undefined;
  return (
    m.uid !== undefined ||
    m.resourceVersion !== undefined ||
    m.creationTimestamp !== undefined ||
    m.managedFields !== undefined ||
    o.status !== undefined ||
    lastApplied
  );
}

/** A copy of the object as the server would store it, for comparison. */
export function normalize(obj: KubeObject, minor?: number): KubeObject {
  const o = clone(obj);
  delete o.status;
  const meta = o.metadata ?? (o.metadata = {} as any);
  for (const k of SERVER_METADATA) delete meta[k];
  if (isObject(meta.annotations)) for (const a of SERVER_ANNOTATIONS) delete meta.annotations[a];
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  const spec = o.spec;
  switch (`${group}/${o.kind}`) {
    case 'apps/StatefulSet':
      if (!isObject(spec)) break;
      defaults(spec, {
        replicas: 1,
        podManagementPolicy: 'OrderedReady',
        revisionHistoryLimit: 10,
        updateStrategy: { type: 'RollingUpdate' },
        persistentVolumeClaimRetentionPolicy: {},
      });
      if (spec.updateStrategy.type === 'RollingUpdate')
        spec.updateStrategy.rollingUpdate = { partition: 0, ...(spec.updateStrategy.rollingUpdate ?? {}) };
      defaults(spec.persistentVolumeClaimRetentionPolicy, { whenDeleted: 'Retain', whenScaled: 'Retain' });
      if (Array.isArray(spec.volumeClaimTemplates))
        spec.volumeClaimTemplates = spec.volumeClaimTemplates.map(claimTemplate);
      defaultTemplate(spec.template);
      break;
    case 'apps/Deployment':
      if (!isObject(spec)) break;
      defaults(spec, {
        replicas: 1,
        revisionHistoryLimit: 10,
        progressDeadlineSeconds: 600,
        strategy: { type: 'RollingUpdate' },
      });
      if (spec.strategy.type === 'RollingUpdate')
        defaults((spec.strategy.rollingUpdate ??= {}), { maxUnavailable: '25%', maxSurge: '25%' });
      defaultTemplate(spec.template);
      break;
    case 'apps/ReplicaSet':
      defaults(spec, { replicas: 1 });
      defaultTemplate(spec?.template);
      break;
    case 'apps/DaemonSet':
      if (!isObject(spec)) break;
      defaults(spec, { revisionHistoryLimit: 10, updateStrategy: { type: 'RollingUpdate' } });
      if (spec.updateStrategy.type === 'RollingUpdate')
        defaults((spec.updateStrategy.rollingUpdate ??= {}), { maxUnavailable: 1, maxSurge: 0 });
      defaultTemplate(spec.template);
      break;
    case 'batch/Job':
      normalizeJobSpec(spec);
      break;
    case 'batch/CronJob':
      defaults(spec, {
        concurrencyPolicy: 'Allow',
        suspend: false,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 1,
      });
      normalizeJobSpec(spec?.jobTemplate?.spec);
      break;
    case '/Pod':
      defaultPodSpec(spec, true);
      break;
    case '/PersistentVolumeClaim':
      defaultClaimSpec(spec);
      break;
    case '/PersistentVolume':
      defaults(spec, { persistentVolumeReclaimPolicy: 'Retain', volumeMode: 'Filesystem' });
      break;
    case '/Service':
      if (!isObject(spec)) break;
      defaults(spec, { type: 'ClusterIP', sessionAffinity: 'None' });
      if (spec.type !== 'ExternalName') defaults(spec, { internalTrafficPolicy: 'Cluster' });
      if (spec.type === 'NodePort' || spec.type === 'LoadBalancer')
        defaults(spec, { externalTrafficPolicy: 'Cluster' });
      if (spec.type === 'LoadBalancer') defaults(spec, { allocateLoadBalancerNodePorts: true });
      for (const p of arr(spec.ports)) if (isObject(p)) defaults(p, { protocol: 'TCP', targetPort: p.port });
      // `clusterIP: ""` and `clusterIPs: []` ask the server to keep what it allocated.
      if (spec.clusterIP === '') delete spec.clusterIP;
      if (spec.clusterIP && !spec.clusterIPs) spec.clusterIPs = [spec.clusterIP];
      if (!spec.clusterIP && Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0)
        spec.clusterIP = spec.clusterIPs[0];
      break;
    case '/Secret':
      o.type = o.type || 'Opaque';
      // Convert_v1_Secret_To_core_Secret: stringData is written into data, over any same key.
      if (isObject(o.stringData)) {
        o.data = { ...(o.data ?? {}) };
        for (const [k, v] of Object.entries(o.stringData)) o.data[k] = base64(String(v));
        delete o.stringData;
      }
      break;
    case 'storage.k8s.io/StorageClass':
      defaults(o, { reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate' });
      break;
    case 'rbac.authorization.k8s.io/RoleBinding':
    case 'rbac.authorization.k8s.io/ClusterRoleBinding':
      // SetDefaults_RoleBinding / SetDefaults_ClusterRoleBinding (pkg/apis/rbac/v1/defaults.go).
      if (isObject(o.roleRef)) defaults(o.roleRef, { apiGroup: 'rbac.authorization.k8s.io' });
      break;
    case 'scheduling.k8s.io/PriorityClass':
      defaults(o, { preemptionPolicy: 'PreemptLowerPriority' });
      break;
    case 'storage.k8s.io/CSIDriver':
      // SetDefaults_CSIDriver (pkg/apis/storage/v1/defaults.go).
      if (!isObject(spec)) break;
      defaults(spec, {
        attachRequired: true,
        podInfoOnMount: false,
        requiresRepublish: false,
        storageCapacity: false,
        fsGroupPolicy: 'ReadWriteOnceWithFSType',
      });
      if (arr(spec.volumeLifecycleModes).length === 0) spec.volumeLifecycleModes = ['Persistent'];
      break;
    default:
      break;
  }
  // A custom resource has no Go struct: "", [], {}, 0 and false are values its CRD's rules see
  // (a transition rule compares them), so only nulls (deleted by the apply's merge patch) go. (A
  // webhook that decodes one into Go types reads it as go-fields.ts says: jobset-check.ts.)
  return isBuiltInGroup(group, minor) ? goDecoded(o, o.kind) : dropNulls(o);
}

/**
 * The dotted API groups kube-apiserver serves itself, with the first minor version that serves
 * each (the 1.28 and 1.36 OpenAPI definitions list them; storagemigration.k8s.io came in
 * 1.30 as v1alpha1, KEP-4192). Groups without a dot (apps, batch, policy, autoscaling) are built in:
 * a CRD's group must contain one. Any other group, `.k8s.io` or not (snapshot.storage.k8s.io,
 * autoscaling.k8s.io, gateway.networking.k8s.io, metrics.k8s.io), is served by a CRD or an
 * aggregated server and merged as a custom resource.
 */
export const BUILT_IN_GROUPS: ReadonlyMap<string, number> = new Map([
  ...[
    'admissionregistration.k8s.io',
    'apiextensions.k8s.io',
    'apiregistration.k8s.io',
    'authentication.k8s.io',
    'authorization.k8s.io',
    'certificates.k8s.io',
    'coordination.k8s.io',
    'discovery.k8s.io',
    'events.k8s.io',
    'flowcontrol.apiserver.k8s.io',
    'internal.apiserver.k8s.io',
    'networking.k8s.io',
    'node.k8s.io',
    'rbac.authorization.k8s.io',
    'resource.k8s.io',
    'scheduling.k8s.io',
    'storage.k8s.io',
  ].map(g => [g, 28] as const),
  ['storagemigration.k8s.io', 30],
]);

/** Whether kube-apiserver of this minor version (default: any supported) serves the group; else a custom resource. */
export function isBuiltInGroup(group: string, minor = Infinity): boolean {
  if (group === '' || !group.includes('.')) return true;
  const since = BUILT_IN_GROUPS.get(group);
  return since !== undefined && since <= minor;
}

function dropNulls(x: any): any {
  if (Array.isArray(x)) return x.map(dropNulls);
  if (!isObject(x)) return x;
  for (const k of Object.keys(x)) {
    if (x[k] === null || x[k] === undefined) delete x[k];
    else x[k] = dropNulls(x[k]);
  }
  return x;
}

/**
 * SetDefaults_Job, and the selector and template labels the Job strategy generates when
 * manualSelector is not set (they carry the Job's uid, so a manifest never has them).
 */
function normalizeJobSpec(spec: any): void {
  if (!isObject(spec)) return;
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  // SetDefaults_Job: a podFailurePolicy rule's onPodConditions[].status defaults to "True".
  for (const rule of arr(spec.podFailurePolicy?.rules))
    for (const c of arr(rule?.onPodConditions)) defaults(c, { status: 'True' });
  defaults(spec, {
    parallelism: 1,
    backoffLimit: spec.backoffLimitPerIndex !== undefined ? 2147483647 : 6,
    completionMode: 'NonIndexed',
    suspend: false,
  });
  if (spec.manualSelector !== true) {
    delete spec.selector;
    const labels = spec.template?.metadata?.labels;
    if (isObject(labels)) for (const l of JOB_GENERATED_LABELS) delete labels[l];
  }
  defaultTemplate(spec.template);
}
