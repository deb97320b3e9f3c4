import { ApiObject, Chart, Duration, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { KIND, ManifestObject } from '../common/manifest-object';
import { Construct } from 'constructs';
import { DisruptionBudget, podDisruptionBudget } from '../common/disruption';
import { headlessService } from '../common/headless-service';
import { ImageRef } from '../common/image-ref';
import {
  LABEL_COMPONENT,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  labelSet,
  workloadLabels,
} from '../common/labels';
import { statefulSetName } from '../common/names';
import { GpuWorkloadProps } from '../common/pod-options';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { nonRootUserEnv, scratchSpace } from '../common/scratch';
import { PodSecurityLevel, resolveProcessIdentity } from '../common/security';
import { STATEFUL_SET } from '../common/stateful-set';
import { sharedObject } from '../checks/unique-objects';
import { configKey } from '../common/env';
import { show, Validator } from '../validation/validate';
import { addPodValidation, buildWorkloadPod, GPU_WORKLOAD_PROP_KEYS, OwnedEnv } from '../common/workload-pod';
import { AutoscalingOptions, resolveAutoscaling } from './autoscaling';
import { EngineMetrics, EngineTuning, ImageFact, ServingEngine } from './engine';
import { ModelCache } from './model-cache';

/** Time for endpoints, kube-proxy and load balancers to stop sending new requests to a terminating pod. */
export const DEFAULT_PRESTOP_SLEEP_SECONDS = 15;
/** Slack after the drain for the engine's workers to exit, and for the kubelet's own delays. */
export const TERMINATION_MARGIN_SECONDS = 15;
/** How long in-flight requests may finish after SIGTERM: TGI's launcher default, long generations included. */
export const DEFAULT_DRAIN_SECONDS = 90;
/** The startup budget when no model size is declared: load and warm-up of a model up to ~60 GB. */
export const DEFAULT_MAX_MODEL_LOAD_SECONDS = 900;
/**
 * Assumed read bandwidth from the cache volume into the engine, MB/s (10^6 bytes): a network disk
 * at its baseline (EBS gp3 125 MiB/s, pd-balanced 140 MB/s per volume) or an NFS share under load.
 */
export const ASSUMED_LOAD_MB_PER_SECOND = 100;
/** Warm-up after the weights are on the GPUs: CUDA graph capture, torch.compile, kernel autotuning. */
export const WARMUP_SECONDS = 300;
/** Assumed download bandwidth from the hub, MB/s, for the README's fill times (the init container has no deadline). */
export const ASSUMED_DOWNLOAD_MB_PER_SECOND = 25;
/** The model cache mount and HF_HOME of every engine. */
export const MODEL_CACHE_PATH = '/data';

const STARTUP_PERIOD_SECONDS = 10;
const PER_POD_ENDPOINTS_LABEL = 'cdk8s-gpu.io/per-pod-endpoints';
const COMPONENT = 'inference';
const PORT_NAME = 'http';
const DOWNLOAD_CONTAINER = 'model-download';
const INT32_MAX = 2147483647;
/** Prometheus's default lookback for an instant query (`--query.lookback-delta`). */
const PROMETHEUS_LOOKBACK_SECONDS = 300;
/** huggingface_hub's REPO_ID_REGEX: an optional namespace, then a name of 1-96 characters. */
const HUB_REPO_ID = /^(?:\w(?:[\w.-]*\w)?\/)?\w(?:[\w.-]{0,94}\w)?$/;
/** The variables that place huggingface_hub's cache (and transformers' older one). */
const HUB_CACHE_VARIABLES = ['HF_HOME', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_CACHE'];
/** The default per-replica cache: room for a 7B–30B-class model, or the declared model with headroom. */
const DEFAULT_CACHE_GIB = 100;
const CACHE_HEADROOM = 1.2;

/** A key of a Secret, e.g. a HuggingFace token. */
export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

/** The IP family the server listens on: the cluster's primary pod IP family. */
export enum IpFamily {
  /** `0.0.0.0`: IPv4 and IPv4-primary dual-stack clusters. */
  IPV4 = 'IPv4',
  /** `::`: IPv6-only and IPv6-primary clusters (probes reach the pod's IPv6 address). */
  IPV6 = 'IPv6',
}

/** Props every serving construct accepts, with the same meaning and default. */
export interface InferenceServiceProps extends GpuWorkloadProps {
  /** The base name, a DNS-1035 label. The client Service is `name`; the StatefulSet `name` or `name-v<version>`. */
  readonly name: string;
  /** The HuggingFace model id, e.g. `meta-llama/Llama-3.1-8B-Instruct`, or an absolute path on a volume (then nothing is downloaded). */
  readonly modelId: string;
  /**
   * The model revision (branch, tag or commit). Pin a commit for reproducible deploys.
   * @default - the repository's default branch
   */
  readonly revision?: string;
  /**
   * Replicas. Not with `autoscaling`, where the autoscaler owns the count.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * GPUs per replica; also the engine's tensor-parallel size (TGI `NUM_SHARD`, vLLM
   * `--tensor-parallel-size`, SGLang `--tp-size`).
   * @default 1
   */
  readonly gpusPerReplica?: number;
  /** @default - no suffix. Same meaning as for GpuTrainingStatefulSet. */
  readonly version?: number;
  /**
   * A Secret key holding a HuggingFace token, for gated models; becomes env HF_TOKEN (of the
   * download init container and the server).
   * @default - no token
   */
  readonly hfTokenSecret?: SecretKeyRef;
  /** @default - the engine's pinned release */
  readonly image?: string;
  /**
   * Extra engine arguments. Flags the construct sets from a prop (port, address, model, parallelism,
   * drain, modelled limits) are refused, naming the prop to use.
   * @default - none
   */
  readonly extraArgs?: string[];
  /**
   * Where downloaded weights live (`/data`, HF_HOME). An init container downloads into it before the
   * server starts; the server reads it offline.
   * @default ModelCache.persistentClaim({ size: Size.gibibytes(100) }) - per-replica claim, so a restart does not download again; larger when modelSize needs it (modelSize + 20%)
   */
  readonly modelCache?: ModelCache;
  /**
   * The size of the model's weights on disk (e.g. `Size.gibibytes(15)` for a 7B model in bf16). The
   * startup budget is derived from it: size at 100 MB/s plus 300 s of warm-up; the cache size is
   * checked against it.
   * @default - not declared: the startup budget is maxModelLoadTime
   */
  readonly modelSize?: Size;
  /**
   * How long a preStop hook sleeps before the container gets SIGTERM, so that endpoints and load
   * balancers stop routing to the pod first.
   * @default Duration.seconds(15)
   */
  readonly preStopSleep?: Duration;
  /**
   * How long in-flight requests may finish after SIGTERM. Set as the engine's own drain timeout
   * where it has one (TGI `GRACEFUL_TERMINATION_TIMEOUT`, vLLM `--shutdown-timeout`); SGLang drains
   * without a timeout, so the grace period bounds it.
   * @default Duration.seconds(90) - TGI's launcher default; long generations included
   */
  readonly drainTimeout?: Duration;
  /**
   * Must be at least preStopSleep + drainTimeout + 15 s, so SIGKILL never cuts a drain short.
   * @default - preStopSleep + drainTimeout + 15 s (120 s with the defaults)
   */
  readonly terminationGracePeriod?: Duration;
  /**
   * The startup probe's budget for loading the weights onto the GPUs and warming up (the download
   * runs before, in an init container no probe watches). At least one minute; with `modelSize`, at
   * least the budget derived from it.
   * @default - derived from modelSize, else Duration.minutes(15)
   */
  readonly maxModelLoadTime?: Duration;
  /**
   * `/dev/shm`, for NCCL between tensor-parallel ranks.
   * @default - per GPU: 1 GiB for TGI (its docs' `--shm-size 1g`), 2 GiB for vLLM and SGLang
   */
  readonly sharedMemory?: Size;
  /**
   * Run as the image's user (root). Needed by images that cannot start as a non-root UID (TGI from
   * 3.1, SGLang); the pod then meets baseline instead of restricted.
   * @default - true for TGI and SGLang, false for vLLM (its image has a non-root user, UID 2000)
   */
  readonly runAsRoot?: boolean;
  /**
   * Emit a Prometheus-operator ServiceMonitor on the per-pod headless Service (needs its CRD).
   * @default false - pods carry prometheus.io/* scrape annotations instead
   */
  readonly serviceMonitor?: boolean;
  /**
   * Labels of the ServiceMonitor, e.g. `{ release: 'kube-prometheus-stack' }`: kube-prometheus-stack's
   * Prometheus selects ServiceMonitors by its `release` label.
   * @default - the construct's labels only
   */
  readonly serviceMonitorLabels?: Record<string, string>;
  /**
   * The scrape interval.
   * @default Duration.seconds(30)
   */
  readonly serviceMonitorInterval?: Duration;
  /**
   * Scale on the engine's queue gauge with an HPA or KEDA. The StatefulSet's `replicas` is then not
   * synthesized, so `kubectl apply` and GitOps never fight the autoscaler; the PDB still holds.
   * @default - a fixed replica count
   */
  readonly autoscaling?: AutoscalingOptions;
  /**
   * The IP family the server listens on (`0.0.0.0` or `::`).
   * @default IpFamily.IPV4
   */
  readonly ipFamily?: IpFamily;
  /**
   * Let the engine report anonymous usage statistics to its vendor (TGI `USAGE_STATS`, vLLM
   * usage reporting).
   * @default false - a production server should not phone home
   */
  readonly usageStats?: boolean;
}

/** @internal The keys of InferenceServiceProps beyond GpuWorkloadProps, for the unknown-prop check. */
export const SERVING_PROP_KEYS: ReadonlyArray<keyof InferenceServiceProps> = [
  'name',
  'modelId',
  'revision',
  'replicas',
  'gpusPerReplica',
  'version',
  'hfTokenSecret',
  'image',
  'extraArgs',
  'modelCache',
  'modelSize',
  'preStopSleep',
  'drainTimeout',
  'terminationGracePeriod',
  'maxModelLoadTime',
  'sharedMemory',
  'runAsRoot',
  'serviceMonitor',
  'serviceMonitorLabels',
  'serviceMonitorInterval',
  'autoscaling',
  'ipFamily',
  'usageStats',
];

/** @internal What a concrete serving construct passes to the shared practice. */
export interface EngineBinding {
  readonly engine: ServingEngine;
  /** The construct's own prop keys. */
  readonly keys: readonly string[];
  /** Turns the construct's own props into engine flags or variables, validated. */
  readonly tuning: (v: Validator) => EngineTuning;
}

/**
 * The practice every LLM server shares: a StatefulSet whose pods drain instead of dropping
 * requests (timings that add up), a startup probe over model load only, weights downloaded where
 * no probe can kill the download, a PDB keeping n-1 serving, a client Service stable across
 * versions and engines, per-pod metrics, optional autoscaling on the queue, and the tightest Pod
 * Security level the image allows. `TgiInferenceService`, `VllmInferenceService` and
 * `SglangInferenceService` are this with one engine's facts.
 */
export abstract class InferenceService extends Construct implements IGpuWorkload {
  /** The client Service's name: `name`, stable across versions and engines, port 80. */
  readonly serviceName: string;
  /** The StatefulSet's name: `name` or `name-v<version>`. */
  readonly statefulSetName: string;
  /** The governing headless Service's name. */
  readonly headlessServiceName: string;
  /** `http://<service>.<namespace>.svc.<domain>` when the chart has a namespace, else `http://<service>`. */
  readonly url: string;
  /** The port the engine listens on (named `http`). */
  readonly port: number;
  /** The pod's grace period: at least preStop + drain + margin. */
  readonly terminationGracePeriodSeconds: number;
  /** The startup probe's budget for model load and warm-up. */
  readonly startupBudgetSeconds: number;
  /** The StatefulSet, for escape hatches through its typed API object. */
  readonly statefulSet: ApiObject;
  /**
   * The client Service. Shared with every other version of this name in the app (the first
   * construct makes it), so it is emitted once and selects every version's pods.
   */
  readonly service: ApiObject;
  /** The headless Service: per-pod DNS names and the metrics endpoints. */
  readonly headlessService: ApiObject;
  /** The PodDisruptionBudget (`maxUnavailable: 1`). */
  readonly podDisruptionBudget: ApiObject;
  /** The ServiceMonitor, when `serviceMonitor` is set. */
  readonly serviceMonitor?: ApiObject;
  /** The HorizontalPodAutoscaler, when autoscaled with `Autoscaler.hpa()`. */
  readonly horizontalPodAutoscaler?: ApiObject;
  /** The KEDA ScaledObject, when autoscaled with `Autoscaler.keda()`. */
  readonly scaledObject?: ApiObject;
  /**
   * The model cache's claim: the claim template's name for a per-replica cache (the PVCs are
   * `<name>-<statefulSet>-<ordinal>`), the existing claim for a shared cache, undefined for an emptyDir.
   */
  readonly modelCacheClaimName?: string;
  /** The engine's queue gauge, the autoscaling signal (e.g. `vllm:num_requests_waiting`). */
  readonly queueMetric: string;
  /** The engine's other metrics, for alerts and dashboards. */
  readonly engineMetrics: EngineMetrics;
  /** Seconds until a new replica is capacity: its download (per-replica cache, with modelSize) plus the startup budget. */
  readonly capacitySeconds: number;
  /** The scrape interval in seconds: the ServiceMonitor's, or the 30 s it would have. */
  readonly scrapeIntervalSeconds: number;
  /** The resolved autoscaling bounds and target, when autoscaled. */
  readonly autoscalingLimits?: {
    readonly minReplicas: number;
    readonly maxReplicas: number;
    readonly targetQueueDepth: number;
    readonly scaleDownStabilizationSeconds: number;
  };
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
  readonly _templateChangesRollOut = true;

  /** @internal Each engine's construct passes its facts; the practice is not extended from outside. */
  protected constructor(scope: Construct, id: string, props: InferenceServiceProps, binding: EngineBinding) {
    super(scope, id);
    const engine = binding.engine;
    const v = new Validator(engine.construct, id);
    v.knownProps('', props, propKeysOf(binding.keys));
    for (const key of Object.keys(props)) {
      if ((props as unknown as Record<string, unknown>)[key] === null)
        v.fail(key, 'must not be null: omit it for the default', null);
    }

    const name = (this.statefulSetName = statefulSetName(v, props.name, props.version));
    this.serviceName = props.name;
    this.headlessServiceName = `${name}-headless`;
    this.port = engine.port;
    const modelId = v.nonEmpty('modelId', props.modelId);
    // Both become command-line arguments: a leading "-" would be read as a flag.
    if (/\s/.test(modelId) || modelId.startsWith('-'))
      v.fail('modelId', 'must be a hub id or an absolute path, without whitespace or a leading "-"', modelId);
    // huggingface_hub's validate_repo_id (utils/_validators.py) refuses anything else before a download starts.
    if (
      !modelId.startsWith('/') &&
      (!HUB_REPO_ID.test(modelId) || modelId.includes('--') || modelId.includes('..') || modelId.endsWith('.git'))
    ) {
      v.fail(
        'modelId',
        'must be a hub repository id ("name" or "org/name": letters, digits, "-", "_" and ".", at most 96 for the name, no "--" or "..", not ending in ".git") or an absolute path',
        modelId,
      );
    }
    const revision = props.revision === undefined ? undefined : v.nonEmpty('revision', props.revision);
    if (revision !== undefined && (/\s/.test(revision) || revision.startsWith('-')))
      v.fail('revision', 'must be a branch, tag or commit, without whitespace or a leading "-"', revision);
    const gpus = v.wholeNumber('gpusPerReplica', props.gpusPerReplica ?? 1, 1);
    const image = v.image('image', props.image ?? engine.defaultImage);

    // Timings that add up: the engine's drain, inside the grace period, after the preStop.
    const preStop = v.seconds('preStopSleep', props.preStopSleep ?? Duration.seconds(DEFAULT_PRESTOP_SLEEP_SECONDS), 0);
    const drain = v.seconds('drainTimeout', props.drainTimeout ?? Duration.seconds(DEFAULT_DRAIN_SECONDS), 1);
    const needed = preStop + drain + TERMINATION_MARGIN_SECONDS;
    const grace =
      props.terminationGracePeriod === undefined
        ? needed
        : v.seconds('terminationGracePeriod', props.terminationGracePeriod, 1);
    if (grace < needed) {
      v.fail(
        'terminationGracePeriod',
        `must be at least preStopSleep + drainTimeout + margin = ${preStop}s + ${drain}s + ${TERMINATION_MARGIN_SECONDS}s = ${needed}s, or SIGKILL cuts the drain short`,
        props.terminationGracePeriod,
      );
    }
    this.terminationGracePeriodSeconds = grace;

    const modelSize = props.modelSize === undefined ? undefined : v.positiveSize('modelSize', props.modelSize);
    this.startupBudgetSeconds = startupBudget(v, modelSize, props.maxModelLoadTime);

    const defaultCacheGib = Math.max(
      DEFAULT_CACHE_GIB,
      modelSize ? Math.ceil((modelSize.toKibibytes() * CACHE_HEADROOM) / 1024 ** 2) : 0,
    );
    const cache = props.modelCache ?? ModelCache.persistentClaim({ size: Size.gibibytes(defaultCacheGib) });
    if (!(cache instanceof ModelCache))
      v.fail('modelCache', 'must be made with ModelCache.persistentClaim(), sharedClaim() or emptyDir()', cache);
    const boundCache = cache._bind(v, modelSize);
    this.modelCacheClaimName = boundCache.claimTemplate
      ? boundCache.volumeName
      : boundCache.volume?.persistentVolumeClaim?.claimName;

    // A replica is capacity once it has loaded the model, and first downloaded it unless the cache
    // is shared: with a cache per replica, a scaled-up replica fills its own (at the assumed hub
    // bandwidth, when modelSize says how much).
    const downloadSeconds =
      !boundCache.shared && modelSize
        ? Math.ceil((modelSize.toKibibytes() * 1024) / (ASSUMED_DOWNLOAD_MB_PER_SECOND * 1e6))
        : 0;
    const capacity = {
      seconds: this.startupBudgetSeconds + downloadSeconds,
      what:
        downloadSeconds > 0
          ? `download at ${ASSUMED_DOWNLOAD_MB_PER_SECOND} MB/s (${downloadSeconds}s) + startup budget (${this.startupBudgetSeconds}s)`
          : `startup budget (${this.startupBudgetSeconds}s)`,
    };
    this.capacitySeconds = capacity.seconds;
    const autoscaling =
      props.autoscaling === undefined ? undefined : resolveAutoscaling(v, props.autoscaling, capacity);
    if (autoscaling) {
      this.autoscalingLimits = {
        minReplicas: autoscaling.minReplicas,
        maxReplicas: autoscaling.maxReplicas,
        targetQueueDepth: autoscaling.targetQueueDepth,
        scaleDownStabilizationSeconds: autoscaling.scaleDownSeconds,
      };
    }
    if (autoscaling && props.replicas !== undefined) {
      v.fail(
        'replicas',
        'must not be set with autoscaling: the autoscaler owns the replica count (use autoscaling.minReplicas)',
        props.replicas,
      );
    }
    const replicas = autoscaling ? undefined : v.wholeNumber('replicas', props.replicas ?? 1, 1);

    if (props.ipFamily !== undefined && !Object.values(IpFamily).includes(props.ipFamily))
      v.fail('ipFamily', `must be one of ${Object.values(IpFamily).join(', ')}`, props.ipFamily);
    const host = props.ipFamily === IpFamily.IPV6 ? '::' : '0.0.0.0';
    const usageStats = v.boolean('usageStats', props.usageStats, false);
    const tuning = binding.tuning(v);

    const launch = engine.launch({
      modelId,
      revision,
      gpus,
      port: engine.port,
      host,
      drainSeconds: drain,
      usageStats,
      tuning,
    });
    const extraArgs = v.stringArray('extraArgs', props.extraArgs) ?? [];
    const refusedFlags = extraArgs.length > 0 ? refusedFlagsOf(engine) : undefined;
    extraArgs.forEach((arg, i) => {
      if (engine.argsWordSplit && /[\s*?[]/.test(arg)) {
        v.fail(
          `extraArgs[${i}]`,
          "must not contain whitespace or glob characters: the image's entrypoint passes arguments through an unquoted $@, which would split or expand it (use the equivalent environment variable through env)",
          arg,
        );
      }
      const flag = arg.split('=')[0];
      const exact = refusedFlags!.get(flag);
      if (exact) v.fail(`extraArgs[${i}]`, `must not set ${flag}: ${exact.set}`, arg);
      const expands =
        engine.abbreviatedFlags && flag.startsWith('--') && flag.length > 2
          ? [...refusedFlags!.keys()].find(f => f.startsWith(flag))
          : undefined;
      if (expands)
        v.fail(
          `extraArgs[${i}]`,
          `must not abbreviate ${expands}: argparse expands ${flag} to it${refusedFlags!.get(expands)!.expanded}`,
          arg,
        );
    });

    this.queueMetric = engine.queueMetric;
    this.engineMetrics = engine.metrics;

    const { identity, uid } = resolveProcessIdentity(v, {
      // A runAsUser asks for a non-root pod: it sets the default, not a silent root.
      runAsRoot: v.boolean('runAsRoot', props.runAsRoot, props.runAsUser !== undefined ? false : engine.runAsRoot),
      runAsUser: props.runAsUser,
      defaultUid: engine.nonRootUid,
    });
    this._securityUid = uid;
    this._processAliases = engine.processAliases ?? {};
    // What asked for a non-root pod, for the message when the image cannot run as one.
    const nonRootBy: [string, unknown] | undefined = identity.runAsRoot
      ? undefined
      : props.runAsRoot === false
        ? ['runAsRoot', false]
        : props.runAsUser !== undefined
          ? ['runAsUser', props.runAsUser]
          : ['image', image];
    checkImageFacts(v, engine.imageFacts, image, nonRootBy);

    const { labels, selector } = labelSet({ name: props.name, instance: name, component: COMPONENT });
    const scratch = scratchSpace(engine.home);

    // The hub cache's location is the model cache volume: the download fills it there and the server
    // reads it offline. huggingface_hub takes HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE) over
    // HF_HOME (huggingface_hub/constants.py), so any of them set elsewhere loses the weights.
    for (const variable of HUB_CACHE_VARIABLES) {
      if (props.env && Object.prototype.hasOwnProperty.call(props.env, variable)) {
        v.fail(
          `env.${variable}`,
          `must not be set: it moves the hub cache off the model cache volume (${MODEL_CACHE_PATH}), where the download fills it and the server reads it offline; set modelCache instead`,
          variable,
        );
      }
    }
    const token: k8s.EnvVar[] = [];
    if (props.hfTokenSecret) {
      v.knownProps('hfTokenSecret', props.hfTokenSecret, ['name', 'key']);
      v.dnsSubdomain('hfTokenSecret.name', props.hfTokenSecret.name);
      configKey(v, 'hfTokenSecret.key', v.nonEmpty('hfTokenSecret.key', props.hfTokenSecret.key));
      if (props.env && Object.prototype.hasOwnProperty.call(props.env, 'HF_TOKEN')) {
        v.fail('env.HF_TOKEN', 'is set by hfTokenSecret: set one of them', 'HF_TOKEN');
      }
      token.push({
        name: 'HF_TOKEN',
        valueFrom: { secretKeyRef: { name: props.hfTokenSecret.name, key: props.hfTokenSecret.key } },
      });
    }
    // The server never reaches the hub: the init container filled the cache, so a hub outage or a
    // rate limit cannot stall a start, and no download runs under the startup probe.
    const offline: OwnedEnv = { env: { name: 'HF_HUB_OFFLINE', value: '1' }, via: 'modelCache' };

    const probe = (extra: Partial<k8s.Probe>): k8s.Probe => ({
      httpGet: { path: engine.healthPath, port: k8s.IntOrString.fromString(PORT_NAME) },
      ...extra,
    });
    const cacheMount = { name: boundCache.volumeName, mountPath: MODEL_CACHE_PATH };
    const built = buildWorkloadPod(v, {
      props,
      gpus,
      identity,
      labels,
      container: {
        name: engine.containerName,
        image,
        imagePullPolicy: 'IfNotPresent', // a multi-GB image: pull once per node and tag
        ...(launch.command ? { command: launch.command } : {}),
        ...(launch.args.length + extraArgs.length > 0 ? { args: [...launch.args, ...extraArgs] } : {}),
        ports: [{ name: PORT_NAME, containerPort: engine.port, protocol: 'TCP' }],
        // The port stays closed while the weights load: only the startup probe waits.
        startupProbe: probe({
          periodSeconds: STARTUP_PERIOD_SECONDS,
          timeoutSeconds: 5,
          failureThreshold: Math.ceil(this.startupBudgetSeconds / STARTUP_PERIOD_SECONDS),
        }),
        readinessProbe: probe({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3, successThreshold: 1 }),
        // A busy server answers slowly; only a server that fails for 3 minutes is restarted.
        livenessProbe: probe({ periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 6 }),
        lifecycle: { preStop: { exec: { command: ['sleep', String(preStop)] } } },
      },
      ownedEnv: [...launch.env, offline],
      defaultEnv: [
        ...engine.cacheEnv(MODEL_CACHE_PATH),
        ...token,
        ...scratch.env,
        ...(identity.runAsRoot ? [] : [nonRootUserEnv(engine.containerName)]),
        ...engine.extraEnv(engine.home),
      ],
      volumes: [...scratch.volumes, ...(boundCache.volume ? [boundCache.volume] : [])],
      mounts: [...scratch.mounts, ...(boundCache.volume ? [cacheMount] : [])],
      claims: boundCache.claimTemplate
        ? [{ name: boundCache.volumeName, mountPath: MODEL_CACHE_PATH, prop: 'modelCache' }]
        : [],
      sharedMemory: props.sharedMemory ?? Size.gibibytes(engine.shmGibPerGpu * gpus),
      spec: {
        terminationGracePeriodSeconds: grace,
        // Spread replicas over nodes so one node drain or failure takes one replica; ScheduleAnyway
        // because GPU nodes are scarce and a skewed placement beats a Pending replica.
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'kubernetes.io/hostname',
            whenUnsatisfiable: 'ScheduleAnyway',
            labelSelector: { matchLabels: selector },
          },
        ],
      },
    });
    const template = (this._podTemplate = built.template);
    if (!modelId.startsWith('/')) addDownload(v, template, engine.download(modelId, revision), offline.env.name);
    template.annotate('prometheus.io/scrape', 'true');
    template.annotate('prometheus.io/port', String(engine.port));
    template.annotate('prometheus.io/path', engine.metricsPath);

    // The ServiceMonitor finds the per-pod endpoints through this label, never the client Service,
    // which would scrape the same pods a second time.
    this.headlessService = headlessService(this, 'Headless', {
      name: this.headlessServiceName,
      labels: { ...labels, [PER_POD_ENDPOINTS_LABEL]: 'true' },
      selector,
      ports: [{ name: PORT_NAME, port: engine.port, targetPort: k8s.IntOrString.fromString(PORT_NAME) }],
    });

    // One client Service across versions and engines: it selects every version of this name through
    // the named port, so during a version bump both StatefulSets serve until the old one is deleted.
    this.service = sharedObject(
      this,
      'Service',
      this.serviceName,
      () =>
        new ManifestObject(this, 'Service', KIND.Service, {
          metadata: {
            name: this.serviceName,
            labels: workloadLabels({ name: props.name, instance: props.name, component: COMPONENT }),
          },
          spec: {
            type: 'ClusterIP',
            selector: { [LABEL_NAME]: props.name, [LABEL_COMPONENT]: COMPONENT },
            ports: [{ name: PORT_NAME, port: 80, targetPort: k8s.IntOrString.fromString(PORT_NAME), protocol: 'TCP' }],
          },
        }),
    );
    const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');
    const namespace = Chart.of(this).namespace;
    this.url = namespace
      ? `http://${this.serviceName}.${namespace}.svc.${clusterDomain}`
      : `http://${this.serviceName}`;

    this.statefulSet = new ManifestObject(this, 'Resource', STATEFUL_SET, {
      metadata: { name, labels },
      spec: {
        serviceName: this.headlessServiceName,
        // Autoscaled: no replicas field, so an apply never resets what the autoscaler chose.
        ...(replicas !== undefined ? { replicas } : {}),
        // Parallel only changes scaling (all replicas start at once); it is immutable, so it is
        // set from creation. Rolling updates still replace one pod at a time.
        podManagementPolicy: 'Parallel',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
        selector: { matchLabels: selector },
        template: template.toTemplate(),
        ...(boundCache.claimTemplate
          ? {
              volumeClaimTemplates: [
                { ...boundCache.claimTemplate, metadata: { ...boundCache.claimTemplate.metadata, labels } },
              ],
              // A model cache is re-downloadable: delete claims with the StatefulSet or on scale-down.
              persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
            }
          : {}),
      },
    });
    addPodValidation(
      this,
      template,
      v.boolean('guaranteedQos', props.guaranteedQos, false),
      `${engine.construct} '${id}'`,
    );

    // maxUnavailable 1 keeps n-1 serving while replicas change. With one replica it still lets a
    // drain evict the pod (a short outage) instead of blocking node maintenance forever.
    this.podDisruptionBudget = podDisruptionBudget(this, 'Budget', {
      name,
      labels,
      selector,
      budget: DisruptionBudget.maxUnavailable(1),
    })!;

    const monitor = serviceMonitor(this, v, props, { name, labels, selector });
    this.serviceMonitor = monitor.object;
    this.scrapeIntervalSeconds = monitor.interval;
    if (autoscaling) {
      const made = autoscaling.autoscaler._create(this, {
        v,
        name,
        labels,
        namespace,
        queueMetric: engine.queueMetric,
        minReplicas: autoscaling.minReplicas,
        maxReplicas: autoscaling.maxReplicas,
        targetQueueDepth: autoscaling.targetQueueDepth,
        scaleDownSeconds: autoscaling.scaleDownSeconds,
      });
      this.horizontalPodAutoscaler = made.hpa;
      this.scaledObject = made.scaledObject;
    }
  }
}

/**
 * The startup probe's budget: the declared model size read at the assumed bandwidth plus warm-up,
 * or maxModelLoadTime, which may not be shorter than that.
 */
function startupBudget(v: Validator, modelSize: Size | undefined, maxModelLoadTime: Duration | undefined): number {
  // The startup probe's failureThreshold (budget / period) is an int32.
  const max = INT32_MAX * STARTUP_PERIOD_SECONDS;
  const derived = modelSize === undefined ? undefined : derivedLoadSeconds(modelSize);
  if (derived !== undefined && derived > max)
    v.fail(
      'modelSize',
      `must load within ${max}s at ${ASSUMED_LOAD_MB_PER_SECOND} MB/s: the startup probe's failureThreshold is an int32`,
      modelSize,
    );
  if (maxModelLoadTime === undefined) return derived ?? DEFAULT_MAX_MODEL_LOAD_SECONDS;
  const explicit = v.seconds('maxModelLoadTime', maxModelLoadTime, 60, max);
  if (derived !== undefined && explicit < derived) {
    v.fail(
      'maxModelLoadTime',
      `must be at least the load budget of modelSize (${show(modelSize)}): ${modelGb(modelSize!)} GB at ${ASSUMED_LOAD_MB_PER_SECOND} MB/s + ${WARMUP_SECONDS}s warm-up = ${derived}s, or the startup probe restarts a server that is still loading`,
      maxModelLoadTime,
    );
  }
  return explicit;
}

function modelGb(size: Size): number {
  return Math.round((size.toKibibytes() * 1024) / 1e8) / 10;
}

/** Seconds to read `size` at the assumed bandwidth plus warm-up, rounded up to the probe period. */
export function derivedLoadSeconds(size: Size): number {
  const seconds = (size.toKibibytes() * 1024) / (ASSUMED_LOAD_MB_PER_SECOND * 1e6) + WARMUP_SECONDS;
  return Math.ceil(seconds / STARTUP_PERIOD_SECONDS) * STARTUP_PERIOD_SECONDS;
}

/**
 * The download init container: the engine's image and command, with the server's env (minus
 * offline mode), envFrom, mounts (minus /dev/shm) and CPU/memory, but no GPU. It runs first.
 */
function addDownload(v: Validator, template: PodTemplate, command: string[], offlineVar: string): void {
  const main = template.main;
  const init = template.spec.initContainers ?? [];
  if (init.some(c => c.name === DOWNLOAD_CONTAINER))
    v.fail(
      'pod.initContainers',
      `must not use the name ${DOWNLOAD_CONTAINER}: the construct's download runs there`,
      DOWNLOAD_CONTAINER,
    );
  const pick = (m: { [key: string]: k8s.Quantity } | undefined) =>
    Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k === 'cpu' || k === 'memory'));
  const download: k8s.Container = {
    name: DOWNLOAD_CONTAINER,
    image: main.image,
    imagePullPolicy: main.imagePullPolicy,
    command,
    env: main.env.filter(e => e.name !== offlineVar),
    ...(main.envFrom ? { envFrom: main.envFrom } : {}),
    resources: { requests: pick(main.resources?.requests), limits: pick(main.resources?.limits) },
    volumeMounts: main.volumeMounts.filter(m => m.mountPath !== '/dev/shm'),
    securityContext: main.securityContext,
  };
  template.spec.initContainers = [download, ...init];
}

function serviceMonitor(
  scope: Construct,
  v: Validator,
  props: InferenceServiceProps,
  o: { name: string; labels: Record<string, string>; selector: Record<string, string> },
): { object: ApiObject | undefined; interval: number } {
  const enabled = v.boolean('serviceMonitor', props.serviceMonitor, false);
  const extra = v.labels('serviceMonitorLabels', props.serviceMonitorLabels);
  for (const key of Object.keys(extra)) {
    if ([LABEL_NAME, LABEL_INSTANCE, LABEL_COMPONENT, LABEL_MANAGED_BY].includes(key))
      v.fail(`serviceMonitorLabels.${key}`, 'is set by the construct', extra[key]);
  }
  const interval =
    props.serviceMonitorInterval === undefined
      ? 30
      : v.seconds('serviceMonitorInterval', props.serviceMonitorInterval, 1, 3600);
  // The autoscaler's query sees a sample only within Prometheus's 5-minute lookback: a longer scrape
  // interval leaves it without a value most of the time (KEDA reads that as 0, an HPA adapter as none).
  if (props.autoscaling !== undefined && interval >= PROMETHEUS_LOOKBACK_SECONDS) {
    v.fail(
      'serviceMonitorInterval',
      `must be shorter than Prometheus's ${PROMETHEUS_LOOKBACK_SECONDS}s lookback with autoscaling, or the queue gauge has no sample most of the time and the service stays at minReplicas`,
      props.serviceMonitorInterval,
    );
  }
  if (!enabled) {
    if (props.serviceMonitorLabels !== undefined)
      v.fail('serviceMonitorLabels', 'needs serviceMonitor: true', props.serviceMonitorLabels);
    if (props.serviceMonitorInterval !== undefined)
      v.fail('serviceMonitorInterval', 'needs serviceMonitor: true', props.serviceMonitorInterval);
    return { object: undefined, interval };
  }
  const object = new ApiObject(scope, 'ServiceMonitor', {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: o.name, labels: { ...o.labels, ...extra } },
    spec: {
      selector: { matchLabels: { ...o.selector, [PER_POD_ENDPOINTS_LABEL]: 'true' } },
      endpoints: [{ port: PORT_NAME, path: '/metrics', interval: `${interval}s` }],
    },
  });
  return { object, interval };
}

/** The engine's facts about releases of its published image, against the tag of `image`. */
function checkImageFacts(
  v: Validator,
  facts: readonly ImageFact[],
  image: string,
  nonRootBy: [string, unknown] | undefined,
): void {
  const ref = ImageRef.parse(image);
  const release = (x: readonly number[]) => x.join('.');
  for (const f of facts) {
    if (ref.repository !== f.repository) continue;
    if (f.minimum && ref.isBefore(f.minimum))
      v.fail('image', `must be release ${release(f.minimum)} or later: ${f.why}`, image);
    if (f.rootOnlyFrom && nonRootBy && ref.version && !ref.isBefore(f.rootOnlyFrom)) {
      const [prop, value] = nonRootBy;
      v.fail(
        prop,
        `asks for a non-root pod, which ${image} (release ${release(f.rootOnlyFrom)} or later) cannot run: ${f.why}; leave runAsRoot unset (true)`,
        value,
      );
    }
  }
}

interface RefusedFlag {
  /** Why the flag itself is refused. */
  readonly set: string;
  /** Why an abbreviation that argparse expands to it is refused. */
  readonly expanded: string;
}

const REFUSED_FLAGS = new WeakMap<ServingEngine, ReadonlyMap<string, RefusedFlag>>();

/**
 * Flags extraArgs may not set, with why: what the engine cannot run with, then what the
 * construct sets (an abbreviation is judged by the first flag it expands to, in this order).
 * Engine facts, so made once per engine.
 */
function refusedFlagsOf(engine: ServingEngine): ReadonlyMap<string, RefusedFlag> {
  let flags = REFUSED_FLAGS.get(engine);
  if (!flags) {
    flags = new Map<string, RefusedFlag>([
      ...Object.entries(engine.contradictingFlags).map(([f, why]): [string, RefusedFlag] => [
        f,
        { set: `it ${why}`, expanded: `, which ${why}` },
      ]),
      ...Object.entries(engine.ownedFlags).map(([f, via]): [string, RefusedFlag] => {
        const from = via ? ` from ${via}` : '';
        return [
          f,
          {
            set: `the construct sets it${from}, and probes, Services and validation depend on it`,
            expanded: ` (or refuses it as ambiguous), and the construct sets it${from}`,
          },
        ];
      }),
    ]);
    REFUSED_FLAGS.set(engine, flags);
  }
  return flags;
}

const PROP_KEYS = new WeakMap<readonly string[], readonly string[]>();

/** Every prop key an engine's construct knows: the shared ones and the engine's own (made once per engine). */
function propKeysOf(engineKeys: readonly string[]): readonly string[] {
  let keys = PROP_KEYS.get(engineKeys);
  if (!keys) PROP_KEYS.set(engineKeys, (keys = [...GPU_WORKLOAD_PROP_KEYS, ...SERVING_PROP_KEYS, ...engineKeys]));
  return keys;
}
