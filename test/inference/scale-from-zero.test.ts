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
import { PLACEMENT_ALLOWANCE_SECONDS } from '../../src/inference/inference-gateway';
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
    const window = svc.autoscalingLimits!.scaleDownStabilizationSeconds;
    expect([scaled.spec.cooldownPeriod, scaled.spec.initialCooldownPeriod]).toEqual([window, window]);
    expect(scaled.spec.fallback.replicas).toBe(1);
    // One trigger: the HPA takes the largest of its metrics, so the picker's queue adds to the requests in flight.
    expect(scaled.spec.triggers).toHaveLength(1);
    const { query, ignoreNullValues } = scaled.spec.triggers[0].metadata;
    expect(ignoreNullValues).toBe('true');
    expect(query).toMatch(/^\(sum\(max by \(pod\) \(vllm:num_requests_running.* or vector\(0\)\) \+ /);
    expect(query).toMatch(
      / \+ \(sum\(clamp_min\(llm_d_epp_flow_control_queue_size\{namespace="assistant",inference_pool="assistant"\}, 0\)\) or vector\(0\)\)$/,
    );
    const coldStart = 30 + KEDA_POLLING_SECONDS + svc.capacitySeconds;
    const ttl = coldStart + PLACEMENT_ALLOWANCE_SECONDS;
    expect(gateway!.flowControlRequestTtlSeconds).toBe(ttl);
    expect(pickerConfig(objects).flowControl.defaultRequestTTL).toBe(`${ttl}s`);
    expect(objects.find(o => o.kind === 'HTTPRoute').spec.rules[0].timeouts.request).toBe(`${ttl + 300}s`);
  });

  test('a service that does not go to zero counts the queue too, and still treats no in-flight data as an error', () => {
    const { chart } = make({ autoscaling: { minReplicas: 1 }, flowControl: {} });
    const scaled = Testing.synth(chart).find(o => o.kind === 'ScaledObject');
    expect(scaled.spec.cooldownPeriod).toBeUndefined();
    const { query, ignoreNullValues } = scaled.spec.triggers[0].metadata;
    expect(ignoreNullValues).toBe('false');
    // An unscraped service reads as an error (the fallback holds), not as idle: no `or vector(0)` on in flight.
    expect(query).toMatch(/^\(sum\(max by \(pod\) .*\)\) \+ \(sum\(clamp_min\(llm_d_epp_flow_control_queue_size/);
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
    [
      'an HPA-scaled service behind flow control, which never sees the queue',
      () => {
        const chart = new Chart(Testing.app(), 'h', { namespace: 'assistant' });
        const svc = new VllmInferenceService(chart, 'llm', {
          name: 'assistant',
          modelId: 'Qwen/Qwen2.5-7B-Instruct',
          autoscaling: { maxReplicas: 4 },
        });
        return new InferenceGateway(chart, 'gw', {
          name: 'assistant',
          services: [svc],
          gateway: { name: 'igw' },
          flowControl: {},
        });
      },
      /services\[0\] must scale with Autoscaler\.keda\(\) \(or not autoscale\) under flowControl/,
    ],
    [
      'no ServiceMonitor for the picker, whose queue KEDA reads',
      () => {
        const chart = new Chart(Testing.app(), 'm', { namespace: 'assistant' });
        const svc = new VllmInferenceService(chart, 'llm', {
          name: 'assistant',
          modelId: 'Qwen/Qwen2.5-7B-Instruct',
          autoscaling: { minReplicas: 0, maxReplicas: 4, autoscaler: KEDA },
        });
        return new InferenceGateway(chart, 'gw', {
          name: 'assistant',
          services: [svc],
          gateway: { name: 'igw' },
          flowControl: {},
        });
      },
      /serviceMonitor must be true with flowControl and KEDA-scaled services \(assistant\): KEDA reads the picker's queue from Prometheus/,
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
