// What decoding JSON into the Go API types does to a value, as data: which fields are Go maps,
// value (non-pointer) structs, value bools and integers, and pointer strings. Go's equality on the
// decoded values (apimachinery's equality.Semantic.DeepEqual, pkg/api/equality/semantic.go, over
// the reflect fork in third_party/forked/golang/reflect/deep_equal.go) then says:
// - a value field's zero (`false`, `0`, `""`, a struct of zeros) decodes to the same Go value as an
//   absent field: `hostNetwork: false` is no change;
// - a pointer field set to its zero is not nil: `backoffLimit: 0`, `shareProcessNamespace: false`,
//   `securityContext: {}` and `completionMode: ""` each differ from an absent field;
// - a nil and an empty slice or map are equal;
// - resource.Quantity compares by value (equal.ts).
//
// Read from the Go types (`*T` or not) of k8s.io/api v0.36.0, which kubernetes-sigs/jobset v0.12.0
// builds against, checked against v0.35.4 for every field listed: core/v1/types.go (PodSpec,
// Container, Probe, ContainerPort, the volume sources, PersistentVolumeSpec,
// PersistentVolumeClaimSpec, ServiceSpec), apps/v1/types.go, batch/v1/types.go (JobSpec,
// PodFailurePolicyOnExitCodesRequirement); and sigs.k8s.io/jobset v0.12.0
// api/jobset/v1alpha2/jobset_types.go (ReplicatedJob). The tables name the fields of those types
// whose zero Go decodes otherwise than the default here, which is: a field they do not name is
// compared as it is, except a string, whose `""` is a non-pointer's zero (almost every Go string
// field is one). (A Service port's `port` and `targetPort` are left out: the server refuses a 0
// port, and SetDefaults_Service replaces a 0 targetPort with the port.)
//
// A field is named with the places it has that Go type: the JSON key of the object that holds it
// (of the list, for a list's items), or the last two keys (`spec.csi`: a PersistentVolume's CSI
// source, whose readOnly is a bool, where a pod volume's `volumes.csi` has a *bool). Objects are
// walked from a root named by their kind (`PersistentVolumeClaim.spec`), a JobSet's replicated Jobs
// from `spec.replicatedJobs`. `'*'` is every place.

import { quantityNanos } from './equal';

type Places = '*' | readonly string[];

const CONTAINERS = ['containers', 'initContainers', 'ephemeralContainers'];
const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'];
/** PersistentVolumeClaimSpec: a PVC's own, a StatefulSet's claim templates', an ephemeral volume's. */
const CLAIM_SPECS = ['PersistentVolumeClaim.spec', 'volumeClaimTemplates.spec', 'volumeClaimTemplate.spec'];

/** Go maps: their keys are data, and an empty one is nil. */
export const GO_MAPS: Readonly<Record<string, Places>> = {
  labels: '*',
  annotations: '*',
  matchLabels: '*',
  nodeSelector: '*',
  data: '*',
  stringData: '*',
  binaryData: '*',
  limits: '*',
  requests: '*',
  parameters: '*',
  capacity: '*',
  volumeAttributes: '*',
  attributes: '*',
  overhead: '*',
  allocatedResources: '*',
  // ServiceSpec.Selector map[string]string; elsewhere a selector is a *LabelSelector.
  selector: ['Service.spec'],
  // FlexVolumeSource.Options map[string]string; PodDNSConfig.Options is a list.
  options: ['flexVolume'],
  userAnnotations: ['podCertificate'],
};

/** Structs held by value: one whose fields are all zero is the same as none. */
export const GO_VALUE_STRUCTS: Readonly<Record<string, Places>> = {
  metadata: '*', // ObjectMeta in every template and object
  spec: '*',
  status: '*',
  template: '*', // PodTemplateSpec, JobTemplateSpec (ReplicatedJob.Template)
  jobTemplate: ['spec'],
  updateStrategy: '*',
  strategy: '*',
  // Container.Resources and PersistentVolumeClaimSpec.Resources; PodSpec.Resources (pod-level) is a pointer.
  resources: [...CONTAINERS, ...CLAIM_SPECS],
  podAffinityTerm: ['preferredDuringSchedulingIgnoredDuringExecution'],
  preference: ['preferredDuringSchedulingIgnoredDuringExecution'],
};

/** bool and integer fields that are not pointers: `false` and `0` equal absent. */
export const GO_VALUE_SCALARS: Readonly<Record<string, Places>> = {
  // PodSpec (bool); ShareProcessNamespace, HostUsers, AutomountServiceAccountToken, EnableServiceLinks are *bool.
  hostNetwork: ['spec'],
  hostPID: ['spec'],
  hostIPC: ['spec'],
  stdin: CONTAINERS,
  stdinOnce: CONTAINERS,
  tty: CONTAINERS,
  containerPort: ['ports'],
  hostPort: ['ports'],
  nodePort: ['ports'], // ServicePort
  // Probe (int32); its terminationGracePeriodSeconds is *int64.
  initialDelaySeconds: PROBES,
  timeoutSeconds: PROBES,
  periodSeconds: PROBES,
  successThreshold: PROBES,
  failureThreshold: PROBES,
  port: ['grpc', 'httpGet', 'tcpSocket'], // int32, and IntOrString held by value (zero: 0)
  seconds: ['sleep'],
  maxSkew: ['topologySpreadConstraints'],
  weight: ['preferredDuringSchedulingIgnoredDuringExecution'],
  // VolumeMount and most volume sources (bool); AzureDiskVolumeSource and CSIVolumeSource have *bool,
  // CSIPersistentVolumeSource a bool.
  readOnly: [
    'volumeMounts',
    'awsElasticBlockStore',
    'azureFile',
    'cephfs',
    'cinder',
    'fc',
    'flexVolume',
    'gcePersistentDisk',
    'glusterfs',
    'iscsi',
    'nfs',
    'persistentVolumeClaim',
    'portworxVolume',
    'quobyte',
    'rbd',
    'scaleIO',
    'storageos',
    'spec.csi',
  ],
  lun: ['iscsi'], // FCVolumeSource.Lun is *int32
  partition: ['awsElasticBlockStore', 'gcePersistentDisk'], // a StatefulSet rollingUpdate's is *int32
  chapAuthDiscovery: ['iscsi'],
  chapAuthSession: ['iscsi'],
  sslEnabled: ['scaleIO'],
  generation: ['metadata'],
  // apps/v1 DeploymentSpec, StatefulSetSpec, DaemonSetSpec, ReplicaSetSpec; their replicas are *int32.
  minReadySeconds: ['spec'],
  paused: ['spec'],
  start: ['ordinals'],
  // ServiceSpec (a JobSet's network.publishNotReadyAddresses is *bool).
  publishNotReadyAddresses: ['spec'],
  healthCheckNodePort: ['spec'],
  // jobset ReplicatedJob.Replicas int32 (the CRD defaults an absent one to 1).
  replicas: ['replicatedJobs'],
};

/** resource.Quantity held by value: `0` equals absent (EmptyDirVolumeSource.SizeLimit is a pointer). */
export const GO_VALUE_QUANTITIES: Readonly<Record<string, Places>> = {
  divisor: ['resourceFieldRef'],
};

/** String fields that are pointers: `""` differs from absent. */
export const GO_POINTER_STRINGS: Readonly<Record<string, Places>> = {
  storageClassName: CLAIM_SPECS, // PersistentVolumeSpec.StorageClassName is a string
  volumeAttributesClassName: '*',
  volumeMode: ['spec'],
  loadBalancerClass: '*',
  runtimeClassName: '*',
  managedBy: '*',
  podReplacementPolicy: '*',
  preemptionPolicy: '*',
  timeZone: '*',
  completionMode: ['spec'], // JobSpec
  hostnameOverride: ['spec'], // PodSpec
  internalTrafficPolicy: ['spec'],
  ipFamilyPolicy: ['spec'],
  trafficDistribution: ['spec'],
  appProtocol: ['ports'],
  restartPolicy: CONTAINERS, // Container.RestartPolicy; PodSpec's and ContainerResizePolicy's are strings
  stopSignal: ['lifecycle'],
  mountPropagation: ['volumeMounts'],
  recursiveReadOnly: ['volumeMounts'],
  procMount: ['securityContext'],
  fsGroupChangePolicy: ['securityContext'],
  seLinuxChangePolicy: ['securityContext'],
  supplementalGroupsPolicy: ['securityContext'],
  localhostProfile: ['seccompProfile', 'appArmorProfile'],
  gmsaCredentialSpec: ['windowsOptions'],
  gmsaCredentialSpecName: ['windowsOptions'],
  runAsUserName: ['windowsOptions'],
  nodeAffinityPolicy: ['topologySpreadConstraints'],
  nodeTaintsPolicy: ['topologySpreadConstraints'],
  resourceClaimName: ['resourceClaims'],
  resourceClaimTemplateName: ['resourceClaims'],
  podGroupName: ['schedulingGroup'],
  service: ['grpc'],
  value: ['options'], // PodDNSConfigOption
  type: ['hostPath'], // HostPathVolumeSource.Type *HostPathType
  apiGroup: ['dataSource', 'dataSourceRef'],
  namespace: ['dataSourceRef'],
  name: ['clusterTrustBundle'],
  signerName: ['clusterTrustBundle'],
  fsType: ['azureDisk', 'volumes.csi', 'local'], // CSIPersistentVolumeSource.FSType is a string
  kind: ['azureDisk'],
  cachingMode: ['azureDisk'],
  initiatorName: ['iscsi'],
  endpointsNamespace: ['glusterfs'],
  secretNamespace: ['azureFile'],
  containerName: ['onExitCodes'], // batch/v1 PodFailurePolicyOnExitCodesRequirement
  succeededIndexes: ['rules'], // batch/v1 SuccessPolicyRule
};

interface Compiled {
  readonly all: boolean;
  readonly one: ReadonlySet<string>;
  readonly two: ReadonlySet<string>;
}

function compile(table: Readonly<Record<string, Places>>): Map<string, Compiled> {
  const out = new Map<string, Compiled>();
  for (const [field, places] of Object.entries(table)) {
    const list = places === '*' ? [] : places;
    out.set(field, {
      all: places === '*',
      one: new Set(list.filter(p => !p.includes('.'))),
      two: new Set(list.filter(p => p.includes('.'))),
    });
  }
  return out;
}

const MAPS = compile(GO_MAPS);
const VALUE_STRUCTS = compile(GO_VALUE_STRUCTS);
const VALUE_SCALARS = compile(GO_VALUE_SCALARS);
const VALUE_QUANTITIES = compile(GO_VALUE_QUANTITIES);
const POINTER_STRINGS = compile(GO_POINTER_STRINGS);

/** Whether `field`, held by the object at key `holder` inside the one at key `outer`, is in the table. */
function named(table: Map<string, Compiled>, field: string, holder: string, outer: string): boolean {
  const c = table.get(field);
  if (c === undefined) return false;
  return c.all || c.one.has(holder) || (c.two.size > 0 && c.two.has(`${outer}.${holder}`));
}

const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);

/**
 * The value as Go compares it after decoding, in place: removes nulls and empty lists everywhere,
 * empty Go maps and value structs, the zero of value bools, integers and quantities, and `""` of
 * non-pointer strings. A map's entries are data and stay (`token: ""`). `holder` is the key of the
 * value (a kind for a whole object), `outer` the key above it.
 */
export function goDecoded(x: any, holder: string, outer = ''): any {
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) x[i] = goDecoded(x[i], holder, outer);
    return x;
  }
  if (!isObject(x)) return x;
  for (const k of Object.keys(x)) {
    const raw = x[k];
    const map = isObject(raw) && named(MAPS, k, holder, outer);
    const v = map ? mapEntries(raw) : goDecoded(raw, k, holder);
    if (isZero(v, map, k, holder, outer)) delete x[k];
    else x[k] = v;
  }
  return x;
}

/** Whether a decoded field's value is one Go does not tell from an absent field. */
function isZero(v: unknown, map: boolean, k: string, holder: string, outer: string): boolean {
  if (v === null || v === undefined) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) return Object.keys(v).length === 0 && (map || named(VALUE_STRUCTS, k, holder, outer));
  if (v === '') return !named(POINTER_STRINGS, k, holder, outer);
  if ((v === false || v === 0) && named(VALUE_SCALARS, k, holder, outer)) return true;
  return (typeof v === 'string' || typeof v === 'number') && named(VALUE_QUANTITIES, k, holder, outer)
    ? quantityNanos(v) === 0n
    : false;
}

/** A Go map's entries are data: only nulls (a merge patch's deletions) go. */
function mapEntries(x: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(x)) if (x[k] === null || x[k] === undefined) delete x[k];
  return x;
}
