import { ApiObject, Chart, Duration, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct, IConstruct } from 'constructs';
import { sharedObject } from '../checks/unique-objects';
import { DisruptionBudget, podDisruptionBudget } from '../common/disruption';
import { checkGpusPerNode, migSource } from '../common/gpu';
import { escapeKubeletExpansion } from '../common/kubelet-expansion';
import { headlessService } from '../common/headless-service';
import {
  LABEL_COMPONENT,
  instanceSelector,
  LABEL_NAME,
  LABEL_WORKLOAD,
  labelSet,
  workloadLabels,
} from '../common/labels';
import { KIND, ManifestObject } from '../common/manifest-object';
import { workloadNetworkPolicy } from '../common/network-policy';
import { statefulSetName } from '../common/names';
import { GpuWorkloadProps } from '../common/pod-options';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { nonRootUserEnv, scratchSpace } from '../common/scratch';
import { PodSecurityLevel, ProcessIdentity, resolveProcessIdentity } from '../common/security';
import { addPodValidation, buildWorkloadPod, GPU_WORKLOAD_PROP_KEYS, OwnedEnv } from '../common/workload-pod';
import { Validator } from '../validation/validate';
import { EPP_FLOW_CONTROL_QUEUE, KV_EVENTS_PORT } from './endpoint-picker';
import { flagValue } from './serving-inputs';
import { sizeQuantity } from '../common/quantity';
import { KvCacheOffload, ResolvedKvOffload, resolveKvOffload } from './kv-cache-offload';
import { lmcacheDiskReset } from './lmcache';
import { AutoscalingOptions, derivedInFlightTarget, QueuedRequests, resolveAutoscaling } from './autoscaling';
import {
  EngineMetrics,
  EngineTuning,
  hubDownloadScript,
  KvEventsFacts,
  Launch as EngineLaunch,
  POD_IP_ENV,
  POD_IP_VARIABLE,
  ServingEngine,
} from './engine';
import { driverFloorOf, requireDriver } from './driver-floor';
import { shipScript } from '../common/runtime-scripts';
import { ACTIVE_PORTS_ANNOTATION, ENGINE_TYPE_LABEL } from './endpoint-picker';
import { addDownload, DownloadResources } from './model-download';
import { CacheFill, fillSharedCache } from './cache-fill-job';
import { claimSharedCache } from './shared-cache-owners';
import { applyServingTrust } from './serving-trust';
import type { SglangInferenceService } from './sglang-inference-service';
import type { TgiInferenceService } from './tgi-inference-service';
import type { VllmInferenceService } from './vllm-inference-service';
import { BoundModelCache, ModelCache } from './model-cache';
import { checkTensorParallelHeads, headRule, ModelArchitecture, modelArchitectureOf } from './model-facts';
import { ExpertParallel, RankEndpoints, ResolvedExpertParallel, resolveExpertParallel } from './expert-parallel';
import { progressDeadlineSeconds, resolveWorkloadKind, servingWorkloadObject, WorkloadKind } from './workload-kind';
import { PER_POD_ENDPOINTS_LABEL, serviceMonitor } from './service-monitor';
import {
  Rdma,
  rdmaExtendedResources,
  rdmaNeedsRoot,
  RdmaPodParts,
  requireRootForRdma,
  resolveRdma,
} from '../common/rdma';
import { Disaggregation, PoolRole, ResolvedDisaggregation, resolveDisaggregation, ROLE_LABEL } from './disaggregation';
import {
  DISAGG_SIDECAR_IMAGE,
  disaggSidecar,
  ENGINE_PORT_BEHIND_SIDECAR,
  sidecarTokenVolume,
  ssrfProtectionArgs,
} from './disagg-sidecar';
import {
  groupNetworkPolicy,
  checkRendezvousPort,
  groupPodSelector,
  groupScaleTarget,
  leaderWorkerSet,
  resolveGroup,
  ServingGroup,
} from './leader-worker-set';
import {
  checkImageFacts,
  extraArgsOf,
  setByProp,
  refusedBecause,
  hubTokenEnv,
  modelIdOf,
  refuseHubCacheEnv,
  refuseHubReferencesInEnv,
  revisionOf,
} from './serving-inputs';
import {
  capacityDelay,
  resolveTermination,
  STARTUP_PERIOD_SECONDS,
  startupBudget,
  Termination,
} from './serving-timing';

export {
  DEFAULT_PRESTOP_SLEEP_SECONDS,
  TERMINATION_MARGIN_SECONDS,
  DEFAULT_DRAIN_SECONDS,
  DEFAULT_MAX_MODEL_LOAD_SECONDS,
  derivedLoadSeconds,
} from './serving-timing';

/** The model cache mount and HF_HOME of every engine. */
export const MODEL_CACHE_PATH = '/data';

const COMPONENT = 'inference';
const PORT_NAME = 'http';
/** The engine's port behind the decode pool's routing sidecar. */
const ENGINE_PORT_NAME = 'engine';
const DEFAULT_CACHE_GIB = 100;
const CACHE_HEADROOM = 1.2;

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
  /** The base name, a DNS-1035 label. The client Service is `name`; the workload `name` or `name-v<version>`. */
  readonly name: string;
  /**
   * The HuggingFace model id, e.g. `meta-llama/Llama-3.1-8B-Instruct`, or an absolute path on a volume (then nothing is
   * downloaded).
   */
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
   * GPUs per replica (per pod: with `nodes` > 1, per pod of the group), at most `maxGpusPerNode`; also the engine's
   * tensor-parallel size (TGI `NUM_SHARD`, vLLM `--tensor-parallel-size`, SGLang `--tp-size`, times `nodes` for
   * SGLang in a group). For a model whose heads are known (the library's table of common models, or
   * `modelArchitecture`), the tensor-parallel size must split them as the engine shards them.
   * @default 1
   */
  readonly gpusPerReplica?: number;
  /**
   * The most GPUs (of `gpuResource`) one node of the cluster carries: `gpusPerReplica` above it is refused, since a
   * pod's GPUs come from one node and a larger request stays Pending. A whole number from 1 to 64.
   * @default 8 - the most GPUs of one kind current GPU nodes carry: HGX/DGX H100, H200 and B200 and the MI300X
   * platforms have 8 (GB200 NVL72 compute trays have 4)
   */
  readonly maxGpusPerNode?: number;
  /**
   * The model's attention heads (config.json `num_attention_heads` and `num_key_value_heads`), for a model the
   * library does not know (a local path, a fine-tune, a private model): the tensor-parallel size must then divide
   * the attention heads, and the KV heads (vLLM and SGLang also take a multiple of them, replicating KV heads; TGI
   * does not). Replaces the library's own figures for a model it knows.
   * @default - the library's figures for common models (Llama 3.1 and 3.3, Qwen2.5, Qwen3-8B, Mistral 7B,
   * Mixtral 8x7B); no head check for other models
   */
  readonly modelArchitecture?: ModelArchitecture;
  /** @default - no suffix. Same meaning as for GpuTrainingStatefulSet. */
  readonly version?: number;
  /**
   * A Secret key holding a HuggingFace token, for gated models. It becomes env HF_TOKEN of the downloads only: the
   * `model-download` init container and each LoRA adapter's download init container, or, on a shared cache
   * (`ModelCache.sharedClaim()`), the fill Jobs, while the pod's wait containers get no token. The server container
   * never gets it, because it runs with the hub offline (`HF_HUB_OFFLINE=1`) on the filled cache and never needs it.
   * Refused with a local `modelId`, where nothing is downloaded.
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
   * server starts (a shared claim is filled by a CPU-only Job the pods wait for); the server reads it
   * offline. The cache also decides the default `workloadKind`.
   * @default ModelCache.persistentClaim({ size: Size.gibibytes(100) }) - per-replica claim, so a restart does not
   * download again; larger when modelSize needs it (modelSize + 20%)
   */
  readonly modelCache?: ModelCache;
  /**
   * The size of the model's weights on disk (e.g. `Size.gibibytes(15)` for a 7B model in bf16). The
   * startup budget is derived from it: size at 100 MB/s plus 300 s of warm-up; the cache size is
   * checked against it. Where the model id states a parameter count (`Llama-3.1-8B`), the size must fit
   * it at some weight width from 2 to 32 bits (with 10% either way), so a wrong unit cannot shorten the
   * budget; for a model whose name misstates its size, give maxModelLoadTime instead.
   * @default - not declared: the startup budget is maxModelLoadTime
   */
  readonly modelSize?: Size;
  /**
   * How long a preStop hook sleeps before the container gets SIGTERM, so that endpoints and load
   * balancers stop routing to the pod first. The hook is the kubelet's `sleep` action, so the image
   * needs no `sleep` binary; 0 means no hook.
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
   * @default - derived from modelSize; else from the parameter count the model id states (`70B`: 2
   * bytes a parameter, 1 for FP8/INT8 names, 0.5 for 4-bit ones), at least Duration.minutes(15);
   * else Duration.minutes(15), refused with gpusPerReplica 4 or more (give modelSize)
   */
  readonly maxModelLoadTime?: Duration;
  /**
   * `/dev/shm`, for NCCL between tensor-parallel ranks (and vLLM's KV-cache offload tier).
   * @default - per GPU: 1 GiB for TGI (its docs' `--shm-size 1g`), 2 GiB for vLLM and SGLang; plus the
   * `kvCacheOffload` tier on vLLM, which keeps it in `/dev/shm`
   */
  readonly sharedMemory?: Size;
  /**
   * A host-memory tier for KV-cache blocks evicted from GPU memory (vLLM and SGLang, single-node replicas), so a
   * repeated prefix is copied back instead of computed again. Its size is added to the default `memory` (and on
   * vLLM to `/dev/shm`, where the tier lives); a `memory` or `sharedMemory` that cannot hold it is refused.
   * @default - none: the KV cache stays in GPU memory
   */
  readonly kvCacheOffload?: KvCacheOffload;
  /**
   * Prefill and decode in separate pools (vLLM and SGLang): this construct's pods decode, behind llm-d-router's
   * routing sidecar on the API port; a second pool (`prefill`, workload `<name>-prefill`) prefills, and its KV
   * blocks reach the decode pod by the transfer named (`Disaggregation.nixl()`, SGLang also
   * `Disaggregation.mooncake()`). Each pool keeps the whole serving practice (drain, startup budget, PDB, autoscaling
   * on its own requests); the pools admit each other on every port and nobody else beyond the API port. An
   * InferenceGateway routing to the service disaggregates long uncached prompts. See docs/serving.md.
   * @default - one pool: every replica prefills and decodes
   */
  readonly disaggregation?: Disaggregation;
  /**
   * Wide expert parallelism for a mixture-of-experts model (`ExpertParallel.wide()`): attention in data parallel,
   * one rank per `tensorParallel` GPUs of the replica, the experts spread over all its GPUs (vLLM within one pod;
   * SGLang within a pod or across a group's `nodes`). DeepEP kernels across nodes need `rdma`. See docs/serving.md.
   * @default - the model sharded by tensor parallel over gpusPerReplica (and pipeline parallel across nodes on vLLM)
   */
  readonly expertParallel?: ExpertParallel;
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
   * Scale on the requests in flight (running + waiting) per replica with an HPA or KEDA. The
   * workload's `replicas` is then not synthesized, so `kubectl apply` and GitOps never fight
   * the autoscaler; the PDB still holds.
   * @default - a fixed replica count
   */
  readonly autoscaling?: AutoscalingOptions;
  /**
   * The IP family the server listens on (`0.0.0.0` or `::`).
   * @default IpFamily.IPV4
   */
  readonly ipFamily?: IpFamily;
  /**
   * The lowest NVIDIA driver major version (branch) the pods may run on, as a required node affinity
   * on the GPU operator's label `nvidia.com/cuda.driver-version.major` (or its deprecated
   * `nvidia.com/cuda.driver.major`); nodes without either label are allowed. 0 turns it off.
   * @default - the image's floor: 580 for CUDA 13 images (vLLM from v0.20, SGLang from v0.5.11),
   * 525 for CUDA 12 ones (TGI 3.x, `-cu12x` tags); none for other images or untagged releases
   */
  readonly minDriverVersion?: number;
  /**
   * CPU and memory of the download: the init container's, or on a shared cache the fill Job's.
   * @default - the init container: the server's CPU and memory (its request hides under the server's,
   * so it costs nothing); a fill Job: 1 CPU and 2 GiB (a pod of its own, sized for one hashed stream)
   */
  readonly downloadResources?: DownloadResources;
  /**
   * Let the engine report anonymous usage statistics to its vendor (TGI `USAGE_STATS`, vLLM
   * usage reporting).
   * @default false - a production server should not phone home
   */
  readonly usageStats?: boolean;
  /**
   * The API key clients must send (`Authorization: Bearer <key>`), from a Secret: the engine's own
   * variable (vLLM `VLLM_API_KEY`, TGI `API_KEY`) or, for SGLang, which reads only `--api-key`, a
   * shell wrapper that passes it from the environment. Health and metrics stay open. `--api-key` in
   * extraArgs is refused.
   * @default - no key: anyone the NetworkPolicy admits may call the API
   */
  readonly apiKeySecret?: SecretKeyRef;
  /**
   * Let the engine import and run Python code from the model repository (`--trust-remote-code`, TGI
   * `TRUST_REMOTE_CODE`), for architectures transformers does not ship. Needs `revision` pinned to a
   * commit; `--trust-remote-code` in extraArgs is refused.
   * @default false - code from the Hub runs in the pod with its GPUs, token and network
   */
  readonly trustRemoteCode?: boolean;
  /**
   * The port the engine listens on (named `http`; the client Service maps port 80 to it). Services of one model on
   * different engines behind one `InferenceGateway` need the same port: an InferencePool's target ports apply to
   * every pod it selects.
   * @default - the engine's own default (TGI 8080, vLLM 8000, SGLang 30000)
   */
  readonly port?: number;
  /**
   * The workload that runs the replicas. A Deployment replaces pods by surge (`maxSurge: 1,
   * maxUnavailable: 0`: one replica keeps serving through an update, a pod on a dead node is replaced
   * without a force-delete); a StatefulSet is what a per-replica claim needs (its claim template).
   * @default - WorkloadKind.STATEFUL_SET with ModelCache.persistentClaim() (refused otherwise), else
   * WorkloadKind.DEPLOYMENT (a shared claim or an emptyDir: the servers keep no per-replica state); with
   * `nodes` > 1, WorkloadKind.LEADER_WORKER_SET, the only kind that runs a group
   */
  readonly workloadKind?: WorkloadKind;
  /**
   * Nodes per replica, for a model larger than one node: each replica is then a LeaderWorkerSet group of `nodes` pods
   * of gpusPerReplica GPUs each (one per node), whose leader serves the API and whose workers run the other ranks
   * (vLLM: tensor parallel within a node, pipeline parallel across; SGLang: tensor parallel across the group). Needs
   * LeaderWorkerSet v0.10 or later; not for TGI, which runs a replica on one node. See docs/serving.md.
   * @default 1 - one pod per replica, a Deployment or StatefulSet (`workloadKind`)
   */
  readonly nodes?: number;
  /**
   * The Kueue LocalQueue that admits each group (`kueue.x-k8s.io/queue-name` on the LeaderWorkerSet; Kueue v0.11 or
   * later with its LeaderWorkerSet integration enabled). Needs `nodes` > 1.
   * @default - not admitted through Kueue
   */
  readonly queueName?: string;
  /**
   * RDMA between the pods of a group, as for training: `Rdma.sharedDevice()`, `Rdma.sriov({...})` or `Rdma.efa(n)`
   * (device resource, NCCL settings, networks). Needs `nodes` > 1: within a node NCCL uses NVLink or PCIe. Shared
   * device and SR-IOV add IPC_LOCK, which needs a root process (the pod is then privileged).
   * @default - NCCL over the pod network between nodes
   */
  readonly rdma?: Rdma;
  /**
   * Groups an update starts before it takes old ones out of service (the LeaderWorkerSet's maxSurge; maxUnavailable is
   * then 0, so capacity never drops). Each surge group needs `nodes` x gpusPerReplica free GPUs for the length of a
   * group's load. Needs `nodes` > 1.
   * @default 0 - one group out of service at a time (maxUnavailable 1): a full GPU pool has no room for a surge group;
   * with one replica an update is then an outage of one group's drain and load
   */
  readonly groupSurge?: number;
  /**
   * A node label whose domains each hold one group alone (LeaderWorkerSet exclusive placement,
   * `leaderworkerset.sigs.k8s.io/exclusive-topology`): a group's pods share one domain (a rack, a network block, an
   * NVLink domain), where no pod of another group of the namespace runs. Needs as many domains as groups, surge
   * groups included. Needs `nodes` > 1.
   * @default - no placement of its own: the scheduler may put a group's pods in different racks or zones, where RDMA
   * between them may not reach (EFA and most InfiniBand fabrics do not span zones)
   */
  readonly groupExclusiveTopology?: string;
}

/** @internal The keys of InferenceServiceProps beyond GpuWorkloadProps, for the unknown-prop check. */
export const SERVING_PROP_KEYS: ReadonlyArray<keyof InferenceServiceProps> = [
  'name',
  'modelId',
  'revision',
  'replicas',
  'gpusPerReplica',
  'maxGpusPerNode',
  'modelArchitecture',
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
  'kvCacheOffload',
  'disaggregation',
  'expertParallel',
  'runAsRoot',
  'serviceMonitor',
  'serviceMonitorLabels',
  'serviceMonitorInterval',
  'autoscaling',
  'ipFamily',
  'usageStats',
  'minDriverVersion',
  'downloadResources',
  'port',
  'workloadKind',
  'apiKeySecret',
  'trustRemoteCode',
  'nodes',
  'queueName',
  'rdma',
  'groupSurge',
  'groupExclusiveTopology',
];

/** @internal What a concrete serving construct passes to the shared practice. */
export interface EngineBinding {
  readonly engine: ServingEngine;
  /** The construct's own prop keys. */
  readonly keys: readonly string[];
  /** Turns the construct's own props into engine flags or variables, validated. */
  readonly tuning: (v: Validator) => EngineTuning;
  /** Makes another construct of the same engine: the prefill pool of a disaggregated service. */
  readonly pool: (scope: Construct, id: string, props: InferenceServiceProps) => ServingWorkload;
}

/** What a prefill pool knows of the decode pool that made it (its props object is the key). */
interface PrefillOf {
  readonly disagg: ResolvedDisaggregation;
  /** The decode pool's pods (leaders and workers). */
  readonly peers: Record<string, string>;
}

/** The prefill pools being made: the decode pool registers the props it passes, the pool looks itself up. */
const PREFILL_OF = new WeakMap<object, PrefillOf>();

/**
 * The practice every LLM server shares: a Deployment or StatefulSet whose pods drain instead of dropping
 * requests (timings that add up), a startup probe over model load only, weights downloaded where
 * no probe can kill the download, a PDB keeping n-1 serving, a client Service stable across
 * versions and engines, per-pod metrics, optional autoscaling on the queue, and the tightest Pod
 * Security level the image allows. `TgiInferenceService`, `VllmInferenceService` and
 * `SglangInferenceService` are this with one engine's facts; the practice itself is not exported,
 * so nothing outside the library extends it (`InferenceService` is the union of the three).
 */
export abstract class ServingWorkload extends Construct implements IGpuWorkload {
  /** The client Service's name: `name`, stable across versions and engines, port 80. */
  readonly serviceName: string;
  /** The workload's name (Deployment or StatefulSet): `name` or `name-v<version>`. */
  readonly workloadName: string;
  /** The workload's kind (`workloadKind`, or the cache's default). */
  readonly workloadKind: WorkloadKind;
  /** @deprecated use workloadName. The StatefulSet's name, when the workload is one. */
  readonly statefulSetName?: string;
  /** The governing headless Service's name. */
  readonly headlessServiceName: string;
  /** `http://<service>.<namespace>.svc.<domain>` when the chart has a namespace, else `http://<service>`. */
  readonly url: string;
  /** The port the engine listens on (named `http`). */
  readonly port: number;
  /**
   * The ports clients reach the model on, each an endpoint of an InferencePool: `port`, and with
   * `RankEndpoints.PER_RANK` one more per data-parallel rank after it.
   */
  readonly endpointPorts: readonly number[];
  /**
   * The pods of a replica that serve requests, each reporting its own: 1, or `nodes` where every pod of a group
   * serves its ranks (`RankEndpoints.PER_RANK` with `nodes` > 1).
   */
  readonly servingPodsPerReplica: number;
  /** The pod's grace period: at least preStop + drain + margin. */
  readonly terminationGracePeriodSeconds: number;
  /** The startup probe's budget for model load and warm-up. */
  readonly startupBudgetSeconds: number;
  /**
   * The Deployment, StatefulSet or LeaderWorkerSet, for escape hatches (a JsonPatch applies to its API JSON and is
   * checked).
   */
  readonly workload: ApiObject;
  /** @deprecated use workload. The StatefulSet, when the workload is one. */
  readonly statefulSet?: ApiObject;
  /** The Deployment, when the workload is one. */
  readonly deployment?: ApiObject;
  /** The LeaderWorkerSet, with `nodes` > 1: a group of `nodes` pods per replica. */
  readonly leaderWorkerSet?: ApiObject;
  /**
   * The CPU-only Job that fills a shared (ReadWriteMany) cache, when the model is on the hub: the
   * serving pods wait for it. Shared by the services whose fills are identical.
   */
  readonly cacheFillJob?: ApiObject;
  /**
   * The immutable ConfigMap `<workload>-hub-download-<hash>` holding the download script the pods run
   * from a read-only mount, when the model is on the hub (a fill Job mounts one of its own, named as
   * the Job).
   */
  readonly downloadScript?: ApiObject;
  /** The fill Job's name: `<model>-fill-<hash>`. */
  readonly cacheFillJobName?: string;
  /** The client Service (shared by every version and engine of this name; made by the first). */
  readonly service: ApiObject;
  /** The governing headless Service: per-pod DNS names and per-pod metrics endpoints. */
  readonly headlessService: ApiObject;
  /** Keeps n-1 replicas serving through voluntary disruptions (with `nodes` > 1, over every pod of the groups). */
  readonly podDisruptionBudget: ApiObject;
  /** The prometheus-operator ServiceMonitor, when `serviceMonitor` is true. */
  readonly serviceMonitor?: ApiObject;
  /** The NetworkPolicy admitting clients to the API port and Prometheus to metrics (unless unrestricted). */
  readonly networkPolicy?: ApiObject;
  /** The pool's role with `disaggregation`: `decode` for the construct, `prefill` for its `prefill` pool. */
  readonly role?: PoolRole;
  /** The prefill pool, with `disaggregation`: the same engine's construct, workload `<name>-prefill`. */
  readonly prefill?: ServingWorkload;
  /**
   * The uncached prompt tokens from which the Endpoint Picker disaggregates a request (`disaggregateFromTokens`),
   * with `disaggregation`.
   */
  readonly disaggregateFromTokens?: number;
  /**
   * @internal The decode pool's decision for the picker, and why its engine needs one (every request then reaches it
   * through the picker).
   */
  readonly _disaggregation?: { readonly nonCachedTokens?: number; readonly needsPicker?: string };
  /** The InferencePools routing to the service (named by InferenceGateway). */
  private readonly _pools: Array<{ namespace?: string; name: string }> = [];
  /** The decode pool's routing sidecar, whose SSRF protection the gateway points at its pool. */
  private readonly _sidecar?: k8s.Container;
  /**
   * The ServiceAccount of the decode pods, whose routing sidecar reads its InferencePool (the gateway binds the Role),
   * with `disaggregation`.
   */
  readonly sidecarServiceAccountName?: string;
  /** The decode pods' ServiceAccount, when the construct made it (no `pod.serviceAccountName`). */
  readonly serviceAccount?: ApiObject;
  /** @internal Adds a peer to the API port's rule (the InferenceGateway's Endpoint Picker). */
  readonly _allowClient?: (peer: k8s.NetworkPolicyPeer) => void;
  /** @internal Admits a peer on a named port of the pods (the picker on the KV-events socket). */
  readonly _allowOnPorts?: (peer: k8s.NetworkPolicyPeer, ports: readonly string[]) => void;
  /** The engine's facts. */
  private readonly _engine: ServingEngine;
  /**
   * @internal The names clients ask for the model by: the served names, or the model id. The first is the picker's
   * token producer's and the KV events' topic's.
   */
  readonly _modelNames: readonly string[];
  /** Data-parallel ranks per pod (expertParallel on vLLM). */
  private readonly _dataParallelRanks: number;
  /** @internal Whether the pods keep KV-cache blocks in a host-memory tier whose blocks their KV events report. */
  readonly _offloadsKvCache: boolean;
  private _publishesKvEvents = false;
  /** Requests queued for the service in pickers' flow control, one query per InferenceGateway with flowControl. */
  private readonly _pickerQueues: QueuedRequests[] = [];
  /** The HorizontalPodAutoscaler, with `Autoscaler.hpa()`. */
  readonly horizontalPodAutoscaler?: ApiObject;
  /** The KEDA ScaledObject, with `Autoscaler.keda()`. */
  readonly scaledObject?: ApiObject;
  /**
   * The model cache's claim: the claim template's name (per replica: `<name>-<statefulSet>-<ordinal>`)
   * or the shared claim's name; undefined for an emptyDir cache.
   */
  readonly modelCacheClaimName?: string;
  /** The engine's queue-depth metric (waiting requests), as Prometheus names it. */
  readonly queueMetric: string;
  /** The engine's other metrics, for alerts and dashboards. */
  readonly engineMetrics: EngineMetrics;
  /**
   * Seconds until a new replica is capacity: its download (per-replica cache, with modelSize) plus the
   * startup budget.
   */
  readonly capacitySeconds: number;
  /** The scrape interval in seconds: the ServiceMonitor's, or the 30 s it would have. */
  readonly scrapeIntervalSeconds: number;
  /**
   * Requests in flight (running + waiting) per replica the service is sized for: the autoscaling
   * target, else 80% of the batch limit when known (undefined for SGLang without maxRunningRequests).
   */
  readonly targetRequestsInFlight?: number;
  /** The most replicas the service runs: `replicas`, or the autoscaler's `maxReplicas`. */
  readonly maxReplicas: number;
  /** The resolved autoscaling bounds and target, when autoscaled. */
  readonly autoscalingLimits?: {
    readonly minReplicas: number;
    readonly maxReplicas: number;
    /** Requests in flight (running + waiting) per replica the autoscaler holds the fleet at. */
    readonly targetRequestsInFlight: number;
    readonly scaleDownStabilizationSeconds: number;
  };
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** The strictest Pod Security Standard the pods meet, including what was added after construction. */
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
  readonly _templateChangesStay?: string;
  /** @internal Every pod template: the one pod's, or a group's leader and workers. */
  readonly _podTemplates: PodTemplate[];
  /** @internal */
  get _podOwner(): ApiObject {
    return this.workload;
  }

  /** @internal Each engine's construct passes its facts; the practice is not extended from outside. */
  protected constructor(scope: Construct, id: string, props: InferenceServiceProps, binding: EngineBinding) {
    super(scope, id);
    const v = new Validator(binding.engine.construct, id);
    const r = resolveServing(v, props, binding);
    this.role = r.role;
    this._engine = r.engine;
    this._modelNames = r.modelNames;
    this._dataParallelRanks = r.dataParallelRanks;
    this._offloadsKvCache = r.kvOffload?.eventsSeen === true;
    if (r.role === 'decode') {
      this.disaggregateFromTokens = r.disagg!.nonCachedTokens;
      this._disaggregation = {
        nonCachedTokens: r.disagg!.nonCachedTokens,
        needsPicker: r.disagg!.facts.decodeNeedsPrefill,
      };
      const why =
        r.disagg!.facts.decodeNeedsPrefill ??
        "only the Endpoint Picker pairs a request with a prefill pod, and the routing sidecar's SSRF protection reads the gateway's InferencePool";
      const describe = `${r.engine.construct} '${id}'`;
      // Checked at synth: the gateway is made after the service.
      this.node.addValidation({
        validate: () =>
          this._pools.length > 0
            ? []
            : [
                `${describe}: disaggregation needs an InferenceGateway routing to the service: ${why} (got ${r.disagg!.transfer})`,
              ],
      });
      if (Chart.of(this).namespace === undefined)
        v.fail(
          'disaggregation',
          "needs the chart's namespace: the routing sidecar names its InferencePool as namespace/name",
          r.disagg!.transfer,
        );
    }
    if (r.cache.shared && r.cache.volume?.persistentVolumeClaim) {
      const who = `${binding.engine.construct} '${id}'`;
      claimSharedCache(this, v, { claimName: r.cache.volume.persistentVolumeClaim.claimName, uid: r.uid, who });
    }
    this.workloadName = r.group?.name ?? r.name;
    this.workloadKind = r.kind;
    if (r.kind === WorkloadKind.STATEFUL_SET) this.statefulSetName = r.name;
    this.serviceName = props.name;
    this.headlessServiceName = `${r.name}-headless`;
    this.port = r.port;
    this.endpointPorts = r.endpointPorts;
    this.servingPodsPerReplica = r.group?.launch.workersServe ? r.group.nodes : 1;
    this.terminationGracePeriodSeconds = r.termination.gracePeriodSeconds;
    this.startupBudgetSeconds = r.startupBudgetSeconds;
    this.modelCacheClaimName = r.cache.claimTemplate
      ? r.cache.volumeName
      : r.cache.volume?.persistentVolumeClaim?.claimName;
    this.queueMetric = r.engine.queueMetric;
    this.engineMetrics = r.engine.metrics;
    this.capacitySeconds = r.capacity.seconds;
    this.targetRequestsInFlight = r.autoscaling?.target ?? r.inFlightTarget;
    this.maxReplicas = r.autoscaling?.maxReplicas ?? r.replicas ?? 1;
    if (r.autoscaling) {
      this.autoscalingLimits = {
        minReplicas: r.autoscaling.minReplicas,
        maxReplicas: r.autoscaling.maxReplicas,
        targetRequestsInFlight: r.autoscaling.target,
        scaleDownStabilizationSeconds: r.autoscaling.scaleDownSeconds,
      };
    }
    this._securityUid = r.uid;
    this._processAliases = r.engine.processAliases ?? {};
    const namespace = Chart.of(this).namespace;
    const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');
    this.url = namespace
      ? `http://${this.serviceName}.${namespace}.svc.${clusterDomain}`
      : `http://${this.serviceName}`;

    // Stakater Reloader patches Deployments, StatefulSets, DaemonSets, Argo Rollouts and CronJobs
    // (docs.stakater.com/reloader); it ignores a LeaderWorkerSet, so a restart on rotation never comes.
    this._templateChangesRollOut = r.group === undefined;
    if (r.group)
      this._templateChangesStay =
        'Stakater Reloader does not restart LeaderWorkerSets (it patches Deployments, StatefulSets, DaemonSets, Argo Rollouts and CronJobs)';
    const template = (this._podTemplate = composePod(this, v, props, r));
    if (r.role === 'decode') {
      // The sidecar alone gets an API token, of an account of its own unless the pod names one.
      if (props.pod?.automountServiceAccountToken === true)
        v.fail(
          'pod.automountServiceAccountToken',
          "must not be true with disaggregation: it would mount the routing sidecar's token, which lists the namespace's pods, into the engine too",
          true,
        );
      this.sidecarServiceAccountName = props.pod?.serviceAccountName ?? `${r.name}-routing`;
      if (props.pod?.serviceAccountName === undefined) {
        this.serviceAccount = new ManifestObject(this, 'ServiceAccount', KIND.ServiceAccount, {
          metadata: { name: this.sidecarServiceAccountName, labels: r.labels },
          automountServiceAccountToken: false,
        });
        (template.spec as { serviceAccountName?: string }).serviceAccountName = this.sidecarServiceAccountName;
      }
      template.addVolume(sidecarTokenVolume(), v, 'disaggregation');
      template.addInitContainer(
        (this._sidecar = disaggSidecar({
          image: r.disagg!.sidecarImage,
          port: r.port,
          portName: PORT_NAME,
          connector: r.disagg!.facts.sidecarConnector,
          env: r.disagg!.facts.sidecarEnv,
          guaranteed: r.guaranteedQos,
        })),
        v,
        'disaggregation',
      );
    }
    this.downloadScript = shipScript(this, template, hubDownloadScript());
    markForPicker(template, r);
    this._podTemplates = [template];
    const fill = sharedCacheFill(this, template, r, props.downloadResources);
    this.cacheFillJob = fill?.job;
    this.cacheFillJobName = fill?.jobName;

    this.headlessService = headlessService(this, 'Headless', {
      name: this.headlessServiceName,
      labels: { ...r.labels, [PER_POD_ENDPOINTS_LABEL]: 'true', [LABEL_WORKLOAD]: r.name },
      selector: r.selector,
      ports: r.endpointPorts.map((port, i) => ({
        name: rankPortName(i),
        port,
        targetPort: k8s.IntOrString.fromString(rankPortName(i)),
      })),
    });
    this.service = clientService(this, v, props.name, r.role);
    // A worker is the leader's pod with the workers' labels; it waits for the same fill Job.
    const composeWorker = (w: Pick<ResolvedServing, 'labels' | 'selector'> & { serving: boolean }) => {
      const worker = composePod(this, v, props, { ...r, labels: w.labels, selector: w.selector, serviceMonitor: true });
      if (w.serving) markForPicker(worker, r);
      shipScript(this, worker, hubDownloadScript());
      sharedCacheFill(this, worker, r, props.downloadResources);
      this._podTemplates.push(worker);
      return worker;
    };
    const emission = { v, who: `${r.engine.construct} '${id}'`, r, leader: template, composeWorker };
    this.workload = r.group
      ? leaderWorkerSet(this, { ...emission, group: r.group, guaranteedQos: r.guaranteedQos })
      : servingWorkloadObject(this, {
          kind: r.kind,
          name: r.name,
          labels: r.labels,
          selector: r.selector,
          replicas: r.replicas,
          template,
          headlessServiceName: this.headlessServiceName,
          cache: r.cache,
          progressDeadlineSeconds: progressDeadlineSeconds({
            capacitySeconds: r.capacity.seconds,
            gracePeriodSeconds: r.termination.gracePeriodSeconds,
            cacheWaitSeconds: fill?.waitSeconds ?? 0,
          }),
        });
    if (r.kind === WorkloadKind.STATEFUL_SET) this.statefulSet = this.workload;
    else if (r.kind === WorkloadKind.DEPLOYMENT) this.deployment = this.workload;
    else this.leaderWorkerSet = this.workload;
    addPodValidation(this, template, r.guaranteedQos, `${r.engine.construct} '${id}'`);
    // maxUnavailable 1 keeps n-1 serving while replicas change. With one replica it still lets a
    // drain evict the pod (a short outage) instead of blocking node maintenance forever. A group's
    // budget covers its workers too: evicting any rank recreates the group.
    this.podDisruptionBudget = podDisruptionBudget(this, 'Budget', {
      name: r.name,
      labels: r.labels,
      selector: r.group ? groupPodSelector(r) : r.selector,
      budget: DisruptionBudget.maxUnavailable(1),
    })!;
    // The other pool of a disaggregated service, on every port: the KV transfer's sockets (UCX over TCP, SGLang's
    // transfer engines) bind ports of their own choosing.
    const poolPeers = r.poolPeers ? [{ podSelector: { matchLabels: r.poolPeers } }] : [];
    const group =
      r.group && groupNetworkPolicy(new Construct(this, 'Group'), v, props.networkPolicy, r, r.group, poolPeers);
    const peers = [...(group?.leaderPeers ?? []), ...poolPeers];
    const policy = workloadNetworkPolicy(this, v, props.networkPolicy, {
      identity: { name: props.name, instance: r.name, component: COMPONENT },
      profile: 'serving',
      ports: r.endpointPorts.map((_, i) => rankPortName(i)),
      peers: peers.length > 0 ? peers : undefined,
    });
    this.networkPolicy = policy?.object;
    this._allowClient = policy?.allowClient;
    this._allowOnPorts = policy?.allowOnPorts;
    const monitor = serviceMonitor(this, v, {
      ...props,
      autoscaled: r.autoscaling !== undefined,
      name: r.name,
      labels: r.labels,
      portNames: r.endpointPorts.map((_, i) => rankPortName(i)),
      metricsPath: r.engine.metricsPath,
    });
    this.serviceMonitor = monitor.object;
    this.scrapeIntervalSeconds = monitor.interval;
    if (r.supervisorPort !== undefined) {
      const describe = `${r.engine.construct} '${id}'`;
      // Checked at synth: the gateway routing to the service is made after it.
      this.node.addValidation({
        validate: () =>
          this._pools.length > 0
            ? []
            : [
                `${describe}: expertParallel.endpoints RankEndpoints.PER_RANK needs an InferenceGateway routing to the service: only the Endpoint Picker spreads requests over the ranks' ports, and the client Service reaches the first rank's alone (got ${RankEndpoints.PER_RANK})`,
              ],
      });
    }
    if (r.autoscaling?.minReplicas === 0) {
      const describe = `${r.engine.construct} '${id}'`;
      // Checked at synth: the gateway routing to the service is made after it.
      this.node.addValidation({
        validate: () =>
          this._pickerQueues.length > 0
            ? []
            : [
                `${describe}: autoscaling.minReplicas 0 needs an InferenceGateway with flowControl routing to the service: at zero replicas nothing else holds a request through the cold start, and nothing else tells KEDA a request waits (got 0)`,
              ],
      });
    }
    if (r.autoscaling) {
      const made = r.autoscaling.autoscaler._create(this, {
        queued: () => this._pickerQueues,
        v,
        name: r.name,
        labels: r.labels,
        namespace,
        scaleTarget: r.group ? groupScaleTarget(r.group) : { apiVersion: 'apps/v1', kind: r.kind, name: r.name },
        servingPodsPerReplica: this.servingPodsPerReplica,
        engine: r.engine.containerName,
        metrics: { running: r.engine.metrics.running, waiting: r.engine.queueMetric },
        minReplicas: r.autoscaling.minReplicas,
        maxReplicas: r.autoscaling.maxReplicas,
        target: r.autoscaling.target,
        capacitySeconds: r.capacity.seconds,
        scaleDownSeconds: r.autoscaling.scaleDownSeconds,
      });
      this.horizontalPodAutoscaler = made.hpa;
      this.scaledObject = made.scaledObject;
    }
    if (r.role === 'decode') {
      const prefillProps = prefillPropsOf(props, r.disagg!);
      PREFILL_OF.set(prefillProps, { disagg: r.disagg!, peers: poolSelector(props.name, r.name) });
      this.prefill = binding.pool(this, 'Prefill', prefillProps);
    }
  }

  /**
   * @internal An InferenceGateway with flowControl routes here: its queue for the pool counts as demand, and wakes the
   * service at zero. The gauge can dip below 0 in a race when idle flows are cleaned up (llm-d-router notes it):
   * each series is clamped, so it never cancels a request that waits.
   */
  /**
   * @internal An InferenceGateway's pool routes to the service: a decode pool's sidecar then allows prefill legs to
   * that pool's pods only. Returns why it cannot, for the gateway's message.
   */
  _routedByGateway(pool: { namespace?: string; name: string }): string | undefined {
    const earlier = this._pools[0];
    this._pools.push(pool);
    if (this.role !== 'decode') return undefined;
    if (earlier)
      return `must not be routed by a second InferenceGateway when disaggregated: its routing sidecar allows prefill legs to the pods of one InferencePool (${earlier.name})`;
    // The service refused a chart without a namespace, and the gateway shares it.
    const named = { namespace: pool.namespace!, name: pool.name };
    (this._sidecar!.args as string[]).push(...ssrfProtectionArgs(named));
    return undefined;
  }

  /**
   * @internal An InferenceGateway scores the pool's pods by the KV blocks they hold: the engine publishes its KV-cache
   * events where the picker dials, and serves the render endpoints its token producer calls. Returns why it cannot.
   *
   * The picker dials `KV_EVENTS_PORT` + the endpoint's index in the pool's `targetPorts` (llm-d-router v0.10.0
   * preciseprefixcache/extractor.go ensureSubscriber: "SocketPort + RankIndex"), and attributes what it hears to
   * that endpoint; each vLLM engine binds `KV_EVENTS_PORT` + its data-parallel rank (distributed/kv_events.py
   * offset_endpoint_port, from v1/core/sched/scheduler.py's data_parallel_index, the global rank). The two agree for
   * a pod's ranks: the pool's services share their first port (resolveGateway), so rank i's port is the pool's
   * i-th, in a pod that holds ranks 0 to R-1.
   */
  _publishKvEvents(picker: k8s.NetworkPolicyPeer): string | undefined {
    const refused = this._kvEventsRefusal();
    if (refused !== undefined || this._publishesKvEvents) return refused;
    this._publishesKvEvents = true;
    const facts = this._engine.kvEvents as KvEventsFacts;
    const main = this._podTemplate.main;
    (main.args as string[]).push(
      ...facts.args({
        port: KV_EVENTS_PORT,
        model: escapeKubeletExpansion(this._modelNames[0]),
        podIpVariable: POD_IP_VARIABLE,
      }),
    );
    main.env.push(POD_IP_ENV);
    const eventPorts = this.kvEventPorts();
    const names = eventPorts.map((_, i) => (i === 0 ? KV_EVENTS_PORT_NAME : `${KV_EVENTS_PORT_NAME}-${i}`));
    eventPorts.forEach((containerPort, i) =>
      (main.ports as k8s.ContainerPort[]).push({ name: names[i], containerPort, protocol: 'TCP' }),
    );
    this._allowOnPorts?.(picker, names);
    return undefined;
  }

  /** The ports the engine's ranks publish their KV-cache events on: KV_EVENTS_PORT + the rank, one per endpoint. */
  private kvEventPorts(): number[] {
    return this.endpointPorts.map((_, i) => KV_EVENTS_PORT + i);
  }

  /** @internal Why the pods cannot publish their KV-cache events for the picker; undefined when they can (or do). */
  _kvEventsRefusal(): string | undefined {
    const facts = this._engine.kvEvents;
    if (typeof facts === 'string') return facts;
    if (this._publishesKvEvents) return undefined;
    const ranks = this.endpointPorts.length;
    if (this.servingPodsPerReplica > 1)
      return `must run its per-rank endpoints in one pod for precise prefix-cache scoring: the ranks on a group's workers publish on port ${KV_EVENTS_PORT} + their rank in the whole group (vLLM 0.31.0 v1/core/sched/scheduler.py data_parallel_index), while the picker dials ${KV_EVENTS_PORT} + the target port's index on every pod (llm-d-router v0.10.0 preciseprefixcache/extractor.go)`;
    if (this._dataParallelRanks > ranks)
      return `must have an endpoint per data-parallel rank for precise prefix-cache scoring (expertParallel.endpoints RankEndpoints.PER_RANK): each rank publishes its KV-cache events on port ${KV_EVENTS_PORT} + its rank (vLLM 0.31.0 distributed/kv_events.py), and the picker dials one socket per target port of the pool`;
    const main = this._podTemplate.main;
    if (flagValue(main.args as string[], '--kv-events-config') !== undefined)
      return 'must not set --kv-events-config in extraArgs for precise prefix-cache scoring: the gateway sets it';
    // Every container of the pod shares its ports.
    const eventPorts = this.kvEventPorts();
    const spec = this._podTemplate.spec;
    const declared = [...(spec.initContainers ?? []), ...spec.containers].flatMap(c => c.ports ?? []);
    const taken = declared.find(p => eventPorts.includes(p.containerPort));
    if (taken !== undefined)
      return `must keep port ${taken.containerPort} (${taken.name ?? 'unnamed'}) free for precise prefix-cache scoring: the engine's ranks publish their KV-cache events on ${eventPorts.join(', ')}`;
    if (main.env.some(e => e.name === POD_IP_VARIABLE))
      return `must not set env.${POD_IP_VARIABLE} for precise prefix-cache scoring: the KV-events topic reads the pod's IP from it`;
    return undefined;
  }

  /** @internal */
  _countPickerQueue(pool: string, namespace: string): void {
    this._pickerQueues.push({
      query: `sum(clamp_min(${EPP_FLOW_CONTROL_QUEUE}{namespace="${namespace}",inference_pool="${pool}"}, 0))`,
    });
  }
}

/** Everything the props decide, checked: what the pod and the objects are composed from. */
interface ResolvedServing {
  readonly engine: ServingEngine;
  readonly name: string;
  readonly modelId: string;
  readonly revision?: string;
  readonly gpus: number;
  readonly port: number;
  readonly image: string;
  readonly termination: Termination;
  readonly startupBudgetSeconds: number;
  readonly modelSize?: Size;
  readonly cache: BoundModelCache;
  readonly kind: WorkloadKind;
  readonly autoscaling?: ReturnType<typeof resolveAutoscaling>;
  readonly capacity: { seconds: number; what: string };
  readonly inFlightTarget?: number;
  readonly replicas?: number;
  readonly launch: EngineLaunch;
  readonly extraArgs: string[];
  readonly identity: ProcessIdentity;
  readonly uid: number | undefined;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly token: k8s.EnvVar[];
  readonly guaranteedQos: boolean;
  readonly serviceMonitor: boolean;
  readonly driverFloor?: number;
  /** The LeaderWorkerSet group of a replica, with `nodes` > 1. */
  readonly group?: ServingGroup;
  /** The KV-cache host tier, with `kvCacheOffload`. */
  readonly kvOffload?: ResolvedKvOffload;
  /** RDMA devices: the group's (`rdma`), or the KV transfer's (`disaggregation.rdma`). */
  readonly rdma?: RdmaPodParts;
  /** The pool's role, with disaggregation. */
  readonly role?: PoolRole;
  readonly disagg?: ResolvedDisaggregation;
  /** The port the engine listens on: `port`, or behind the decode pool's sidecar ENGINE_PORT_BEHIND_SIDECAR. */
  readonly enginePort: number;
  /** The other pool's pods, with disaggregation. */
  readonly poolPeers?: Record<string, string>;
  /** The names clients ask for the model by: the served names, or the model id. */
  readonly modelNames: readonly string[];
  /** Data-parallel ranks in one engine of a pod (vLLM expertParallel). */
  readonly dataParallelRanks: number;
  /** The API ports, each an endpoint: `port`, or one per rank from it (RankEndpoints.PER_RANK). */
  readonly endpointPorts: readonly number[];
  /** Where the probes ask, when not the API port: the per-rank servers' supervisor. */
  readonly supervisorPort?: number;
}

/** The names the construct serves the model under, when it names them (vLLM's list, SGLang's one). */
function servedNamesOf(props: InferenceServiceProps): string[] {
  const p = props as { servedModelNames?: unknown; servedModelName?: unknown };
  if (Array.isArray(p.servedModelNames)) return p.servedModelNames.filter((n): n is string => typeof n === 'string');
  return typeof p.servedModelName === 'string' ? [p.servedModelName] : [];
}

/** The variable the KV-events topic reads the pod's IP from. */
const KV_EVENTS_PORT_NAME = 'kv-events';

/** The pods (leaders and workers) of one pool of a model: its name and instance. */
function poolSelector(model: string, instance: string): Record<string, string> {
  return instanceSelector({ name: model, instance });
}

/** The prefill pool's props: the decode pool's, with the prefill options in place of its size and scaling. */
function prefillPropsOf(props: InferenceServiceProps, d: ResolvedDisaggregation): InferenceServiceProps {
  const o = d.options;
  const nodes = o.prefillNodes ?? 1;
  const group = nodes > 1;
  return {
    ...props,
    disaggregation: undefined,
    replicas: o.prefillAutoscaling ? undefined : (o.prefillReplicas ?? 1),
    autoscaling: o.prefillAutoscaling,
    gpusPerReplica: o.prefillGpusPerReplica ?? props.gpusPerReplica,
    nodes,
    // A group's options follow the pool into a group of its own; its surge is its own decision (none by default).
    queueName: group ? props.queueName : undefined,
    rdma: group ? props.rdma : undefined,
    groupExclusiveTopology: group ? props.groupExclusiveTopology : undefined,
    groupSurge: undefined,
    workloadKind: group || props.workloadKind === WorkloadKind.LEADER_WORKER_SET ? undefined : props.workloadKind,
  };
}

function resolveServing(v: Validator, props: InferenceServiceProps, binding: EngineBinding): ResolvedServing {
  const engine = binding.engine;
  v.knownProps('', props, propKeysOf(binding.keys));
  for (const key of Object.keys(props)) {
    if ((props as unknown as Record<string, unknown>)[key] === null)
      v.fail(key, 'must not be null: omit it for the default', null);
  }
  const prefillOf = PREFILL_OF.get(props);
  const disagg =
    prefillOf?.disagg ??
    resolveDisaggregation(v, props.disaggregation, {
      facts: engine.disaggregation,
      sidecarImage: DISAGG_SIDECAR_IMAGE,
    });
  const role: PoolRole | undefined = prefillOf ? 'prefill' : disagg ? 'decode' : undefined;
  const name = statefulSetName(v, role === 'prefill' ? `${props.name}-prefill` : props.name, props.version);
  const modelId = modelIdOf(v, props.modelId, engine);
  const revision = revisionOf(v, props.revision);
  const gpus = v.wholeNumber('gpusPerReplica', props.gpusPerReplica ?? 1, 1);
  checkGpusPerNode(v, {
    prop: 'gpusPerReplica',
    gpus,
    maxGpusPerNode: props.maxGpusPerNode,
    more:
      typeof engine.multiNode === 'string'
        ? 'this engine runs a replica on one node; serve a larger model with VllmInferenceService or SglangInferenceService and nodes > 1'
        : 'serve a model larger than one node with nodes > 1',
  });
  const mig = migSource(props);
  if (gpus > 1 && mig !== undefined) {
    v.fail(
      'gpusPerReplica',
      `must be 1 with MIG instances (${mig}): a CUDA process sees one MIG instance and NCCL does not connect instances, so tensor parallel across MIG slices cannot run (use a larger MIG profile, or whole GPUs)`,
      gpus,
    );
  }
  const placed = resolveGroup(v, props, engine, gpus, name);
  const ep = resolveExpertParallel(v, props.expertParallel, {
    facts: engine.expertParallel,
    gpus,
    nodes: placed?.nodes ?? 1,
    rdma: placed?.rdma !== undefined,
  });
  // Data-parallel engines across a group join as the expert-parallel facts say (vLLM: headless engines behind the
  // leader's API servers), not as the engine's pipeline stages.
  const group = placed && ep?.groupLaunch ? { ...placed, launch: ep.groupLaunch } : placed;
  if (group?.launch.ipv6 && props.ipFamily === IpFamily.IPV6)
    v.fail('ipFamily', `must be IPV4 for this group: ${group.launch.ipv6}`, props.ipFamily);
  if (group && group !== placed) {
    checkRendezvousPort(v, props.port ?? engine.port, group.launch);
    if (disagg)
      v.fail(
        role === 'prefill' ? 'disaggregation.prefillNodes' : 'nodes',
        "must be 1 with expertParallel on a disaggregated vLLM service: the KV-transfer side channels of the ranks on a group's workers (VLLM_NIXL_SIDE_CHANNEL_PORT + data-parallel index, vLLM 0.31.0 nixl/base_scheduler.py) are not declared or admitted between the pools here",
        group.nodes,
      );
  }
  const declared = modelArchitectureOf(v, props.modelArchitecture);
  if (ep) {
    // Each attention rank shards the heads over its own tensor-parallel ranks; the experts spread over all of them.
    const rule = headRule({ engine, modelId, declared }, ep.tensorParallel);
    if (rule) v.fail('expertParallel.tensorParallel', rule, ep.tensorParallel);
  } else {
    checkTensorParallelHeads(v, {
      engine,
      modelId,
      declared,
      gpus,
      tensorParallel: group?.tensorParallel ?? gpus,
      nodes: group?.nodes ?? 1,
    });
  }
  // The engine's tensor-parallel size: per attention rank with expertParallel, else the pod's (or the group's).
  const engineTensorParallel = ep?.engineTensorParallel ?? group?.tensorParallel ?? gpus;
  const image = v.image('image', props.image ?? engine.defaultImage);
  const termination = resolveTermination(v, props);
  if (role === 'decode') checkDecodePool(v, props, engine, disagg!, engineTensorParallel);
  if (disagg?.options.rdma !== undefined && group?.rdma !== undefined)
    v.fail(
      'disaggregation.rdma',
      "must be left out with rdma: the group's RDMA devices carry the KV transfer too",
      disagg.options.rdma,
    );
  const rdma = group?.rdma ?? (disagg ? resolveRdma(v, disagg.options.rdma) : undefined);

  const modelSize = props.modelSize === undefined ? undefined : v.positiveSize('modelSize', props.modelSize);
  // A group's pods load their shares of the weights at once (vLLM: a pipeline stage's layers, SGLang:
  // its tensor-parallel slices), so the budget is one share's; the group's GPUs decide whether the
  // model is large enough to need modelSize.
  const startupBudgetSeconds = startupBudget(v, modelSize, props.maxModelLoadTime, {
    modelId,
    gpus: gpus * (group?.nodes ?? 1),
    gpusWhat: group ? 'gpusPerReplica x nodes' : undefined,
    shards: group?.nodes,
  });
  const defaultCacheGib = Math.max(
    DEFAULT_CACHE_GIB,
    modelSize ? Math.ceil((modelSize.toKibibytes() * CACHE_HEADROOM) / 1024 ** 2) : 0,
  );
  const modelCache = props.modelCache ?? ModelCache.persistentClaim({ size: Size.gibibytes(defaultCacheGib) });
  if (!(modelCache instanceof ModelCache))
    v.fail('modelCache', 'must be made with ModelCache.persistentClaim(), sharedClaim() or emptyDir()', modelCache);
  const cache = modelCache._bind(v, modelSize);
  const kind = resolveWorkloadKind(v, props.workloadKind, cache, group !== undefined);

  const capacity = capacityDelay(startupBudgetSeconds, modelSize, cache.shared);
  const batch = {
    limit: engine.batchLimit,
    value: (props as unknown as Record<string, unknown>)[engine.batchLimit.prop],
  };
  const autoscaling =
    props.autoscaling === undefined ? undefined : resolveAutoscaling(v, props.autoscaling, capacity, batch);
  if (autoscaling && props.replicas !== undefined) {
    v.fail(
      'replicas',
      'must not be set with autoscaling: the autoscaler owns the replica count (use autoscaling.minReplicas)',
      props.replicas,
    );
  }
  const replicas = autoscaling ? undefined : v.wholeNumber('replicas', props.replicas ?? 1, 1);
  if (disagg && autoscaling?.minReplicas === 0)
    v.fail(
      'autoscaling.minReplicas',
      "must be at least 1 with disaggregation: the picker's queue that wakes a service at zero counts the pool, not a role, so it could not tell which pool to wake",
      0,
    );
  const groups = replicas ?? autoscaling!.maxReplicas;
  if (group && group.surge > groups)
    v.fail(
      'groupSurge',
      `must be at most the groups an update replaces (${groups}): more surge starts no sooner`,
      group.surge,
    );

  if (props.ipFamily !== undefined && !Object.values(IpFamily).includes(props.ipFamily))
    v.fail('ipFamily', `must be one of ${Object.values(IpFamily).join(', ')}`, props.ipFamily);
  // Unprivileged: the pods drop every capability, NET_BIND_SERVICE included.
  const port = v.wholeNumber('port', props.port ?? engine.port, 1024, 65535);
  if (role === 'decode' && port === ENGINE_PORT_BEHIND_SIDECAR)
    v.fail(
      'port',
      `must not be ${ENGINE_PORT_BEHIND_SIDECAR} with disaggregation: the decode engine listens there, behind the routing sidecar that takes the API port`,
      port,
    );
  const enginePort = role === 'decode' ? ENGINE_PORT_BEHIND_SIDECAR : port;
  const endpointPorts = perRankPorts(v, props, ep?.perRank, {
    port,
    disaggregated: disagg !== undefined,
    groupPorts: group ? [group.launch.rendezvousPort, ...(group.launch.leaderPorts ?? [])] : [],
  });
  if (disagg && props.kvCacheOffload !== undefined)
    v.fail(
      'kvCacheOffload',
      "must be left out with disaggregation: vLLM takes one connector in --kv-transfer-config, and its offload connector replaces the KV transfer's (vLLM 0.31.0 config/vllm.py _post_init_kv_transfer_config) while LMCache beside NIXL would need a MultiConnector not modelled here, as is how SGLang's hierarchical cache meets its transfer backends",
      props.kvCacheOffload,
    );
  const kvOffload = resolveKvOffload(v, props.kvCacheOffload, {
    facts: engine.kvOffload,
    ranks: gpus,
    nodes: group?.nodes ?? 1,
  });
  const tuning = binding.tuning(v);
  const transfer = disagg && role ? { args: disagg.facts.args(role), env: disagg.facts.env } : undefined;
  const untrusted = engine.launch({
    modelId,
    revision,
    gpus: engineTensorParallel,
    port: enginePort,
    host: props.ipFamily === IpFamily.IPV6 ? '::' : '0.0.0.0',
    drainSeconds: termination.drainSeconds,
    startupSeconds: startupBudgetSeconds,
    usageStats: v.boolean('usageStats', props.usageStats, false),
    tuning: {
      args: [...tuning.args, ...(kvOffload?.args ?? []), ...(transfer?.args ?? []), ...(ep?.args ?? [])],
      env: [
        ...tuning.env,
        ...(transfer?.env ?? []).map(env => ({ env, via: 'disaggregation' })),
        ...(kvOffload?.env ?? []).map(env => ({ env, via: 'kvCacheOffload' })),
      ],
    },
  });
  const launch = applyServingTrust(v, engine, props, untrusted);
  const extraArgs = extraArgsOf(
    v,
    engine,
    props.extraArgs,
    {
      size: engineTensorParallel,
      of: group?.launch.tensorParallelAcrossNodes ? 'gpusPerReplica x nodes' : 'gpusPerReplica',
    },
    kvOffload !== undefined,
    [
      ...(ep ? [setByProp(ep.ownedFlags, 'expertParallel')] : []),
      ...refusedBecause(ep?.perRank?.refusedFlags),
      ...(disagg && typeof engine.disaggregation !== 'string'
        ? [setByProp(engine.disaggregation.ownedFlags, 'disaggregation (for each pool)')]
        : []),
      // The group's launch (the engine's, or expertParallel's), abbreviations included.
      ...(group && group.launch.groupOwnedFlags.length > 0
        ? [
            {
              flags: group.launch.groupOwnedFlags,
              set: 'the construct sets it from nodes for the group launch',
              expanded: ', which the construct sets from nodes for the group launch',
            },
          ]
        : []),
      // extraArgs reach every pod of a group.
      ...refusedBecause(group?.launch.workerRefusedFlags),
    ],
  );
  for (const name of kvOffload?.refusedEnv?.names ?? [])
    if (props.env?.[name] !== undefined)
      v.fail(
        `env.${name}`,
        `must be left out with kvCacheOffload: ${kvOffload!.refusedEnv!.why}`,
        typeof props.env[name] === 'string' ? props.env[name] : name,
      );
  if (ep && props.kvCacheOffload !== undefined)
    v.fail(
      'kvCacheOffload',
      'must be left out with expertParallel: how the engines split the tier over data-parallel ranks is not modelled here',
      props.kvCacheOffload,
    );

  const { identity, uid } = resolveProcessIdentity(v, {
    // A runAsUser asks for a non-root pod: it sets the default, not a silent root.
    runAsRoot: v.boolean(
      'runAsRoot',
      props.runAsRoot,
      props.runAsUser !== undefined ? false : engine.runAsRoot || rdmaNeedsRoot(rdma),
    ),
    runAsUser: props.runAsUser,
    defaultUid: engine.nonRootUid,
    addCapabilities: rdma?.capabilities ?? [],
  });
  requireRootForRdma(v, rdma, identity.runAsRoot);
  // What asked for a non-root pod, for the message when the image cannot run as one.
  const nonRootBy: [string, unknown] | undefined = identity.runAsRoot
    ? undefined
    : props.runAsRoot === false
      ? ['runAsRoot', false]
      : props.runAsUser !== undefined
        ? ['runAsUser', props.runAsUser]
        : ['image', image];
  checkImageFacts(v, engine.imageFacts, image, nonRootBy);
  refuseHubCacheEnv(v, props.env, MODEL_CACHE_PATH);
  refuseHubReferencesInEnv(v, engine, props.env);
  const token = hubTokenEnv(v, props.hfTokenSecret, props.env);
  const { labels, selector } = labelSet({ name: props.name, instance: name, component: COMPONENT });
  return {
    engine,
    name,
    modelId,
    revision,
    gpus,
    port,
    image,
    termination,
    startupBudgetSeconds,
    modelSize,
    cache,
    kind,
    autoscaling,
    capacity,
    inFlightTarget: derivedInFlightTarget(batch),
    replicas,
    launch,
    extraArgs,
    identity,
    uid,
    labels,
    selector,
    token,
    guaranteedQos: v.boolean('guaranteedQos', props.guaranteedQos, false),
    serviceMonitor: v.boolean('serviceMonitor', props.serviceMonitor, false),
    driverFloor: driverFloorOf(v, engine.driverFacts, image, props.minDriverVersion),
    group,
    kvOffload,
    rdma,
    role,
    disagg,
    enginePort,
    poolPeers: prefillOf ? prefillOf.peers : disagg ? poolSelector(props.name, `${name}-prefill`) : undefined,
    modelNames: servedNamesOf(props).length > 0 ? servedNamesOf(props) : [modelId],
    dataParallelRanks: ep ? (ep.gpus * ep.nodes) / ep.tensorParallel : 1,
    endpointPorts,
    supervisorPort: ep?.perRank?.supervisorPort,
  };
}

/** Linux's default `net.ipv4.ip_local_port_range`, the ports `bind(("", 0))` picks from. */
const EPHEMERAL_PORTS = [32768, 60999] as const;

/** The name of a rank's API port after the first (`http`): `rank-1`, `rank-2`, ... */
const rankPortName = (i: number) => (i === 0 ? PORT_NAME : `rank-${i}`);
const SUPERVISOR_PORT_NAME = 'dp-supervisor';

/**
 * What the Endpoint Picker reads from a serving pod: which engine's metric names, and which ports are its endpoints.
 * Always set, gateway or not, so adding a gateway later does not roll the pods.
 */
function markForPicker(template: PodTemplate, r: Pick<ResolvedServing, 'engine' | 'endpointPorts'>): void {
  if (r.engine.pickerEngine === undefined) return;
  template.label(ENGINE_TYPE_LABEL, r.engine.pickerEngine);
  template.annotate(ACTIVE_PORTS_ANNOTATION, r.endpointPorts.join(','));
}

/**
 * The API ports with RankEndpoints.PER_RANK: `port` and one after it per further rank, which must miss the ports the
 * engine binds in the pod; `[port]` otherwise.
 */
function perRankPorts(
  v: Validator,
  props: InferenceServiceProps,
  perRank: ResolvedExpertParallel['perRank'],
  /** groupPorts: what a group's leader binds for its ranks, which no rank's port may take. */
  o: { port: number; disaggregated: boolean; groupPorts: readonly number[] },
): number[] {
  if (perRank === undefined) return [o.port];
  if (o.disaggregated)
    v.fail(
      'expertParallel.endpoints',
      "must be RankEndpoints.SHARED with disaggregation: the routing sidecar fronts one engine port, and the prefill legs' side channels per rank are not declared here",
      RankEndpoints.PER_RANK,
    );
  if (props.serviceMonitor !== true)
    v.fail(
      'serviceMonitor',
      "must be true with RankEndpoints.PER_RANK: each rank's server has its own /metrics on its own port, and the prometheus.io/port annotation names one, so autoscaling and alerts would see a single rank's load",
      props.serviceMonitor,
    );
  for (const [name, why] of Object.entries(perRank.refusedEnv))
    if (props.env?.[name] !== undefined)
      v.fail(`env.${name}`, `must not be set with RankEndpoints.PER_RANK: it ${why}`, props.env[name]);
  const ports = Array.from({ length: perRank.ranks }, (_, i) => o.port + i);
  const last = ports[ports.length - 1];
  const range = `one API port per data-parallel rank (${o.port}-${last}, RankEndpoints.PER_RANK)`;
  if (last > 65535) v.fail('port', `must leave room for ${range} below 65536`, o.port);
  const taken = [perRank.supervisorPort, ...perRank.reservedPorts, ...o.groupPorts].find(p => p >= o.port && p <= last);
  if (taken !== undefined)
    v.fail(
      'port',
      `must leave room for ${range} clear of ${taken}, which the engine binds in the pod (${perRank.source})`,
      o.port,
    );
  const [low, high] = EPHEMERAL_PORTS;
  if (perRank.ephemeralPortsBound && last >= low && o.port <= high)
    v.fail(
      'port',
      `must leave room for ${range} outside Linux's ephemeral ports ${low}-${high}: the engine's processes bind ports the kernel picked there, which could be a rank's before its server binds it (${perRank.source})`,
      o.port,
    );
  return ports;
}

/**
 * The decode pool's checks of its prefill pool, made before either is built: sizes and scaling the prefill pool's
 * own checks would name wrongly, and tensor-parallel sizes the engine cannot exchange blocks between.
 */
function checkDecodePool(
  v: Validator,
  props: InferenceServiceProps,
  engine: ServingEngine,
  d: ResolvedDisaggregation,
  decodeTensorParallel: number,
): void {
  const o = d.options;
  if (d.facts.decodeGroups && (props.nodes ?? 1) > 1)
    v.fail('nodes', `must be 1 for a disaggregated service's decode pool: ${d.facts.decodeGroups}`, props.nodes);
  if (o.prefillAutoscaling !== undefined && o.prefillAutoscaling.targetRequestsInFlight === undefined)
    v.fail(
      'disaggregation.prefillAutoscaling.targetRequestsInFlight',
      "must be given: the default comes from the engine's batch limit, a decode figure that a prefill pod, whose requests leave after their first token, never nears",
      undefined,
    );
  if (o.prefillAutoscaling !== undefined && o.prefillReplicas !== undefined)
    v.fail(
      'disaggregation.prefillReplicas',
      'must not be set with prefillAutoscaling: the autoscaler owns the count (use prefillAutoscaling.minReplicas)',
      o.prefillReplicas,
    );
  if (o.prefillAutoscaling?.minReplicas === 0)
    v.fail(
      'disaggregation.prefillAutoscaling.minReplicas',
      'must be at least 1: at zero the picker has no prefill endpoint, and nothing wakes the pool',
      0,
    );
  const gpus = v.wholeNumber(
    'disaggregation.prefillGpusPerReplica',
    o.prefillGpusPerReplica ?? props.gpusPerReplica ?? 1,
    1,
  );
  const nodes = v.wholeNumber('disaggregation.prefillNodes', o.prefillNodes ?? 1, 1, 64);
  const acrossNodes = typeof engine.multiNode !== 'string' && engine.multiNode.tensorParallelAcrossNodes;
  const prefill = acrossNodes ? gpus * nodes : gpus;
  const why = d.facts.tensorParallel(prefill, decodeTensorParallel);
  if (why)
    v.failDescribed(
      'disaggregation.prefillGpusPerReplica',
      why,
      `prefill ${prefill} and decode ${decodeTensorParallel} tensor-parallel ranks`,
    );
}

/**
 * `/dev/shm`: the engine's share per GPU, plus vLLM's KV-cache offload tier, a file there; a size given that
 * cannot hold the tier is refused (vLLM would stop at start: "Insufficient space in /dev/shm").
 */
function sharedMemoryOf(v: Validator, props: InferenceServiceProps, r: ResolvedServing): Size {
  const tier = r.kvOffload?.inSharedMemory ? r.kvOffload.size.toKibibytes() : 0;
  if (props.sharedMemory === undefined) return Size.kibibytes(r.engine.shmGibPerGpu * r.gpus * 1024 ** 2 + tier);
  if (tier > 0 && v.positiveSize('sharedMemory', props.sharedMemory).toKibibytes() <= tier)
    v.fail(
      'sharedMemory',
      `must be larger than the KV-cache offload tier (${sizeQuantity(r.kvOffload!.size).value}, a file in /dev/shm: ${r.kvOffload!.source}), with room left for NCCL; vLLM stops at start with "Insufficient space in /dev/shm"`,
      props.sharedMemory,
    );
  return props.sharedMemory;
}

/** The serving pod: the engine's container with its probes and drain, the cache, the download. */
function composePod(scope: IConstruct, v: Validator, props: InferenceServiceProps, r: ResolvedServing): PodTemplate {
  const { engine, launch, cache } = r;
  const scratch = scratchSpace(engine.home);
  // The server never reaches the hub: the init container filled the cache, so a hub outage or a
  // rate limit cannot stall a start, and no download runs under the startup probe.
  const offline: OwnedEnv = { env: { name: 'HF_HUB_OFFLINE', value: '1' }, via: 'modelCache' };
  // Behind the decode pool's routing sidecar the engine has a port of its own, which its probes ask.
  const enginePortName = r.enginePort === r.port ? PORT_NAME : ENGINE_PORT_NAME;
  // Per-rank servers: the supervisor's /health answers for all of them (and only once all are up).
  const probePortName = r.supervisorPort === undefined ? enginePortName : SUPERVISOR_PORT_NAME;
  const probe = (extra: Partial<k8s.Probe>): k8s.Probe => ({
    httpGet: { path: engine.healthPath, port: k8s.IntOrString.fromString(probePortName) },
    ...extra,
  });
  const cacheMount = { name: cache.volumeName, mountPath: MODEL_CACHE_PATH };
  const tierDisk = r.kvOffload?.disk;
  const { template } = buildWorkloadPod(v, {
    scope,
    queueName: props.queueName,
    props: r.rdma ? { ...props, extendedResources: rdmaExtendedResources(v, props, r.rdma) } : props,
    gpus: r.gpus,
    identity: r.identity,
    labels: r.labels,
    container: {
      name: engine.containerName,
      image: r.image,
      imagePullPolicy: 'IfNotPresent', // a multi-GB image: pull once per node and tag
      // User strings reach the engine as written: the kubelet would expand `$(VAR)` in them.
      ...(launch.command ? { command: launch.command.map(escapeKubeletExpansion) } : {}),
      ...(launch.args.length + r.extraArgs.length > 0
        ? { args: [...launch.args, ...r.extraArgs].map(escapeKubeletExpansion) }
        : {}),
      ports: [
        { name: enginePortName, containerPort: r.enginePort, protocol: 'TCP' },
        ...r.endpointPorts.slice(1).map((p, i) => ({ name: rankPortName(i + 1), containerPort: p, protocol: 'TCP' })),
        ...(r.supervisorPort === undefined
          ? []
          : [{ name: SUPERVISOR_PORT_NAME, containerPort: r.supervisorPort, protocol: 'TCP' }]),
        ...(r.disagg?.facts.ports ?? [])
          .filter(p => p.role === undefined || p.role === r.role)
          .map(p => ({ name: p.name, containerPort: p.port, protocol: 'TCP' })),
      ],
      // The port stays closed while the weights load: only the startup probe waits.
      startupProbe: probe({
        periodSeconds: STARTUP_PERIOD_SECONDS,
        timeoutSeconds: 5,
        failureThreshold: Math.ceil(r.startupBudgetSeconds / STARTUP_PERIOD_SECONDS),
      }),
      readinessProbe: probe({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3, successThreshold: 1 }),
      // A busy server answers slowly; only a server that fails for 3 minutes is restarted.
      livenessProbe: probe({ periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 6 }),
      // The kubelet's own sleep action (GA in 1.34, beta and on from 1.30): no sleep binary needed in
      // the image, so distroless engine images drain too. A zero sleep is no hook: the 1.32 API server
      // refuses a sleep of 0 s (PodLifecycleSleepActionAllowZero is alpha there).
      ...(r.termination.preStopSeconds > 0 || tierDisk
        ? {
            lifecycle: {
              ...(tierDisk ? { postStart: lmcacheDiskReset(tierDisk.path) } : {}),
              ...(r.termination.preStopSeconds > 0
                ? { preStop: { sleep: { seconds: r.termination.preStopSeconds } } }
                : {}),
            },
          }
        : {}),
    },
    ownedEnv: [...launch.env.map(o => ({ ...o, env: escapedEnv(o.env) })), offline],
    defaultEnv: [
      ...engine.cacheEnv(MODEL_CACHE_PATH),
      ...scratch.env,
      ...(r.identity.runAsRoot ? [] : [nonRootUserEnv(engine.containerName)]),
      ...engine.extraEnv(engine.home),
      ...(r.rdma?.env ?? []),
    ],
    volumes: [...scratch.volumes, ...(cache.volume ? [cache.volume] : []), ...(tierDisk ? [tierDisk.volume] : [])],
    mounts: [
      ...scratch.mounts,
      ...(cache.volume ? [cacheMount] : []),
      ...(tierDisk ? [{ name: tierDisk.volume.name, mountPath: tierDisk.path }] : []),
    ],
    nodeDisk: tierDisk?.nodeDisk,
    claims: cache.claimTemplate ? [{ name: cache.volumeName, mountPath: MODEL_CACHE_PATH, prop: 'modelCache' }] : [],
    sharedMemory: sharedMemoryOf(v, props, r),
    hostMemory: r.kvOffload && {
      size: r.kvOffload.size,
      inSharedMemory: r.kvOffload.inSharedMemory,
      what: `the KV-cache offload tier (kvCacheOffload, ${r.kvOffload.source})`,
    },
    spec: {
      terminationGracePeriodSeconds: r.termination.gracePeriodSeconds,
      // Spread replicas over nodes so one node drain or failure takes one replica; ScheduleAnyway
      // because GPU nodes are scarce and a skewed placement beats a Pending replica.
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: r.selector },
        },
      ],
    },
  });
  if (r.driverFloor !== undefined) requireDriver(template, r.driverFloor);
  for (const [key, value] of Object.entries(r.rdma?.annotations ?? {})) template.annotate(key, value);
  if (r.role) template.label(ROLE_LABEL, r.role);
  if (!r.modelId.startsWith('/')) {
    addDownload(
      v,
      template,
      engine.download(r.modelId, r.revision),
      offline.env.name,
      r.token,
      props.downloadResources,
    );
  } else if (r.token.length > 0) {
    v.fail('hfTokenSecret', 'needs a hub model: with a local path nothing is downloaded', props.hfTokenSecret);
  } else if (props.downloadResources !== undefined) {
    v.fail('downloadResources', 'needs a hub model: with a local path nothing is downloaded', props.downloadResources);
  }
  // One scrape path per pod: a Prometheus that honours these annotations and a ServiceMonitor
  // would both scrape it, and every sum() over the engine's metrics would count it twice.
  if (!r.serviceMonitor) {
    template.annotate('prometheus.io/scrape', 'true');
    template.annotate('prometheus.io/port', String(r.port));
    template.annotate('prometheus.io/path', engine.metricsPath);
  }
  return template;
}

/**
 * A shared claim is filled once by a CPU-only Job, which the pods wait for: the download needs no
 * GPU, and one filler per cache replaces one per replica. The wait allows the fill at the assumed hub
 * bandwidth (when modelSize says how much) plus the startup budget; a longer fill restarts the wait.
 */
function sharedCacheFill(
  scope: Construct,
  template: PodTemplate,
  r: ResolvedServing,
  resources: DownloadResources | undefined,
): CacheFill | undefined {
  const claim = r.cache.shared ? r.cache.volume?.persistentVolumeClaim?.claimName : undefined;
  if (claim === undefined || r.modelId.startsWith('/')) return undefined;
  const waitSeconds = capacityDelay(r.startupBudgetSeconds, r.modelSize, false).seconds;
  return fillSharedCache(scope, template, { claimName: claim, waitSeconds, resources });
}

/** An engine variable whose value holds user strings (MODEL_ID, REVISION): passed as written. */
function escapedEnv(env: k8s.EnvVar): k8s.EnvVar {
  return env.value === undefined ? env : { ...env, value: escapeKubeletExpansion(env.value) };
}

/**
 * One client Service across versions and engines: it selects every version of this name through
 * the named port, so during a version bump both workloads serve until the old one is deleted.
 */
function clientService(scope: Construct, v: Validator, name: string, role: PoolRole | undefined): ApiObject {
  // A disaggregated service's clients reach its decode pods (their sidecars), never the prefill pool.
  const decodeOnly = role !== undefined;
  const service = sharedObject(scope, 'Service', name, () => {
    const made = new ManifestObject(scope, 'Service', KIND.Service, {
      metadata: { name, labels: workloadLabels({ name, instance: name, component: COMPONENT }) },
      spec: {
        type: 'ClusterIP',
        selector: {
          [LABEL_NAME]: name,
          [LABEL_COMPONENT]: COMPONENT,
          ...(decodeOnly ? { [ROLE_LABEL]: 'decode' } : {}),
        },
        ports: [{ name: PORT_NAME, port: 80, targetPort: k8s.IntOrString.fromString(PORT_NAME), protocol: 'TCP' }],
      },
    });
    DECODE_ONLY.set(made, decodeOnly);
    return made;
  });
  if (DECODE_ONLY.get(service) !== decodeOnly)
    v.fail(
      'disaggregation',
      `must be set on every service named '${name}' or on none: they share the client Service, which selects only the decode pods of a disaggregated one (give the other a name of its own)`,
      decodeOnly ? 'disaggregated' : 'not disaggregated',
    );
  return service;
}

/** Whether a client Service selects decode pods only. */
const DECODE_ONLY = new WeakMap<ApiObject, boolean>();

const PROP_KEYS = new WeakMap<readonly string[], readonly string[]>();

/** Every prop key an engine's construct knows: the shared ones and the engine's own (made once per engine). */
function propKeysOf(engineKeys: readonly string[]): readonly string[] {
  let keys = PROP_KEYS.get(engineKeys);
  if (!keys) PROP_KEYS.set(engineKeys, (keys = [...GPU_WORKLOAD_PROP_KEYS, ...SERVING_PROP_KEYS, ...engineKeys]));
  return keys;
}

/**
 * Any of the library's serving constructs. A union, not an interface to implement: the practice
 * lives in the library's own classes, and other constructs (`RotatingGpuSecret.mountInto`) take
 * only those.
 */
export type InferenceService = TgiInferenceService | VllmInferenceService | SglangInferenceService;
