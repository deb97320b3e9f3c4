import { Chart, Duration, Size, Testing } from 'cdk8s';
import { parse } from 'yaml';
import {
  Autoscaler,
  AutoscalingOptions,
  FlowControlOptions,
  InferenceGateway,
  ModelCache,
  VllmInferenceService,
} from '../../src';
import { KEDA_POLLING_SECONDS } from '../../src/inference/autoscaling';
import { expectCrdValid } from '../support/crd-schema';
import { expectValidOutput } from '../support/valid-output';

const KEDA = Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring.svc:9090' });

/** A chart of one vLLM service scaled by `autoscaling`, behind a gateway when `flowControl` is not `false`. */
function make(o: {
  autoscaling?: Partial<AutoscalingOptions>;
  flowControl?: FlowControlOptions | false;
  requestTimeout?: Duration;
}) {
  const app = Testing.app();
  const chart = new Chart(app, 'c', { namespace: 'assistant' });
  const svc = new VllmInferenceService(chart, 'llm', {
    name: 'assistant',
    modelId: 'Qwen/Qwen2.5-7B-Instruct',
    modelSize: Size.gibibytes(15),
    modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
    autoscaling: { minReplicas: 0, maxReplicas: 4, autoscaler: KEDA, ...o.autoscaling },
  });
  const gateway =
    o.flowControl === false
      ? undefined
      : new InferenceGateway(chart, 'gw', {
          name: 'assistant',
          services: [svc],
          gateway: { name: 'igw' },
          serviceMonitor: true,
          ...(o.flowControl ? { flowControl: o.flowControl } : {}),
          ...(o.requestTimeout ? { requestTimeout: o.requestTimeout } : {}),
        });
  return { app, chart, svc, gateway };
}

const pickerConfig = (objects: any[]) => {
  const args = objects.find(o => o.kind === 'Deployment' && o.metadata.name === 'assistant-epp').spec.template.spec
    .containers[0].args;
  return parse(args[args.indexOf('--config-text') + 1]);
};

describe('scale to and from zero', () => {
  test("the ScaledObject goes to zero and wakes on the picker's queue; the TTL and the route's timeout follow the cold start", () => {
    const { chart, svc, gateway } = make({ flowControl: {} });
    const objects = Testing.synth(chart);
    expectValidOutput(objects);
    const scaled = objects.find(o => o.kind === 'ScaledObject');
    expectCrdValid([scaled]);
    expect(scaled.spec.minReplicaCount).toBe(0);
    // The wait before 1 -> 0 is the scale-down window; a failing Prometheus keeps a replica, not zero.
    expect(scaled.spec.cooldownPeriod).toBe(svc.autoscalingLimits!.scaleDownStabilizationSeconds);
    expect(scaled.spec.fallback.replicas).toBe(1);
    expect(scaled.spec.triggers.map((t: any) => [t.metadata.query, t.metadata.ignoreNullValues])).toEqual([
      [expect.stringMatching(/^sum\(max by \(pod\) \(vllm:num_requests_running/), 'true'],
      ['sum(llm_d_epp_flow_control_queue_size{namespace="assistant",inference_pool="assistant"})', 'true'],
    ]);
    const coldStart = 30 + KEDA_POLLING_SECONDS + svc.capacitySeconds;
    expect(gateway!.flowControlRequestTtlSeconds).toBe(coldStart + 60);
    expect(pickerConfig(objects).flowControl.defaultRequestTTL).toBe(`${coldStart + 60}s`);
    expect(objects.find(o => o.kind === 'HTTPRoute').spec.rules[0].timeouts.request).toBe(`${coldStart + 60 + 300}s`);
  });

  test('a service that does not go to zero keeps the triggers that treat no data as an error', () => {
    const { chart } = make({ autoscaling: { minReplicas: 1 }, flowControl: {} });
    const scaled = Testing.synth(chart).find(o => o.kind === 'ScaledObject');
    expect(scaled.spec.cooldownPeriod).toBeUndefined();
    expect(scaled.spec.triggers.map((t: any) => t.metadata.ignoreNullValues)).toEqual(['false']);
    expect(scaled.spec.fallback.replicas).toBe(1);
  });

  test.each<[string, () => unknown, RegExp]>([
    [
      'an HPA, which never scales to zero',
      () => make({ autoscaling: { autoscaler: Autoscaler.hpa() } }),
      /autoscaling\.minReplicas must be at least 1 with Autoscaler\.hpa\(\): an HPA never scales to zero/,
    ],
    [
      'a gateway without flow control',
      () => make({}),
      /InferenceGateway 'gw': flowControl is needed for assistant, which scales to zero \(autoscaling\.minReplicas 0\)/,
    ],
    [
      'a TTL shorter than the cold start',
      () => make({ flowControl: { requestTtl: Duration.seconds(120) } }),
      /flowControl\.requestTtl must be longer than the cold start of a service at zero \(\d+s: the picker's scrape interval, KEDA's 30s poll and the replica's capacity delay\)/,
    ],
    [
      "a route timeout shorter than the queue's TTL",
      () => make({ flowControl: {}, requestTimeout: Duration.seconds(300) }),
      /flowControl\.requestTtl must be shorter than requestTimeout \(300s\)/,
    ],
  ])('refused: %s', (_, build, message) => {
    expect(build).toThrow(message);
  });

  test('a service at zero that no gateway routes to is refused at synth', () => {
    const { app } = make({ flowControl: false });
    expect(() => app.synth()).toThrow(
      /VllmInferenceService 'llm': autoscaling\.minReplicas 0 needs an InferenceGateway with flowControl routing to the service/,
    );
  });
});
