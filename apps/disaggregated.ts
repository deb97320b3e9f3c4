import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  Autoscaler,
  Disaggregation,
  InferenceGateway,
  InferenceGatewayMonitoring,
  InferenceServiceMonitoring,
  ModelCache,
  PrefixCacheScoring,
  VllmInferenceService,
} from '../src';

/**
 * A coding assistant whose prompts are long (whole files, agent transcripts): a long prefill in the same batch as
 * other users' decodes stalls their tokens. The decode pool (tensor parallel 2) streams tokens behind llm-d-router's
 * routing sidecar; a prefill pool (tensor parallel 1, scaled on its own queue) computes the uncached part of long
 * prompts, and NIXL moves the KV blocks to the decode pod. The Endpoint Picker disaggregates a request when
 * at least 1024 of its prompt tokens are not cached on the decode pod it picked.
 */
export class DisaggregatedChart extends Chart {
  readonly llm: VllmInferenceService;
  readonly gateway: InferenceGateway;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'coding', ...props });
    this.llm = new VllmInferenceService(this, 'llm', {
      name: 'coder',
      modelId: 'Qwen/Qwen2.5-7B-Instruct',
      modelSize: Size.gibibytes(15),
      modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
      gpusPerReplica: 2,
      replicas: 2,
      disaggregation: Disaggregation.nixl({
        prefillGpusPerReplica: 1,
        prefillAutoscaling: {
          minReplicas: 1,
          maxReplicas: 4,
          // A prefill request leaves after its first token: a few long prompts in flight keep a pod's GPUs busy.
          targetRequestsInFlight: 8,
          autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
        },
        disaggregateFromTokens: 1024,
        // NIXL over TCP here, so the pods stay at the restricted level; `rdma: Rdma.sharedDevice()` moves the blocks
        // over RDMA, and IPC_LOCK then makes the pods privileged.
      }),
      serviceMonitor: true,
    });
    this.gateway = new InferenceGateway(this, 'gateway', {
      name: 'coder',
      services: [this.llm],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
      // The picker learns the blocks each pod holds from their KV events, so the decider counts a prompt's uncached
      // tokens from what the decode pod really has.
      prefixCacheScoring: PrefixCacheScoring.PRECISE,
      serviceMonitor: true,
    });
    new InferenceServiceMonitoring(this, 'monitoring', this.llm);
    new InferenceServiceMonitoring(this, 'prefill-monitoring', this.llm.prefill!);
    new InferenceGatewayMonitoring(this, 'gateway-monitoring', this.gateway);
  }
}

export function addDisaggregated(app: App): DisaggregatedChart {
  return new DisaggregatedChart(app, 'disaggregated');
}
