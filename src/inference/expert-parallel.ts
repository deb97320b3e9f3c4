import { Validator } from '../validation/validate';
import type { MultiNodeLaunch } from './engine';

/** How a mixture-of-experts layer's tokens reach the experts on other ranks. */
export enum All2AllBackend {
  /**
   * The engine's own default, which runs on any network: vLLM's `allgather_reducescatter` (vllm/config/parallel.py),
   * SGLang's `none` (the MoE layer's all-reduce).
   */
  PORTABLE = 'portable',
  /**
   * DeepEP, its kernels chosen per batch: low latency for decode batches, high throughput for prefill ones (SGLang
   * `--deepep-mode auto`; vLLM has no such mode).
   */
  DEEPEP = 'deepep',
  /**
   * DeepEP's high-throughput kernels, for prefill pools: they turn CUDA graphs off, which slows decoding (vLLM
   * `deepep_high_throughput`, SGLang `deepep`
   * normal).
   */
  DEEPEP_HIGH_THROUGHPUT = 'deepep-high-throughput',
  /**
   * DeepEP's low-latency kernels, for decode pools (vLLM `deepep_low_latency`; on SGLang use DEEPEP, whose decode
   * batches take them).
   */
  DEEPEP_LOW_LATENCY = 'deepep-low-latency',
}

/** How clients reach the data-parallel ranks of a replica. */
export enum RankEndpoints {
  /**
   * One API port per replica: the engine's own front end balances requests over its ranks (vLLM's internal load
   * balancing, SGLang's DP attention).
   */
  SHARED = 'shared',
  /**
   * One API port per rank (vLLM `--data-parallel-multi-port-external-lb`, on `port`, `port + 1`, ...): each rank is an
   * endpoint of the InferencePool (`targetPorts`), so the Endpoint Picker chooses the rank by its own queue and KV
   * cache, not only the pod. Needs an `InferenceGateway` routing to the service and `serviceMonitor` (every rank's
   * metrics on its own port). With `nodes` > 1 every pod of the group serves its own ranks (the workers too are
   * endpoints, probed, scraped and drained as the leader is).
   */
  PER_RANK = 'per-rank',
}

/** Options of wide expert parallelism. */
export interface ExpertParallelOptions {
  /**
   * Tensor-parallel ranks of each attention data-parallel rank (vLLM `--tensor-parallel-size`); the pod's GPUs hold
   * gpusPerReplica / tensorParallel data-parallel ranks. SGLang's DP attention splits its world into as many
   * data-parallel ranks as it has GPUs divided by this.
   * @default 1 - every GPU its own attention rank, as llm-d's wide-EP guide runs DeepSeek-R1
   */
  readonly tensorParallel?: number;
  /**
   * The all-to-all kernels of the MoE layers. DeepEP across nodes needs all-to-all RDMA (`rdma`): rail-only fabrics
   * fail (llm-d's wide-EP guide).
   * @default All2AllBackend.PORTABLE - the engine's default, which runs on any network
   */
  readonly all2all?: All2AllBackend;
  /**
   * Expert-parallel load balancing: experts move between ranks as the load shifts (vLLM `--enable-eplb`, SGLang
   * `--enable-eplb`).
   * @default false
   */
  readonly loadBalancing?: boolean;
  /**
   * Redundant copies of hot experts with `loadBalancing` (vLLM `eplb_config.num_redundant_experts`, SGLang
   * `--ep-num-redundant-experts`).
   * @default 0
   */
  readonly redundantExperts?: number;
  /**
   * How clients reach the replica's data-parallel ranks.
   * @default RankEndpoints.SHARED - one API port per replica, which a plain Service can balance; PER_RANK needs the
   * Endpoint Picker to spread requests over the ranks
   */
  readonly endpoints?: RankEndpoints;
}

/**
 * Wide expert parallelism for mixture-of-experts models: attention in data parallel (each rank its own batch and
 * KV cache), experts spread over every GPU of the replica, tokens moved between them by all-to-all kernels. See
 * docs/serving.md.
 */
export class ExpertParallel {
  /** Data-parallel attention and expert-parallel MoE over every GPU of a replica (its pod, or its group). */
  static wide(options: ExpertParallelOptions = {}): ExpertParallel {
    return new ExpertParallel(options);
  }

  private constructor(
    /** The options. */
    readonly options: ExpertParallelOptions,
  ) {}
}

/** What the engine is given to lay a replica out. */
export interface ExpertParallelLayout {
  /** GPUs per pod. */
  readonly gpus: number;
  /** Pods per replica. */
  readonly nodes: number;
  /** Tensor-parallel ranks per attention rank. */
  readonly tensorParallel: number;
  readonly all2all: All2AllBackend;
  readonly loadBalancing: boolean;
  readonly redundantExperts: number;
  readonly endpoints: RankEndpoints;
}

/** An engine's API server per data-parallel rank, under a supervisor that reports for all of them. */
export interface PerRankEndpointFacts {
  /** The supervisor's port: its `/health` answers 200 once every rank's server is healthy, 503 while stopping. */
  readonly supervisorPort: number;
  /** Ports the engine's processes bind inside the pod besides the API ports, which the ranks' ports must miss. */
  readonly reservedPorts: readonly number[];
  /** Whether the engine binds ports the kernel picked from its ephemeral range, which the ranks' ports must miss. */
  readonly ephemeralPortsBound: boolean;
  /** Variables `env` must not set in this mode, and why. */
  readonly refusedEnv: Readonly<Record<string, string>>;
  /** Flags `extraArgs` must not set in this mode, and why. */
  readonly refusedFlags: Readonly<Record<string, string>>;
  /** How a group's pods join when the ranks span nodes, every pod serving its own ranks; absent where they cannot. */
  readonly groupLaunch?: MultiNodeLaunch;
  readonly source: string;
}

/** How an engine runs wide expert parallelism. */
export interface ExpertParallelFacts {
  /** The engine's flags for the layout, and the tensor-parallel size it starts with; or why it cannot. */
  args(l: ExpertParallelLayout): { args: string[]; tensorParallel: number } | string;
  /** Flags `extraArgs` must not set with expertParallel. */
  readonly ownedFlags: readonly string[];
  /**
   * How a group's pods join when the ranks span nodes, where it differs from the engine's own multi-node launch (vLLM:
   * data-parallel engines on every pod behind the leader's API servers, rather than pipeline stages).
   */
  readonly groupLaunch?: MultiNodeLaunch;
  /** One API server per rank (RankEndpoints.PER_RANK), or why the engine cannot. */
  readonly perRank: PerRankEndpointFacts | string;
  readonly source: string;
}

/** A resolved layout, with the engine's flags. */
export interface ResolvedExpertParallel extends ExpertParallelLayout {
  readonly args: string[];
  /** The engine's tensor-parallel size (`--tensor-parallel-size` / `--tp-size`). */
  readonly engineTensorParallel: number;
  readonly ownedFlags: readonly string[];
  /** The group launch to use instead of the engine's, across nodes. */
  readonly groupLaunch?: MultiNodeLaunch;
  /** With RankEndpoints.PER_RANK: the pod's ranks (its API ports count from `port`), and the supervisor's facts. */
  readonly perRank?: PerRankEndpointFacts & { readonly ranks: number };
}

/** InferencePool `targetPorts` holds at most 8 ports (GIE v1.6.0 CRD, `maxItems: 8`). */
export const MAX_POOL_TARGET_PORTS = 8;

const KEYS: ReadonlyArray<keyof ExpertParallelOptions> = [
  'tensorParallel',
  'all2all',
  'loadBalancing',
  'redundantExperts',
  'endpoints',
];

/**
 * DeepEP's internode kernels reach every GPU of the replica over RDMA (NVSHMEM): llm-d's wide-EP guide
 * (guides/wide-ep-lws/README.md): "The DeepEP backend used in WideEP requires All-to-All RDMA connectivity".
 */
const DEEPEP_NEEDS_RDMA =
  "DeepEP's internode kernels need all-to-all RDMA between the group's GPUs (NVSHMEM; llm-d's wide-EP guide: rail-only fabrics fail), so set rdma, or use All2AllBackend.PORTABLE";

/** `expertParallel`, checked against the engine and the replica's layout. */
export function resolveExpertParallel(
  v: Validator,
  given: ExpertParallel | undefined,
  o: { facts: ExpertParallelFacts | string; gpus: number; nodes: number; rdma: boolean },
): ResolvedExpertParallel | undefined {
  if (given === undefined) return undefined;
  if (!(given instanceof ExpertParallel)) v.fail('expertParallel', 'must be made with ExpertParallel.wide()', given);
  if (typeof o.facts === 'string') v.fail('expertParallel', o.facts, 'wide');
  v.knownProps('expertParallel', given.options, KEYS);
  const g = given.options;
  const tensorParallel = v.wholeNumber('expertParallel.tensorParallel', g.tensorParallel ?? 1, 1);
  if (o.gpus % tensorParallel !== 0)
    v.fail(
      'expertParallel.tensorParallel',
      `must divide gpusPerReplica (${o.gpus}): a pod holds whole data-parallel ranks`,
      tensorParallel,
    );
  if (o.gpus * o.nodes === tensorParallel)
    v.fail(
      'expertParallel.tensorParallel',
      `must leave at least two data-parallel ranks (gpusPerReplica x nodes is ${o.gpus * o.nodes}): with one, the experts are spread by tensor parallel alone`,
      tensorParallel,
    );
  const all2all = g.all2all ?? All2AllBackend.PORTABLE;
  if (!Object.values(All2AllBackend).includes(all2all))
    v.fail('expertParallel.all2all', `must be one of ${Object.values(All2AllBackend).join(', ')}`, all2all);
  if (all2all !== All2AllBackend.PORTABLE && o.nodes > 1 && !o.rdma)
    v.fail('expertParallel.all2all', `needs rdma with nodes > 1: ${DEEPEP_NEEDS_RDMA}`, all2all);
  const loadBalancing = v.boolean('expertParallel.loadBalancing', g.loadBalancing, false);
  const redundantExperts = v.wholeNumber('expertParallel.redundantExperts', g.redundantExperts ?? 0, 0);
  if (redundantExperts > 0 && !loadBalancing)
    v.fail(
      'expertParallel.redundantExperts',
      'needs loadBalancing: redundant experts are placed by the load balancer (vLLM 0.31.0 config/parallel.py: "num_redundant_experts is set ... but EPLB is not enabled")',
      redundantExperts,
    );
  const endpoints = g.endpoints ?? RankEndpoints.SHARED;
  if (!Object.values(RankEndpoints).includes(endpoints))
    v.fail('expertParallel.endpoints', `must be one of ${Object.values(RankEndpoints).join(', ')}`, endpoints);
  let perRank: ResolvedExpertParallel['perRank'];
  if (endpoints === RankEndpoints.PER_RANK) {
    if (typeof o.facts.perRank === 'string') v.fail('expertParallel.endpoints', o.facts.perRank, endpoints);
    if (o.nodes > 1 && o.facts.perRank.groupLaunch === undefined)
      v.fail(
        'expertParallel.endpoints',
        "must be RankEndpoints.SHARED with nodes > 1: this engine's per-rank servers do not span a group's pods",
        endpoints,
      );
    const local = o.gpus / tensorParallel;
    if (local > MAX_POOL_TARGET_PORTS)
      v.fail(
        'expertParallel.endpoints',
        `must be RankEndpoints.SHARED with more than ${MAX_POOL_TARGET_PORTS} data-parallel ranks in a pod (gpusPerReplica / tensorParallel is ${local}): an InferencePool's targetPorts holds at most ${MAX_POOL_TARGET_PORTS} (GIE v1.6.0 CRD)`,
        endpoints,
      );
    perRank = { ...o.facts.perRank, ranks: local };
  }
  const layout = { gpus: o.gpus, nodes: o.nodes, tensorParallel, all2all, loadBalancing, redundantExperts, endpoints };
  const made = o.facts.args(layout);
  if (typeof made === 'string') v.fail('expertParallel', made, 'wide');
  // Across nodes, the ranks' own launch: every pod serving its ranks with PER_RANK, else the engine's.
  const groupLaunch = o.nodes > 1 ? (perRank ? perRank.groupLaunch : o.facts.groupLaunch) : undefined;
  return {
    ...layout,
    args: made.args,
    engineTensorParallel: made.tensorParallel,
    ownedFlags: o.facts.ownedFlags,
    ...(perRank ? { perRank } : {}),
    ...(groupLaunch ? { groupLaunch } : {}),
  };
}
