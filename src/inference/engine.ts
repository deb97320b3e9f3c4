import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import type { KvOffloadFacts } from './kv-cache-offload';
import type { DisaggFacts } from './disaggregation';
import type { ExpertParallelFacts } from './expert-parallel';
import { escapeKubeletExpansion } from '../common/kubelet-expansion';
import { RuntimeScript, runtimeScript, scriptPath } from '../common/runtime-scripts';
import { OwnedEnv } from '../common/workload-pod';
import type { DriverFact } from './driver-floor';

/** What the shared serving practice hands an engine to start it. */
export interface LaunchOptions {
  readonly modelId: string;
  readonly revision?: string;
  /** GPUs per replica: the tensor-parallel size. */
  readonly gpus: number;
  readonly port: number;
  /** The listen address: `0.0.0.0` or `::`. */
  readonly host: string;
  /** The engine's own drain timeout, from `drainTimeout`. */
  readonly drainSeconds: number;
  /**
   * The startup probe's budget for load and warm-up: an engine with its own startup deadline gets
   * it, so the probe, not a shorter internal timeout, decides when a start has failed.
   */
  readonly startupSeconds: number;
  readonly usageStats: boolean;
  /** The construct-specific props (context length, quantization, ...) as args and env. */
  readonly tuning: EngineTuning;
}

/**
 * A fact about releases of an engine's published image, checked against the tag of `image`. Images
 * from other repositories (a mirror, a build of one's own) and tags that name no release
 * (`latest`, a digest) are not checked.
 */
export interface ImageFact {
  /** The repository, as Docker normalizes it (`docker.io/vllm/vllm-openai`). */
  readonly repository: string;
  /** Releases before this one are refused. */
  readonly minimum?: readonly [number, number, number];
  /** From this release on, the image cannot start as a non-root UID: `runAsRoot: false` is refused. */
  readonly rootOnlyFrom?: readonly [number, number, number];
  /** Why, with the source, for the message. */
  readonly why: string;
}

/** A counter, with the label matchers that pick some of its series (e.g. `finished_reason="error"`). */
export interface CounterSelector {
  readonly name: string;
  readonly matchers?: string;
}

/**
 * What an engine exports beyond its queue gauge, for alerts and dashboards. A metric the engine
 * does not export is left out, and so are the alerts built on it.
 */
export interface EngineMetrics {
  /** The gauge of requests in the running batch. */
  readonly running: string;
  /** The gauge of the KV cache in use, from 0 to 1. */
  readonly kvCacheUsage?: string;
  /** The histogram (base name) of time to first token, in seconds. */
  readonly timeToFirstToken?: string;
  /** The histogram (base name) of the time a request waits in the queue, in seconds. */
  readonly queueTime?: string;
  /** Counters of finished requests and of those that failed on the server's side. */
  readonly requests?: { readonly total: CounterSelector; readonly failed: CounterSelector };
}

/**
 * The engine's limit on requests it runs at once, the construct prop that sets it, and the engine's
 * default when the prop is unset (none when the engine derives it at start, e.g. from the KV cache).
 */
export interface BatchLimit {
  readonly prop: string;
  readonly default?: number;
  /** Where the default comes from, with the source, for messages and docs. */
  readonly why: string;
}

/** Engine-specific props turned into flags or variables by the construct. */
export interface EngineTuning {
  readonly args: string[];
  readonly env: OwnedEnv[];
}

/** The variable the construct sets to the pod's IP where a flag needs it (the kubelet expands `$(POD_IP)`). */
export const POD_IP_VARIABLE = 'POD_IP';
export const POD_IP_ENV: k8s.EnvVar = { name: POD_IP_VARIABLE, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } };

/** Where the pods of a multi-node group find each other, from the variables LWS injects. */
export interface GroupRendezvous {
  /** Pods per group (`nodes`). */
  readonly nodes: number;
  /** The leader's DNS name, as a kubelet reference: `$(LWS_LEADER_ADDRESS)`. */
  readonly leaderAddress: string;
  /** The pod's index in its group (0 for the leader), as a kubelet reference: `$(LWS_WORKER_INDEX)`. */
  readonly rank: string;
  /** The pod's own IP, as a kubelet reference: `$(POD_IP)`, set on the pods of launches with leaderArgs. */
  readonly podIp: string;
}

/**
 * How an engine spreads one replica over a group of pods, one per node (a LeaderWorkerSet group):
 * the leader serves the API, the workers run the other ranks. Each engine's multi-node launch, from
 * its docs and source.
 */
export interface MultiNodeLaunch {
  /**
   * Whether the tensor-parallel size spans the group (`nodes x gpusPerReplica`, SGLang) rather than
   * one pod (vLLM: tensor parallel within a node, pipeline parallel across nodes).
   */
  readonly tensorParallelAcrossNodes: boolean;
  /** Args every pod of a group adds: rank and rendezvous (the kubelet expands the `$(LWS_*)` references). */
  groupArgs(o: GroupRendezvous): string[];
  /**
   * Args only the leader adds: where it binds what the workers dial. A socket bound by name would need the group's DNS
   * record before the leader's engine starts, so these read the pod's IP (`podIp`).
   */
  leaderArgs?(o: GroupRendezvous): string[];
  /** Args only the workers add. */
  workerArgs(o: GroupRendezvous): string[];
  /**
   * The port on the leader every rank stays connected to (the torch.distributed store of the
   * group's rendezvous): a worker's preStop holds while that connection is up.
   */
  readonly rendezvousPort: number;
  /** Other ports the leader binds for the group's ranks: the API cannot take them either. */
  readonly leaderPorts?: readonly number[];
  /** Why the group cannot form over IPv6 (`ipFamily`), where it cannot. */
  readonly ipv6?: string;
  /** Flags the group launch sets that single-node serving allows in `extraArgs`: refused with `nodes` > 1. */
  readonly groupOwnedFlags: readonly string[];
  /**
   * Flags the workers cannot take, with why (completing "must not set <flag>: "): `extraArgs` reach every pod of the
   * group.
   */
  readonly workerRefusedFlags?: Readonly<Record<string, string>>;
  /**
   * Set where every pod of the group serves clients on its own API ports (vLLM's per-rank servers on every pod), so
   * the workers are serving pods like the leader: selected by the Services and the InferencePool, probed, scraped
   * and drained as it is. `healthPort` answers 200 on `/health` while the pod's ranks serve; a pod is ready while
   * every pod of its group answers. Otherwise only the leader serves and the workers run their ranks headless.
   */
  readonly workersServe?: { readonly healthPort: number };
  /** Where these facts come from. */
  readonly source: string;
}

/** How an engine publishes KV-cache events on a socket the picker dials, and serves the picker's tokenizer. */
export interface KvEventsFacts {
  /**
   * The flags that publish the events on `port` with the topic the picker parses (`kv@<pod>@<model>`), the pod's IP
   * read from `podIpVariable`, and that serve the render endpoints the picker's token producer calls.
   */
  args(o: { port: number; model: string; podIpVariable: string }): string[];
  readonly source: string;
}

/** How an engine is started: its command and args, and the variables it reads. */
export interface Launch {
  readonly command?: string[];
  readonly args: string[];
  readonly env: OwnedEnv[];
}

/** The engine's flags and variables for the two trust decisions a serving construct takes as props. */
export interface EngineTrust {
  /** The flag that sets the API key clients must send as `Authorization: Bearer <key>`. */
  readonly apiKeyFlag: string;
  /**
   * The variable the server reads the key from; without one, the key reaches the flag through a
   * shell wrapper that reads it from the environment (never a literal in the pod spec).
   */
  readonly apiKeyEnv?: string;
  /** The flag that lets the engine import and run Python code from the model repository. */
  readonly trustRemoteCodeFlag: string;
  /** The variable that does the same, if the engine reads one. */
  readonly trustRemoteCodeEnv?: string;
}

/**
 * The facts of one serving engine, each checked in its source. The serving practice (drain
 * arithmetic, probes, PDB, Services, cache, autoscaling, metrics, security) is shared and lives in
 * `inference-service.ts`; a new engine is a new object of this shape.
 */
export interface ServingEngine {
  /** The construct's class name, for messages. */
  readonly construct: string;
  /** The main container's name. */
  readonly containerName: string;
  readonly defaultImage: string;
  /** The port the engine listens on, unprivileged. */
  readonly port: number;
  /** A writable home for the caches the engine and its libraries write under `$HOME`. */
  readonly home: string;
  /** Readiness, liveness and startup path: 200 when serving, not 200 (or closed) while loading or draining. */
  readonly healthPath: string;
  /** Prometheus metrics on the API port. */
  readonly metricsPath: string;
  /** The gauge of requests waiting for a batch slot (with `metrics.running`: the requests in flight). */
  readonly queueMetric: string;
  /** The most requests one replica runs at once: the autoscaling target is derived from it. */
  readonly batchLimit: BatchLimit;
  /** The other metrics alerts and dashboards read, each from the engine's source. */
  readonly metrics: EngineMetrics;
  /** Whether the published image must run as root. */
  readonly runAsRoot: boolean;
  /**
   * The Endpoint Picker's name for the engine (its metrics extractor's engine type), if it can route
   * to it. Every pod of the engine carries it as the picker's engine-type label, gateway or not, so
   * adding or removing an InferenceGateway restarts no serving pod.
   */
  readonly pickerEngine?: 'vllm' | 'sglang';
  /**
   * Process names (comm) of the engine's own processes that are really a known program, e.g. `{ python3: 'sglang' }`.
   */
  readonly processAliases?: Readonly<Record<string, string>>;
  /** Releases of the published image the construct's output cannot run, by tag. */
  readonly imageFacts: readonly ImageFact[];
  /** The NVIDIA driver each release (and tag variant) of the published image needs, most specific first. */
  readonly driverFacts: readonly DriverFact[];
  /**
   * How one replica spans several nodes (`nodes` > 1), or why the engine cannot (the reason, for the
   * message).
   */
  readonly multiNode: MultiNodeLaunch | string;
  /** The UID the image is built for when it runs as non-root, if it names one. */
  readonly nonRootUid?: number;
  /** `/dev/shm` per GPU in GiB (NCCL between tensor-parallel ranks, and the engine's own IPC). */
  readonly shmGibPerGpu: number;
  /** How the engine keeps KV-cache blocks in host memory (`kvCacheOffload`), or why it cannot. */
  readonly kvOffload: KvOffloadFacts | string;
  /** How the engine serves prefill and decode in separate pools (`disaggregation`), or why it cannot. */
  readonly disaggregation: DisaggFacts | string;
  /**
   * How the engine publishes its KV-cache events for the Endpoint Picker's precise prefix-cache scoring, or why it
   * cannot.
   */
  readonly kvEvents: KvEventsFacts | string;
  /** How the engine runs wide expert parallelism (`expertParallel`), or why it cannot. */
  readonly expertParallel: ExpertParallelFacts | string;
  /**
   * Flags the construct sets, and the prop that controls each (`''` when fixed by the
   * construct): `extraArgs` may not repeat them, in `--x y` or `--x=y` form.
   */
  readonly ownedFlags: Readonly<Record<string, string>>;
  /**
   * Flags the construct does not set but cannot run with, and why (they change what the pod must
   * provide): `extraArgs` may not contain them either.
   */
  readonly contradictingFlags: Readonly<Record<string, string>>;
  /**
   * Flags whose values name a model, tokenizer or adapter the server loads at start, and what each
   * names: the server runs offline (`HF_HUB_OFFLINE=1`), so each must be an absolute path (a hub id
   * there is never fetched). Values may be lists (space- or comma-separated), `name=path`, or JSON
   * objects with a `path` or `lora_path`.
   */
  readonly offlinePathFlags: Readonly<Record<string, string>>;
  /** Variables the engine reads the same way (TGI reads every launcher flag from its variable). */
  readonly offlinePathEnv: Readonly<Record<string, string>>;
  /**
   * Whether the server takes `org/name:QUANT` (a GGUF file of that quantization in the repository)
   * as its model; the download then fetches that file.
   */
  readonly ggufModelForm: boolean;
  /**
   * The engine's weight-format flag and the values the download serves: it fetches the weights the
   * engine's `auto` format loads (safetensors, else bin, else pt; the GGUF file of `org/name:QUANT`).
   */
  readonly loadFormat?: { readonly flag: string; readonly served: readonly string[] };
  /**
   * Flags whose value splits the engine's tensor-parallel ranks into groups, so it must divide their
   * number (`gpusPerReplica`, times `nodes` where tensor parallel spans the group), with why.
   */
  readonly tensorParallelDivisors?: { readonly flags: readonly string[]; readonly why: string };
  /**
   * How the engine shards a model's attention heads over its tensor-parallel ranks: every engine splits
   * the query heads evenly; `replicatesKvHeads` says whether it copies a KV head to several ranks when
   * the ranks outnumber the KV heads (else the ranks must divide them too). `why` says it for messages.
   */
  readonly headSharding: { readonly replicatesKvHeads: boolean; readonly why: string };
  /**
   * Whether the engine parses flags with Python's argparse defaults (`allow_abbrev`), which expand
   * an unambiguous prefix (`--tp` for `--tp-size`): a prefix of an owned flag is then refused too.
   */
  readonly abbreviatedFlags: boolean;
  /**
   * Whether the image's entrypoint passes args through an unquoted `$@`, which splits them on
   * whitespace and expands globs: such args may then contain neither.
   */
  readonly argsWordSplit: boolean;
  /** How the server takes an API key and leave to run a model repository's code (serving-trust.ts). */
  readonly trust: EngineTrust;
  /** Cache locations, as defaults a user variable may replace. */
  cacheEnv(cachePath: string): k8s.EnvVar[];
  /** Extra default variables (caches under the home). */
  readonly extraEnv: (home: string) => k8s.EnvVar[];
  launch(o: LaunchOptions): Launch;
  /**
   * The command that downloads the weights into the cache in an init container, where no probe
   * can kill it; run with the same image, env and mounts as the server.
   */
  download(modelId: string, revision: string | undefined): string[];
}

/** hub-download.py, shipped once per namespace (common/runtime-scripts.ts) and run from its mount. */
export const hubDownloadScript = (): RuntimeScript => runtimeScript('hub-download', __dirname, 'hub-download.py');

/** The engines hub-download.py knows: what each one's server and router open offline differs. */
export type HubEngine = 'tgi' | 'vllm' | 'sglang';

/**
 * The download of every engine: hub-download.py under the image's `python3`, with its
 * huggingface_hub (a dependency of all three), fetching what the engine's server and router open
 * offline (weights in the loaded format, config, tokenizer, chat template, generation config, the
 * GGUF file of a `repo:QUANT` model), each checked against the hub's checksums, and a completion
 * marker after them; a warm, complete cache makes no network call. The model and revision are
 * user strings in `command`: escaped, so the kubelet does not expand `$(VAR)` in them.
 *
 * Variables it reads (the init container has the server's env): DOWNLOAD_DEADLINE_SECONDS
 * (default 21600), DOWNLOAD_STALL_SECONDS (120) and DOWNLOAD_STALL_BYTES (1 MiB),
 * DOWNLOAD_LOCK_STALE_SECONDS (60), DOWNLOAD_ATTEMPTS (6), DOWNLOAD_BACKOFF_SECONDS (1), HF_TOKEN,
 * HF_ENDPOINT.
 */
export function hubDownload(engine: HubEngine): ServingEngine['download'] {
  return (modelId, revision) => {
    return ['python3', scriptPath(hubDownloadScript()), engine, modelId, revision ?? ''].map(escapeKubeletExpansion);
  };
}

/** The cross-tool opt-out of usage reporting, set when `usageStats` is off. */
export const DO_NOT_TRACK: OwnedEnv = { env: { name: 'DO_NOT_TRACK', value: '1' }, via: 'usageStats' };
