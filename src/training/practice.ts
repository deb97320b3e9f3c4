import { ApiObject, Duration, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { configKey } from '../common/env';
import { checkGpusPerNode } from '../common/gpu';
import { contentHash } from '../common/hash';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_NAME } from '../common/labels';
import { KIND, ManifestObject } from '../common/manifest-object';
import { workloadNetworkPolicy } from '../common/network-policy';
import { GpuWorkloadProps } from '../common/pod-options';
import { nonRootUserEnv, scratchSpace } from '../common/scratch';
import { ProcessIdentity, resolveProcessIdentity } from '../common/security';
import { buildWorkloadPod, GPU_WORKLOAD_PROP_KEYS, OwnedEnv, WorkloadPod } from '../common/workload-pod';
import { INT32_MAX, Validator } from '../validation/validate';
import {
  Rdma,
  RdmaPodParts,
  rdmaExtendedResources,
  rdmaNeedsRoot,
  requireRootForRdma,
  resolveRdma,
} from '../common/rdma';
import { findTorchrunConflict, shutdownTimeoutSeconds, torchrunProgram } from './rendezvous';

// The training practice both backends share (GpuTrainingStatefulSet, GpuTrainingJob): the props
// every trainer takes, their checks, the launcher and its torchrun checks, RDMA and the identity it
// needs, gpuConfig, /dev/shm, the non-root home, Kueue's labels, and the pod built from them. A
// backend file holds only what differs: its rank wiring, its storage, its controller object.

/** PyTorch's conventional rendezvous port (torch.distributed and torchrun default). */
export const DEFAULT_MASTER_PORT = 29500;
/** /dev/shm per GPU: a quarter of the memory default; shm counts against the memory limit. */
export const DEFAULT_SHM_GIB_PER_GPU = 4;
/** Time to write a checkpoint of a multi-GB model to network storage after SIGTERM. */
export const DEFAULT_TRAINING_GRACE_SECONDS = 300;
/** Where the pod's writable home and caches live when it does not run as root. */
export const TRAINING_HOME = '/home/trainer';
/** The user name the pod reports in USER when it does not run as root. */
const TRAINING_USER = 'trainer';
/** The trainer container's name, in both backends. */
export const TRAINER_CONTAINER = 'trainer';
/** The component label of training pods. */
export const TRAINING_COMPONENT = 'training';
/** The name of the rendezvous port (rank 0's store, MASTER_PORT). */
export const RENDEZVOUS_PORT_NAME = 'rendezvous';
import { KUEUE_PREFIX, KUEUE_TAS_ANNOTATIONS, kueueQueueName } from '../common/kueue';

/** The pod annotation carrying a hash of gpuConfig, so that a change is a template change. */
const GPU_CONFIG_HASH_ANNOTATION = 'cdk8s-gpu.io/gpu-config-hash';

export {
  KUEUE_PRIORITY_LABEL,
  KUEUE_QUEUE_LABEL,
  KUEUE_TAS_ANNOTATIONS,
  MIN_STATEFULSET_KUEUE_VERSION,
} from '../common/kueue';

/** What every trainer takes, whichever controller runs it. */
export interface TrainingPracticeProps extends GpuWorkloadProps {
  /** The training image. Pin a tag or digest. */
  readonly image: string;
  /**
   * GPUs per pod (`nvidia.com/gpu`, or `gpuResource`), a whole number from 1 to `maxGpusPerNode`; also torchrun's
   * processes per node.
   */
  readonly gpusPerPod: number;
  /**
   * The most GPUs (of `gpuResource`) one node of the cluster carries: `gpusPerPod` above it is refused, since a
   * pod's GPUs come from one node and a larger request stays Pending. A whole number from 1 to 64.
   * @default 8 - the most GPUs of one kind current GPU nodes carry: HGX/DGX H100, H200 and B200 and the MI300X
   * platforms have 8 (GB200 NVL72 compute trays have 4)
   */
  readonly maxGpusPerNode?: number;
  /**
   * The launcher.
   * @default ['torchrun'] - the elastic launcher, configured through the `PET_*` variables
   */
  readonly command?: string[];
  /**
   * Its arguments, e.g. `['train.py', '--epochs', '3']`. Needed when `command` is the default.
   * @default - none
   */
  readonly args?: string[];
  /**
   * GPU and NCCL settings (e.g. `NCCL_DEBUG`, `NCCL_IB_HCA`, `CUDA_DEVICE_MAX_CONNECTIONS`), kept in
   * a ConfigMap and consumed with `envFrom`. The pod template carries a hash of them, so a change
   * is a template change. A key here replaces the construct's default of the same name (e.g.
   * `NCCL_NET` of `rdma`).
   * @default - no ConfigMap
   */
  readonly gpuConfig?: Record<string, string>;
  /**
   * The size limit of the `/dev/shm` memory volume; counts against `memory`.
   * @default 4 GiB × gpusPerPod - NCCL and data-loader workers use /dev/shm per GPU, and a quarter
   * of the default memory keeps the rest for the trainer
   */
  readonly sharedMemory?: Size;
  /**
   * Rank 0's port for torchrun's rendezvous store (also `MASTER_PORT`).
   * @default 29500 - the torch.distributed and torchrun convention
   */
  readonly masterPort?: number;
  /**
   * Time between SIGTERM and SIGKILL, for the trainer to write a checkpoint. torchrun's shutdown
   * timeout (`TORCH_ELASTIC_SHUTDOWN_TIMEOUT`) is set from it, minus a 15 s margin.
   * @default Duration.minutes(5)
   */
  readonly terminationGracePeriod?: Duration;
  /**
   * RDMA between the pods: `Rdma.sharedDevice()`, `Rdma.sriov({...})` or `Rdma.efa(n)`, with the
   * device resource, the NCCL settings and the capability each needs.
   * @default - no RDMA: NCCL uses TCP sockets between nodes
   */
  readonly rdma?: Rdma;
  /**
   * Run as the image's user (root for most training images) instead of a non-root UID.
   * The pod then meets only the baseline profile.
   * @default - false: a non-root UID with a writable home keeps the pod restricted, and the
   * trainer runs without it; true with `Rdma.sharedDevice()` or `Rdma.sriov()`, whose IPC_LOCK
   * reaches only a root process
   */
  readonly runAsRoot?: boolean;
  /**
   * A Kueue LocalQueue: the workload is admitted by Kueue only when every rank fits.
   * @default - not queued: pods are scheduled one by one as GPUs free up
   */
  readonly queueName?: string;
}

/** The keys of `TrainingPracticeProps`, for the unknown-prop check of both backends. */
export const TRAINING_PRACTICE_PROP_KEYS: ReadonlyArray<keyof TrainingPracticeProps> = [
  ...GPU_WORKLOAD_PROP_KEYS,
  'image',
  'gpusPerPod',
  'maxGpusPerNode',
  'command',
  'args',
  'gpuConfig',
  'sharedMemory',
  'masterPort',
  'terminationGracePeriod',
  'rdma',
  'runAsRoot',
  'queueName',
];

/** The shared props, resolved and validated. */
export interface TrainingBasics {
  readonly gpusPerPod: number;
  readonly nodes: number;
  readonly worldSize: number;
  readonly masterPort: number;
  /** The pod's grace period in seconds. */
  readonly grace: number;
  readonly shutdownTimeoutSeconds: number;
  readonly clusterDomain: string;
  readonly rdma?: RdmaPodParts;
  readonly runAsRoot: boolean;
  readonly identity: ProcessIdentity;
  readonly uid: number | undefined;
  /** The launcher's argv: command then args. */
  readonly launch: string[];
  /** Process names that are really torchrun (`python3 -m torch.distributed.run`). */
  readonly processAliases: Readonly<Record<string, string>>;
  readonly queueName?: string;
}

/** Resolves and checks the shared props; `nodes` is the backend's node count, `nodesProp` its prop. */
export function resolveTraining(
  v: Validator,
  props: TrainingPracticeProps,
  nodes: number,
  nodesProp: string,
): TrainingBasics {
  const gpusPerPod = v.wholeNumber('gpusPerPod', props.gpusPerPod, 1);
  const worldSize = nodes * gpusPerPod;
  if (worldSize > INT32_MAX)
    v.fail(nodesProp, `times gpusPerPod (${gpusPerPod}) must be at most ${INT32_MAX} processes`, nodes);
  checkGpusPerNode(v, {
    prop: 'gpusPerPod',
    gpus: gpusPerPod,
    maxGpusPerNode: props.maxGpusPerNode,
    more: `add ${nodesProp} for more GPUs`,
  });
  v.image('image', props.image);
  const masterPort = v.wholeNumber('masterPort', props.masterPort ?? DEFAULT_MASTER_PORT, 1024, 65535);
  const grace = v.seconds(
    'terminationGracePeriod',
    props.terminationGracePeriod ?? Duration.seconds(DEFAULT_TRAINING_GRACE_SECONDS),
    0,
    31536000,
  );
  const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');

  const rdma = resolveRdma(v, props.rdma);
  const runAsRoot = v.boolean('runAsRoot', props.runAsRoot, rdmaNeedsRoot(rdma));
  requireRootForRdma(v, rdma, runAsRoot);
  const { identity, uid } = resolveProcessIdentity(v, {
    runAsRoot,
    runAsUser: props.runAsUser,
    addCapabilities: rdma?.capabilities ?? [],
  });

  const launch = [
    ...(v.stringArray('command', props.command) ?? ['torchrun']),
    ...(v.stringArray('args', props.args) ?? []),
  ];
  // `python3 -m torch.distributed.run` shows as python3, and is torchrun's agent all the same.
  const launcher = torchrunProgram(launch);
  const processAliases = launcher && launcher !== 'torchrun' ? { [launcher.slice(0, 15)]: 'torchrun' } : {};
  if (props.command !== undefined && props.command.length === 0)
    v.fail('command', 'must not be empty: it is the program the pod runs', props.command);
  if (props.command === undefined && launch.length === 1)
    v.fail('args', "must name the training script when command is the default torchrun, e.g. ['train.py']", props.args);

  const queueName = props.queueName === undefined ? undefined : kueueQueueName(v, props.queueName);

  return {
    gpusPerPod,
    nodes,
    worldSize,
    masterPort,
    grace,
    shutdownTimeoutSeconds: shutdownTimeoutSeconds(grace),
    clusterDomain,
    rdma,
    runAsRoot,
    identity,
    uid,
    launch,
    processAliases,
    queueName,
  };
}

/**
 * Refuses a torchrun rendezvous option in the launcher (`command` then `args`), also inside a
 * `sh -c` / `bash -c` string: the construct's wiring (`owned`) sets each one.
 */
export function checkTorchrunOptions(
  v: Validator,
  props: TrainingPracticeProps,
  launch: string[],
  owned: ReadonlyArray<OwnedEnv>,
): void {
  const conflict = findTorchrunConflict(launch, owned);
  if (!conflict) return;
  const commandLength = props.command?.length ?? 1;
  const prop =
    conflict.index < commandLength ? `command[${conflict.index}]` : `args[${conflict.index - commandLength}]`;
  const where = conflict.inShell ? ` (in its shell string, at '${conflict.token}')` : '';
  v.fail(
    prop,
    `must not pass torchrun's ${conflict.option}${where}: the construct sets it${conflict.via ? ` from ${conflict.via}; set that instead` : ' for its gang rendezvous'}`,
    conflict.inShell ? launch[conflict.index] : conflict.token,
  );
}

/** The names of the volumes the training pod itself adds (besides /dev/shm), for clash checks of a backend. */
export function trainingHomeVolumes(runAsRoot: boolean): { names: string[]; mountPaths: string[] } {
  if (runAsRoot) return { names: [], mountPaths: [] };
  const home = scratchSpace(TRAINING_HOME);
  return { names: home.volumes.map(vol => vol.name), mountPaths: home.mounts.map(m => m.mountPath) };
}

/** A backend's contribution to the training pod. */
export interface TrainingPodInput {
  readonly props: TrainingPracticeProps;
  readonly basics: TrainingBasics;
  readonly labels: Record<string, string>;
  /** The object name the gpuConfig ConfigMap is derived from (`<name>-gpu-config`). */
  readonly name: string;
  /** The main container's command and args (the backend may wrap the launcher). */
  readonly command: { command: string[]; args: string[] };
  /** The backend's rank wiring and other variables it owns. */
  readonly ownedEnv: OwnedEnv[];
  readonly volumes: k8s.Volume[];
  readonly mounts: k8s.VolumeMount[];
  readonly claims?: ReadonlyArray<{ name: string; mountPath: string; prop: string }>;
  /** Pod spec fields of the backend (restart policy); the grace period is the practice's. */
  readonly spec?: Omit<k8s.PodSpec, 'containers' | 'volumes'>;
}

/** The training pod and the objects it needs. */
export interface TrainingPod extends WorkloadPod {
  readonly gpuConfigMapName?: string;
  readonly gpuConfigMap?: ApiObject;
  readonly networkPolicy?: ApiObject;
}

/**
 * Builds the trainer pod both backends run: the launcher with the backend's rank wiring, GPUs,
 * /dev/shm, RDMA (resources, NCCL settings, networks), the non-root home, gpuConfig in a ConfigMap
 * whose hash the template carries, and every shared pod option.
 */
export function buildTrainingPod(scope: Construct, v: Validator, input: TrainingPodInput): TrainingPod {
  const { props, basics } = input;
  const rdma = basics.rdma;
  const volumes = [...input.volumes];
  const mounts = [...input.mounts];

  // Home and caches: defaults a user's env (or gpuConfig) replaces, e.g. HF_HOME on a dataset volume.
  const defaultEnv: k8s.EnvVar[] = [];
  if (!basics.runAsRoot) {
    // A non-root UID has no writable home in images built for root (NGC PyTorch and friends).
    const home = scratchSpace(TRAINING_HOME);
    volumes.push(...home.volumes);
    mounts.push(...home.mounts);
    defaultEnv.push(...home.env, { name: 'HF_HOME', value: `${TRAINING_HOME}/.cache/huggingface` });
    // UID 1000 has no passwd entry in NGC PyTorch, which runs as root.
    defaultEnv.push(nonRootUserEnv(TRAINING_USER));
  }
  defaultEnv.push(...(rdma?.env ?? []));

  const gpuConfigData = gpuConfig(v, props, input.ownedEnv);
  const gpuConfigMapName = gpuConfigData ? `${input.name}-gpu-config` : undefined;
  // envFrom loses to env: drop a default the ConfigMap sets, so the ConfigMap's value is the one used.
  const defaults = defaultEnv.filter(e => !(gpuConfigData && e.name in gpuConfigData));
  const envFrom: k8s.EnvFromSource[] = gpuConfigMapName ? [{ configMapRef: { name: gpuConfigMapName } }] : [];

  const extendedResources = rdmaExtendedResources(v, props, rdma);
  for (const key of Object.keys(props.pod?.labels ?? {})) {
    if (key.startsWith(KUEUE_PREFIX))
      v.fail(
        `pod.labels.${key}`,
        "is Kueue's: set queueName, and Kueue's webhook labels the pods",
        props.pod!.labels![key],
      );
  }
  // Arrays the shared builder iterates: a JavaScript caller's wrong type gets the library's error.
  if (props.envFrom !== undefined && !Array.isArray(props.envFrom))
    v.fail('envFrom', 'must be an array of EnvFrom.configMap() or EnvFrom.secret()', props.envFrom);
  for (const key of [
    'tolerations',
    'topologySpreadConstraints',
    'sidecars',
    'initContainers',
    'imagePullSecrets',
  ] as const) {
    const value = (props.pod as Record<string, unknown> | undefined)?.[key];
    if (value !== undefined && !Array.isArray(value)) v.fail(`pod.${key}`, 'must be an array', value);
  }

  const pod = buildWorkloadPod(v, {
    scope,
    queueName: props.queueName,
    props: { ...props, extendedResources },
    gpus: basics.gpusPerPod,
    identity: basics.identity,
    labels: { ...input.labels },
    container: {
      name: TRAINER_CONTAINER,
      image: props.image,
      imagePullPolicy: 'IfNotPresent',
      ...input.command,
      ports: [{ name: RENDEZVOUS_PORT_NAME, containerPort: basics.masterPort, protocol: 'TCP' }],
    },
    ownedEnv: input.ownedEnv,
    defaultEnv: defaults,
    envFrom,
    volumes,
    mounts,
    claims: input.claims,
    sharedMemory: props.sharedMemory ?? Size.gibibytes(DEFAULT_SHM_GIB_PER_GPU * basics.gpusPerPod),
    spec: { terminationGracePeriodSeconds: basics.grace, ...(input.spec ?? {}) },
  });
  for (const [key, value] of Object.entries(rdma?.annotations ?? {})) pod.template.annotate(key, value);

  let gpuConfigMap: ApiObject | undefined;
  if (gpuConfigData) {
    gpuConfigMap = new ManifestObject(scope, 'GpuConfig', KIND.ConfigMap, {
      metadata: { name: gpuConfigMapName, labels: input.labels },
      // The API server drops an empty `data`: sent anyway, every apply would differ from what is stored.
      ...(Object.keys(gpuConfigData).length > 0 ? { data: gpuConfigData } : {}),
    });
    pod.template.annotate(GPU_CONFIG_HASH_ANNOTATION, contentHash(gpuConfigData));
  }
  // torchrun's store (MASTER_PORT) and NCCL's ephemeral ports have no authentication: only the job's pods.
  const policy = workloadNetworkPolicy(scope, v, props.networkPolicy, {
    identity: {
      name: input.labels[LABEL_NAME],
      instance: input.labels[LABEL_INSTANCE],
      component: input.labels[LABEL_COMPONENT],
    },
    profile: 'gang',
  });
  return { ...pod, gpuConfigMapName, gpuConfigMap, networkPolicy: policy?.object };
}

/** Checks gpuConfig: variable names that are ConfigMap keys, set in one place, never a variable the construct owns. */
function gpuConfig(
  v: Validator,
  props: TrainingPracticeProps,
  ownedEnv: ReadonlyArray<OwnedEnv>,
): Record<string, string> | undefined {
  if (props.gpuConfig === undefined) return undefined;
  v.plainObject('gpuConfig', props.gpuConfig);
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(props.gpuConfig)) {
    v.envName(`gpuConfig.${key}`, key);
    // Also a key of the ConfigMap that carries it (IsConfigMapKey).
    configKey(v, `gpuConfig.${key}`, key);
    if (typeof value !== 'string') v.fail(`gpuConfig.${key}`, 'must be a string', value);
    if (hasKey(props.env, key))
      v.fail(
        `gpuConfig.${key}`,
        'is also set in env, which would silently win over the ConfigMap; set it in one place',
        value,
      );
    const owned = ownedEnv.find(o => o.env.name === key);
    if (owned)
      v.fail(
        `gpuConfig.${key}`,
        `is set by the construct, whose value would silently win over the ConfigMap${owned.via ? `; set ${owned.via} instead` : ''}`,
        value,
      );
    data[key] = value;
  }
  // The ConfigMap's values may total 1 MiB (ValidateConfigMap counts the values' bytes, not the keys).
  const bytes = Object.values(data).reduce((n, value) => n + Buffer.byteLength(value), 0);
  if (bytes > CONFIG_MAP_MAX_BYTES)
    v.failDescribed('gpuConfig', 'values must total at most 1 MiB, the most a ConfigMap holds', `${bytes} bytes`);
  return data;
}

/** What a ConfigMap's values may total, in bytes (the API server's MaxSecretSize). */
const CONFIG_MAP_MAX_BYTES = 1024 * 1024;

/** Whether a user's map has a key; false for anything that is not an object (checked, with its prop, later). */
export function hasKey(map: unknown, key: string): boolean {
  return typeof map === 'object' && map !== null && Object.prototype.hasOwnProperty.call(map, key);
}

/** A mount path of a checkpoint volume: absolute, and not the root or a system directory. */
export function checkpointMountPath(v: Validator, prop: string, value: string): string {
  v.absolutePath(prop, value);
  if (/\/\/|.\/$|\/\.(\/|$)/.test(value))
    v.fail(prop, 'must be a normalized path: no "//", "/./" or trailing "/"', value);
  if (['/', '/dev', '/proc', '/sys', '/etc', '/usr', '/bin', '/lib', '/var', '/run'].includes(value)) {
    v.fail(prop, 'must not be the root or a system directory of the container', value);
  }
  return value;
}

/** A ReadWriteMany claim every pod mounts, validated: its volume and the trainer's mount of it. */
export function sharedClaim(
  v: Validator,
  prop: string,
  claim: { readonly claimName: string; readonly mountPath?: string },
  o: { defaultMountPath: string; volumeName: string; runAsRoot: boolean; podPaths?: string[] },
): { claimName: string; mountPath: string; volume: k8s.Volume; mount: k8s.VolumeMount } {
  v.knownProps(prop, claim, ['claimName', 'mountPath']);
  const claimName = v.dnsSubdomain(`${prop}.claimName`, claim.claimName);
  const mountPath = checkpointMountPath(v, `${prop}.mountPath`, claim.mountPath ?? o.defaultMountPath);
  const taken = ['/dev/shm', ...(o.podPaths ?? []), ...trainingHomeVolumes(o.runAsRoot).mountPaths];
  if (taken.includes(mountPath))
    v.fail(
      `${prop}.mountPath`,
      `must not be a path container '${TRAINER_CONTAINER}' already mounts (${taken.join(', ')})`,
      mountPath,
    );
  return {
    claimName,
    mountPath,
    volume: { name: o.volumeName, persistentVolumeClaim: { claimName } },
    mount: { name: o.volumeName, mountPath },
  };
}

/** The Kueue TAS annotations a user set on the pods (`pod.annotations`). */
export function topologyAnnotationsOf(props: TrainingPracticeProps): string[] {
  return KUEUE_TAS_ANNOTATIONS.filter(a => hasKey(props.pod?.annotations, a));
}
