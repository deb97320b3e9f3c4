import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  Autoscaler,
  InferenceGateway,
  InferenceGatewayMonitoring,
  InferenceServiceMonitoring,
  KvCacheOffload,
  ModelCache,
  VllmInferenceService,
} from '../src';

/**
 * An internal assistant that is idle most of the day: vLLM scales to zero when no request has come for its scale-down
 * window, and back from zero when one does. The Endpoint Picker's flow control holds that request in its queue
 * through the cold start (its TTL is derived from the replica's capacity delay), and KEDA wakes the service on the
 * queue's size. The cache is shared, so a cold start loads weights without downloading them; long shared prompts
 * wait in a host-memory KV tier.
 */
export class ScaleFromZeroChart extends Chart {
  readonly llm: VllmInferenceService;
  readonly gateway: InferenceGateway;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'assistant', ...props });
    this.llm = new VllmInferenceService(this, 'llm', {
      name: 'assistant',
      modelId: 'Qwen/Qwen2.5-7B-Instruct',
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      modelSize: Size.gibibytes(15),
      modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
      kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(16)),
      autoscaling: {
        minReplicas: 0,
        maxReplicas: 4,
        autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
      },
      serviceMonitor: true,
    });
    this.gateway = new InferenceGateway(this, 'gateway', {
      name: 'assistant',
      services: [this.llm],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
      // The queue that holds the first request after an idle spell, and wakes KEDA.
      flowControl: {},
      serviceMonitor: true,
    });
    new InferenceServiceMonitoring(this, 'monitoring', this.llm);
    new InferenceGatewayMonitoring(this, 'gateway-monitoring', this.gateway);
  }
}

export function addScaleFromZero(app: App): ScaleFromZeroChart {
  return new ScaleFromZeroChart(app, 'scale-from-zero');
}
