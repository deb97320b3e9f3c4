import { CUDA12_DRIVER_MAJOR, CUDA13_DRIVER_MAJOR } from '../driver-floor';
import { flagValue } from '../serving-inputs';
import { DO_NOT_TRACK, hubDownload, Launch, LaunchOptions, ServingEngine } from '../engine';
import type { TransferFacts } from '../disaggregation';
import { All2AllBackend } from '../expert-parallel';

/**
 * SGLang's server (`python3 -m sglang.launch_server`). Facts from the SGLang sources:
 * python/sglang/srt/server_args.py, entrypoints/http_server.py, docker/Dockerfile.
 */

/**
 * The default image: a pinned release. The image has no ENTRYPOINT and no USER: it is built and
 * run as root (docker/Dockerfile installs SGLang editable under /sgl-workspace as root).
 */
export const SGLANG_DEFAULT_IMAGE = 'lmsysorg/sglang:v0.5.20';
/** server_args.py: `port: int = 30000`. */
export const SGLANG_PORT = 30000;
/** The rendezvous port on the leader of a multi-node group (the LWS example's `--dist-init-addr ...:20000`). */
export const SGLANG_DIST_INIT_PORT = 20000;
/**
 * SGLang's OpenAI API selects a LoRA adapter by `model: "<base>:<adapter>"` (openai/serving_base.py
 * `_resolve_lora_path`, since sgl-project/sglang#11570): a name without it is served by the base model.
 */
export const SGLANG_ADAPTER_SEPARATOR = ':';
/** arg_groups/fields/disagg.py: "Bootstrap server port on the prefill server. Default is 8998." */
export const SGLANG_BOOTSTRAP_PORT = 8998;

/**
 * One SGLang transfer backend: the mode and backend flags, the prefill server's bootstrap port, and the sidecar's
 * `SGLANG_BOOTSTRAP_PORT` (connector_sglang.go reads it, 8998 by default). Mooncake and NIXL both exchange blocks
 * between different tensor-parallel sizes (mooncake/conn.py: "generic M-to-N TP size configurations").
 */
function sglangTransfer(backend: 'nixl' | 'mooncake'): TransferFacts {
  return {
    args: role => [
      '--disaggregation-mode',
      role,
      '--disaggregation-transfer-backend',
      backend,
      '--disaggregation-bootstrap-port',
      String(SGLANG_BOOTSTRAP_PORT),
    ],
    env: [],
    ports: [{ name: 'bootstrap', port: SGLANG_BOOTSTRAP_PORT, role: 'prefill' }],
    sidecarConnector: 'sglang',
    // disaggregation/decode.py reads the request's bootstrap_host, which only the sidecar's paired request carries.
    decodeNeedsPrefill:
      "SGLang's decode server serves only requests paired with a prefill server (0.5.20 disaggregation/decode.py reads the request's bootstrap_host)",
    sidecarEnv: [{ name: 'SGLANG_BOOTSTRAP_PORT', value: String(SGLANG_BOOTSTRAP_PORT) }],
    tensorParallel: () => undefined,
  };
}

export const SGLANG: ServingEngine = {
  construct: 'SglangInferenceService',
  pickerEngine: 'sglang',
  containerName: 'sglang',
  defaultImage: SGLANG_DEFAULT_IMAGE,
  port: SGLANG_PORT,
  home: '/home/sglang',
  // http_server.py: /health returns 503 while the server starts and once SIGTERM has set
  // `gracefully_exit`; the drain then waits for in-flight requests with no timeout of its own,
  // so the pod's grace period bounds it.
  healthPath: '/health',
  // Only with --enable-metrics, on the API port: `sglang:num_queue_reqs`, `sglang:num_running_reqs`, ...
  metricsPath: '/metrics',
  queueMetric: 'sglang:num_queue_reqs',
  // managers/tp_worker.py: with --max-running-requests unset, the limit is min(max_total_num_tokens // 2,
  // the request pool, the attention backend's), known only once the KV cache is sized on the GPU.
  batchLimit: {
    prop: 'maxRunningRequests',
    why: 'SGLang derives --max-running-requests at start from the KV cache it allocates (python/sglang/srt/managers/tp_worker.py: max_total_num_tokens // 2, capped by the request pool)',
  },
  // python/sglang/srt/metrics/collector.py and docs/references/production_metrics.md: the token
  // (KV pool) usage gauge, and the TTFT and queue-time histograms. SGLang counts aborted requests
  // (`sglang:num_aborted_requests_total`, client disconnects included) but no server-side errors:
  // no error alert.
  metrics: {
    running: 'sglang:num_running_reqs',
    kvCacheUsage: 'sglang:token_usage',
    timeToFirstToken: 'sglang:time_to_first_token_seconds',
    queueTime: 'sglang:queue_time_seconds',
  },
  runAsRoot: true,
  imageFacts: [
    {
      repository: 'docker.io/lmsysorg/sglang',
      rootOnlyFrom: [0, 0, 0],
      why: 'the image is built and run as root (docker/Dockerfile: SGLang installed editable under /sgl-workspace, no USER), and its JIT kernel builds write where a non-root user cannot',
    },
  ],
  // v0.5.11 release notes ("Default CUDA version moves to 13.0 across SGLang, sgl-kernel, and Docker
  // images", quoted in gpustack/gpustack#5285); `-cu12x` tags are CUDA 12 builds.
  driverFacts: [
    {
      repository: 'docker.io/lmsysorg/sglang',
      tagPattern: /-cu12\d*$/,
      driverMajor: CUDA12_DRIVER_MAJOR,
      why: 'a -cu12x tag is built on CUDA 12',
    },
    {
      repository: 'docker.io/lmsysorg/sglang',
      from: [0, 5, 11],
      driverMajor: CUDA13_DRIVER_MAJOR,
      why: 'SGLang images are CUDA 13.0 by default from v0.5.11',
    },
    {
      repository: 'docker.io/lmsysorg/sglang',
      driverMajor: CUDA12_DRIVER_MAJOR,
      why: 'SGLang images before v0.5.11 are CUDA 12',
    },
  ],
  // The server and its scheduler processes run as python3 (command below).
  processAliases: { python3: 'sglang', python: 'sglang' },
  // The LWS example for SGLang (kubernetes-sigs/lws docs/examples/sglang/lws.yaml, v0.10.0): every pod
  // runs launch_server with `--tp <GPUs of the group> --dist-init-addr $(LWS_LEADER_ADDRESS):20000
  // --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)`. Ranks 1.. run schedulers only and
  // answer /health from a stub server that is always 200 (entrypoints/engine.py,
  // launch_dummy_health_check_server): only the leader's health means anything.
  multiNode: {
    tensorParallelAcrossNodes: true,
    groupArgs: g => [
      '--nnodes',
      String(g.nodes),
      '--node-rank',
      g.rank,
      '--dist-init-addr',
      `${g.leaderAddress}:${SGLANG_DIST_INIT_PORT}`,
    ],
    workerArgs: () => [],
    rendezvousPort: SGLANG_DIST_INIT_PORT,
    groupOwnedFlags: [],
    source:
      'kubernetes-sigs/lws docs/examples/sglang/lws.yaml; SGLang server_args.py (--nnodes, --node-rank, --dist-init-addr)',
  },
  // python/sglang/srt/layers/linear.py QKVParallelLinear (vLLM's): the query heads are divided over the
  // tensor-parallel ranks (divide() asserts it), and the KV heads too, or replicated on tp / kv ranks
  // when tp >= kv.
  headSharding: {
    replicatesKvHeads: true,
    why: 'SGLang shards the heads across tensor-parallel ranks, replicating KV heads when the ranks outnumber them',
  },
  // Tensor-parallel ranks exchange through NCCL and shared-memory queues.
  shmGibPerGpu: 2,
  // server_args.py (0.5.20) `--hicache-size`: "The size of host KV cache memory pool in gigabytes. Overrides
  // --hicache-ratio"; an int of decimal GB (mem_cache/pool_host/base.py: `int(host_size * 1e9 // size_per_token)`)
  // for each tensor-parallel rank, each of which builds its own pool (hiradix_cache.py), pinned with
  // cudaHostRegister (pool_host/common.py). SGLang checks it against the node's free memory, not the pod's limit.
  kvOffload: {
    flags: (bytes, ranks) => {
      const perRank = Math.floor(bytes / ranks / 1e9);
      if (perRank < 1)
        return `must give each tensor-parallel rank at least 1 GB (10^9 bytes): SGLang's --hicache-size is whole GB per rank (${ranks} ranks)`;
      return {
        args: ['--enable-hierarchical-cache', '--hicache-size', String(perRank)],
        bytes: perRank * 1e9 * ranks,
      };
    },
    inSharedMemory: false,
    source: 'SGLang 0.5.20 server_args.py --hicache-size, mem_cache/pool_host/base.py',
    // server_args.py: LMCache as SGLang's host cache, and HiCache's storage tier and host-memory mode, allocate
    // memory or disk the construct does not size.
    refuseExtraArgs: args => {
      const flag = ['--enable-lmcache', '--hicache-storage-backend', '--hicache-host-memory-mode'].find(
        f => flagValue(args, f) !== undefined,
      );
      return flag
        ? `must not set ${flag}: a host cache or storage tier the pod is not sized for (kvCacheOffload offers the host-memory tier only)`
        : undefined;
    },
    lmcache:
      "needs vLLM: SGLang's LMCache integration (--enable-lmcache) is not modelled here; KvCacheOffload.cpu() gives SGLang its hierarchical cache",
  },
  // SGLang 0.5.20 arg_groups/fields/disagg.py: --disaggregation-mode prefill|decode, --disaggregation-transfer-backend
  // (mooncake by default), --disaggregation-bootstrap-port (8998) where the prefill server's bootstrap registry
  // listens (managers/disagg_service.py starts it on prefill only). llm-d-router's sidecar (`--kv-connector=sglang`,
  // connector_sglang.go) adds bootstrap_host, bootstrap_port and a room to the request and sends it to the prefill pod
  // and the decode engine at once. The transfer's own sockets bind random ports (disaggregation/common/conn.py).
  disaggregation: {
    transfers: {
      nixl: sglangTransfer('nixl'),
      mooncake: {
        ...sglangTransfer('mooncake'),
        needsRdma:
          "SGLang's Mooncake transfer engine moves blocks over RDMA (MOONCAKE_PROTOCOL defaults to rdma, srt/environ.py and distributed/device_communicators/mooncake_transfer_engine.py), which a pod without an RDMA device cannot open; without RDMA use Disaggregation.nixl(), which falls back to TCP",
      },
    },
    ownedFlags: [],
    source: 'SGLang 0.5.20 arg_groups/fields/disagg.py, managers/disagg_service.py',
  },
  kvEvents:
    "needs vLLM: the picker's token producer renders prompts through vLLM's /render endpoints, and its subscriber parses SGLang's events only with an engine type the library does not set up (llm-d-router v0.10.0)",
  // SGLang 0.5.20 arg_groups/fields/parallel.py and exec_.py: --enable-dp-attention ("data parallelism for attention
  // and tensor parallelism for FFN") with --dp-size dividing --tp-size, the world across nodes (parallel_hook.py:
  // `assert cfg.tp_size % cfg.dp_size == 0`); --moe-a2a-backend deepep sets ep_size to tp_size (overrides.py), with
  // --deepep-mode auto or normal; without one, --ep-size spreads the experts; --enable-eplb asserts ep_size > 1
  // (parallel_hook.py) and picks the dispatch that holds for the backend.
  expertParallel: {
    args: l => {
      // layers/moe/utils.py: a mode other than auto holds for prefill batches too, and the low-latency buffer takes
      // at most SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK (128, environ.py) tokens a rank, below a prefill chunk.
      if (l.all2all === All2AllBackend.DEEPEP_LOW_LATENCY)
        return "must be All2AllBackend.DEEPEP on SGLang rather than DEEPEP_LOW_LATENCY: --deepep-mode low_latency holds for prefill batches too, and its buffer takes at most 128 tokens a rank (SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK, 0.5.20 environ.py), below SGLang's prefill chunk; DEEPEP's auto mode uses it for decode batches only";
      const world = l.gpus * l.nodes;
      return {
        args: [
          '--enable-dp-attention',
          '--dp-size',
          String(world / l.tensorParallel),
          // Without an all-to-all backend the experts still spread over every rank with --ep-size (each rank runs the
          // MoE over all tokens and the partial outputs are summed; parallel_hook.py); DeepEP sets ep_size itself.
          ...(l.all2all === All2AllBackend.PORTABLE
            ? ['--ep-size', String(world)]
            : [
                '--moe-a2a-backend',
                'deepep',
                '--deepep-mode',
                l.all2all === All2AllBackend.DEEPEP ? 'auto' : 'normal',
              ]),
          ...(l.loadBalancing
            ? [
                '--enable-eplb',
                ...(l.redundantExperts > 0 ? ['--ep-num-redundant-experts', String(l.redundantExperts)] : []),
              ]
            : []),
        ],
        tensorParallel: world,
      };
    },
    perRank:
      'must be RankEndpoints.SHARED on SGLang: its DP attention serves every rank behind one API server, whose data-parallel controller balances them (SGLang 0.5.20 has no server per rank)',
    ownedFlags: [
      '--enable-dp-attention',
      '--moe-a2a-backend',
      '--deepep-mode',
      '--enable-eplb',
      '--ep-num-redundant-experts',
      '--ep-size',
      '--expert-parallel-size',
      '--ep',
    ],
    source: 'SGLang 0.5.20 arg_groups/fields/parallel.py, exec_.py, parallel_hook.py',
  },
  ownedFlags: {
    '--model-path': 'modelId',
    '--model': 'modelId',
    '--revision': 'revision',
    '--tp-size': 'gpusPerReplica',
    '--tensor-parallel-size': 'gpusPerReplica',
    '--tp': 'gpusPerReplica',
    '--host': 'ipFamily',
    '--port': '',
    '--enable-metrics': '',
    '--quantization': 'quantization',
    '--context-length': 'contextLength',
    '--served-model-name': 'servedModelName',
    '--download-dir': 'modelCache',
    '--max-running-requests': 'maxRunningRequests',
    '--mem-fraction-static': 'memFractionStatic',
    '--lora-paths': 'loraAdapters',
    '--max-loras-per-batch': 'maxLorasPerBatch',
    '--max-lora-rank': 'maxLoraRank',
    // kvCacheOffload sizes the pod's memory for the host pool these flags make (--hicache-ratio sizes it from the
    // GPU pool, known only at run time).
    '--enable-hierarchical-cache': 'kvCacheOffload',
    '--hicache-size': 'kvCacheOffload',
    '--hicache-ratio': 'kvCacheOffload',
    '--disaggregation-mode': 'disaggregation',
    '--disaggregation-transfer-backend': 'disaggregation',
    '--disaggregation-bootstrap-port': 'disaggregation',
  },
  contradictingFlags: {
    // Pipeline parallel ranks multiply the GPUs a replica's engine needs (server_args.py --pp-size).
    '--pp-size':
      'multiplies the GPUs the engine needs beyond gpusPerReplica, which is all the pod has (run more replicas, or raise gpusPerReplica)',
    // server_args.py: --dp-size runs that many engine copies, each of tp-size GPUs.
    ...Object.fromEntries(
      ['--dp-size', '--dp', '--data-parallel-size'].map(f => [
        f,
        'multiplies the GPUs the engine needs beyond gpusPerReplica, which is all the pod has (run more replicas instead)',
      ]),
    ),
    // server_args.py: --nnodes/--node-rank/--dist-init-addr spread one engine over several nodes; the
    // construct sets them with nodes > 1 (multiNode below).
    ...Object.fromEntries(
      ['--nnodes', '--node-rank', '--dist-init-addr'].map(f => [
        f,
        'spreads the engine across nodes, which the construct does from nodes (a LeaderWorkerSet group per replica); set nodes, or run more replicas',
      ]),
    ),
  },
  // SGLang takes a GGUF model as a local file path (server_args.py: a `.gguf` model path), not `repo:QUANT`.
  offlinePathEnv: {},
  ggufModelForm: false,
  // server_args.py --load-format: `auto` as vLLM's (safetensors, else bin/pt); `dummy` loads none.
  loadFormat: { flag: '--load-format', served: ['auto', 'safetensors', 'dummy'] },
  // server_args.py: `--expert-parallel-size`/`--ep-size`; distributed/parallel_state.py
  // initialize_model_parallel: moe_tp_size = tensor_model_parallel_size // moe_ep_size, the expert
  // groups taken within the tensor-parallel ranks (ep_size is not a factor of the world size).
  tensorParallelDivisors: {
    flags: ['--expert-parallel-size', '--ep-size'],
    why: 'SGLang places the experts within the tensor-parallel ranks, in groups of this size (distributed/parallel_state.py)',
  },
  // --lora-paths is the loraAdapters prop's (ownedFlags), which downloads hub adapters into the cache.
  offlinePathFlags: {
    '--tokenizer-path': 'a tokenizer',
    '--speculative-draft-model-path': 'a draft model',
  },
  // server_args.py builds a plain argparse.ArgumentParser (allow_abbrev on).
  argsWordSplit: false,
  abbreviatedFlags: true,
  // srt/server_args.py: `--api-key` (type str) with no variable; srt/utils.py add_api_key_middleware
  // exempts /health and /metrics. `--trust-remote-code` is a store_true flag.
  trust: { apiKeyFlag: '--api-key', trustRemoteCodeFlag: '--trust-remote-code' },
  cacheEnv: path => [{ name: 'HF_HOME', value: path }],
  extraEnv: () => [],
  launch(o: LaunchOptions): Launch {
    return {
      command: ['python3', '-m', 'sglang.launch_server'],
      args: [
        '--model-path',
        o.modelId,
        ...(o.revision !== undefined ? ['--revision', o.revision] : []),
        '--tp-size',
        String(o.gpus),
        // server_args.py: host defaults to 127.0.0.1, which no probe or Service can reach.
        '--host',
        o.host,
        '--port',
        String(o.port),
        '--enable-metrics',
        ...o.tuning.args,
      ],
      // SGLang sends no usage statistics of its own; DO_NOT_TRACK covers libraries that honour it.
      env: [...o.tuning.env, ...(o.usageStats ? [] : [DO_NOT_TRACK])],
    };
  },
  download: hubDownload('sglang'),
};
