import { FLOOR_MINOR } from '../validation/kube-versions';
import { MIN_STATEFULSET_KUEUE_VERSION } from '../common/kueue';
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
  /** A PVC storage request may shrink, but not to status.capacity or below (expansion-failure recovery). */
  PVC_STORAGE_ABOVE_CAPACITY = 'pvc-storage-above-capacity',
  /** A Job template; scheduling directives of a suspended, never-started Job may change. */
  JOB_TEMPLATE = 'job-template',
  /** Job completions: immutable unless Indexed and changed in tandem with parallelism. */
  JOB_COMPLETIONS = 'job-completions',
  /** A JobSet's replicatedJobs; Kueue's scheduling fields of a suspended (old or new) JobSet may change. */
  JOBSET_REPLICATED_JOBS = 'jobset-replicated-jobs',
  /** A LeaderWorkerSet's subGroupSize: may not change, nor the subGroupPolicy be added or removed. */
  LWS_SUB_GROUP_SIZE = 'lws-sub-group-size',
  /** A LeaderWorkerSet's create checks, which its webhook runs on the new object of an update too. */
  LWS_SPEC = 'lws-spec',
  /** Service cluster IPs and IP families: may not change once set; dual-stack up/downgrade allowed. */
  SERVICE_IP_FAMILIES = 'service-ip-families',
  /**
   * A Service of type NodePort or LoadBalancer whose stored clusterIPs stay `[None]`: a headless
   * Service changed to one of these types keeps None (kubectl apply keeps the live clusterIPs, and
   * patchAllocatedValues restores an omitted clusterIP), which ValidateService refuses.
   */
  SERVICE_HEADLESS_TYPE = 'service-headless-type',
  /** Service loadBalancerClass: may not change while the type stays LoadBalancer. */
  SERVICE_LOAD_BALANCER_CLASS = 'service-load-balancer-class',
  /** A CRD's `x-kubernetes-validations` rule `self == oldSelf` at a schema path. */
  CEL_SELF_EQUALS_OLD_SELF = 'cel-self-equals-old-self',
  /** Kueue: the label `key` under `path` may not change, be added or be removed. */
  KUEUE_LABEL = 'kueue-label',
  /**
   * Kueue: a label its mutating webhook writes on create; compared only when the manifest sets it,
   * because kubectl apply keeps a label the manifest never set.
   */
  KUEUE_WEBHOOK_LABEL = 'kueue-webhook-label',
  /** Kueue: the label may not change while a pod is Ready, and may never be removed. */
  KUEUE_LABEL_WHILE_RUNNING = 'kueue-label-while-running',
  /** Kueue: the label may not be added while a pod is Ready, and may never be removed. */
  KUEUE_LABEL_ADDED_WHILE_RUNNING = 'kueue-label-added-while-running',
  /** Kueue: the label may not change unless the new object is suspended (`spec.suspend`). */
  KUEUE_LABEL_UNLESS_SUSPENDED = 'kueue-label-unless-suspended',
  /** Kueue: the label may not change unless the old and the new object are suspended. */
  KUEUE_LABEL_UNLESS_BOTH_SUSPENDED = 'kueue-label-unless-both-suspended',
  /**
   * Kueue v0.10: the pod template's queue-name label, which the mutating webhook sets to the object's
   * queue name on create and on update, may not change.
   */
  KUEUE_TEMPLATE_QUEUE_LABEL = 'kueue-template-queue-label',
  /** Kueue: the `elastic-job` annotation may not turn workload slicing on or off. */
  KUEUE_ELASTIC_JOB = 'kueue-elastic-job',
  /** Kueue: the `admission-gated-by` annotation may not be added after creation, nor gain a gate. */
  KUEUE_ADMISSION_GATES = 'kueue-admission-gates',
  /** Kueue: the prebuilt Workload's name (its annotation, else its label) may not change unless suspended. */
  KUEUE_PREBUILT_WORKLOAD = 'kueue-prebuilt-workload',
  /** Kueue: a Job's `spec.parallelism` may not change under partial admission while the old Job runs. */
  KUEUE_PARTIAL_ADMISSION = 'kueue-partial-admission',
  /** Kueue: a Job's `job-completions-equal-parallelism` may not change while the Job runs. */
  KUEUE_SYNC_COMPLETIONS = 'kueue-sync-completions',
  /** Kueue: the value at `path` may be neither added nor removed (a LeaderWorkerSet's leader template). */
  KUEUE_PRESENCE = 'kueue-presence',
  /** Kueue: a count at `path` (unset is 1) of a queued object may not change (replicas, LeaderWorkerSet size). */
  KUEUE_COUNT = 'kueue-count',
  /** Kueue: `spec.replicas` of a queued StatefulSet may change only to or from 0. */
  KUEUE_REPLICAS_TO_OR_FROM_ZERO = 'kueue-replicas-to-or-from-zero',
  /** Kueue: a scale-up from 0 is refused while pods of the scale-down still exist (`status.replicas` > 0). */
  KUEUE_SCALE_UP_WHILE_SCALING_DOWN = 'kueue-scale-up-while-scaling-down',
  /**
   * Kueue: the pod template's scheduling shape (containers' and init containers' resource requests
   * and ports, nodeSelector, affinity, tolerations, runtimeClassName, priority,
   * topologySpreadConstraints, overhead, resourceClaims) may not change.
   */
  KUEUE_POD_SHAPE = 'kueue-pod-shape',
  /** Kueue: the pod-level `resources.requests` (Kubernetes' pod-level resources) may not change. */
  KUEUE_POD_RESOURCES = 'kueue-pod-resources',
  /** A gated Pod's nodeSelector: entries may be added, not changed or removed (validateNodeSelectorMutation). */
  POD_GATED_NODE_SELECTOR = 'pod-gated-node-selector',
  /** A gated Pod's required node affinity: only additions to each existing term (validateNodeAffinityMutation). */
  POD_GATED_NODE_AFFINITY = 'pod-gated-node-affinity',
  /**
   * Immutable while the old CustomResourceDefinition is Established (status condition); an old
   * object without status (a manifest baseline) is taken to be established, as an applied CRD is.
   */
  IMMUTABLE_WHEN_ESTABLISHED = 'immutable-when-established',
  /**
   * A CRD's spec.versions must keep every version in status.storedVersions (the old status, which
   * the update keeps). A manifest baseline has no status: its storage version is taken to be stored.
   */
  CRD_STORED_VERSIONS = 'crd-stored-versions',
  /** A value that is set may not become unset (nil). */
  NOT_UNSET = 'not-unset',
  /** A value that is set may not become the empty string. */
  NOT_EMPTIED = 'not-emptied',
}

/** What "running" means to a Kueue webhook, where a rule depends on it. */
export enum KueueRunning {
  /**
   * A pod is Ready: the old object's `status.readyReplicas` > 0 (StatefulSet, LeaderWorkerSet). A
   * manifest baseline has no status: the object is taken to be running.
   */
  READY_REPLICAS = 'ready-replicas',
  /**
   * The new object is not suspended (`spec.suspend`; Job, JobSet). From a manifest baseline, a queued
   * object, which Kueue suspends and resumes, is taken to be admitted and running.
   */
  NOT_SUSPENDED = 'not-suspended',
}

/**
 * Kueue releases a rule applies to, inclusive. Kueue backports checks to patch releases, so a
 * range starts at a patch (`0.NN.P`) and ends at a patch or at the end of a release line (`0.NN`).
 */
export interface KueueVersionRange {
  /** The first release, e.g. `0.9.4`. */
  readonly from: string;
  /** The last release, e.g. `0.12.8`, or `0.9` for every patch of the 0.9 line. @default every newer release */
  readonly to?: string;
}

export interface FieldRule {
  /** Dotted path from the object root, e.g. `spec.selector`. */
  readonly path: string;
  readonly check: GuardCheck;
  /** Children of `path` that may change (IMMUTABLE_EXCEPT, PVC_SPEC). */
  readonly except?: readonly string[];
  /**
   * Dotted paths below `path` that may go from unset to set (IMMUTABLE_EXCEPT): the server clears
   * them on the new object before comparing when the old object lacks them and has their parent.
   */
  readonly settableFromNil?: readonly string[];
  /** The path the server names in its message, when it is not `path`. */
  readonly reportPath?: string;
  /** First server minor version (`1.NN`) the rule applies to. @default the library's floor, 1.32 */
  readonly since?: string;
  /** Last server minor version the rule applies to. @default every newer version */
  readonly until?: string;
  /** A map key under `path` (label keys contain dots, so they are not part of the path). */
  readonly key?: string;
  /**
   * Set on the rules of Kueue's admission webhooks (kueue-rules.ts): the Kueue releases that enforce
   * the rule, applied only on the Kueue version given to the guard, and only to an object that has,
   * or had, the label `kueue.x-k8s.io/queue-name`, unless `everyObject` is set.
   * @default not a Kueue rule: the API server's own
   */
  readonly kueue?: readonly KueueVersionRange[];
  /**
   * A Kueue rule that applies to every object of its kind, queued or not: the webhook checks it
   * without asking whether Kueue manages the object (Job, JobSet and LeaderWorkerSet labels; a
   * StatefulSet's replicas on the releases before the isManagedByKueue check).
   * @default false
   */
  readonly everyObject?: boolean;
  /**
   * What "running" means to the Kueue rule.
   * @default KueueRunning.READY_REPLICAS
   */
  readonly kueueRunning?: KueueRunning;
  /** The Kubernetes (or Kueue) function the rule comes from. */
  readonly source: string;
  /** The API server's words for the rejection on the versions this rule covers. */
  readonly message: string;
  /** What to do, when it is particular to the rule; otherwise the remedy of the object's kind. @default by kind */
  readonly remedy?: string;
  /** The finding's code. @default `immutable-field` */
  readonly code?: string;
}

export interface KindRules {
  readonly group: string;
  readonly kind: string;
  /** Empty for kinds the guard knows to be fully mutable (CronJob). */
  readonly fields: readonly FieldRule[];
}

/** The oldest server the guard answers for: the library's API floor. */
export const MIN_SERVER_VERSION = `1.${FLOOR_MINOR}`;
/** The newest server whose rules the table was checked against; newer servers get these rules. */
export const MAX_SERVER_VERSION = '1.35';

const STS_ALLOWED = [
  'replicas',
  'ordinals',
  'template',
  'updateStrategy',
  'persistentVolumeClaimRetentionPolicy',
  'minReadySeconds',
];
const STS = 'ValidateStatefulSetUpdate (pkg/apis/apps/validation/validation.go)';
const IMMUTABLE_MSG = (path: string) => `${path}: Invalid value: {value}: field is immutable`;

const selector = (kind: string, strategy: string): KindRules => ({
  group: 'apps',
  kind,
  fields: [
    {
      path: 'spec.selector',
      check: GuardCheck.IMMUTABLE,
      source: `${strategy} ValidateUpdate: apivalidation.ValidateImmutableField on spec.selector for apps/v1`,
      message: IMMUTABLE_MSG('spec.selector'),
    },
  ],
});

/** PersistentVolumeSpec fields outside PersistentVolumeSource (core/types.go). */
const PV_NON_SOURCE = [
  'capacity',
  'accessModes',
  'claimRef',
  'persistentVolumeReclaimPolicy',
  'storageClassName',
  'mountOptions',
  'volumeMode',
  'nodeAffinity',
  'volumeAttributesClassName',
];

const VAC_PATH = 'spec.volumeAttributesClassName';
/**
 * volumeAttributesClassName (PersistentVolumeSpec and PersistentVolumeClaimSpec) by the state of
 * the VolumeAttributesClass feature gate: absent before 1.29; alpha (off) in 1.29-1.30, beta and
 * off by default in 1.31-1.33, GA (on) from 1.34. With the gate off a new value is dropped when
 * the old object has none (DropDisabledFields), and any change of a set value is refused; the
 * validation options turn on for an old object that has a class, so it may also not be unset
 * (nor, for a claim, emptied).
 */
function volumeAttributesClassRules(source: string, claim: boolean): FieldRule[] {
  const unset: FieldRule = {
    path: VAC_PATH,
    check: GuardCheck.NOT_UNSET,
    source,
    message: `${VAC_PATH}: Forbidden: update from non-nil value to nil is forbidden`,
  };
  const emptied: FieldRule = {
    path: VAC_PATH,
    check: GuardCheck.NOT_EMPTIED,
    source,
    message: `${VAC_PATH}: Forbidden: update from non-nil value to an empty string is forbidden`,
  };
  return [
    {
      path: VAC_PATH,
      check: GuardCheck.IMMUTABLE_ONCE_SET,
      until: '1.33',
      source: `${source}, VolumeAttributesClass gate off by default`,
      message: `${VAC_PATH}: Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled`,
    },
    unset,
    ...(claim ? [emptied] : []),
  ];
}

const CRD =
  'validateCustomResourceDefinitionSpecUpdate (apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go)';
const JOB = 'ValidateJobSpecUpdate (pkg/apis/batch/validation/validation.go)';

const OWN_RULES: readonly KindRules[] = [
  {
    group: 'apps',
    kind: 'StatefulSet',
    fields: [
      {
        path: 'spec',
        check: GuardCheck.IMMUTABLE_EXCEPT,
        except: STS_ALLOWED,
        until: '1.32',
        source: STS,
        message:
          "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      },
      {
        // revisionHistoryLimit became mutable after kubernetes#130263 (first in 1.33).
        path: 'spec',
        check: GuardCheck.IMMUTABLE_EXCEPT,
        except: [...STS_ALLOWED, 'revisionHistoryLimit'],
        since: '1.33',
        source: STS,
        message:
          "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
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
        path: 'spec',
        check: GuardCheck.POD_SPEC,
        source: 'ValidatePodUpdate (pkg/apis/core/validation/validation.go)',
        message:
          'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
      },
      {
        path: 'spec.tolerations',
        check: GuardCheck.POD_TOLERATIONS,
        source: 'validateOnlyAddedTolerations (pkg/apis/core/validation/validation.go)',
        message: 'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
      },
      {
        path: 'spec.activeDeadlineSeconds',
        check: GuardCheck.POD_ACTIVE_DEADLINE,
        source: 'ValidatePodUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec.activeDeadlineSeconds: Invalid value: {value}: {detail}',
      },
      {
        path: 'spec.schedulingGates',
        check: GuardCheck.POD_SCHEDULING_GATES,
        source: 'validateOnlyDeletedSchedulingGates (pkg/apis/core/validation/validation.go)',
        message: "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate '{detail}'",
      },
      // KEP-3838 (PodSchedulingReadiness, beta and on in 1.27, GA 1.30): while the old pod has
      // scheduling gates, nodeSelector and nodeAffinity may be narrowed; POD_SPEC leaves them to these rules.
      {
        path: 'spec.nodeSelector',
        check: GuardCheck.POD_GATED_NODE_SELECTOR,
        source: 'ValidatePodUpdate / validateNodeSelectorMutation (pkg/apis/core/validation/validation.go)',
        message:
          'spec.nodeSelector: Invalid value: {value}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',
      },
      {
        path: 'spec.affinity.nodeAffinity',
        check: GuardCheck.POD_GATED_NODE_AFFINITY,
        source: 'ValidatePodUpdate / validateNodeAffinityMutation (pkg/apis/core/validation/validation.go)',
        message: '{path}: Invalid value: {value}: {detail}',
      },
    ],
  },
  {
    group: '',
    kind: 'PersistentVolume',
    fields: [
      {
        // "if oldPV does not have ControllerExpandSecretRef then allow it to be set".
        path: 'spec',
        check: GuardCheck.IMMUTABLE_EXCEPT,
        except: PV_NON_SOURCE,
        settableFromNil: ['csi.controllerExpandSecretRef'],
        reportPath: 'spec.persistentvolumesource',
        source: 'ValidatePersistentVolumeUpdate (pkg/apis/core/validation/validation.go)',
        message: 'spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation',
      },
      {
        path: 'spec.volumeMode',
        reportPath: 'volumeMode',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidatePersistentVolumeUpdate',
        message: IMMUTABLE_MSG('volumeMode'),
      },
      {
        path: 'spec.nodeAffinity',
        reportPath: 'nodeAffinity',
        check: GuardCheck.IMMUTABLE_ONCE_SET,
        source: 'ValidatePersistentVolumeUpdate / validatePvNodeAffinity',
        message: IMMUTABLE_MSG('nodeAffinity'),
      },
      ...volumeAttributesClassRules('ValidatePersistentVolumeUpdate (pkg/apis/core/validation/validation.go)', false),
    ],
  },
  {
    group: '',
    kind: 'PersistentVolumeClaim',
    fields: [
      {
        // VolumeAttributesClass: the class may be changed like the size.
        path: 'spec',
        check: GuardCheck.PVC_SPEC,
        except: ['volumeAttributesClassName'],
        source: 'ValidatePersistentVolumeClaimUpdate (pkg/apis/core/validation/validation.go)',
        message:
          'spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      },
      ...volumeAttributesClassRules(
        'ValidatePersistentVolumeClaimUpdate (pkg/apis/core/validation/validation.go)',
        true,
      ),
      {
        // RecoverVolumeExpansionFailure is on by default from 1.32 (beta): a request may drop back
        // to just above the capacity the volume actually has.
        path: 'spec.resources.requests.storage',
        check: GuardCheck.PVC_STORAGE_ABOVE_CAPACITY,
        source: 'ValidatePersistentVolumeClaimUpdate',
        message: 'spec.resources.requests.storage: Forbidden: field can not be less than status.capacity',
      },
    ],
  },
  {
    group: 'batch',
    kind: 'Job',
    fields: [
      { path: 'spec.selector', check: GuardCheck.IMMUTABLE, source: JOB, message: IMMUTABLE_MSG('spec.selector') },
      {
        path: 'spec.template',
        check: GuardCheck.JOB_TEMPLATE,
        source: `${JOB} / validatePodTemplateUpdate`,
        message: IMMUTABLE_MSG('spec.template'),
      },
      {
        path: 'spec.completions',
        check: GuardCheck.JOB_COMPLETIONS,
        source: `${JOB} / validateCompletions`,
        message: 'spec.completions: Invalid value: {value}: {detail}',
      },
      {
        path: 'spec.completionMode',
        check: GuardCheck.IMMUTABLE,
        source: JOB,
        message: IMMUTABLE_MSG('spec.completionMode'),
      },
      {
        path: 'spec.podFailurePolicy',
        check: GuardCheck.IMMUTABLE,
        source: JOB,
        message: IMMUTABLE_MSG('spec.podFailurePolicy'),
      },
      {
        path: 'spec.backoffLimitPerIndex',
        check: GuardCheck.IMMUTABLE,
        source: JOB,
        message: IMMUTABLE_MSG('spec.backoffLimitPerIndex'),
      },
      {
        path: 'spec.successPolicy',
        check: GuardCheck.IMMUTABLE,
        source: JOB,
        message: IMMUTABLE_MSG('spec.successPolicy'),
      },
      {
        path: 'spec.managedBy',
        check: GuardCheck.IMMUTABLE,
        source: JOB,
        message: IMMUTABLE_MSG('spec.managedBy'),
      },
    ],
  },
  // ValidateCronJobUpdate checks no field for immutability: a CronJob's jobTemplate may change.
  { group: 'batch', kind: 'CronJob', fields: [] },
  {
    group: '',
    kind: 'Service',
    fields: [
      {
        path: 'spec',
        check: GuardCheck.SERVICE_IP_FAMILIES,
        source:
          'ValidateServiceUpdate / validateServiceClusterIPsRelatedFields (pkg/apis/core/validation/validation.go)',
        message: '{path}: Invalid value: {value}: may not change once set',
      },
      {
        path: 'spec.clusterIPs',
        check: GuardCheck.SERVICE_HEADLESS_TYPE,
        source:
          'ValidateService / validateServiceClusterIPsRelatedFields (pkg/apis/core/validation/validation.go), after patchAllocatedValues (pkg/registry/core/service/storage/storage.go)',
        message: 'spec.clusterIPs[0]: Invalid value: "None": may not be set to \'None\' for {detail} services',
      },
      {
        path: 'spec.loadBalancerClass',
        check: GuardCheck.SERVICE_LOAD_BALANCER_CLASS,
        source: 'ValidateServiceUpdate / validateLoadBalancerClassField',
        message: 'spec.loadBalancerClass: Invalid value: {value}: may not change once set',
      },
    ],
  },
  {
    group: '',
    kind: 'Secret',
    fields: [
      {
        path: 'type',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateSecretUpdate (pkg/apis/core/validation/validation.go)',
        message: IMMUTABLE_MSG('type'),
      },
      {
        path: 'data',
        check: GuardCheck.IMMUTABLE_WHEN_FLAGGED,
        source: 'ValidateSecretUpdate',
        message: 'data: Forbidden: field is immutable when `immutable` is set',
      },
      {
        path: 'immutable',
        check: GuardCheck.IMMUTABLE_WHEN_FLAGGED,
        source: 'ValidateSecretUpdate',
        message: 'immutable: Forbidden: field is immutable when `immutable` is set',
      },
    ],
  },
  {
    group: '',
    kind: 'ConfigMap',
    fields: ['data', 'binaryData', 'immutable'].map(path => ({
      path,
      check: GuardCheck.IMMUTABLE_WHEN_FLAGGED,
      source: 'ValidateConfigMapUpdate (pkg/apis/core/validation/validation.go)',
      message: `${path}: Forbidden: field is immutable when \`immutable\` is set`,
    })),
  },
  ...['RoleBinding', 'ClusterRoleBinding'].map(kind => ({
    group: 'rbac.authorization.k8s.io',
    kind,
    fields: [
      {
        path: 'roleRef',
        check: GuardCheck.IMMUTABLE,
        source: `Validate${kind}Update (pkg/apis/rbac/validation/validation.go)`,
        message: 'roleRef: Invalid value: {value}: cannot change roleRef',
      },
    ],
  })),
  {
    group: 'storage.k8s.io',
    kind: 'StorageClass',
    fields: [
      {
        path: 'parameters',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateStorageClassUpdate (pkg/apis/storage/validation/validation.go)',
        message: 'parameters: Forbidden: updates to parameters are forbidden.',
      },
      {
        path: 'provisioner',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateStorageClassUpdate',
        message: 'provisioner: Forbidden: updates to provisioner are forbidden.',
      },
      {
        path: 'reclaimPolicy',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateStorageClassUpdate',
        message: 'reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.',
      },
      {
        path: 'volumeBindingMode',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateStorageClassUpdate',
        message: IMMUTABLE_MSG('volumeBindingMode'),
      },
    ],
  },
  {
    group: 'apiextensions.k8s.io',
    kind: 'CustomResourceDefinition',
    fields: [
      // "these affects the resource name, which is always immutable"
      ...['spec.group', 'spec.names.plural'].map(path => ({
        path,
        check: GuardCheck.IMMUTABLE,
        source: CRD,
        message: IMMUTABLE_MSG(path),
      })),
      {
        path: 'spec.versions',
        check: GuardCheck.CRD_STORED_VERSIONS,
        source:
          'ValidateCustomResourceDefinitionUpdate / ValidateCustomResourceDefinitionStoredVersions (apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go); the strategy keeps the old status',
        message: 'status.storedVersions[{detail}]: Invalid value: {value}: must appear in spec.versions',
        remedy:
          'keep the version in spec.versions (served: false is enough) until no object is stored in it: rewrite every object in the current storage version (a storage version migration, or a no-op update of each), then remove the version from status.storedVersions (kubectl patch crd <name> --subresource=status --type=merge), then apply',
      },
      // "these effect the storage and cannot be changed therefore" (only once established)
      ...['spec.scope', 'spec.names.kind'].map(path => ({
        path,
        check: GuardCheck.IMMUTABLE_WHEN_ESTABLISHED,
        source: `${CRD}, when established`,
        message: IMMUTABLE_MSG(path),
      })),
    ],
  },
  {
    // From 1.28 (kubernetes#116209) only these two are immutable; podInfoOnMount and fsGroupPolicy may change.
    group: 'storage.k8s.io',
    kind: 'CSIDriver',
    fields: [
      {
        path: 'spec.attachRequired',
        reportPath: 'spec.attachedRequired',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateCSIDriverUpdate (pkg/apis/storage/validation/validation.go)',
        message: IMMUTABLE_MSG('spec.attachedRequired'),
      },
      {
        path: 'spec.volumeLifecycleModes',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateCSIDriverUpdate (pkg/apis/storage/validation/validation.go)',
        message: IMMUTABLE_MSG('spec.volumeLifecycleModes'),
      },
    ],
  },
  {
    group: 'networking.k8s.io',
    kind: 'IngressClass',
    fields: [
      {
        path: 'spec.controller',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidateIngressClassUpdate (pkg/apis/networking/validation/validation.go)',
        message: IMMUTABLE_MSG('spec.controller'),
      },
    ],
  },
  {
    group: 'scheduling.k8s.io',
    kind: 'PriorityClass',
    fields: [
      {
        path: 'value',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidatePriorityClassUpdate (pkg/apis/scheduling/validation/validation.go)',
        message: 'value: Forbidden: may not be changed in an update.',
      },
      {
        path: 'preemptionPolicy',
        check: GuardCheck.IMMUTABLE,
        source: 'ValidatePriorityClassUpdate',
        message: IMMUTABLE_MSG('preemptionPolicy'),
      },
    ],
  },
  // Loaded here, after GuardCheck exists: jobset-rules.ts and lws-rules.ts read it.
  (require('./jobset-rules') as typeof import('./jobset-rules')).JOBSET_RULES,
  (require('./lws-rules') as typeof import('./lws-rules')).LWS_RULES,
];

/** Each kind's rules: the API server's and its webhooks', then Kueue's (kueue-rules.ts). */
export const IMMUTABLE_FIELDS: readonly KindRules[] = (() => {
  const { KUEUE_RULES } = require('./kueue-rules') as typeof import('./kueue-rules');
  const same = (a: KindRules, b: KindRules) => a.group === b.group && a.kind === b.kind;
  return [
    ...OWN_RULES.map(k => {
      const extra = KUEUE_RULES.find(q => same(q, k));
      return extra ? { ...k, fields: [...k.fields, ...extra.fields] } : k;
    }),
    ...KUEUE_RULES.filter(q => !OWN_RULES.some(k => same(q, k))),
  ];
})();

/** `1.NN` as NN, or undefined when not a Kubernetes minor version. @internal */
export function minorOf(version: string): number | undefined {
  const m = /^v?1\.(\d{1,3})(?:\.\d+)?$/.exec(String(version).trim());
  return m ? Number(m[1]) : undefined;
}

/** The oldest Kueue with a StatefulSet integration (kubernetes-sigs/kueue#3001): its rules are modelled too. */
export const MIN_KUEUE_VERSION = '0.9';
/**
 * The Kueue the guard assumes when not told: the library's floor for StatefulSets (v0.10, where
 * `pod-group-serving` exists; on v0.9 their rolling updates stall, kueue#3690).
 */
export const DEFAULT_KUEUE_VERSION = MIN_STATEFULSET_KUEUE_VERSION;
/** The newest Kueue release the Kueue rules were read from; newer releases get its rules. */
export const MAX_KUEUE_VERSION = '0.19.2';

/**
 * `0.NN[.P]` as [NN, P]; a release line without a patch stands for its newest patch (patch
 * releases only ever added checks), undefined when not a Kueue version. @internal
 */
export function kueueVersionOf(version: string): [number, number] | undefined {
  const m = /^v?0\.(\d{1,3})(?:\.(\d{1,3}))?$/.exec(String(version).trim());
  return m ? [Number(m[1]), m[2] === undefined ? Infinity : Number(m[2])] : undefined;
}

const cmp = (a: [number, number], b: [number, number]) => a[0] - b[0] || (a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1);
const inKueue = (v: [number, number], ranges: readonly KueueVersionRange[]) =>
  ranges.some(r => cmp(v, kueueVersionOf(r.from)!) >= 0 && (r.to === undefined || cmp(v, kueueVersionOf(r.to)!) <= 0));

/** The rules that apply on a server of this minor version, with this Kueue. @internal */
export function rulesFor(
  minor: number,
  kueue: [number, number] = kueueVersionOf(DEFAULT_KUEUE_VERSION)!,
): Map<string, readonly FieldRule[]> {
  const out = new Map<string, readonly FieldRule[]>();
  for (const k of IMMUTABLE_FIELDS) {
    out.set(
      `${k.group}/${k.kind}`,
      k.fields.filter(
        r =>
          (r.since === undefined || minor >= minorOf(r.since)!) &&
          (r.until === undefined || minor <= minorOf(r.until)!) &&
          (r.kueue === undefined || inKueue(kueue, r.kueue)),
      ),
    );
  }
  return out;
}
