import { ApiObject, Chart, Duration, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { KIND, ManifestObject } from '../common/manifest-object';
import { Construct } from 'constructs';
import { DisruptionBudget, podDisruptionBudget, validateDisruptionBudget } from '../common/disruption';
import { SHM_VOLUME } from '../common/gpu';
import { contentHash } from '../common/hash';
import { headlessService } from '../common/headless-service';
import { labelSet, LABEL_INSTANCE } from '../common/labels';
import { statefulSetName } from '../common/names';
import { GpuWorkloadProps } from '../common/pod-options';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { sizeQuantity } from '../common/quantity';
import { configKey } from '../common/env';
import { nonRootUserEnv, scratchSpace } from '../common/scratch';
import { PodSecurityLevel, resolveProcessIdentity } from '../common/security';
import { STATEFUL_SET } from '../common/stateful-set';
import { INT32_MAX, Validator } from '../validation/validate';
import { addPodValidation, buildWorkloadPod, GPU_WORKLOAD_PROP_KEYS } from '../common/workload-pod';
import { AdoptedVolumes, adoptVolumes } from './adopt-volumes';
import {
  completionStateDir,
  jobCommands,
  launchCommand,
  launchEnv,
  launchVolume,
  POD_STATE_DIR,
  POD_STATE_VOLUME,
} from './launch';
import { Rdma } from './rdma';
import {
  findTorchrunConflict,
  rankWiring,
  rendezvousIdFor,
  shutdownTimeoutSeconds,
  torchrunProgram,
} from './rendezvous';

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
/**
 * Whole-gang restarts torchrun makes after a worker fails (`--max-restarts`): a transient fault
 * (an NCCL timeout, a flaky step) costs a restart from the last checkpoint, not the job.
 */
export const DEFAULT_MAX_RESTARTS = 3;

const COMPONENT = 'training';
const CONTAINER = 'trainer';
const RENDEZVOUS_PORT_NAME = 'rendezvous';
const GPU_CONFIG_HASH_ANNOTATION = 'cdk8s-gpu.io/gpu-config-hash';
const SHARED_CHECKPOINT_VOLUME = 'shared-checkpoints';
/** Kueue's label naming the LocalQueue of a workload (kueue.sigs.k8s.io, "Run StatefulSet"). */
export const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
const KUEUE_PREFIX = 'kueue.x-k8s.io/';

/** How pods pick up a changed pod template. */
export enum TrainingUpdateStrategy {
  /**
   * Pods are replaced only when deleted (by you, or when the job restarts). Restarting one rank of
   * a running job breaks every collective and kills the whole job, so nothing restarts on its own.
   */
  ON_DELETE = 'OnDelete',
  /** The controller replaces pods one at a time, highest ordinal first. Each restart kills the job. */
  ROLLING_UPDATE = 'RollingUpdate',
}

/** Per-replica checkpoint storage. */
export interface CheckpointStorage {
  /**
   * The claim template name. Pods get claims named `<claimName>-<statefulSet>-<ordinal>`.
   * @default 'data'
   */
  readonly claimName?: string;
  /** The size of each replica's claim. */
  readonly size: Size;
  /**
   * Where the claim is mounted.
   * @default '/checkpoints'
   */
  readonly mountPath?: string;
  /**
   * The StorageClass. Leave unset to use the cluster's default class.
   * @default - the cluster default StorageClass
   */
  readonly storageClassName?: string;
}

/** An existing ReadWriteMany claim that every rank mounts, e.g. for FSDP or DCP checkpoints read back by all ranks. */
export interface SharedCheckpoints {
  /**
   * The PersistentVolumeClaim, created outside this construct with access mode ReadWriteMany
   * (NFS, CephFS, EFS, Filestore, Lustre...). It is not owned by the StatefulSet, so a version
   * bump mounts the same claim without any adoption step.
   */
  readonly claimName: string;
  /**
   * Where every rank mounts it.
   * @default '/shared-checkpoints'
   */
  readonly mountPath?: string;
}

export interface GpuTrainingStatefulSetProps extends GpuWorkloadProps {
  /** The base name, a DNS-1035 label. The StatefulSet and its Service are named `name` or `name-v<version>`. */
  readonly name: string;
  /** The training image. Pin a tag or digest. It needs `sh`, `date`, `mkdir`, `mv` and `sleep` for the launch wrapper. */
  readonly image: string;
  /** GPUs per pod (`nvidia.com/gpu`, or `gpuResource`), a whole number >= 1; also torchrun's processes per node. */
  readonly gpusPerPod: number;
  /**
   * Pods (nodes) in the job.
   * @default 1 - one node; set the node count of a multi-node job explicitly
   */
  readonly replicas?: number;
  /**
   * The generation of this workload. Bump it for a change the API server forbids on a live
   * StatefulSet (volume claim templates, pod management, selector): the StatefulSet becomes
   * `name-v<version>`, a new object beside the old one.
   * @default - no suffix: the StatefulSet is named `name`
   */
  readonly version?: number;
  /**
   * Per-rank checkpoint claims. Completion markers are kept here too (unless `sharedCheckpoints`
   * is set), so a finished run stays finished even when its pods are re-created.
   * @default - no per-rank claims
   */
  readonly storage?: CheckpointStorage;
  /**
   * An existing ReadWriteMany claim mounted by every rank. Completion markers are kept here when set.
   * @default - none: the claim must exist before the job, so the construct cannot assume one
   */
  readonly sharedCheckpoints?: SharedCheckpoints;
  /**
   * Pre-existing PersistentVolumes to bind, one per ordinal, so that a new version starts from
   * the old version's checkpoints. Needs `storage`. See the adoption runbook in the README.
   * @default - new, empty claims
   */
  readonly adoptVolumes?: AdoptedVolumes;
  /**
   * The launcher the launch wrapper runs.
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
   * reaches pods on their next restart and never touches an immutable StatefulSet field. A key
   * here replaces the construct's default of the same name (e.g. `NCCL_NET` of `rdma`).
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
   * Rank 0's port for torchrun's c10d rendezvous store (also `MASTER_PORT`).
   * @default 29500 - the torch.distributed and torchrun convention
   */
  readonly masterPort?: number;
  /**
   * @default TrainingUpdateStrategy.ON_DELETE - a rolling restart kills the running job
   */
  readonly updateStrategy?: TrainingUpdateStrategy;
  /**
   * Time between SIGTERM and SIGKILL, for the trainer to write a checkpoint. torchrun's shutdown
   * timeout (`TORCH_ELASTIC_SHUTDOWN_TIMEOUT`) is set from it, minus a 15 s margin.
   * @default Duration.minutes(5)
   */
  readonly terminationGracePeriod?: Duration;
  /**
   * @default DisruptionBudget.blockVoluntaryEvictions() - evicting any rank kills the whole job,
   * so drains wait until you stop the job; unhealthy pods can still be evicted.
   */
  readonly disruptionBudget?: DisruptionBudget;
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
   * Whole-gang restarts after a worker fails (torchrun `--max-restarts` with the c10d
   * rendezvous): every rank's workers restart together from the last checkpoint, without a pod
   * restart. When they are used up, torchrun exits non-zero and the pods show the failure.
   * @default 3
   */
  readonly maxRestarts?: number;
  /**
   * A Kueue LocalQueue: the StatefulSet becomes one Kueue workload, admitted only when every
   * rank fits (Kueue's StatefulSet integration). Its replica count can then not change.
   * @default - not queued: pods are scheduled one by one as GPUs free up
   */
  readonly queueName?: string;
  /**
   * The identity of this training run. A completed run is recorded per run id; a new id trains
   * again beside the checkpoints of earlier runs. A DNS-1123 label.
   * @default - the StatefulSet name: a new version is a new run
   */
  readonly runId?: string;
}

const OWN_PROP_KEYS: ReadonlyArray<keyof GpuTrainingStatefulSetProps> = [
  'name',
  'image',
  'gpusPerPod',
  'replicas',
  'version',
  'storage',
  'sharedCheckpoints',
  'adoptVolumes',
  'command',
  'args',
  'gpuConfig',
  'sharedMemory',
  'masterPort',
  'updateStrategy',
  'terminationGracePeriod',
  'disruptionBudget',
  'rdma',
  'runAsRoot',
  'maxRestarts',
  'queueName',
  'runId',
];
const PROP_KEYS = [...GPU_WORKLOAD_PROP_KEYS, ...OWN_PROP_KEYS];
const STORAGE_KEYS: ReadonlyArray<keyof CheckpointStorage> = ['claimName', 'size', 'mountPath', 'storageClassName'];
const SHARED_KEYS: ReadonlyArray<keyof SharedCheckpoints> = ['claimName', 'mountPath'];

/**
 * Multi-GPU distributed training as a StatefulSet that behaves as one job: admitted whole (Kueue),
 * restarted whole (torchrun's c10d rendezvous on rank 0's stable address), finished once (a launch
 * wrapper that records completion and idles instead of retraining), with stable rank identities,
 * GPUs, shared memory, RDMA and checkpoint claims that outlive the StatefulSet.
 */
export class GpuTrainingStatefulSet extends Construct implements IGpuWorkload {
  /** The StatefulSet's name: `name` or `name-v<version>`. */
  readonly statefulSetName: string;
  /** The headless Service governing the StatefulSet (same name). */
  readonly serviceName: string;
  /** Rank 0's stable DNS name, with `$(POD_NAMESPACE)` expanded by the kubelet. */
  readonly masterAddress: string;
  /** The rendezvous port on rank 0 (MASTER_PORT). */
  readonly masterPort: number;
  /** Pods (nodes) in the job. */
  readonly replicas: number;
  /** GPUs per pod, and torchrun's processes per node. */
  readonly gpusPerPod: number;
  /** Processes in the job: replicas × gpusPerPod. */
  readonly worldSize: number;
  /** Whole-gang restarts torchrun makes before it gives up. */
  readonly maxRestarts: number;
  /** The run whose completion the launch wrapper records. */
  readonly runId: string;
  /**
   * torchrun's rendezvous id: the run id and a hash of the rank spec (image, command, env,
   * resources, world size), so ranks of different specs never join one gang.
   */
  readonly rendezvousId: string;
  /** torchrun's shutdown timeout in seconds: the grace period minus a margin. */
  readonly shutdownTimeoutSeconds: number;
  /** Where completion markers are kept: `<checkpoint mount>/.cdk8s-gpu`, or pod scratch without storage. */
  readonly completionStateDir: string;
  /** Whether completion survives the re-creation of a pod (true with `storage` or `sharedCheckpoints`). */
  readonly completionIsDurable: boolean;
  /** The label selector of the job's pods, e.g. for `kubectl wait` and `kubectl delete pod`. */
  readonly podSelector: string;
  /** The command that returns once every rank has completed the run. */
  readonly waitForCompletionCommand: string;
  /** The command that restarts the whole job at once on its current spec (every pod re-created together). */
  readonly restartCommand: string;
  /** The Kueue LocalQueue, if queued. */
  readonly queueName?: string;
  /** The ConfigMap holding `gpuConfig`, if any. */
  readonly gpuConfigMapName?: string;
  /** The ConfigMap holding `gpuConfig`, if any. */
  readonly gpuConfigMap?: ApiObject;
  /** The checkpoint claim template name, if storage is set. */
  readonly claimName?: string;
  /** The names of the per-rank checkpoint claims the StatefulSet will use, in ordinal order. */
  readonly claimNames: string[];
  /** The claims pre-created to adopt existing volumes (`adoptVolumes`), in ordinal order. */
  readonly adoptedClaims: ApiObject[];
  /** The shared ReadWriteMany claim every rank mounts, if any. */
  readonly sharedClaimName?: string;
  /** The StatefulSet, for escape hatches through its typed API object. */
  readonly statefulSet: ApiObject;
  /** The headless Service. */
  readonly service: ApiObject;
  /** The PodDisruptionBudget, unless `DisruptionBudget.none()`. */
  readonly podDisruptionBudget?: ApiObject;
  /** @internal */
  readonly _podTemplate: PodTemplate;

  /** The strictest Pod Security Standard the pod template meets, with everything added to it so far (e.g. by `mountInto`). */
  get podSecurityLevel(): PodSecurityLevel {
    return this._podTemplate.securityLevel();
  }
  /** @internal */
  readonly _securityUid: number | undefined;
  /** @internal */
  readonly _processAliases: Readonly<Record<string, string>>;
  /** @internal */
  readonly _templateChangesRollOut: boolean;

  constructor(scope: Construct, id: string, props: GpuTrainingStatefulSetProps) {
    super(scope, id);
    const v: Validator = new Validator('GpuTrainingStatefulSet', id);
    v.knownProps('', props, PROP_KEYS);

    const name = (this.statefulSetName = statefulSetName(v, props.name, props.version));
    this.serviceName = name;
    this.gpusPerPod = v.wholeNumber('gpusPerPod', props.gpusPerPod, 1);
    this.replicas = v.wholeNumber('replicas', props.replicas ?? 1, 1);
    this.worldSize = this.replicas * this.gpusPerPod;
    if (this.worldSize > INT32_MAX)
      v.fail('replicas', `times gpusPerPod (${this.gpusPerPod}) must be at most ${INT32_MAX} processes`, this.replicas);
    v.image('image', props.image);
    this.masterPort = v.wholeNumber('masterPort', props.masterPort ?? DEFAULT_MASTER_PORT, 1024, 65535);
    this.maxRestarts = v.wholeNumber('maxRestarts', props.maxRestarts ?? DEFAULT_MAX_RESTARTS, 0, 1000);
    const grace = v.seconds(
      'terminationGracePeriod',
      props.terminationGracePeriod ?? Duration.seconds(DEFAULT_TRAINING_GRACE_SECONDS),
      0,
      31536000,
    );
    this.shutdownTimeoutSeconds = shutdownTimeoutSeconds(grace);
    const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');
    const strategy = props.updateStrategy ?? TrainingUpdateStrategy.ON_DELETE;
    if (!Object.values(TrainingUpdateStrategy).includes(strategy))
      v.fail('updateStrategy', 'must be a TrainingUpdateStrategy', strategy);
    const budget = props.disruptionBudget ?? DisruptionBudget.blockVoluntaryEvictions();
    validateDisruptionBudget(v, 'disruptionBudget', budget, this.replicas);

    if (props.rdma !== undefined && !(props.rdma instanceof Rdma)) {
      v.fail('rdma', 'must be made with Rdma.sharedDevice(), Rdma.sriov({...}) or Rdma.efa(n)', props.rdma);
    }
    const rdma = props.rdma?._resolve(v, 'rdma');
    // Kubernetes sets no ambient capabilities, so an added capability is gone once a non-root
    // process execs (kubernetes/kubernetes#56374): IPC_LOCK, which memory registration needs
    // beyond the node's memlock limit, reaches the trainer only when it runs as root.
    const rdmaNeedsRoot = (rdma?.capabilities.length ?? 0) > 0;
    const runAsRoot = v.boolean('runAsRoot', props.runAsRoot, rdmaNeedsRoot);
    if (rdmaNeedsRoot && !runAsRoot) {
      v.fail(
        'runAsRoot',
        "must be true with Rdma.sharedDevice() or Rdma.sriov(): their IPC_LOCK reaches only a root process (Kubernetes sets no ambient capabilities), and without it verbs memory registration stops at the node's memlock limit and NCCL fails at init",
        false,
      );
    }
    const { identity, uid } = resolveProcessIdentity(v, {
      runAsRoot,
      runAsUser: props.runAsUser,
      addCapabilities: rdma?.capabilities ?? [],
    });
    this._securityUid = uid;

    const launch = [
      ...(v.stringArray('command', props.command) ?? ['torchrun']),
      ...(v.stringArray('args', props.args) ?? []),
    ];
    // `python3 -m torch.distributed.run` shows as python3, and is torchrun's agent all the same.
    const launcher = torchrunProgram(launch);
    this._processAliases = launcher && launcher !== 'torchrun' ? { [launcher.slice(0, 15)]: 'torchrun' } : {};
    if (props.command !== undefined && props.command.length === 0)
      v.fail('command', 'must not be empty: it is the program the launch wrapper runs', props.command);
    if (props.command === undefined && launch.length === 1)
      v.fail(
        'args',
        "must name the training script when command is the default torchrun, e.g. ['train.py']",
        props.args,
      );
    const conflict = findTorchrunConflict(launch);
    if (conflict) {
      const commandLength = props.command?.length ?? 1;
      const prop =
        conflict.index < commandLength ? `command[${conflict.index}]` : `args[${conflict.index - commandLength}]`;
      v.fail(
        prop,
        `must not pass torchrun's ${conflict.option}: the construct sets it${conflict.via ? ` from ${conflict.via}; set that instead` : ' for its gang rendezvous'}`,
        conflict.token,
      );
    }

    const { labels, selector } = labelSet({ name: props.name, instance: name, component: COMPONENT });
    this.podSelector = `${LABEL_INSTANCE}=${name}`;

    if (props.queueName !== undefined) {
      // A LocalQueue name (DNS subdomain) that is also a label value (at most 63 characters).
      this.queueName = v.dnsSubdomain('queueName', props.queueName);
      if (this.queueName.length > 63)
        v.fail('queueName', 'must be at most 63 characters, because it is a label value', props.queueName);
    }

    this.runId = props.runId === undefined ? name : v.dnsLabel('runId', props.runId);

    // Storage: per-rank claims, a shared claim, and where completion markers live.
    const claims: Array<{ name: string; mountPath: string; prop: string }> = [];
    const scratch = launchVolume();
    const volumes: k8s.Volume[] = [scratch.volume];
    const mounts: k8s.VolumeMount[] = [scratch.mount];
    let volumeClaimTemplates: k8s.KubePersistentVolumeClaimProps[] | undefined;
    let storageMount: string | undefined;
    this.claimNames = [];
    if (props.storage !== undefined) {
      const storage = props.storage;
      v.knownProps('storage', storage, STORAGE_KEYS);
      const claim = (this.claimName = v.dnsLabel('storage.claimName', storage.claimName ?? 'data'));
      // The controller adds a pod volume named like the claim template, replacing one of the same
      // name: /dev/shm would silently move to a network disk.
      const podVolumes = [
        SHM_VOLUME,
        POD_STATE_VOLUME,
        SHARED_CHECKPOINT_VOLUME,
        ...(runAsRoot ? [] : scratchSpace(TRAINING_HOME).volumes.map(vol => vol.name)),
      ];
      if (podVolumes.includes(claim))
        v.fail('storage.claimName', `must differ from the pod's own volumes (${podVolumes.join(', ')})`, claim);
      v.positiveSize('storage.size', storage.size);
      storageMount = mountPath(v, 'storage.mountPath', storage.mountPath ?? '/checkpoints');
      if (storage.storageClassName !== undefined) v.dnsSubdomain('storage.storageClassName', storage.storageClassName);
      // Claim names are <claim>-<statefulSet>-<ordinal>: they too must be valid names.
      this.claimNames = Array.from({ length: this.replicas }, (_, i) => `${claim}-${name}-${i}`);
      v.dnsLabel('storage.claimName', this.claimNames[this.replicas - 1]);
      volumeClaimTemplates = [
        {
          metadata: { name: claim, labels },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: sizeQuantity(storage.size) } },
            ...(storage.storageClassName ? { storageClassName: storage.storageClassName } : {}),
          },
        },
      ];
      claims.push({ name: claim, mountPath: storageMount, prop: 'storage.mountPath' });
    }
    let sharedMount: string | undefined;
    if (props.sharedCheckpoints !== undefined) {
      const shared = props.sharedCheckpoints;
      v.knownProps('sharedCheckpoints', shared, SHARED_KEYS);
      this.sharedClaimName = v.dnsSubdomain('sharedCheckpoints.claimName', shared.claimName);
      sharedMount = mountPath(v, 'sharedCheckpoints.mountPath', shared.mountPath ?? '/shared-checkpoints');
      const taken = [
        '/dev/shm',
        POD_STATE_DIR,
        ...(runAsRoot ? [] : scratchSpace(TRAINING_HOME).mounts.map(m => m.mountPath)),
      ];
      if (taken.includes(sharedMount))
        v.fail(
          'sharedCheckpoints.mountPath',
          `must not be a path container '${CONTAINER}' already mounts (${taken.join(', ')})`,
          sharedMount,
        );
      volumes.push({ name: SHARED_CHECKPOINT_VOLUME, persistentVolumeClaim: { claimName: this.sharedClaimName } });
      mounts.push({ name: SHARED_CHECKPOINT_VOLUME, mountPath: sharedMount });
    }
    const durable = sharedMount ?? storageMount;
    this.completionIsDurable = durable !== undefined;
    this.completionStateDir = completionStateDir(durable);

    if (props.adoptVolumes !== undefined && !props.storage) {
      v.fail('adoptVolumes', 'needs storage: adopted volumes are bound to the checkpoint claims');
    }
    this.adoptedClaims =
      props.adoptVolumes !== undefined && props.storage
        ? adoptVolumes(this, v, {
            statefulSetName: name,
            claimName: this.claimName!,
            replicas: this.replicas,
            labels,
            storage: props.storage,
            adopt: props.adoptVolumes,
          })
        : [];

    // Home and caches: defaults a user's env (or gpuConfig) replaces, e.g. HF_HOME on a dataset volume.
    const defaultEnv: k8s.EnvVar[] = [];
    if (!runAsRoot) {
      // A non-root UID has no writable home in images built for root (NGC PyTorch and friends).
      const home = scratchSpace(TRAINING_HOME);
      volumes.push(...home.volumes);
      mounts.push(...home.mounts);
      defaultEnv.push(...home.env, { name: 'HF_HOME', value: `${TRAINING_HOME}/.cache/huggingface` });
      // UID 1000 has no passwd entry in NGC PyTorch, which runs as root.
      defaultEnv.push(nonRootUserEnv(TRAINING_USER));
    }
    defaultEnv.push(...(rdma?.env ?? []));

    this.masterAddress = `${name}-0.${this.serviceName}.$(POD_NAMESPACE).svc.${clusterDomain}`;
    const wiring = rankWiring({
      masterAddress: this.masterAddress,
      masterPort: this.masterPort,
      replicas: this.replicas,
      gpusPerPod: this.gpusPerPod,
      maxRestarts: this.maxRestarts,
      shutdownTimeoutSeconds: this.shutdownTimeoutSeconds,
    });
    const ownedEnv = [...wiring.env, ...launchEnv(this.runId, this.completionStateDir)];

    let gpuConfigData: Record<string, string> | undefined;
    if (props.gpuConfig !== undefined) {
      v.plainObject('gpuConfig', props.gpuConfig);
      gpuConfigData = {};
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
        gpuConfigData[key] = value;
      }
      this.gpuConfigMapName = `${name}-gpu-config`;
    }
    // envFrom loses to env: drop a default the ConfigMap sets, so the ConfigMap's value is the one used.
    const defaults = defaultEnv.filter(e => !(gpuConfigData && e.name in gpuConfigData));

    const envFrom: k8s.EnvFromSource[] = this.gpuConfigMapName
      ? [{ configMapRef: { name: this.gpuConfigMapName } }]
      : [];
    const extendedResources = { ...(props.extendedResources ?? {}) };
    if (props.extendedResources !== undefined) v.plainObject('extendedResources', props.extendedResources);
    for (const [resource, count] of Object.entries(rdma?.resources ?? {})) {
      if (hasKey(extendedResources, resource))
        v.fail(`extendedResources.${resource}`, 'is requested by rdma already', extendedResources[resource]);
      extendedResources[resource] = count;
    }
    for (const key of Object.keys(rdma?.annotations ?? {})) {
      if (hasKey(props.pod?.annotations, key))
        v.fail(`pod.annotations.${key}`, 'is set by rdma (its networks)', props.pod!.annotations![key]);
    }
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
      props: { ...props, extendedResources },
      gpus: this.gpusPerPod,
      identity,
      labels: { ...labels },
      container: {
        name: CONTAINER,
        image: props.image,
        imagePullPolicy: 'IfNotPresent',
        // The launch wrapper runs the launcher and gives the rank job semantics (src/training/launch.sh).
        ...launchCommand(launch),
        ports: [{ name: RENDEZVOUS_PORT_NAME, containerPort: this.masterPort, protocol: 'TCP' }],
      },
      ownedEnv,
      defaultEnv: defaults,
      envFrom,
      volumes,
      mounts,
      claims,
      sharedMemory: props.sharedMemory ?? Size.gibibytes(DEFAULT_SHM_GIB_PER_GPU * this.gpusPerPod),
      spec: { terminationGracePeriodSeconds: grace },
    });
    this._podTemplate = pod.template;
    for (const [key, value] of Object.entries(rdma?.annotations ?? {})) pod.template.annotate(key, value);

    // Known only now that the pod is built: the rank spec the gang must agree on.
    this.rendezvousId = wiring.rendezvousId.value = rendezvousIdFor(
      this.runId,
      this.replicas,
      pod.template.main,
      wiring.rendezvousId,
    );

    if (gpuConfigData) {
      this.gpuConfigMap = new ManifestObject(this, 'GpuConfig', KIND.ConfigMap, {
        metadata: { name: this.gpuConfigMapName, labels },
        data: gpuConfigData,
      });
      pod.template.annotate(GPU_CONFIG_HASH_ANNOTATION, contentHash(gpuConfigData));
    }
    addPodValidation(
      this,
      pod.template,
      v.boolean('guaranteedQos', props.guaranteedQos, false),
      `GpuTrainingStatefulSet '${id}'`,
    );

    this.service = headlessService(this, 'Service', {
      name: this.serviceName,
      labels,
      selector,
      ports: [
        {
          name: RENDEZVOUS_PORT_NAME,
          port: this.masterPort,
          targetPort: k8s.IntOrString.fromString(RENDEZVOUS_PORT_NAME),
        },
      ],
    });

    this._templateChangesRollOut = strategy !== TrainingUpdateStrategy.ON_DELETE;
    this.statefulSet = new ManifestObject(this, 'Resource', STATEFUL_SET, {
      metadata: { name, labels: this.queueName ? { ...labels, [KUEUE_QUEUE_LABEL]: this.queueName } : labels },
      spec: {
        serviceName: this.serviceName,
        replicas: this.replicas,
        // All ranks start at once. OrderedReady would also start them (a pod without a readiness
        // probe is Ready once running), but one at a time, and Kueue's pod group needs them all.
        // The policy is immutable later.
        podManagementPolicy: 'Parallel',
        updateStrategy:
          strategy === TrainingUpdateStrategy.ON_DELETE
            ? { type: 'OnDelete' }
            : { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
        selector: { matchLabels: selector },
        template: pod.template.toTemplate(),
        ...(volumeClaimTemplates ? { volumeClaimTemplates } : {}),
        // Checkpoints outlive the StatefulSet and survive scale-down; delete claims on purpose only.
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      },
    });

    this.podDisruptionBudget = podDisruptionBudget(this, 'Budget', { name, labels, selector, budget });

    const commands = jobCommands(CONTAINER, this.podSelector, Chart.of(this).namespace);
    this.waitForCompletionCommand = commands.waitForCompletion;
    this.restartCommand = commands.restart;
  }
}

/** Whether a user's map has a key; false for anything that is not an object (checked, with its prop, later). */
function hasKey(map: unknown, key: string): boolean {
  return typeof map === 'object' && map !== null && Object.prototype.hasOwnProperty.call(map, key);
}

/** A mount path of a checkpoint volume: absolute, and not the root or a system directory. */
function mountPath(v: Validator, prop: string, value: string): string {
  v.absolutePath(prop, value);
  if (/\/\/|.\/$|\/\.(\/|$)/.test(value))
    v.fail(prop, 'must be a normalized path: no "//", "/./" or trailing "/"', value);
  if (['/', '/dev', '/proc', '/sys', '/etc', '/usr', '/bin', '/lib', '/var', '/run'].includes(value)) {
    v.fail(prop, 'must not be the root or a system directory of the container', value);
  }
  return value;
}
