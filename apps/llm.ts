import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { Autoscaler, InferenceServiceMonitoring, KvCacheOffload, ModelCache, VllmInferenceService } from '../src';

/**
 * vLLM serving Llama 3.1 8B, autoscaled by KEDA on `vllm:num_requests_waiting` between 2 and 8
 * replicas, every replica reading one ReadWriteMany model cache that is filled once. The pod
 * runs as the image's non-root user and meets the restricted Pod Security Standard. Prefixes shared by many
 * requests (system prompts, multi-turn chats) are kept by LMCache in host memory and on the node's disk.
 */
export class LlmChart extends Chart {
  readonly llm: VllmInferenceService;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'serving', ...props });
    this.llm = new VllmInferenceService(this, 'llm', {
      name: 'llm',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      gpusPerReplica: 1,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      // 8.03 B parameters in bf16: 16.1 GB (15 GiB) of safetensors.
      modelSize: Size.gibibytes(15),
      maxModelLen: 8192,
      // Clients that used TGI's placeholder model name keep working after the migration.
      servedModelNames: ['meta-llama/Llama-3.1-8B-Instruct', 'tgi'],
      modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
      // 16 GiB of pinned host memory, then 200 GiB of node disk (an emptyDir requested as ephemeral storage).
      kvCacheOffload: KvCacheOffload.lmcache({ cpu: Size.gibibytes(16), disk: Size.gibibytes(200) }),
      autoscaling: {
        minReplicas: 2,
        maxReplicas: 8,
        targetRequestsInFlight: 200,
        autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
      },
      serviceMonitor: true,
      serviceMonitorLabels: { release: 'kube-prometheus-stack' },
    });
    new InferenceServiceMonitoring(this, 'monitoring', this.llm, { timeToFirstTokenTarget: Duration.seconds(2) });
  }
}

export function addLlm(app: App): LlmChart {
  return new LlmChart(app, 'llm');
}
