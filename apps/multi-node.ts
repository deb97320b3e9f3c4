import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  InferenceGateway,
  InferenceServiceMonitoring,
  ModelCache,
  Rdma,
  SglangInferenceService,
  VllmInferenceService,
} from '../src';

/** The Gateway the cluster's implementation provides. */
const GATEWAY = { name: 'inference-gateway', namespace: 'gateway-system' };

/**
 * Models larger than one 8-GPU node, each replica a LeaderWorkerSet group of 2 pods of 8 GPUs (docs/serving.md,
 * "Multi-node serving"). vLLM serves Llama 3.1 405B in bf16 (tensor parallel 8 within a node, pipeline parallel 2
 * across) over EFA, behind an InferencePool that selects only the leaders; SGLang serves DeepSeek-V3 (tensor
 * parallel 16 across the group), each group admitted whole through Kueue. Neither is autoscaled: a pod loads its
 * 345-406 GB share in about an hour at the assumed 100 MB/s, longer than the HPA's longest scale-down window. Each
 * reads a ReadWriteMany cache that a CPU-only Job fills once, so no pod of a group downloads 700 GB on its own.
 */
export class MultiNodeChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'serving-large', ...props });
    const common = {
      gpusPerReplica: 8,
      nodes: 2,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
    };
    const llama = new VllmInferenceService(this, 'llama', {
      ...common,
      name: 'llama-405b',
      modelId: 'meta-llama/Llama-3.1-405B-Instruct',
      revision: 'be673f326cab4cd22ccfef76109faf68e41aa5f1',
      modelSize: Size.gibibytes(757),
      replicas: 2,
      maxModelLen: 32768,
      modelCache: ModelCache.sharedClaim({ claimName: 'llama-405b-cache' }),
      // p5.48xlarge: 32 EFA interfaces per node; EFA needs no IPC_LOCK, so the pods stay restricted.
      rdma: Rdma.efa(32),
    });
    new InferenceServiceMonitoring(this, 'llama-monitoring', llama);
    new InferenceGateway(this, 'gateway', { name: 'llama-405b', services: [llama], gateway: GATEWAY });

    new SglangInferenceService(this, 'deepseek', {
      ...common,
      name: 'deepseek-v3',
      modelId: 'deepseek-ai/DeepSeek-V3',
      revision: 'e815299b0bcbac849fa540c768ef21845365c9eb',
      modelSize: Size.gibibytes(642),
      replicas: 2,
      // Its own claim: SGLang runs as root, vLLM as UID 2000, and neither could write the other's files.
      modelCache: ModelCache.sharedClaim({ claimName: 'deepseek-v3-cache' }),
      // Kueue (LeaderWorkerSet integration) admits each group whole, or none of it.
      queueName: 'serving',
    });
  }
}

export function addMultiNode(app: App): MultiNodeChart {
  return new MultiNodeChart(app, 'multi-node');
}
