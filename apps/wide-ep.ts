import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  All2AllBackend,
  ExpertParallel,
  InferenceGateway,
  InferenceServiceMonitoring,
  ModelCache,
  RankEndpoints,
  Rdma,
  SglangInferenceService,
  VllmInferenceService,
} from '../src';

/**
 * Wide expert parallelism on both engines, each replica a LeaderWorkerSet group of two nodes, behind one gateway.
 *
 * SGLang serves DeepSeek-V3 (671B parameters, 256 routed experts, FP8 weights) on two nodes of eight GPUs: attention
 * in 16 data-parallel ranks, the experts spread over all 16 GPUs, tokens exchanged by DeepEP over RDMA (low-latency
 * kernels for decode batches, high-throughput ones for prefill), and the expert load balancer keeping 32 redundant
 * copies of hot experts (256 + 32 experts over 16 GPUs, 18 each).
 *
 * vLLM serves Qwen3-235B-A22B (128 experts, FP8 weights) on two nodes of four GPUs: eight data-parallel engines of one
 * GPU, four a pod, DeepEP's low-latency kernels, and an API server per rank on every pod of the group
 * (`RankEndpoints.PER_RANK`, ports 8000-8003 on the leader and on the worker alike): all eight ranks are endpoints of
 * the InferencePool, as llm-d's wide-EP guide serves every pod of its groups.
 *
 * vLLM serves Qwen3-30B-A3B (128 experts) in one pod of eight GPUs with an API server per data-parallel rank
 * (`RankEndpoints.PER_RANK`, ports 8000-8007): each rank is an endpoint of its InferencePool, so the Endpoint Picker
 * sends a request to the rank with the shortest queue and the prefix it holds, rather than to a pod whose front end
 * then balances blindly. One node needs no RDMA: its pods run at the restricted level.
 *
 * Each model has its own gateway route and pool. The RDMA device's IPC_LOCK makes the group pods privileged.
 */
export class WideEpChart extends Chart {
  readonly llm: SglangInferenceService;
  readonly vllm: VllmInferenceService;
  readonly perRank: VllmInferenceService;
  readonly gateway: InferenceGateway;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'moe', ...props });
    this.llm = new SglangInferenceService(this, 'llm', {
      name: 'deepseek',
      modelId: 'deepseek-ai/DeepSeek-V3-0324',
      modelSize: Size.gibibytes(642),
      modelCache: ModelCache.sharedClaim({ claimName: 'deepseek-weights' }),
      gpusPerReplica: 8,
      nodes: 2,
      replicas: 1,
      rdma: Rdma.sharedDevice(),
      expertParallel: ExpertParallel.wide({
        all2all: All2AllBackend.DEEPEP,
        loadBalancing: true,
        redundantExperts: 32,
      }),
      serviceMonitor: true,
    });
    this.vllm = new VllmInferenceService(this, 'qwen', {
      name: 'qwen3-moe',
      modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
      modelSize: Size.gibibytes(221),
      modelCache: ModelCache.sharedClaim({ claimName: 'qwen3-moe-weights' }),
      gpusPerReplica: 4,
      nodes: 2,
      replicas: 1,
      rdma: Rdma.sharedDevice(),
      expertParallel: ExpertParallel.wide({
        all2all: All2AllBackend.DEEPEP_LOW_LATENCY,
        endpoints: RankEndpoints.PER_RANK,
      }),
      serviceMonitor: true,
    });
    this.gateway = new InferenceGateway(this, 'gateway', {
      name: 'deepseek',
      services: [this.llm],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
    });
    new InferenceGateway(this, 'qwen-gateway', {
      name: 'qwen3-moe',
      services: [this.vllm],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
    });
    this.perRank = new VllmInferenceService(this, 'qwen-small', {
      name: 'qwen3-30b',
      modelId: 'Qwen/Qwen3-30B-A3B-Instruct-2507',
      modelSize: Size.gibibytes(57),
      gpusPerReplica: 8,
      replicas: 1,
      expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
      serviceMonitor: true,
    });
    new InferenceGateway(this, 'qwen-small-gateway', {
      name: 'qwen3-30b',
      services: [this.perRank],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
    });
    new InferenceServiceMonitoring(this, 'monitoring', this.llm);
    new InferenceServiceMonitoring(this, 'qwen-monitoring', this.vllm);
    new InferenceServiceMonitoring(this, 'qwen-small-monitoring', this.perRank);
  }
}

export function addWideEp(app: App): WideEpChart {
  return new WideEpChart(app, 'wide-ep');
}
