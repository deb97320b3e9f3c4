import { Chart, Duration, Size, Testing } from 'cdk8s';
import {
  Autoscaler,
  DeviceSelector,
  InferenceService,
  IpFamily,
  KvCacheOffload,
  ModelCache,
  SglangQuantization,
  TgiQuantization,
  VllmQuantization,
} from '../../src';
import { BASE, EngineCase } from './support';

/**
 * The serving constructs' props over boundary values, as data: the unit sweep (props-sweep.test.ts)
 * holds each construct to its verdict, and the cluster sweep (test/cluster/props-sweep.test.ts)
 * applies what the constructs accept to a real API server, which must accept it too.
 */

/** One prop's value: [prop, value, accepted]. */
export type PropCase = [string, unknown, boolean];
/** Props that interact: [label, props, accepted, the prop a refusal names]. */
export type Combination = [string, Record<string, unknown>, boolean, string | undefined];

/** Boundary values per prop: [value, accepted]. Rejected ones must throw a ConfigurationError naming the prop. */
export const SHARED: PropCase[] = [
  ['name', 'a', true],
  ['name', 'a'.repeat(52), true],
  ['name', 'a'.repeat(53), false],
  ['name', '1llm', false],
  ['name', 'LLM', false],
  ['modelId', 'org/model', true],
  ['modelId', '/models/llama', true],
  ['modelId', '', false],
  ['modelId', 'org/model name', false],
  ['modelId', '--port', false],
  ['modelId', 'gpt2', true],
  ['modelId', 'a/b/c', false],
  ['modelId', 'org--x/model', false],
  ['modelId', 'org/model.git', false],
  ['modelId', `org/${'m'.repeat(96)}`, true],
  ['modelId', `org/${'m'.repeat(97)}`, false],
  ['revision', 'main', true],
  ['revision', '0123abc', true],
  ['revision', '', false],
  ['revision', '-x', false],
  ['revision', 'a b', false],
  ['replicas', 1, true],
  ['replicas', 2147483647, true],
  ['replicas', 0, false],
  ['replicas', 1.5, false],
  ['replicas', NaN, false],
  ['replicas', 2147483648, false],
  ['gpusPerReplica', 1, true],
  ['dynamicResourceAllocation', { kubernetesVersion: '1.34' }, true],
  [
    'dynamicResourceAllocation',
    { kubernetesVersion: '1.35', selectors: [DeviceSelector.nvidiaProduct('NVIDIA H100 80GB HBM3')] },
    true,
  ],
  ['dynamicResourceAllocation', { kubernetesVersion: '1.33' }, false],
  ['dynamicResourceAllocation', { kubernetesVersion: '1.34', deviceClassName: '' }, false],
  // BASE's Qwen2.5-7B has 28 attention heads and 4 KV heads: 4 splits them, 8 and 3 do not.
  ['gpusPerReplica', 4, true],
  ['gpusPerReplica', 3, false],
  ['gpusPerReplica', 8, false],
  ['gpusPerReplica', 0, false],
  ['gpusPerReplica', -1, false],
  ['maxGpusPerNode', 1, true],
  ['maxGpusPerNode', 64, true],
  ['maxGpusPerNode', 0, false],
  ['maxGpusPerNode', 65, false],
  ['maxGpusPerNode', 1.5, false],
  ['modelArchitecture', { attentionHeads: 28, kvHeads: 4 }, true],
  ['modelArchitecture', { attentionHeads: 7 }, true],
  ['modelArchitecture', { attentionHeads: 0 }, false],
  ['modelArchitecture', { attentionHeads: 32, kvHeads: 5 }, false],
  ['modelArchitecture', { attentionHeads: 8, kvHeads: 16 }, false],
  ['modelArchitecture', { attentionHeads: 32, heads: 8 }, false],
  ['version', 1, true],
  ['version', 0, false],
  ['image', 'registry.example.com:5000/llm/server:1.0', true],
  ['image', 'Registry/Server', false],
  ['image', 'a b', false],
  ['hfTokenSecret', { name: 'hf', key: 'token' }, true],
  ['hfTokenSecret', { name: 'HF', key: 'token' }, false],
  ['hfTokenSecret', { name: 'hf', key: '' }, false],
  ['preStopSleep', Duration.seconds(0), true],
  ['preStopSleep', Duration.millis(1500), false],
  ['drainTimeout', Duration.seconds(1), true],
  ['drainTimeout', Duration.seconds(0), false],
  ['terminationGracePeriod', Duration.seconds(120), true],
  ['terminationGracePeriod', Duration.seconds(119), false],
  ['maxModelLoadTime', Duration.seconds(60), true],
  ['maxModelLoadTime', Duration.seconds(59), false],
  // The startup probe's failureThreshold (budget / 10 s) is an int32.
  ['maxModelLoadTime', Duration.seconds(21474836470), true],
  ['maxModelLoadTime', Duration.days(1e7), false],
  ['modelSize', Size.tebibytes(1e9), false],
  ['modelSize', Size.gibibytes(28), true],
  // The base model id states 7B: 15 MiB is a wrong unit, 83 GiB a wrong model (2 to 32 bits a weight).
  ['modelSize', Size.mebibytes(15), false],
  ['modelSize', Size.gibibytes(83), false],
  ['modelSize', Size.gibibytes(0), false],
  ['sharedMemory', Size.mebibytes(64), true],
  ['sharedMemory', Size.gibibytes(16), false],
  ['sharedMemory', Size.gibibytes(1.3), false],
  ['cpu', 0.5, true],
  ['cpu', 0, false],
  ['memory', Size.gibibytes(4), true],
  ['memory', Size.gibibytes(0), false],
  // 8Ei (2^63 bytes) is the most Kubernetes counts; past it the quantity has an exponent the server refuses.
  ['memory', Size.tebibytes(8 * 1024 ** 2), true],
  ['memory', Size.tebibytes(8 * 1024 ** 2 + 1), false],
  ['memory', Size.gibibytes(1e300), false],
  ['runAsRoot', true, true],
  // 256 KiB of pod-template annotations, in bytes (an "é" is two), the construct's own included.
  ['pod', { annotations: { a: 'x'.repeat(256 * 1024 - 1) } }, false],
  ['pod', { annotations: { a: '\u00e9'.repeat(128 * 1024) } }, false],
  ['runAsUser', 0, false],
  ['runAsUser', 2147483648, false],
  ['nodeSelector', { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }, true],
  ['nodeSelector', { pool: 'has space' }, false],
  ['clusterDomain', 'cluster.local', true],
  ['clusterDomain', 'Cluster Local', false],
  ['serviceMonitorInterval', Duration.seconds(1), false],
  ['ipFamily', IpFamily.IPV6, true],
  ['ipFamily', 'IPv5', false],
  ['usageStats', true, true],
  ['port', 8000, true],
  ['port', 80, false],
  ['port', 65536, false],
  ['extraArgs', [], true],
  ['extraArgs', ['--port', '1'], false],
  ['extraArgs', [1], false],
  ['modelCache', ModelCache.emptyDir(), true],
  ['modelCache', ModelCache.sharedClaim({ claimName: 'm' }), true],
  ['modelCache', ModelCache.sharedClaim({ claimName: 'M_' }), false],
  ['modelCache', ModelCache.persistentClaim({ size: Size.gibibytes(50), storageclass: 'ssd' } as any), false],
  ['modelCache', ModelCache.persistentClaim(undefined as any), false],
  ['modelCache', ModelCache.persistentClaim({ size: Size.gibibytes(0) }), false],
  ['modelCache', ModelCache.persistentClaim({ size: Size.gibibytes(1e300) }), false],
  ['autoscaling', { maxReplicas: 1 }, true],
  ['autoscaling', { maxReplicas: 2147483648 }, false],
  [
    'autoscaling',
    {
      maxReplicas: 2,
      autoscaler: Autoscaler.keda({ serverAddress: 'https://prom:9090' }),
      scaleDownStabilization: Duration.seconds(3600),
    },
    true,
  ],
  ['autoscaling', { maxReplicas: 2, autoscaler: Autoscaler.keda({ serverAddress: 'http://prom:9090 foo' }) }, false],
  [
    'autoscaling',
    { maxReplicas: 2, autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring.svc:9090/prom' }) },
    true,
  ],
  ['autoscaling', { maxReplicas: 2, scaleDownStabilization: Duration.seconds(3601) }, false],
];

export const SPECIFIC: Record<string, PropCase[]> = {
  TgiInferenceService: [
    ['kvCacheOffload', KvCacheOffload.cpu(Size.gibibytes(8)), false],
    ['kvCacheOffload', KvCacheOffload.lmcache({ cpu: Size.gibibytes(8) }), false],
    // From 3.1 (the default image is 3.3.7) TGI cannot start as a non-root UID; a runAsUser asks for one.
    ['runAsRoot', false, false],
    ['runAsUser', 1, false],
    ['quantize', TgiQuantization.AWQ, true],
    ['quantize', 'int3', false],
    ['maxInputTokens', 1, true],
    ['maxInputTokens', 0, false],
    ['maxTotalTokens', 2, true],
    ['maxTotalTokens', 1.5, false],
    ['maxConcurrentRequests', 1, true],
    ['maxConcurrentRequests', 0, false],
    ['maxBatchPrefillTokens', 1, true],
    ['maxBatchPrefillTokens', -5, false],
  ],
  VllmInferenceService: [
    // KV-cache tiers: vLLM's own in /dev/shm, LMCache's pinned pools and its disk (an emptyDir requested as ephemeral
    // storage, or a generic ephemeral volume), and a share below LMCache's floor of 1 GiB a rank.
    ['kvCacheOffload', KvCacheOffload.cpu(Size.gibibytes(8)), true],
    ['kvCacheOffload', KvCacheOffload.lmcache({ cpu: Size.gibibytes(8) }), true],
    ['kvCacheOffload', KvCacheOffload.lmcache({ cpu: Size.gibibytes(8), disk: Size.gibibytes(100) }), true],
    [
      'kvCacheOffload',
      KvCacheOffload.lmcache({ cpu: Size.gibibytes(8), disk: Size.gibibytes(100), diskStorageClass: 'local-nvme' }),
      true,
    ],
    ['kvCacheOffload', KvCacheOffload.lmcache({ cpu: Size.mebibytes(512) }), false],
    ['runAsRoot', false, true],
    ['runAsUser', 1, true],
    // --shutdown-timeout is there from 0.18; other repositories and tags without a release are not checked.
    ['image', 'vllm/vllm-openai:v0.17.1', false],
    ['image', 'docker.io/vllm/vllm-openai:v0.9.2', false],
    ['image', 'vllm/vllm-openai:v0.18.0', true],
    ['image', 'vllm/vllm-openai:latest', true],
    ['image', 'mirror.example.com/vllm/vllm-openai:v0.9.2', true],
    // More GPUs than the pod has, or HTTPS behind HTTP probes.
    ['extraArgs', ['--pipeline-parallel-size', '2'], false],
    ['extraArgs', ['-dp', '2'], false],
    ['extraArgs', ['--pipeline', '2'], false],
    ['extraArgs', ['--ssl-keyfile=/tls/key.pem'], false],
    ['extraArgs', ['--enable-prefix-caching'], true],
    ['quantization', VllmQuantization.FP8, true],
    ['quantization', 'int3', false],
    ['maxModelLen', 1, true],
    ['maxModelLen', 0, false],
    ['servedModelNames', ['a', 'b'], true],
    ['servedModelNames', [], false],
    ['servedModelNames', ['a', 'a'], false],
    ['servedModelNames', ['a b'], false],
    ['servedModelNames', ['m', '--port=9000'], false],
    ['servedModelNames', ['-x'], false],
    ['extraArgs', ['--data-parallel-size-local', '2'], false],
    ['extraArgs', ['-dpl', '2'], false],
    ['extraArgs', ['--nnodes=2'], false],
    ['extraArgs', ['--node-rank', '1'], false],
    ['extraArgs', ['--headless'], false],
    ['extraArgs', ['--uds', '/tmp/vllm.sock'], false],
    ['maxNumSeqs', 1, true],
    ['maxNumSeqs', 0, false],
    ['gpuMemoryUtilization', 1, true],
    ['gpuMemoryUtilization', 0.05, true],
    ['gpuMemoryUtilization', 0, false],
    ['gpuMemoryUtilization', 1.01, false],
  ],
  SglangInferenceService: [
    ['kvCacheOffload', KvCacheOffload.cpu(Size.gibibytes(8)), true],
    ['kvCacheOffload', KvCacheOffload.lmcache({ cpu: Size.gibibytes(8) }), false],
    // The upstream image is built and run as root: a non-root pod is refused for it (any tag).
    ['runAsRoot', false, false],
    ['runAsUser', 1, false],
    ['extraArgs', ['--pp-size', '2'], false],
    ['extraArgs', ['--dp-size', '2'], false],
    ['extraArgs', ['--dp=2'], false],
    ['extraArgs', ['--nnodes', '2'], false],
    ['extraArgs', ['--node-rank=1'], false],
    ['extraArgs', ['--dist-init-addr', '10.0.0.1:5000'], false],
    ['extraArgs', ['--enable-torch-compile'], true],
    ['quantization', SglangQuantization.W8A8_FP8, true],
    ['quantization', 'int3', false],
    ['contextLength', 1, true],
    ['contextLength', 0, false],
    ['servedModelName', 'chat', true],
    ['servedModelName', '', false],
    ['servedModelName', '-x', false],
    ['maxRunningRequests', 1, true],
    ['maxRunningRequests', 0, false],
    ['memFractionStatic', 0.99, true],
    ['memFractionStatic', 1, false],
  ],
};

/** Combinations whose props interact: GPUs, memory and shm; drain arithmetic; size, cache and budget. */
export const COMBINATIONS: Combination[] = [
  [
    '8 GPUs scale shm within the default memory',
    { modelId: 'meta-llama/Llama-3.1-8B-Instruct', gpusPerReplica: 8 },
    true,
    undefined,
  ],
  ['9 GPUs on nodes of 8', { modelId: 'org/model-70B', gpusPerReplica: 9 }, false, 'gpusPerReplica'],
  ['16 GPUs on nodes of 16', { modelId: 'org/model-70B', gpusPerReplica: 16, maxGpusPerNode: 16 }, true, undefined],
  ['shm equal to memory', { memory: Size.gibibytes(8), sharedMemory: Size.gibibytes(8) }, false, 'sharedMemory'],
  [
    'long drain with a matching grace',
    {
      preStopSleep: Duration.seconds(30),
      drainTimeout: Duration.minutes(10),
      terminationGracePeriod: Duration.seconds(645),
    },
    true,
    undefined,
  ],
  [
    'long drain, grace 1 s short',
    {
      preStopSleep: Duration.seconds(30),
      drainTimeout: Duration.minutes(10),
      terminationGracePeriod: Duration.seconds(644),
    },
    false,
    'terminationGracePeriod',
  ],
  [
    '405B-class FP8 on a shared cache, scaled by hand',
    {
      modelId: 'meta-llama/Llama-3.1-405B-Instruct-FP8',
      modelSize: Size.gibibytes(382),
      gpusPerReplica: 8,
      modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
    },
    true,
    undefined,
  ],
  [
    '405B-class FP8 autoscaled',
    {
      modelId: 'meta-llama/Llama-3.1-405B-Instruct-FP8',
      modelSize: Size.gibibytes(382),
      autoscaling: { maxReplicas: 2 },
    },
    false,
    'autoscaling',
  ],
  [
    '70B-class autoscaled on a shared cache',
    {
      modelId: 'meta-llama/Llama-3.1-70B-Instruct',
      modelSize: Size.gibibytes(132),
      modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      autoscaling: { minReplicas: 2, maxReplicas: 4 },
    },
    true,
    undefined,
  ],
  [
    '70B-class autoscaled, a cache per replica (each scale-up downloads 132 GiB)',
    {
      modelId: 'meta-llama/Llama-3.1-70B-Instruct',
      modelSize: Size.gibibytes(132),
      modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(200) }),
      autoscaling: { minReplicas: 2, maxReplicas: 4 },
    },
    false,
    'autoscaling',
  ],
  [
    'serviceMonitor labels without serviceMonitor',
    { serviceMonitorLabels: { release: 'x' } },
    false,
    'serviceMonitorLabels',
  ],
  [
    "a scrape interval past Prometheus's lookback with autoscaling",
    { serviceMonitor: true, serviceMonitorInterval: Duration.minutes(5), autoscaling: { maxReplicas: 2 } },
    false,
    'serviceMonitorInterval',
  ],
  [
    'a 4-minute scrape interval with autoscaling',
    { serviceMonitor: true, serviceMonitorInterval: Duration.minutes(4), autoscaling: { maxReplicas: 2 } },
    true,
    undefined,
  ],
  [
    'a model too big for an explicit 100Gi cache',
    {
      modelId: 'meta-llama/Llama-3.1-70B-Instruct',
      modelSize: Size.gibibytes(84),
      modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(100) }),
    },
    false,
    'modelCache.size',
  ],
  [
    'a model bigger than the default cache grows it',
    { modelId: 'meta-llama/Llama-3.1-70B-Instruct', modelSize: Size.gibibytes(84) },
    true,
    undefined,
  ],
  ['MIG with one instance', { gpuResource: 'nvidia.com/mig-1g.10gb', gpusPerReplica: 1 }, true, undefined],
];

/**
 * One engine's construct (id `svc`) over BASE and `props`, in a chart of `namespace`. SGLang sizes its
 * batch at start: it is given a batch limit, so autoscaling can derive a target.
 */
export function buildService(
  e: EngineCase,
  props: Record<string, unknown>,
  namespace = 'ns',
): { chart: Chart; service: InferenceService } {
  const chart = new Chart(Testing.app(), 'c', { namespace });
  const batch = e.batch.defaultTarget === undefined ? { [e.batch.prop]: 64 } : {};
  const service = e.make(chart, 'svc', { ...BASE, ...batch, ...props });
  return { chart, service };
}

/**
 * Extremes a caller may pass, judged as they come: each must be refused by the construct, naming the
 * prop, or else accepted by a real API server (test/cluster/props-sweep.test.ts).
 */
export const EXTREMES: Array<[string, unknown]> = [
  ['modelSize', Size.gibibytes(1e300)],
  ['memory', Size.gibibytes(1e300)],
  ['sharedMemory', Size.gibibytes(1e300)],
  ['modelCache', ModelCache.persistentClaim({ size: Size.gibibytes(1e300) })],
  // 2^63 bytes, the largest size Kubernetes counts in an int64.
  ['memory', Size.tebibytes(8 * 1024 ** 2)],
  ['cpu', 1e300],
  // The API server allows 256 KiB of annotations on the pod template, counted in bytes, its own included.
  ['pod', { annotations: { a: 'x'.repeat(256 * 1024 - 1) } }],
  ['pod', { annotations: { a: '\u00e9'.repeat(128 * 1024) } }],
];
