import { shipScript } from '../common/runtime-scripts';
import { ApiObject, Chart, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { DisruptionBudget, podDisruptionBudget, validateDisruptionBudget } from '../common/disruption';
import { SHM_VOLUME } from '../common/gpu';
import { headlessService } from '../common/headless-service';
import { labelSet, LABEL_INSTANCE } from '../common/labels';
import { ManifestObject } from '../common/manifest-object';
import { statefulSetName } from '../common/names';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { sizeQuantity } from '../common/quantity';
import { PodSecurityLevel } from '../common/security';
import { STATEFUL_SET } from '../common/stateful-set';
import { Validator } from '../validation/validate';
import { addPodValidation } from '../common/workload-pod';
import { AdoptedVolumes, adoptVolumes } from './adopt-volumes';
import {
  completionStateDir,
  jobCommands,
  launchCommand,
  launchScript,
  launchEnv,
  launchVolume,
  POD_STATE_DIR,
  POD_STATE_VOLUME,
} from './launch';
import {
  buildTrainingPod,
  checkpointMountPath,
  checkTorchrunOptions,
  KUEUE_QUEUE_LABEL,
  RENDEZVOUS_PORT_NAME,
  resolveTraining,
  sharedClaim,
  topologyAnnotationsOf,
  TRAINER_CONTAINER,
  trainingHomeVolumes,
  TrainingPracticeProps,
  TRAINING_COMPONENT,
  TRAINING_PRACTICE_PROP_KEYS,
} from './practice';
import { rankWiring, rendezvousIdFor } from './rendezvous';

export {
  DEFAULT_MASTER_PORT,
  DEFAULT_SHM_GIB_PER_GPU,
  DEFAULT_TRAINING_GRACE_SECONDS,
  KUEUE_QUEUE_LABEL,
  TRAINING_HOME,
} from './practice';

/**
 * Whole-gang restarts torchrun makes after a worker fails (`--max-restarts`): a transient fault
 * (an NCCL timeout, a flaky step) costs a restart from the last checkpoint, not the job.
 */
export const DEFAULT_MAX_RESTARTS = 3;
/** Failed starts of a rank before the launch wrapper ends the run FAILED (CDK8S_GPU_MAX_FAILED_STARTS). */
export const DEFAULT_MAX_FAILED_STARTS = 10;

const SHARED_CHECKPOINT_VOLUME = 'shared-checkpoints';

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

export interface GpuTrainingStatefulSetProps extends TrainingPracticeProps {
  /** The base name, a DNS-1035 label. The StatefulSet and its Service are named `name` or `name-v<version>`. */
  readonly name: string;
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
   * @default TrainingUpdateStrategy.ON_DELETE - a rolling restart kills the running job
   */
  readonly updateStrategy?: TrainingUpdateStrategy;
  /**
   * @default DisruptionBudget.blockVoluntaryEvictions() - evicting any rank kills the whole job,
   * so drains wait until you stop the job; unhealthy pods can still be evicted.
   */
  readonly disruptionBudget?: DisruptionBudget;
  /**
   * torchrun's `--max-restarts` with the c10d rendezvous: after a worker fails, every rank's
   * workers restart together from the last checkpoint, without a pod restart. It is a budget of
   * each node's agent, not a count of gang restarts: a membership change (a rank re-joining) does
   * not use it, and a container restart starts a fresh agent with a fresh budget. When one agent
   * has used it up, torchrun exits non-zero and the launch wrapper counts a failed start; its cap
   * on failed starts, not this number, ends the run (docs/training.md, "When a run fails").
   * @default 3
   */
  readonly maxRestarts?: number;
  /**
   * Failed container starts of one rank (per run id) before the launch wrapper ends the run FAILED:
   * every rank then idles with a termination message saying how to free the GPUs (scale to 0 or
   * delete the StatefulSet), instead of crash-looping forever. Each container restart gets a fresh
   * torchrun and a fresh `maxRestarts`, so only this count ends a run that keeps failing.
   * @default 10 - enough for a few node losses and preemptions, few enough that a broken run stops
   */
  readonly maxFailedStarts?: number;
  /**
   * The identity of this training run. A completed run is recorded per run id; a new id trains
   * again beside the checkpoints of earlier runs. A DNS-1123 label.
   * @default - the StatefulSet name: a new version is a new run
   */
  readonly runId?: string;
}

const OWN_PROP_KEYS: ReadonlyArray<keyof GpuTrainingStatefulSetProps> = [
  'name',
  'replicas',
  'version',
  'storage',
  'sharedCheckpoints',
  'adoptVolumes',
  'updateStrategy',
  'disruptionBudget',
  'maxRestarts',
  'maxFailedStarts',
  'runId',
];
const PROP_KEYS = [...TRAINING_PRACTICE_PROP_KEYS, ...OWN_PROP_KEYS];
const STORAGE_KEYS: ReadonlyArray<keyof CheckpointStorage> = ['claimName', 'size', 'mountPath', 'storageClassName'];

/**
 * Multi-GPU distributed training as a StatefulSet that behaves as one job: admitted whole (Kueue),
 * restarted whole (torchrun's c10d rendezvous on rank 0's stable address), finished once (a launch
 * wrapper that records completion and idles instead of retraining), with stable rank identities,
 * GPUs, shared memory, RDMA and checkpoint claims that outlive the StatefulSet. For a finite run,
 * `GpuTrainingJob` (a JobSet) finishes, fails and frees its GPUs by itself; this construct is for
 * per-rank durable disks and long-lived trainers. The image needs `sh`, `date`, `mkdir`, `mv` and
 * `sleep` for the launch wrapper.
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
  /** Whole-gang restarts torchrun makes before it gives up (a per-node budget, see the prop). */
  readonly maxRestarts: number;
  /** Failed starts of a rank before the run is FAILED. */
  readonly maxFailedStarts: number;
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
  /**
   * The immutable ConfigMap `<statefulSetName>-launch-<hash>` holding the launch wrapper the pods run
   * from a read-only mount.
   */
  readonly launchScript: ApiObject;
  /** The NetworkPolicy admitting only the job's own pods (unless `networkPolicy` is unrestricted). */
  readonly networkPolicy?: ApiObject;
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

  /**
   * The strictest Pod Security Standard the pod template meets, with everything added to it so far
   * (e.g. by `mountInto`).
   */
  get podSecurityLevel(): PodSecurityLevel {
    return this._podTemplate.securityLevel();
  }
  /** @internal */
  readonly _securityUid: number | undefined;
  /** @internal */
  readonly _processAliases: Readonly<Record<string, string>>;
  /** @internal */
  readonly _templateChangesRollOut: boolean;
  /** @internal */
  get _podOwner(): ApiObject {
    return this.statefulSet;
  }

  constructor(scope: Construct, id: string, props: GpuTrainingStatefulSetProps) {
    super(scope, id);
    const v: Validator = new Validator('GpuTrainingStatefulSet', id);
    v.knownProps('', props, PROP_KEYS);

    const name = (this.statefulSetName = statefulSetName(v, props.name, props.version));
    this.serviceName = name;
    this.replicas = v.wholeNumber('replicas', props.replicas ?? 1, 1);
    const basics = resolveTraining(v, props, this.replicas, 'replicas');
    this.gpusPerPod = basics.gpusPerPod;
    this.worldSize = basics.worldSize;
    this.masterPort = basics.masterPort;
    this.maxRestarts = v.wholeNumber('maxRestarts', props.maxRestarts ?? DEFAULT_MAX_RESTARTS, 0, 1000);
    this.maxFailedStarts = v.wholeNumber(
      'maxFailedStarts',
      props.maxFailedStarts ?? DEFAULT_MAX_FAILED_STARTS,
      1,
      1000,
    );
    this.shutdownTimeoutSeconds = basics.shutdownTimeoutSeconds;
    this._securityUid = basics.uid;
    this._processAliases = basics.processAliases;
    this.queueName = basics.queueName;
    const runAsRoot = basics.runAsRoot;
    const strategy = props.updateStrategy ?? TrainingUpdateStrategy.ON_DELETE;
    if (!Object.values(TrainingUpdateStrategy).includes(strategy))
      v.fail('updateStrategy', 'must be a TrainingUpdateStrategy', strategy);
    const budget = props.disruptionBudget ?? DisruptionBudget.blockVoluntaryEvictions();
    validateDisruptionBudget(v, 'disruptionBudget', budget, this.replicas);

    const { labels, selector } = labelSet({ name: props.name, instance: name, component: TRAINING_COMPONENT });
    this.podSelector = `${LABEL_INSTANCE}=${name}`;

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
        ...trainingHomeVolumes(runAsRoot).names,
      ];
      if (podVolumes.includes(claim))
        v.fail('storage.claimName', `must differ from the pod's own volumes (${podVolumes.join(', ')})`, claim);
      v.positiveSize('storage.size', storage.size);
      storageMount = checkpointMountPath(v, 'storage.mountPath', storage.mountPath ?? '/checkpoints');
      // Kueue's topology-aware scheduling places pods by topology alone and ignores where a bound
      // volume lives (kueue#14708): a re-created rank can be admitted to a domain its disk cannot
      // reach and stay Pending for ever.
      const topology = topologyAnnotationsOf(props);
      if (topology.length > 0)
        v.fail(
          `pod.annotations.${topology[0]}`,
          "must not be set with storage: Kueue's topology-aware scheduling ignores where a rank's bound volume lives (kueue#14708), so a re-created rank can be placed where its disk cannot follow and stay Pending; use sharedCheckpoints (ReadWriteMany) or GpuTrainingJob for topology placement",
          props.pod!.annotations![topology[0]],
        );
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
      const shared = sharedClaim(v, 'sharedCheckpoints', props.sharedCheckpoints, {
        defaultMountPath: '/shared-checkpoints',
        volumeName: SHARED_CHECKPOINT_VOLUME,
        runAsRoot,
        podPaths: [POD_STATE_DIR],
      });
      this.sharedClaimName = shared.claimName;
      sharedMount = shared.mountPath;
      volumes.push(shared.volume);
      mounts.push(shared.mount);
    }
    const durable = sharedMount ?? storageMount;
    this.completionIsDurable = durable !== undefined;
    this.completionStateDir = completionStateDir(durable);

    if (props.adoptVolumes !== undefined && !props.storage) {
      v.fail('adoptVolumes', 'needs storage: adopted volumes are bound to the checkpoint claims');
    }
    if (props.adoptVolumes !== undefined && props.storage && props.storage.storageClassName === undefined) {
      // A claim without a class gets the cluster's default class when it is created (the
      // DefaultStorageClass admission plugin), and a volume binds only to a claim of its own class:
      // after a default-class change the adopted claims would stay Pending for ever.
      v.fail(
        'storage.storageClassName',
        "must name the adopted volumes' StorageClass with adoptVolumes: a claim without one takes the cluster's current default class, and a volume of another class never binds to it",
      );
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

    this.masterAddress = `${name}-0.${this.serviceName}.$(POD_NAMESPACE).svc.${basics.clusterDomain}`;
    const wiring = rankWiring({
      masterAddress: this.masterAddress,
      masterPort: this.masterPort,
      replicas: this.replicas,
      gpusPerPod: this.gpusPerPod,
      maxRestarts: this.maxRestarts,
      shutdownTimeoutSeconds: this.shutdownTimeoutSeconds,
    });
    const ownedEnv = [
      ...wiring.env,
      ...launchEnv(this.runId, this.completionStateDir, {
        shared: props.sharedCheckpoints !== undefined,
        maxFailedStarts: this.maxFailedStarts,
      }),
    ];
    checkTorchrunOptions(v, props, basics.launch, ownedEnv);

    const pod = buildTrainingPod(this, v, {
      props,
      basics,
      labels,
      name,
      // The launch wrapper runs the launcher and gives the rank job semantics (src/training/launch.sh).
      command: launchCommand(basics.launch, { forwardOnly: false }),
      ownedEnv,
      volumes,
      mounts,
      claims,
    });
    this._podTemplate = pod.template;
    this.launchScript = shipScript(this, pod.template, launchScript())!;
    this.gpuConfigMapName = pod.gpuConfigMapName;
    this.gpuConfigMap = pod.gpuConfigMap;
    this.networkPolicy = pod.networkPolicy;

    // Known only now that the pod is built: the rank spec the gang must agree on.
    this.rendezvousId = wiring.rendezvousId.value = rendezvousIdFor(
      this.runId,
      this.replicas,
      pod.template.main,
      wiring.rendezvousId,
    );

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

    const commands = jobCommands(TRAINER_CONTAINER, this.podSelector, Chart.of(this).namespace);
    this.waitForCompletionCommand = commands.waitForCompletion;
    this.restartCommand = commands.restart;
  }
}
