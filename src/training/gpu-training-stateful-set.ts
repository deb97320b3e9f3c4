import { Duration, Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { DisruptionBudget, podDisruptionBudget } from '../common/disruption';
import { defaultHostResources, gpuResources, gpuTolerations, shmVolume } from '../common/gpu';
import { contentHash } from '../common/hash';
import { headlessService } from '../common/headless-service';
import { labelSet } from '../common/labels';
import { statefulSetName } from '../common/names';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { sizeQuantity } from '../common/quantity';
import { scratchSpace } from '../common/scratch';
import { containerSecurityContext, podSecurityContext, POD_HARDENING, PodSecurityLevel, resolveProcessIdentity } from '../common/security';
import { Validator } from '../common/validate';
import { AdoptedVolumes, adoptVolumes } from './adopt-volumes';

/** PyTorch's conventional rendezvous port (torch.distributed and torchrun default). */
export const DEFAULT_MASTER_PORT = 29500;
/** /dev/shm per GPU: a quarter of the memory default; shm counts against the memory limit. */
export const DEFAULT_SHM_GIB_PER_GPU = 4;
/** Time to write a checkpoint of a multi-GB model to network storage after SIGTERM. */
export const DEFAULT_TRAINING_GRACE_SECONDS = 300;
/** Where the pod's writable home and caches live when it does not run as root. */
export const TRAINING_HOME = '/home/trainer';

const COMPONENT = 'training';
const CONTAINER = 'trainer';
const RENDEZVOUS_PORT_NAME = 'rendezvous';
const GPU_CONFIG_HASH_ANNOTATION = 'cdk8s-gpu.io/gpu-config-hash';

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

export interface GpuTrainingStatefulSetProps {
  /** The base name, a DNS-1035 label. The StatefulSet and its Service are named `name` or `name-v<version>`. */
  readonly name: string;
  /** The training image. Pin a tag or digest. */
  readonly image: string;
  /** GPUs per pod (`nvidia.com/gpu`), a whole number >= 1; also torchrun's processes per node. */
  readonly gpusPerPod: number;
  /**
   * Pods (nodes) in the job.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * The generation of this workload. Bump it for a change the API server forbids on a live
   * StatefulSet (volume claim templates, pod management, selector): the StatefulSet becomes
   * `name-v<version>`, a new object beside the old one.
   * @default - no suffix: the StatefulSet is named `name`
   */
  readonly version?: number;
  /** @default - no checkpoint volume */
  readonly storage?: CheckpointStorage;
  /**
   * Pre-existing PersistentVolumes to bind, one per ordinal, so that a new version starts from
   * the old version's checkpoints. Needs `storage`. See the adoption runbook in the README.
   * @default - new, empty claims
   */
  readonly adoptVolumes?: AdoptedVolumes;
  /** @default - the image's entrypoint */
  readonly command?: string[];
  /** @default - the image's command */
  readonly args?: string[];
  /**
   * Extra environment variables. Names used for rank wiring (MASTER_ADDR, WORLD_SIZE, PET_*, ...)
   * are refused.
   * @default - none
   */
  readonly env?: Record<string, string>;
  /**
   * GPU and NCCL settings (e.g. `NCCL_DEBUG`, `NCCL_IB_HCA`, `CUDA_DEVICE_MAX_CONNECTIONS`), kept in
   * a ConfigMap and consumed with `envFrom`. The pod template carries a hash of them, so a change
   * reaches pods on their next restart and never touches an immutable StatefulSet field.
   * @default - no ConfigMap
   */
  readonly gpuConfig?: Record<string, string>;
  /**
   * CPU cores requested per pod. No CPU limit is set: CFS throttling stalls data loaders.
   * @default 4 × gpusPerPod
   */
  readonly cpu?: number;
  /**
   * Memory per pod, request and limit.
   * @default 16 GiB × gpusPerPod
   */
  readonly memory?: Size;
  /**
   * The size limit of the `/dev/shm` memory volume; counts against `memory`.
   * @default 4 GiB × gpusPerPod
   */
  readonly sharedMemory?: Size;
  /**
   * Node labels to schedule on, e.g. `{ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }`.
   * @default - any node with free GPUs
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * torch.distributed's rendezvous port on rank 0.
   * @default 29500
   */
  readonly masterPort?: number;
  /**
   * @default TrainingUpdateStrategy.ON_DELETE - a rolling restart kills the running job
   */
  readonly updateStrategy?: TrainingUpdateStrategy;
  /**
   * Time between SIGTERM and SIGKILL, for the trainer to write a checkpoint.
   * @default Duration.minutes(5)
   */
  readonly terminationGracePeriod?: Duration;
  /**
   * @default DisruptionBudget.blockVoluntaryEvictions() - evicting any rank kills the whole job,
   * so drains wait until you stop the job; unhealthy pods can still be evicted.
   */
  readonly disruptionBudget?: DisruptionBudget;
  /**
   * Adds the IPC_LOCK capability for RDMA / GPUDirect memory registration. IPC_LOCK is outside the
   * baseline and restricted profiles: the namespace must allow the privileged Pod Security level.
   * @default false
   */
  readonly rdma?: boolean;
  /**
   * Run as the image's user (root for most training images) instead of a non-root UID.
   * The pod then meets only the baseline profile.
   * @default false
   */
  readonly runAsRoot?: boolean;
  /**
   * The UID, GID and fsGroup of the non-root pod.
   * @default 1000
   */
  readonly runAsUser?: number;
  /** @default 'cluster.local' */
  readonly clusterDomain?: string;
}

/** Env names the construct sets for rank wiring; a user env var may not reuse them. */
const RESERVED_ENV = ['POD_NAMESPACE', 'MASTER_ADDR', 'MASTER_PORT', 'NNODES', 'NPROC_PER_NODE', 'WORLD_SIZE', 'NODE_RANK',
  'PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT', 'HOME'];

/**
 * Multi-GPU distributed training as a StatefulSet with a headless Service: stable rank identities,
 * Parallel start so ranks can rendezvous, GPUs, shared memory, rank wiring for torchrun and
 * checkpoint claims that outlive the StatefulSet.
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
  /** The strictest Pod Security Standard the pod template meets. */
  readonly podSecurityLevel: PodSecurityLevel;
  /** The ConfigMap holding `gpuConfig`, if any. */
  readonly gpuConfigMapName?: string;
  /** The checkpoint claim template name, if storage is set. */
  readonly claimName?: string;
  /** The StatefulSet, for escape hatches through its typed API object. */
  readonly statefulSet: k8s.KubeStatefulSet;
  /** The headless Service. */
  readonly service: k8s.KubeService;
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** @internal */
  readonly _securityUid: number | undefined;
  /** @internal */
  readonly _templateChangesRollOut: boolean;

  constructor(scope: Construct, id: string, props: GpuTrainingStatefulSetProps) {
    super(scope, id);
    const v: Validator = new Validator('GpuTrainingStatefulSet', id);

    const name = this.statefulSetName = statefulSetName(v, props.name, props.version);
    this.serviceName = name;
    this.gpusPerPod = v.wholeNumber('gpusPerPod', props.gpusPerPod, 1);
    this.replicas = v.wholeNumber('replicas', props.replicas ?? 1, 1);
    this.worldSize = this.replicas * this.gpusPerPod;
    v.nonEmpty('image', props.image);
    this.masterPort = v.wholeNumber('masterPort', props.masterPort ?? DEFAULT_MASTER_PORT, 1024, 65535);
    const host = defaultHostResources(this.gpusPerPod);
    const cpu = v.positive('cpu', props.cpu ?? host.cpu);
    const memory = v.positiveSize('memory', props.memory ?? host.memory);
    const shm = v.sharedMemory(props.sharedMemory ?? Size.gibibytes(DEFAULT_SHM_GIB_PER_GPU * this.gpusPerPod), memory);
    const grace = v.seconds('terminationGracePeriod', props.terminationGracePeriod ?? Duration.seconds(DEFAULT_TRAINING_GRACE_SECONDS), 0);
    const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');
    const runAsRoot = props.runAsRoot ?? false;
    const { identity, level, uid } = resolveProcessIdentity(v, { runAsRoot, runAsUser: props.runAsUser, addCapabilities: props.rdma ? ['IPC_LOCK'] : [] });
    this.podSecurityLevel = level;
    this._securityUid = uid;

    const userEnv = props.env ?? {};
    for (const key of Object.keys(userEnv)) {
      v.envName(`env.${key}`, key);
      if (RESERVED_ENV.includes(key)) {
        v.fail(`env.${key}`, `collides with a variable this construct sets for rank wiring (${RESERVED_ENV.join(', ')})`, userEnv[key]);
      }
    }

    const { labels, selector } = labelSet({ name: props.name, instance: name, component: COMPONENT });

    this.masterAddress = `${name}-0.${this.serviceName}.$(POD_NAMESPACE).svc.${clusterDomain}`;
    const nodeRank: k8s.EnvVarSource = { fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } };
    const wiring: k8s.EnvVar[] = [
      // First, so that $(POD_NAMESPACE) expands in the variables below.
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'MASTER_ADDR', value: this.masterAddress },
      { name: 'MASTER_PORT', value: String(this.masterPort) },
      { name: 'NNODES', value: String(this.replicas) },
      { name: 'NPROC_PER_NODE', value: String(this.gpusPerPod) },
      { name: 'WORLD_SIZE', value: String(this.worldSize) },
      { name: 'NODE_RANK', valueFrom: nodeRank },
      // torchrun reads --nnodes etc. from PET_* variables.
      { name: 'PET_NNODES', value: String(this.replicas) },
      { name: 'PET_NPROC_PER_NODE', value: String(this.gpusPerPod) },
      { name: 'PET_NODE_RANK', valueFrom: nodeRank },
      { name: 'PET_MASTER_ADDR', value: this.masterAddress },
      { name: 'PET_MASTER_PORT', value: String(this.masterPort) },
    ];

    const shmParts = shmVolume(shm);
    const volumes: k8s.Volume[] = [shmParts.volume];
    const mounts: k8s.VolumeMount[] = [shmParts.mount];
    const homeEnv: k8s.EnvVar[] = [];
    if (!runAsRoot) {
      // A non-root UID has no writable home in images built for root (NGC PyTorch and friends).
      const scratch = scratchSpace(TRAINING_HOME);
      volumes.push(...scratch.volumes);
      mounts.push(...scratch.mounts);
      homeEnv.push(...scratch.env, { name: 'HF_HOME', value: `${TRAINING_HOME}/.cache/huggingface` });
    }

    let volumeClaimTemplates: k8s.KubePersistentVolumeClaimProps[] | undefined;
    if (props.storage) {
      const claim = this.claimName = v.dnsLabel('storage.claimName', props.storage.claimName ?? 'data');
      v.positiveSize('storage.size', props.storage.size);
      const mountPath = v.absolutePath('storage.mountPath', props.storage.mountPath ?? '/checkpoints');
      if (props.storage.storageClassName !== undefined) v.dnsSubdomain('storage.storageClassName', props.storage.storageClassName);
      // Claim names are <claim>-<statefulSet>-<ordinal>: they too must be valid names.
      v.dnsLabel('storage.claimName', `${claim}-${name}-${this.replicas - 1}`);
      volumeClaimTemplates = [{
        metadata: { name: claim, labels },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: sizeQuantity(props.storage.size) } },
          ...(props.storage.storageClassName ? { storageClassName: props.storage.storageClassName } : {}),
        },
      }];
      mounts.push({ name: claim, mountPath });
    }
    if (props.adoptVolumes && !props.storage) {
      v.fail('adoptVolumes', 'needs storage: adopted volumes are bound to the checkpoint claims');
    }
    if (props.adoptVolumes && props.storage) {
      adoptVolumes(this, v, {
        statefulSetName: name, claimName: this.claimName!, replicas: this.replicas, labels,
        storage: props.storage, adopt: props.adoptVolumes,
      });
    }

    const envFrom: k8s.EnvFromSource[] = [];
    if (props.gpuConfig) {
      const data: Record<string, string> = {};
      for (const [key, value] of Object.entries(props.gpuConfig)) {
        v.envName(`gpuConfig.${key}`, key);
        if (RESERVED_ENV.includes(key) || key in userEnv) {
          v.fail(`gpuConfig.${key}`, 'collides with a variable set by the construct or by env', value);
        }
        data[key] = String(value);
      }
      this.gpuConfigMapName = `${name}-gpu-config`;
      new k8s.KubeConfigMap(this, 'GpuConfig', { metadata: { name: this.gpuConfigMapName, labels }, data });
      envFrom.push({ configMapRef: { name: this.gpuConfigMapName } });
    }

    const main = {
      name: CONTAINER,
      image: props.image,
      imagePullPolicy: 'IfNotPresent',
      ...(props.command ? { command: props.command } : {}),
      ...(props.args ? { args: props.args } : {}),
      ports: [{ name: RENDEZVOUS_PORT_NAME, containerPort: this.masterPort, protocol: 'TCP' }],
      env: [...wiring, ...homeEnv, ...Object.entries(userEnv).map(([k, val]) => ({ name: k, value: String(val) }))],
      ...(envFrom.length ? { envFrom } : {}),
      resources: gpuResources({ gpus: this.gpusPerPod, cpu: k8s.Quantity.fromString(String(cpu)), memory }),
      volumeMounts: mounts,
      securityContext: containerSecurityContext(identity),
    };

    this._podTemplate = new PodTemplate(labels, main, {
      ...POD_HARDENING,
      terminationGracePeriodSeconds: grace,
      securityContext: podSecurityContext(identity),
      tolerations: gpuTolerations(),
      ...(props.nodeSelector ? { nodeSelector: props.nodeSelector } : {}),
      volumes,
    });
    if (props.gpuConfig) this._podTemplate.annotate(GPU_CONFIG_HASH_ANNOTATION, contentHash(props.gpuConfig));

    this.service = headlessService(this, 'Service', {
      name: this.serviceName, labels, selector,
      ports: [{ name: RENDEZVOUS_PORT_NAME, port: this.masterPort, targetPort: k8s.IntOrString.fromString(RENDEZVOUS_PORT_NAME) }],
    });

    const strategy = props.updateStrategy ?? TrainingUpdateStrategy.ON_DELETE;
    this._templateChangesRollOut = strategy !== TrainingUpdateStrategy.ON_DELETE;
    this.statefulSet = new k8s.KubeStatefulSet(this, 'Resource', {
      metadata: { name, labels },
      spec: {
        serviceName: this.serviceName,
        replicas: this.replicas,
        // OrderedReady waits for rank N to be Ready before creating rank N+1, but ranks become
        // Ready only after rendezvous with all the others: a deadlock. Parallel is immutable later.
        podManagementPolicy: 'Parallel',
        updateStrategy: strategy === TrainingUpdateStrategy.ON_DELETE
          ? { type: 'OnDelete' }
          : { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
        selector: { matchLabels: selector },
        template: this._podTemplate.toTemplate(),
        ...(volumeClaimTemplates ? { volumeClaimTemplates } : {}),
        // Checkpoints outlive the StatefulSet and survive scale-down; delete claims on purpose only.
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      },
    });

    podDisruptionBudget(this, 'Budget', {
      name, labels, selector, budget: props.disruptionBudget ?? DisruptionBudget.blockVoluntaryEvictions(),
    });
  }
}

