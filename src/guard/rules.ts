/**
 * What the API server refuses on update, per kind and per server version: data, read by one
 * generic engine (engine.ts). Each rule names the Kubernetes function it comes from so a reader can
 * check it in kubernetes/kubernetes (pkg/apis/<group>/validation/validation.go and the registry
 * strategies under pkg/registry/). Messages are the server's words for that version; `{value}`
 * stands for the new value (as JSON; Go prints structs as Go literals).
 */

/** How a rule compares the old and the new value at its path. */
export enum GuardCheck {
  /** The value at `path` may not change (apiequality.Semantic.DeepEqual). */
  IMMUTABLE = 'immutable',
  /** Every child of `path` except those in `except` may not change. */
  IMMUTABLE_EXCEPT = 'immutable-except',
  /** May be set once: a change is refused only when the old object has a value. */
  IMMUTABLE_ONCE_SET = 'immutable-once-set',
  /** Only while the old object has `immutable: true` (Secret, ConfigMap). */
  IMMUTABLE_WHEN_FLAGGED = 'immutable-when-flagged',
  /** A Pod spec: only images, activeDeadlineSeconds, added tolerations and a few others change. */
  POD_SPEC = 'pod-spec',
  /** Pod tolerations: existing ones may not be removed or changed (except tolerationSeconds). */
  POD_TOLERATIONS = 'pod-tolerations',
  /** Pod activeDeadlineSeconds: may be set or lowered, never raised or unset. */
  POD_ACTIVE_DEADLINE = 'pod-active-deadline',
  /** Pod schedulingGates: gates may be removed, never added. */
  POD_SCHEDULING_GATES = 'pod-scheduling-gates',
  /** A PVC spec: volumeName once, storageClassName from unset, storage of a bound claim. */
  PVC_SPEC = 'pvc-spec',
  /** A PVC storage request may not shrink. */
  PVC_STORAGE_SHRINK = 'pvc-storage-shrink',
  /** A PVC storage request may shrink, but not to status.capacity or below (expansion-failure recovery). */
  PVC_STORAGE_ABOVE_CAPACITY = 'pvc-storage-above-capacity',
  /** A Job template; scheduling directives of a suspended, never-started Job may change. */
  JOB_TEMPLATE = 'job-template',
  /** Job completions: immutable unless Indexed and changed in tandem with parallelism. */
  JOB_COMPLETIONS = 'job-completions',
  /** Service cluster IPs and IP families: may not change once set; dual-stack up/downgrade allowed. */
  SERVICE_IP_FAMILIES = 'service-ip-families',
  /** Service loadBalancerClass: may not change while the type stays LoadBalancer. */
  SERVICE_LOAD_BALANCER_CLASS = 'service-load-balancer-class',
  /** A CRD's `x-kubernetes-validations` rule `self == oldSelf` at a schema path. */
  CEL_SELF_EQUALS_OLD_SELF = 'cel-self-equals-old-self',
}

export interface FieldRule {
  /** Dotted path from the object root, e.g. `spec.selector`. */
  readonly path: string;
  readonly check: GuardCheck;
  /** Children of `path` that may change (IMMUTABLE_EXCEPT, PVC_SPEC). */
  readonly except?: readonly string[];
  /** The path the server names in its message, when it is not `path`. */
  readonly reportPath?: string;
  /** First server minor version (`1.NN`) the rule applies to. @default the library's floor, 1.28 */
  readonly since?: string;
  /** Last server minor version the rule applies to. @default every newer version */
  readonly until?: string;
  /** The Kubernetes function the rule comes from. */
  readonly source: string;
  /** The API server's words for the rejection on the versions this rule covers. */
  readonly message: string;
}

export interface KindRules {
  readonly group: string;
  readonly kind: string;
  /** Empty for kinds the guard knows to be fully mutable (CronJob). */
  readonly fields: readonly FieldRule[];
}

/** The oldest server the guard answers for: the library's API floor. */
export const MIN_SERVER_VERSION = '1.28';
/** The newest server whose rules the table was checked against; newer servers get these rules. */
export const MAX_SERVER_VERSION = '1.35';

const STS_ALLOWED = ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];
const STS = 'ValidateStatefulSetUpdate (pkg/apis/apps/validation/validation.go)';
const IMMUTABLE_MSG = (path: string) => `${path}: Invalid value: {value}: field is immutable`;

const selector = (kind: string, strategy: string): KindRules => ({
  group: 'apps',
  kind,
  fields: [{
    path: 'spec.selector', check: GuardCheck.IMMUTABLE,
    source: `${strategy} ValidateUpdate: apivalidation.ValidateImmutableField on spec.selector for apps/v1`,
    message: IMMUTABLE_MSG('spec.selector'),
  }],
});

/** PersistentVolumeSpec fields outside PersistentVolumeSource (core/types.go). */
const PV_NON_SOURCE = ['capacity', 'accessModes', 'claimRef', 'persistentVolumeReclaimPolicy', 'storageClassName', 'mountOptions', 'volumeMode', 'nodeAffinity', 'volumeAttributesClassName'];

const JOB = 'ValidateJobSpecUpdate (pkg/apis/batch/validation/validation.go)';

export const IMMUTABLE_FIELDS: readonly KindRules[] = [
  {
    group: 'apps',
    kind: 'StatefulSet',
    fields: [
      {
        path: 'spec', check: GuardCheck.IMMUTABLE_EXCEPT, except: STS_ALLOWED, until: '1.32', source: STS,
        message: "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      },
      {
        // revisionHistoryLimit became mutable after kubernetes#130263 (first in 1.33).
        path: 'spec', check: GuardCheck.IMMUTABLE_EXCEPT, except: [...STS_ALLOWED, 'revisionHistoryLimit'], since: '1.33', source: STS,
        message: "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      },
    ],
  },
  selector('Deployment', 'pkg/registry/apps/deployment/strategy.go'),
  selector('ReplicaSet', 'pkg/registry/apps/replicaset/strategy.go'),
  selector('DaemonSet', 'pkg/registry/apps/daemonset/strategy.go'),
  {
    group: '',
    kind: 'Pod',
    fields: [
      {
        path: 'spec', check: GuardCheck.POD_SPEC, source: 'ValidatePodUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
      },
      {
        path: 'spec.tolerations', check: GuardCheck.POD_TOLERATIONS, source: 'validateOnlyAddedTolerations (pkg/apis/core/validation/validation.go)',
        message: 'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
      },
      {
        path: 'spec.activeDeadlineSeconds', check: GuardCheck.POD_ACTIVE_DEADLINE, source: 'ValidatePodUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec.activeDeadlineSeconds: Invalid value: {value}: {detail}',
      },
      {
        path: 'spec.schedulingGates', check: GuardCheck.POD_SCHEDULING_GATES, source: 'validateOnlyDeletedSchedulingGates (pkg/apis/core/validation/validation.go)',
        message: "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate '{detail}'",
      },
    ],
  },
  {
    group: '',
    kind: 'PersistentVolume',
    fields: [
      {
        path: 'spec', check: GuardCheck.IMMUTABLE_EXCEPT, except: PV_NON_SOURCE, reportPath: 'spec.persistentvolumesource',
        source: 'ValidatePersistentVolumeUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation',
      },
      { path: 'spec.volumeMode', reportPath: 'volumeMode', check: GuardCheck.IMMUTABLE, source: 'ValidatePersistentVolumeUpdate', message: IMMUTABLE_MSG('volumeMode') },
      { path: 'spec.nodeAffinity', reportPath: 'nodeAffinity', check: GuardCheck.IMMUTABLE_ONCE_SET, source: 'ValidatePersistentVolumeUpdate / validatePvNodeAffinity', message: IMMUTABLE_MSG('nodeAffinity') },
    ],
  },
  {
    group: '',
    kind: 'PersistentVolumeClaim',
    fields: [
      {
        path: 'spec', check: GuardCheck.PVC_SPEC, until: '1.28', source: 'ValidatePersistentVolumeClaimUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec: Forbidden: spec is immutable after creation except resources.requests for bound claims',
      },
      {
        // VolumeAttributesClass (1.29+): the class may be changed like the size.
        path: 'spec', check: GuardCheck.PVC_SPEC, except: ['volumeAttributesClassName'], since: '1.29', source: 'ValidatePersistentVolumeClaimUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      },
      {
        path: 'spec.resources.requests.storage', check: GuardCheck.PVC_STORAGE_SHRINK, until: '1.31', source: 'ValidatePersistentVolumeClaimUpdate',
        message: 'spec.resources.requests.storage: Forbidden: field can not be less than previous value',
      },
      {
        // RecoverVolumeExpansionFailure is on by default from 1.32 (beta): a request may drop back
        // to just above the capacity the volume actually has.
        path: 'spec.resources.requests.storage', check: GuardCheck.PVC_STORAGE_ABOVE_CAPACITY, since: '1.32', source: 'ValidatePersistentVolumeClaimUpdate',
        message: 'spec.resources.requests.storage: Forbidden: field can not be less than status.capacity',
      },
    ],
  },
  {
    group: 'batch',
    kind: 'Job',
    fields: [
      { path: 'spec.selector', check: GuardCheck.IMMUTABLE, source: JOB, message: IMMUTABLE_MSG('spec.selector') },
      { path: 'spec.template', check: GuardCheck.JOB_TEMPLATE, source: `${JOB} / validatePodTemplateUpdate`, message: IMMUTABLE_MSG('spec.template') },
      { path: 'spec.completions', check: GuardCheck.JOB_COMPLETIONS, source: `${JOB} / validateCompletions`, message: 'spec.completions: Invalid value: {value}: {detail}' },
      { path: 'spec.completionMode', check: GuardCheck.IMMUTABLE, source: JOB, message: IMMUTABLE_MSG('spec.completionMode') },
      { path: 'spec.podFailurePolicy', check: GuardCheck.IMMUTABLE, source: JOB, message: IMMUTABLE_MSG('spec.podFailurePolicy') },
      // Alpha (dropped on write) in 1.28; beta and on from 1.29.
      { path: 'spec.backoffLimitPerIndex', check: GuardCheck.IMMUTABLE, since: '1.29', source: JOB, message: IMMUTABLE_MSG('spec.backoffLimitPerIndex') },
      // JobSuccessPolicy: beta and on from 1.31.
      { path: 'spec.successPolicy', check: GuardCheck.IMMUTABLE, since: '1.31', source: JOB, message: IMMUTABLE_MSG('spec.successPolicy') },
      // JobManagedBy: beta and on from 1.32.
      { path: 'spec.managedBy', check: GuardCheck.IMMUTABLE, since: '1.32', source: JOB, message: IMMUTABLE_MSG('spec.managedBy') },
    ],
  },
  // ValidateCronJobUpdate checks no field for immutability: a CronJob's jobTemplate may change.
  { group: 'batch', kind: 'CronJob', fields: [] },
  {
    group: '',
    kind: 'Service',
    fields: [
      {
        path: 'spec', check: GuardCheck.SERVICE_IP_FAMILIES, source: 'ValidateServiceUpdate / validateServiceClusterIPsRelatedFields (pkg/apis/core/validation/validation.go)',
        message: '{path}: Invalid value: {value}: may not change once set',
      },
      {
        path: 'spec.loadBalancerClass', check: GuardCheck.SERVICE_LOAD_BALANCER_CLASS, source: 'ValidateServiceUpdate / validateLoadBalancerClassField',
        message: 'spec.loadBalancerClass: Invalid value: {value}: may not change once set',
      },
    ],
  },
  {
    group: '',
    kind: 'Secret',
    fields: [
      { path: 'type', check: GuardCheck.IMMUTABLE, source: 'ValidateSecretUpdate (pkg/apis/core/validation/validation.go)', message: IMMUTABLE_MSG('type') },
      { path: 'data', check: GuardCheck.IMMUTABLE_WHEN_FLAGGED, source: 'ValidateSecretUpdate', message: 'data: Forbidden: field is immutable when `immutable` is set' },
      { path: 'immutable', check: GuardCheck.IMMUTABLE_WHEN_FLAGGED, source: 'ValidateSecretUpdate', message: 'immutable: Forbidden: field is immutable when `immutable` is set' },
    ],
  },
  {
    group: '',
    kind: 'ConfigMap',
    fields: ['data', 'binaryData', 'immutable'].map(path => ({
      path, check: GuardCheck.IMMUTABLE_WHEN_FLAGGED, source: 'ValidateConfigMapUpdate (pkg/apis/core/validation/validation.go)',
      message: `${path}: Forbidden: field is immutable when \`immutable\` is set`,
    })),
  },
  ...['RoleBinding', 'ClusterRoleBinding'].map(kind => ({
    group: 'rbac.authorization.k8s.io',
    kind,
    fields: [{
      path: 'roleRef', check: GuardCheck.IMMUTABLE, source: `Validate${kind}Update (pkg/apis/rbac/validation/validation.go)`,
      message: 'roleRef: Invalid value: {value}: cannot change roleRef',
    }],
  })),
  {
    group: 'storage.k8s.io',
    kind: 'StorageClass',
    fields: [
      { path: 'parameters', check: GuardCheck.IMMUTABLE, source: 'ValidateStorageClassUpdate (pkg/apis/storage/validation/validation.go)', message: 'parameters: Forbidden: updates to parameters are forbidden.' },
      { path: 'provisioner', check: GuardCheck.IMMUTABLE, source: 'ValidateStorageClassUpdate', message: 'provisioner: Forbidden: updates to provisioner are forbidden.' },
      { path: 'reclaimPolicy', check: GuardCheck.IMMUTABLE, source: 'ValidateStorageClassUpdate', message: 'reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.' },
      { path: 'volumeBindingMode', check: GuardCheck.IMMUTABLE, source: 'ValidateStorageClassUpdate', message: IMMUTABLE_MSG('volumeBindingMode') },
    ],
  },
  {
    group: 'networking.k8s.io',
    kind: 'IngressClass',
    fields: [{ path: 'spec.controller', check: GuardCheck.IMMUTABLE, source: 'ValidateIngressClassUpdate (pkg/apis/networking/validation/validation.go)', message: IMMUTABLE_MSG('spec.controller') }],
  },
  {
    group: 'scheduling.k8s.io',
    kind: 'PriorityClass',
    fields: [
      { path: 'value', check: GuardCheck.IMMUTABLE, source: 'ValidatePriorityClassUpdate (pkg/apis/scheduling/validation/validation.go)', message: 'value: Forbidden: may not be changed in an update.' },
      { path: 'preemptionPolicy', check: GuardCheck.IMMUTABLE, source: 'ValidatePriorityClassUpdate', message: IMMUTABLE_MSG('preemptionPolicy') },
    ],
  },
];

/** `1.NN` as NN, or undefined when not a Kubernetes minor version. @internal */
export function minorOf(version: string): number | undefined {
  const m = /^v?1\.(\d{1,3})(?:\.\d+)?$/.exec(String(version).trim());
  return m ? Number(m[1]) : undefined;
}

/** The rules that apply on a server of this minor version. @internal */
export function rulesFor(minor: number): Map<string, readonly FieldRule[]> {
  const out = new Map<string, readonly FieldRule[]>();
  for (const k of IMMUTABLE_FIELDS) {
    out.set(`${k.group}/${k.kind}`, k.fields.filter(r => (r.since === undefined || minor >= minorOf(r.since)!) && (r.until === undefined || minor <= minorOf(r.until)!)));
  }
  return out;
}
