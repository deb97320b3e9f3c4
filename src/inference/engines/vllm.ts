import { CUDA12_DRIVER_MAJOR, CUDA13_DRIVER_MAJOR } from '../driver-floor';
import { gibFlagValue } from '../kv-cache-offload';
import { flagValue } from '../serving-inputs';
import { All2AllBackend, RankEndpoints } from '../expert-parallel';
import { DO_NOT_TRACK, GroupRendezvous, hubDownload, Launch, LaunchOptions, ServingEngine } from '../engine';

/**
 * vLLM's OpenAI-compatible server (`vllm serve`). Facts from the vLLM sources and docs:
 * docker/Dockerfile, vllm/entrypoints/openai (cli_args.py, api_server.py), docs/deployment/k8s.md.
 */

/**
 * The default image: a pinned release (tags `vMAJOR.MINOR.PATCH`). Its ENTRYPOINT is
 * `["vllm", "serve"]`. From vllm#40275 (merged 2026-05) the image ships a `vllm` user (UID 2000,
 * GID 0, home /home/vllm) while keeping USER root; the non-root image target
 * (`vllm-openai-nonroot`) is built from source, not published, so the published image is run
 * here with runAsUser 2000.
 */
export const VLLM_DEFAULT_IMAGE = 'vllm/vllm-openai:v0.31.0';
// utils/network_utils.py make_zmq_socket turns ZMQ_IPV6 on for an IPv6 literal only; without it libzmq resolves the
// leader's name to IPv4 addresses, which an IPv6 pod does not have.
const VLLM_DP_IPV6 =
  "its workers dial the leader's name over ZMQ, which vLLM opens for IPv4 unless given an IPv6 literal (vLLM 0.31.0 utils/network_utils.py make_zmq_socket), and a worker knows only the leader's name";
/** `vllm serve`'s default port. */
export const VLLM_PORT = 8000;
/** vllm/config/parallel.py ParallelConfig.master_port: the default rendezvous port of a multi-node group. */
export const VLLM_MASTER_PORT = 29501;
/**
 * What a group's `--headless` workers refuse, which the leader would take (vLLM 0.31.0 entrypoints/cli/serve.py): the
 * API server count, which headless mode sets to 0.
 */
const HEADLESS_REFUSES = Object.fromEntries(
  ['--api-server-count', '-asc'].map(f => [
    f,
    'the group\'s workers run --headless and exit on it ("--api-server-count ... cannot be used with --headless", vLLM 0.31.0 entrypoints/cli/serve.py), and extraArgs reach every pod of the group',
  ]),
);
/**
 * What both of vLLM's group launches share (pipeline stages, and data-parallel engines with expertParallel): tensor
 * parallel within a pod, `--headless` workers, and every GPU worker of the group in one world group at the leader's
 * store (distributed/parallel_state.py init_distributed_environment with --nnodes > 1), which it stays connected to.
 */
const HEADLESS_GROUP = {
  tensorParallelAcrossNodes: false,
  workerRefusedFlags: HEADLESS_REFUSES,
  rendezvousPort: VLLM_MASTER_PORT,
  groupOwnedFlags: ['--distributed-executor-backend'],
} as const;

/** The world group's rendezvous: the pod's node rank and the leader's store. */
function worldArgs(g: GroupRendezvous): string[] {
  return [
    '--nnodes',
    String(g.nodes),
    '--node-rank',
    g.rank,
    '--master-addr',
    g.leaderAddress,
    '--master-port',
    String(VLLM_MASTER_PORT),
  ];
}

/** entrypoints/launchers/cli_args.py FrontendArgs.data_parallel_supervisor_port: the per-rank servers' supervisor. */
const VLLM_DP_SUPERVISOR_PORT = 9256;
/** vllm/config/parallel.py ParallelConfig.data_parallel_rpc_port: where data-parallel engines on other pods join. */
export const VLLM_DP_RPC_PORT = 29550;
/**
 * Data-parallel ranks across a group (expertParallel): the world group at the leader's store, and the ranks' handshake
 * that the leader binds on its own address at --data-parallel-rpc-port and the workers dial by the leader's name.
 */
const DATA_PARALLEL_GROUP = {
  ...HEADLESS_GROUP,
  groupArgs: (g: GroupRendezvous) => [...worldArgs(g), '--data-parallel-rpc-port', String(VLLM_DP_RPC_PORT)],
  leaderArgs: (g: GroupRendezvous) => ['--data-parallel-address', g.podIp],
  leaderPorts: [VLLM_DP_RPC_PORT],
  ipv6: VLLM_DP_IPV6,
};
/** envs.py `VLLM_NIXL_SIDE_CHANNEL_PORT` default 5600, plus the data-parallel index (nixl/base_scheduler.py). */
export const VLLM_NIXL_SIDE_CHANNEL_PORT = 5600;
/** config/parallel.py `All2AllBackend`: the default (allgather_reducescatter) and DeepEP's two kernels. */
const VLLM_ALL2ALL: Readonly<Record<All2AllBackend, string>> = {
  [All2AllBackend.PORTABLE]: 'allgather_reducescatter',
  [All2AllBackend.DEEPEP]: '',
  [All2AllBackend.DEEPEP_HIGH_THROUGHPUT]: 'deepep_high_throughput',
  [All2AllBackend.DEEPEP_LOW_LATENCY]: 'deepep_low_latency',
};
/** The image's non-root user (vllm#40275: `vllm`, UID 2000, GID 0). */
export const VLLM_UID = 2000;

export const VLLM: ServingEngine = {
  construct: 'VllmInferenceService',
  pickerEngine: 'vllm',
  containerName: 'vllm',
  defaultImage: VLLM_DEFAULT_IMAGE,
  port: VLLM_PORT,
  home: '/home/vllm',
  // The API server starts listening only after the engine has loaded the model (the port is closed
  // while loading). On SIGTERM (v0.18+, vllm#34730 re-landed as #36666) the API server rejects new
  // requests at once and, with --shutdown-timeout N, waits up to N s for in-flight ones; the
  // default 0 aborts them. The preStop sleep takes the pod out of the endpoints before SIGTERM, so
  // routing does not depend on what /health answers during the drain.
  healthPath: '/health',
  // `vllm:*` Prometheus metrics on the API port.
  metricsPath: '/metrics',
  queueMetric: 'vllm:num_requests_waiting',
  // vllm/engine/arg_utils.py `get_batch_defaults`: max_num_seqs for the OpenAI server is 256, or 1024
  // on GPUs of at least 70 GiB other than A100; the lower one, so a large GPU scales early, not late.
  batchLimit: {
    prop: 'maxNumSeqs',
    default: 256,
    why: "vLLM's --max-num-seqs default for the API server (256; 1024 on GPUs of 70 GiB or more other than A100, vllm/engine/arg_utils.py)",
  },
  // vllm/v1/metrics/loggers.py (PrometheusStatLogger); `vllm:gpu_cache_usage_perc` is the v0 name,
  // gone from the v1 engine. Every finished request counts in `vllm:request_success_total` by
  // `finished_reason` (vllm/v1/engine/__init__.py: stop, length, abort, error, repetition); `error`
  // is a request-level internal error.
  metrics: {
    running: 'vllm:num_requests_running',
    kvCacheUsage: 'vllm:kv_cache_usage_perc',
    timeToFirstToken: 'vllm:time_to_first_token_seconds',
    queueTime: 'vllm:request_queue_time_seconds',
    requests: {
      total: { name: 'vllm:request_success_total' },
      failed: { name: 'vllm:request_success_total', matchers: 'finished_reason="error"' },
    },
  },
  runAsRoot: false,
  imageFacts: [
    {
      repository: 'docker.io/vllm/vllm-openai',
      minimum: [0, 18, 0],
      why: 'the construct sets --shutdown-timeout for the drain, which vLLM has from 0.18 (vllm#36666); older releases exit with "unrecognized arguments"',
    },
  ],
  // From v0.20 the default wheel and image are CUDA 13.0 (vllm#39878; vllm#42738: "After v0.20.0,
  // default wheel/docker ... version is cu130"); `-cu129` tags (e.g. v0.21.0-cu129) stay on CUDA 12.9.
  driverFacts: [
    {
      repository: 'docker.io/vllm/vllm-openai',
      tagPattern: /-cu12\d*$/,
      driverMajor: CUDA12_DRIVER_MAJOR,
      why: 'a -cu12x tag is built on CUDA 12',
    },
    {
      repository: 'docker.io/vllm/vllm-openai',
      from: [0, 20, 0],
      driverMajor: CUDA13_DRIVER_MAJOR,
      why: 'vLLM images are CUDA 13.0 by default from v0.20 (vllm#39878)',
    },
    {
      repository: 'docker.io/vllm/vllm-openai',
      driverMajor: CUDA12_DRIVER_MAJOR,
      why: 'vLLM images before v0.20 are CUDA 12',
    },
  ],
  // docs/serving/parallelism_scaling.md ("Running vLLM with MultiProcessing"): across 2 nodes of 8
  // GPUs, `--tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --node-rank <r>
  // --master-addr <head>`, and `--headless` on the other nodes (no API server). vllm/config/parallel.py
  // (ParallelConfig): nnodes, node_rank, master_addr and master_port (default 29501) are "for
  // multi-node distributed inference when distributed_executor_backend is mp"; from vllm#23691, so
  // in every release the image floor (0.18) admits. The executor is set to mp explicitly: the image
  // ships Ray, which vLLM would otherwise try for a world larger than the node.
  multiNode: {
    ...HEADLESS_GROUP,
    groupArgs: g => [
      '--pipeline-parallel-size',
      String(g.nodes),
      '--distributed-executor-backend',
      'mp',
      ...worldArgs(g),
    ],
    workerArgs: () => ['--headless'],
    source: 'vLLM docs/serving/parallelism_scaling.md (multiprocessing across nodes), vllm/config/parallel.py',
  },
  nonRootUid: VLLM_UID,
  // ModelConfig.verify_with_parallel_config (vllm/config): "Total number of attention heads
  // (...) must be divisible by tensor parallel size"; model_executor/layers/linear.py QKVParallelLinear:
  // with tp >= the KV heads, each KV head is replicated on tp / kv ranks (divide() asserts tp % kv == 0),
  // else each rank holds kv / tp of them (kv % tp == 0).
  headSharding: {
    replicatesKvHeads: true,
    why: 'vLLM shards the heads across tensor-parallel ranks, replicating KV heads when the ranks outnumber them',
  },
  // The vLLM docs run with `--ipc=host` or `--shm-size`; tensor-parallel workers share tensors and
  // NCCL buffers through /dev/shm.
  shmGibPerGpu: 2,
  // vllm/config/cache.py (0.31.0) `kv_offloading_size`: "Size of the KV cache offloading buffer in GiB. When TP > 1,
  // this is the total buffer size summed across all TP ranks"; `kv_offloading_backend` "native" by default (from
  // 0.14, vllm#32421; the flags came in 0.11.1). The tier is one file, /dev/shm/vllm_offload_<engine_id>.mmap
  // (v1/kv_offload/cpu/shared_offload_region.py), pre-faulted and pinned (cudaHostRegister); vLLM refuses to start
  // when /dev/shm cannot hold it (shm_broadcast.py check_shm_free_space: "Insufficient space in /dev/shm").
  kvOffload: {
    flags: bytes => ({ args: ['--kv-offloading-size', gibFlagValue(bytes)], bytes }),
    inSharedMemory: true,
    source: 'vLLM 0.31.0 vllm/config/cache.py kv_offloading_size, v1/kv_offload/cpu/shared_offload_region.py',
    // config/vllm.py _post_init_kv_transfer_config: with --kv-offloading-size, the offload connector replaces whatever
    // --kv-transfer-config names. Without it, an offload or LMCache connector there is a host tier nothing sizes.
    refuseExtraArgs: (args, withTier) => {
      const transfer = flagValue(args, '--kv-transfer-config');
      if (transfer === undefined) return undefined;
      if (withTier)
        return "must not set --kv-transfer-config with kvCacheOffload: the tier's connector takes it (vLLM replaces any other with the offload connector, config/vllm.py _post_init_kv_transfer_config)";
      if (/Offloading|LMCache/.test(transfer))
        return 'must not name an offload or LMCache connector in --kv-transfer-config: a host-memory tier the pod is not sized for (use kvCacheOffload: KvCacheOffload.cpu() or KvCacheOffload.lmcache())';
      return undefined;
    },
    // distributed/kv_transfer/kv_connector/v1/lmcache_connector.py: LMCacheConnectorV1 runs LMCache in each worker
    // (the `lmcache` package, imported when the connector is named; vLLM does not depend on it), kv_both to store and
    // load. `--kv-offloading-backend lmcache` is not it: from 0.31 that names LMCacheMPConnector, a client of a
    // separate LMCache server (config/vllm.py).
    lmcache: {
      args: ['--kv-transfer-config', JSON.stringify({ kv_connector: 'LMCacheConnectorV1', kv_role: 'kv_both' })],
      source: 'vLLM 0.31.0 distributed/kv_transfer/kv_connector/v1/lmcache_connector.py',
    },
  },
  // vLLM 0.31.0 distributed/kv_transfer/kv_connector/v1/nixl: NixlConnector is the pull connector (connector.py); the
  // prefill engine answers with its side channel's host and port, and the decode engine connects there (ZMQ REQ,
  // base_worker.py) and reads the blocks through UCX. The side channel binds VLLM_NIXL_SIDE_CHANNEL_HOST, `localhost`
  // by default (envs.py), which no other pod reaches: the pod's IP. kv_both is deprecated for NIXL (connector.py:
  // "set kv_role='kv_producer' for prefill instances and kv_role='kv_consumer' for decode instances").
  disaggregation: {
    transfers: {
      nixl: {
        args: role => [
          '--kv-transfer-config',
          JSON.stringify({
            kv_connector: 'NixlConnector',
            kv_role: role === 'prefill' ? 'kv_producer' : 'kv_consumer',
          }),
        ],
        env: [
          { name: 'VLLM_NIXL_SIDE_CHANNEL_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'VLLM_NIXL_SIDE_CHANNEL_PORT', value: String(VLLM_NIXL_SIDE_CHANNEL_PORT) },
          // The routing sidecar keeps idle connections to the engines 90 s (proxy.go `IdleConnTimeout`); vLLM closes
          // them after 5 s (envs.py VLLM_HTTP_TIMEOUT_KEEP_ALIVE), and a request sent on a closing one fails. The
          // engine outlasts the sidecar, as llm-d's guide sets it.
          { name: 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE', value: '120' },
        ],
        ports: [{ name: 'nixl', port: VLLM_NIXL_SIDE_CHANNEL_PORT }],
        sidecarConnector: 'nixlv2',
        // A group runs pipeline parallel across its nodes (multiNode below), and the consumer refuses it.
        decodeGroups:
          'NixlConnector refuses a decode engine with pipeline_parallel_size > 1, which a group runs across its nodes (vLLM 0.31.0 nixl/base_worker.py: "consumer (decode) does not support pipeline_parallel_size > 1")',
        sidecarEnv: [],
        // kv_connector/utils.py tp_ratio: "Local tensor parallel size {..} is not divisible by remote tensor parallel
        // size {..}" and the reverse: the larger size must be a multiple of the smaller.
        tensorParallel: (prefill, decode) =>
          Math.max(prefill, decode) % Math.min(prefill, decode) === 0
            ? undefined
            : `the larger tensor-parallel size must be a multiple of the smaller: vLLM's NIXL connector maps ranks in whole groups (vLLM 0.31.0 distributed/kv_transfer/kv_connector/utils.py tp_ratio)`,
      },
    },
    ownedFlags: ['--kv-transfer-config'],
    source: 'vLLM 0.31.0 distributed/kv_transfer/kv_connector/v1/nixl, envs.py',
  },
  // vLLM 0.31.0 config/kv_events.py and distributed/kv_events.py: a ZMQ PUB socket that binds when the endpoint has `*`
  // (`tcp://*:<port>`; `0.0.0.0` would connect), sending the topic as given; BlockStored events carry the blocks'
  // token ids. entrypoints/scale_out: --enable-scale-out registers /v1/completions/render and
  // /v1/chat/completions/render on `vllm serve`, which the picker's token producer calls.
  kvEvents: {
    args: o => [
      '--kv-events-config',
      `${JSON.stringify({
        enable_kv_cache_events: true,
        publisher: 'zmq',
        endpoint: `tcp://*:${o.port}`,
        topic: `kv@$(${o.podIpVariable})@${o.model}`,
      })}`,
      '--enable-scale-out',
    ],
    source: 'vLLM 0.31.0 config/kv_events.py, distributed/kv_events.py, entrypoints/scale_out',
  },
  // vLLM 0.31.0 engine/arg_utils.py and config/parallel.py: --data-parallel-size ranks of --tensor-parallel-size GPUs
  // each (one engine core per rank, the API servers balancing between them), --enable-expert-parallel spreads the
  // experts over tensor x data parallel ranks ("MoE layers will be sharded according to the product of the tensor,
  // prefill-context, and data parallel sizes"), --all2all-backend (the VLLM_ALL2ALL_BACKEND variable is gone),
  // --enable-eplb with --eplb-config's num_redundant_experts.
  expertParallel: {
    args: l => {
      if (l.all2all === All2AllBackend.DEEPEP)
        return "must name DeepEP's kernels on vLLM (All2AllBackend.DEEPEP_LOW_LATENCY for decode, DEEPEP_HIGH_THROUGHPUT for prefill): its --all2all-backend has no mode that picks them per batch (vLLM 0.31.0 config/parallel.py All2AllBackend)";
      return {
        args: [
          '--data-parallel-size',
          String((l.gpus * l.nodes) / l.tensorParallel),
          ...(l.endpoints === RankEndpoints.PER_RANK
            ? [
                '--data-parallel-size-local',
                String(l.gpus / l.tensorParallel),
                '--data-parallel-multi-port-external-lb',
                '--data-parallel-supervisor-port',
                String(VLLM_DP_SUPERVISOR_PORT),
              ]
            : []),
          '--enable-expert-parallel',
          '--all2all-backend',
          VLLM_ALL2ALL[l.all2all],
          ...(l.loadBalancing
            ? [
                '--enable-eplb',
                ...(l.redundantExperts > 0
                  ? ['--eplb-config', JSON.stringify({ num_redundant_experts: l.redundantExperts })]
                  : []),
              ]
            : []),
        ],
        tensorParallel: l.tensorParallel,
      };
    },
    ownedFlags: [
      '--enable-expert-parallel',
      '-ep',
      '--all2all-backend',
      '--enable-eplb',
      '--eplb-config',
      '--data-parallel-supervisor-port',
    ],
    // entrypoints/launchers/dp_supervisor.py: the supervisor starts one API server per local rank on --port + its
    // index (each its own engine, --data-parallel-rank start + index, external load balancing), and serves /health
    // (200 once every child's /health answered 200, 503 from SIGTERM on, which it forwards to the children) on
    // --data-parallel-supervisor-port. The first rank's child binds the ranks' handshake at 127.0.0.1:29550
    // (v1/engine/utils.py, not local-only with one rank a process); every other port the children use (the DP group's
    // master ports, the coordinator's, the executor's) is one the kernel picked from its ephemeral range
    // (config/parallel.py get_open_ports_list, v1/engine/coordinator.py), bound later, so a rank's port there could be
    // taken by a sibling before its server binds it.
    perRank: {
      supervisorPort: VLLM_DP_SUPERVISOR_PORT,
      reservedPorts: [VLLM_DP_RPC_PORT],
      ephemeralPortsBound: true,
      // Each child's /metrics reports its own engine (`engine` label), unless a multiprocess registry is shared
      // (v1/metrics/prometheus.py get_prometheus_registry): then every port reports every rank, scraped R times.
      refusedEnv: {
        PROMETHEUS_MULTIPROC_DIR:
          "makes every rank's /metrics report every rank (vLLM 0.31.0 v1/metrics/prometheus.py), and each rank's port is scraped, so every series would count the pod's ranks over",
      },
      refusedFlags: Object.fromEntries(
        ['--api-server-count', '-asc'].map(f => [
          f,
          'RankEndpoints.PER_RANK runs one API server per rank, and vLLM exits on any other count ("--data-parallel-multi-port-external-lb currently requires --api-server-count=1", vLLM 0.31.0 entrypoints/launchers/dp_supervisor.py)',
        ]),
      ),
      // Across a group, every pod runs the supervisor for its own ranks: dp_supervisor.py numbers them from
      // --node-rank x --data-parallel-size-local (infer_multi_port_external_lb_start_rank), each child an external
      // rank (engine/arg_utils.py keeps the rank it is given with --nnodes; config/parallel.py nnodes_within_dp is 1
      // for external ranks). Rank 0, the leader's first child, binds the ranks' handshake on --data-parallel-address
      // at --data-parallel-rpc-port and runs the DP coordinator; the other ranks' engines handshake with it there
      // (v1/engine/utils.py launch_core_engines: "In external_dp_lb mode, ranks > 0 handshake with their co-located
      // frontend and also the rank 0 front-end"), and every GPU worker joins the world group at
      // --master-addr:--master-port (distributed/parallel_state.py, nnodes > 1), as in the headless launch.
      groupLaunch: {
        ...DATA_PARALLEL_GROUP,
        workerRefusedFlags: undefined,
        workerArgs: g => ['--data-parallel-address', g.leaderAddress],
        workersServe: { healthPort: VLLM_DP_SUPERVISOR_PORT },
        source:
          'vLLM 0.31.0 entrypoints/launchers/dp_supervisor.py, engine/arg_utils.py, config/parallel.py, v1/engine/utils.py',
      },
      source: 'vLLM 0.31.0 entrypoints/launchers/dp_supervisor.py, entrypoints/cli/serve.py',
    },
    // Across a group, vLLM's internal load balancing (docs/serving/data_parallel_deployment.md): the leader's API
    // servers and DP coordinator balance over every rank, the workers run their ranks' engines headless. arg_utils.py
    // infers each pod's first rank (node rank x ranks per pod) and its local rank count from --nnodes and --node-rank;
    // serve.py starts --data-parallel-size API servers on the leader and none on a --headless pod; the leader binds its
    // handshake socket (v1/engine/utils.py launch_core_engines) on --data-parallel-address at --data-parallel-rpc-port
    // and hands the workers the addresses of its front end and coordinator. With --nnodes > 1 every GPU worker of every
    // rank joins one world group at --master-addr:--master-port (distributed/parallel_state.py
    // init_distributed_environment), whose store on the leader it stays connected to, as pipeline stages do.
    groupLaunch: {
      ...DATA_PARALLEL_GROUP,
      workerArgs: g => ['--headless', '--data-parallel-address', g.leaderAddress],
      source:
        'vLLM 0.31.0 engine/arg_utils.py, entrypoints/cli/serve.py, v1/engine/utils.py, distributed/parallel_state.py',
    },
    source: 'vLLM 0.31.0 engine/arg_utils.py, config/parallel.py',
  },
  ownedFlags: {
    '--model': 'modelId',
    '--revision': 'revision',
    '--tensor-parallel-size': 'gpusPerReplica',
    '-tp': 'gpusPerReplica',
    '--host': 'ipFamily',
    '--port': '',
    '--shutdown-timeout': 'drainTimeout',
    '--quantization': 'quantization',
    '-q': 'quantization',
    '--max-model-len': 'maxModelLen',
    '--served-model-name': 'servedModelNames',
    '--download-dir': 'modelCache',
    '--max-num-seqs': 'maxNumSeqs',
    '--gpu-memory-utilization': 'gpuMemoryUtilization',
    '--lora-modules': 'loraAdapters',
    '--max-loras': 'maxLoras',
    '--max-lora-rank': 'maxLoraRank',
    // kvCacheOffload sizes the pod's memory and /dev/shm for the tier these flags make.
    '--kv-offloading-size': 'kvCacheOffload',
    '--kv-offloading-backend': 'kvCacheOffload',
  },
  contradictingFlags: {
    // A replica's engine needs tensor x pipeline x data parallel GPUs; the pod has gpusPerReplica (the tensor-parallel
    // size).
    // With nodes > 1 the construct sets it to nodes (multiNode below).
    ...Object.fromEntries(
      ['--pipeline-parallel-size', '-pp', '--prefill-context-parallel-size', '-pcp'].map(f => [
        f,
        'multiplies the GPUs the engine needs beyond gpusPerReplica, which is all a pod has (run more replicas, raise gpusPerReplica, or set nodes for a model larger than one node: the construct then sets it)',
      ]),
    ),
    '--data-parallel-size':
      'multiplies the GPUs the engine needs beyond gpusPerReplica, which is all the pod has (run more replicas instead)',
    '-dp':
      'multiplies the GPUs the engine needs beyond gpusPerReplica, which is all the pod has (run more replicas instead)',
    // Multi-node and data-parallel placement (vllm/engine/arg_utils.py, ParallelConfig): one pod of
    // gpusPerReplica GPUs is one whole engine here; more engines are more replicas (multi-node
    // serving needs a group of pods that start and restart together).
    ...Object.fromEntries(
      [
        '--data-parallel-size-local',
        '-dpl',
        '--data-parallel-start-rank',
        '-dpr',
        '--data-parallel-rank',
        '-dpn',
        '--data-parallel-address',
        '-dpa',
        '--data-parallel-rpc-port',
        '-dpp',
        '--data-parallel-hybrid-lb',
        '-dph',
        '--data-parallel-external-lb',
        '-dpe',
        '--data-parallel-multi-port-external-lb',
        '-dpm',
        '--data-parallel-backend',
        '-dpb',
        '--nnodes',
        '--node-rank',
        '--master-addr',
        '--master-port',
        '--headless',
      ].map(f => [
        f,
        'places engine ranks across pods or nodes, which the construct does from nodes (a LeaderWorkerSet group per replica); set nodes, or run more replicas',
      ]),
    ),
    // arg_utils.py: "Fault tolerance requires external load balancer mode", which the construct does not run.
    ...Object.fromEntries(
      ['--enable-fault-tolerance', '--fault-tolerance-config'].map(f => [
        f,
        'needs vLLM\'s external data-parallel load balancing, which the construct does not run: vLLM exits at start ("Fault tolerance requires external load balancer mode", vLLM 0.31.0 engine/arg_utils.py)',
      ]),
    ),
    // serve.py: --grpc starts a gRPC server in place of the HTTP API.
    '--grpc': 'serves gRPC in place of the HTTP API that the probes, Services and metrics scrape use',
    // cli_args.py: with --uds the API server binds a Unix socket and ignores --host/--port.
    '--uds': 'moves the API to a Unix socket, but the probes, Services and metrics scrape use the TCP port',
    // The probes, the Services and the ServiceMonitor speak HTTP to the port.
    '--ssl-keyfile':
      'makes the server speak HTTPS, but its probes, Services and metrics scrape use HTTP (terminate TLS in front of the Service)',
    '--ssl-certfile':
      'makes the server speak HTTPS, but its probes, Services and metrics scrape use HTTP (terminate TLS in front of the Service)',
  },
  // arg_utils.py --tokenizer. --lora-modules is the loraAdapters prop's (ownedFlags), which downloads hub
  // adapters into the cache.
  offlinePathFlags: { '--tokenizer': 'a tokenizer' },
  // docs/features/quantization/gguf.md: `vllm serve <repo_id>:<quant_type>` loads that GGUF file.
  offlinePathEnv: {},
  ggufModelForm: true,
  // arg_utils.py --load-format: `auto` loads safetensors, else bin/pt (what the download fetches);
  // `dummy` loads none; the others (pt over safetensors, npcache, mistral's consolidated files,
  // tensorizer, runai_streamer, sharded_state, ...) read files or places the download does not fill.
  loadFormat: { flag: '--load-format', served: ['auto', 'safetensors', 'dummy', 'gguf'] },
  // FlexibleArgumentParser is an argparse.ArgumentParser: treat prefixes as the flags they expand to.
  argsWordSplit: false,
  abbreviatedFlags: true,
  // vllm/envs.py: VLLM_API_KEY; entrypoints/openai/api_server.py: `args.api_key or envs.VLLM_API_KEY`
  // guards the /v1 routes only (health and metrics stay open for probes and Prometheus).
  // --trust-remote-code is a ModelConfig field (BooleanOptionalAction); vLLM reads no variable for it.
  trust: { apiKeyFlag: '--api-key', apiKeyEnv: 'VLLM_API_KEY', trustRemoteCodeFlag: '--trust-remote-code' },
  cacheEnv: path => [{ name: 'HF_HOME', value: path }],
  // torch.compile and CUDA graph caches (VLLM_CACHE_ROOT defaults to ~/.cache/vllm, under the home).
  extraEnv: () => [],
  launch(o: LaunchOptions): Launch {
    return {
      // `vllm serve <model>` reads its address from --host/--port only (not HOSTNAME).
      args: [
        o.modelId,
        ...(o.revision !== undefined ? ['--revision', o.revision] : []),
        '--tensor-parallel-size',
        String(o.gpus),
        '--host',
        o.host,
        '--port',
        String(o.port),
        // v0.18+: the default 0 aborts in-flight requests on SIGTERM.
        '--shutdown-timeout',
        String(o.drainSeconds),
        ...o.tuning.args,
      ],
      env: [
        ...o.tuning.env,
        // The API server gives its engine cores VLLM_ENGINE_READY_TIMEOUT_S (default 600) to report
        // ready, model load included (vllm/envs.py; v1/engine/utils.py wait_for_engine_startup): a
        // model that loads longer (a 70B takes about 1,700 s at 100 MB/s) would fail its start at
        // 10 minutes. The startup probe's budget decides instead.
        {
          env: { name: 'VLLM_ENGINE_READY_TIMEOUT_S', value: String(o.startupSeconds) },
          via: 'maxModelLoadTime',
        },
        // vLLM reports anonymous usage unless VLLM_NO_USAGE_STATS=1 or DO_NOT_TRACK=1 (docs
        // serving/usage_stats.md; vllm/usage/usage_lib.py).
        ...(o.usageStats
          ? []
          : [{ env: { name: 'VLLM_NO_USAGE_STATS', value: '1' }, via: 'usageStats' }, DO_NOT_TRACK]),
      ],
    };
  },
  // vLLM needs transformers >= 4.56, which needs huggingface_hub >= 0.34: `hf` is there.
  download: hubDownload('vllm'),
};
