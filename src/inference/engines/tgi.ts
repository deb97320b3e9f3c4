import { OwnedEnv } from '../../common/workload-pod';
import { CUDA12_DRIVER_MAJOR } from '../driver-floor';
import { hubDownload, Launch, LaunchOptions, ServingEngine } from '../engine';

/**
 * HuggingFace text-generation-inference, in maintenance mode since 2025-12-11 (README banner,
 * commit "Maintenance mode (#3345)"); 3.3.7 is the last release. Facts from the v3.3.7 sources:
 * launcher/src/main.rs, router/src/server.rs, Dockerfile, tgi-entrypoint.sh.
 */

/**
 * The default image: a pinned TGI release (tags are `MAJOR.MINOR.PATCH`, no `v`). From 3.1 on,
 * the image cannot start as a non-root UID (huggingface/text-generation-inference#3082).
 */
export const TGI_DEFAULT_IMAGE = 'ghcr.io/huggingface/text-generation-inference:3.3.7';
/** The launcher's `--graceful-termination-timeout` default (launcher/src/main.rs). */
export const TGI_DRAIN_SECONDS = 90;
/** The unprivileged port TGI listens on (the image sets PORT=80, which needs NET_BIND_SERVICE). */
export const TGI_PORT = 8080;

const env = (name: string, value: string | number, via?: string): OwnedEnv => ({
  env: { name, value: String(value) },
  ...(via !== undefined ? { via } : {}),
});

export const TGI: ServingEngine = {
  construct: 'TgiInferenceService',
  containerName: 'tgi',
  defaultImage: TGI_DEFAULT_IMAGE,
  port: TGI_PORT,
  home: '/home/tgi',
  // router/src/server.rs: /health is 200 once the shards are warm; the listener opens only after
  // download and warm-up, and on SIGTERM axum's graceful shutdown closes it at once, so probes
  // get connection refused while accepted requests drain.
  healthPath: '/health',
  // server.rs routes /metrics on the API port (and the same registry on --prometheus-port 9000).
  metricsPath: '/metrics',
  queueMetric: 'tgi_queue_size',
  // launcher/src/main.rs: --max-concurrent-requests 128 bounds the requests in flight (running and
  // queued); the router answers 429 beyond it. --max-batch-size has no default (from the token budget).
  batchLimit: {
    prop: 'maxConcurrentRequests',
    default: 128,
    why: "TGI's --max-concurrent-requests default (128, launcher/src/main.rs), beyond which the router answers 429",
  },
  // docs/source/reference/metrics.md and router/src (v3.3.7): `tgi_request_queue_duration` is a
  // histogram in seconds (server.rs gives every `*duration` metric buckets); `tgi_request_failure`
  // counts failures by `err` (validation errors are the client's). TGI exports no KV-cache usage
  // and no time-to-first-token histogram: those alerts are left out.
  metrics: {
    running: 'tgi_batch_current_size',
    queueTime: 'tgi_request_queue_duration',
    requests: {
      total: { name: 'tgi_request_count' },
      failed: { name: 'tgi_request_failure', matchers: 'err!="validation"' },
    },
  },
  // launcher/src/main.rs spawns every shard (--num-shard) as a local process and has no flag to join
  // shards on other machines: one replica is one node.
  multiNode:
    'TGI runs every shard of a replica on one node (its launcher spawns the shards as local processes, launcher/src/main.rs); serve models larger than one node with VllmInferenceService or SglangInferenceService',
  // Python lives under /root/.local/share/uv (mode 0700 /root) from 3.1 on: root only (#3082).
  runAsRoot: true,
  imageFacts: [
    {
      repository: 'ghcr.io/huggingface/text-generation-inference',
      rootOnlyFrom: [3, 1, 0],
      why: 'from 3.1 the image keeps Python under /root/.local/share/uv and /root is mode 0700, so a non-root UID stops at "libpython3.11.so.1.0: cannot open shared object file" (huggingface/text-generation-inference#3082); 3.0.1 is the last release that starts non-root',
    },
  ],
  // Dockerfile (v3.3.7): `FROM nvidia/cuda:12.4.0-base-ubuntu22.04`, torch 2.7: CUDA 12.
  driverFacts: [
    {
      repository: 'ghcr.io/huggingface/text-generation-inference',
      driverMajor: CUDA12_DRIVER_MAJOR,
      why: 'TGI 3.x images are built on CUDA 12 (Dockerfile: nvidia/cuda:12.4.0-base)',
    },
  ],
  // server/text_generation_server/models/custom_modeling (v3.3.7): flash_llama_modeling.py raises
  // "`num_heads` must be divisible by `num_shards`" and the same for `num_key_value_heads`; the Qwen2 and
  // Mistral models check the heads and set num_key_value_heads // num_shards, so fewer KV heads than
  // shards leave a shard none (kv_head_mapping divides by zero). No KV head is replicated.
  headSharding: {
    replicatesKvHeads: false,
    why: 'TGI splits both across its shards, NUM_SHARD, and replicates no KV head',
  },
  // The TGI docs run `--shm-size 1g`; NCCL needs it between shards, so it grows with them.
  shmGibPerGpu: 1,
  kvOffload: 'needs vLLM or SGLang: TGI keeps its KV cache in GPU memory only (no host tier in its launcher)',
  kvEvents: 'needs vLLM: the Endpoint Picker routes to vLLM and SGLang only',
  expertParallel:
    'needs vLLM or SGLang: TGI shards a model by tensor parallel only (its launcher has no expert-parallel mode)',
  disaggregation:
    "needs vLLM or SGLang: TGI moves no KV cache between servers, and llm-d-router's routing sidecar speaks only vLLM's and SGLang's protocols (pkg/sidecar/constants/constants.go)",
  // launcher/src/main.rs: every flag is also an env var, and a flag beats its variable (clap).
  ownedFlags: {
    '--model-id': 'modelId',
    '--revision': 'revision',
    '--num-shard': 'gpusPerReplica',
    '--sharded': 'gpusPerReplica',
    '--quantize': 'quantize',
    '--max-concurrent-requests': 'maxConcurrentRequests',
    '--max-input-tokens': 'maxInputTokens',
    '--max-input-length': 'maxInputTokens',
    '--max-total-tokens': 'maxTotalTokens',
    '--max-batch-prefill-tokens': 'maxBatchPrefillTokens',
    '--graceful-termination-timeout': 'drainTimeout',
    '-g': 'drainTimeout',
    '--port': '',
    '-p': '',
    '--hostname': 'ipFamily',
    '--usage-stats': 'usageStats',
    '--huggingface-hub-cache': 'modelCache',
  },
  contradictingFlags: {},
  // launcher/src/main.rs: --lora-adapters (env LORA_ADAPTERS), "adapter ids i.e. repo/adapter1,repo/adapter2".
  offlinePathFlags: { '--lora-adapters': 'a LoRA adapter' },
  // TGI loads safetensors only (utils/hub.py) and has no GGUF path or load-format flag.
  offlinePathEnv: { LORA_ADAPTERS: 'a LoRA adapter' },
  ggufModelForm: false,
  // clap matches long flags exactly (no inferred abbreviations).
  // tgi-entrypoint.sh runs `exec text-generation-launcher $@`, unquoted.
  argsWordSplit: true,
  abbreviatedFlags: false,
  // launcher/src/main.rs: `#[clap(long, env)] api_key` (API_KEY), passed to the router, whose
  // server.rs guards the generation routes (not /health, /metrics); `trust_remote_code` (TRUST_REMOTE_CODE).
  trust: {
    apiKeyFlag: '--api-key',
    apiKeyEnv: 'API_KEY',
    trustRemoteCodeFlag: '--trust-remote-code',
    trustRemoteCodeEnv: 'TRUST_REMOTE_CODE',
  },
  cacheEnv: path => [
    { name: 'HF_HOME', value: path },
    { name: 'HUGGINGFACE_HUB_CACHE', value: `${path}/hub` },
  ],
  extraEnv: home => [{ name: 'OUTLINES_CACHE_DIR', value: `${home}/.cache/outlines` }],
  launch(o: LaunchOptions): Launch {
    return {
      // The image's entrypoint (tgi-entrypoint.sh) activates the venv and execs the launcher.
      args: [],
      env: [
        env('MODEL_ID', o.modelId, 'modelId'),
        ...(o.revision !== undefined ? [env('REVISION', o.revision, 'revision')] : []),
        env('NUM_SHARD', o.gpus, 'gpusPerReplica'),
        ...o.tuning.env,
        env('GRACEFUL_TERMINATION_TIMEOUT', o.drainSeconds, 'drainTimeout'),
        env('PORT', o.port),
        // The runtime sets HOSTNAME to the pod name; server.rs parses it as the listen IP and falls
        // back to 0.0.0.0 ("Invalid hostname") when it is not one. `::` binds IPv6 (dual-stack
        // where the node allows it).
        env('HOSTNAME', o.host, 'ipFamily'),
        // launcher/src/main.rs: --usage-stats defaults to "on" (reports to Hugging Face).
        env('USAGE_STATS', o.usageStats ? 'on' : 'off', 'usageStats'),
      ],
    };
  },
  // Not TGI's own `download-weights`: it fetches config.json and the weights only
  // (server/text_generation_server/cli.py, utils/hub.py), and the server (tokenizer first) and the
  // router (tokenizer.json, tokenizer_config.json, chat template from HUGGINGFACE_HUB_CACHE,
  // router/src/server.rs) then fail offline on a fresh cache. The launcher runs download-weights
  // again at start; with HF_HUB_OFFLINE=1 it globs the cached *.safetensors (utils/hub.py
  // `_cached_weight_files`). `text-generation-server` (the former download command) runs from the
  // image's PATH, so PATH holds its environment, whose python3 has huggingface_hub (a dependency of
  // the server): inferred, not checked against a pulled image.
  download: hubDownload('tgi'),
};

/** Variables that make a tuning prop: TGI reads every launcher flag from its variable. */
export function tgiTuningEnv(name: string, value: string | number | undefined, via: string): OwnedEnv[] {
  return value === undefined ? [] : [env(name, value, via)];
}
