/**
 * Which fields the API server refuses to change on update, per kind: data, read by one generic
 * diff (diff.ts). Sources: kubernetes/kubernetes pkg/apis/<group>/validation/validation.go
 * (ValidateStatefulSetUpdate, ValidateDeploymentUpdate, ValidateJobUpdate, ValidateService,
 * ValidatePersistentVolumeClaimUpdate, ValidateSecretUpdate, ValidateConfigMapUpdate,
 * ValidateRoleBindingUpdate, ValidateStorageClassUpdate).
 */
export interface FieldRule {
  /** Dotted path from the object root, e.g. `spec.selector`. */
  readonly path: string;
  /** Children of `path` that may change; every other child is immutable. */
  readonly except?: readonly string[];
  /** Only while the old object has `immutable: true` (Secret, ConfigMap). */
  readonly whenImmutableFlag?: boolean;
  /** Only once the old object has a value (e.g. a Service's allocated clusterIP). */
  readonly onceSet?: boolean;
  /** A quantity that may grow but not shrink (PVC storage). */
  readonly mayIncrease?: boolean;
  /** The API server's words for the rejection. */
  readonly message: string;
}

export interface KindRules {
  readonly group: string;
  readonly kind: string;
  readonly fields: readonly FieldRule[];
}

const selector = (kind: string): KindRules => ({
  group: 'apps', kind, fields: [{ path: 'spec.selector', message: 'spec.selector: Invalid value: field is immutable' }],
});

export const IMMUTABLE_FIELDS: readonly KindRules[] = [
  {
    group: 'apps',
    kind: 'StatefulSet',
    fields: [{
      path: 'spec',
      except: ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds', 'revisionHistoryLimit'],
      message: "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    }],
  },
  selector('Deployment'),
  selector('ReplicaSet'),
  selector('DaemonSet'),
  {
    group: 'batch',
    kind: 'Job',
    fields: [
      { path: 'spec.selector', message: 'spec.selector: Invalid value: field is immutable' },
      { path: 'spec.template', message: 'spec.template: Invalid value: field is immutable' },
      { path: 'spec.completionMode', message: 'spec.completionMode: Invalid value: field is immutable' },
    ],
  },
  {
    group: '',
    kind: 'Service',
    fields: [
      { path: 'spec.clusterIP', onceSet: true, message: 'spec.clusterIPs[0]: Invalid value: may not change once set' },
      { path: 'spec.clusterIPs', onceSet: true, message: 'spec.clusterIPs[0]: Invalid value: may not change once set' },
    ],
  },
  {
    group: '',
    kind: 'PersistentVolumeClaim',
    fields: [
      { path: 'spec', except: ['resources', 'volumeAttributesClassName'], message: 'spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims' },
      { path: 'spec.resources.requests.storage', mayIncrease: true, message: 'spec.resources.requests.storage: Forbidden: field can not be less than previous value' },
    ],
  },
  ...['Secret', 'ConfigMap'].map(kind => ({
    group: '',
    kind,
    fields: [
      ...['data', 'stringData', 'binaryData'].map(path => ({ path, whenImmutableFlag: true, message: `${path}: Forbidden: field is immutable when \`immutable\` is set` })),
      { path: 'immutable', whenImmutableFlag: true, message: 'immutable: Forbidden: field is immutable when `immutable` is set' },
    ],
  })),
  ...['RoleBinding', 'ClusterRoleBinding'].map(kind => ({
    group: 'rbac.authorization.k8s.io',
    kind,
    fields: [{ path: 'roleRef', message: 'roleRef: Invalid value: cannot change roleRef' }],
  })),
  {
    group: 'storage.k8s.io',
    kind: 'StorageClass',
    fields: [
      { path: 'provisioner', message: 'provisioner: Forbidden: updates to provisioner are forbidden.' },
      { path: 'parameters', message: 'parameters: Forbidden: updates to parameters are forbidden.' },
      { path: 'reclaimPolicy', message: 'reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.' },
      { path: 'volumeBindingMode', message: 'volumeBindingMode: Forbidden: field is immutable' },
    ],
  },
];
