import { Chart, Duration, Size, Testing } from 'cdk8s';
import { Autoscaler, ModelCache } from '../../src';
import { expectCrdValid } from '../support/crd-schema';
import { findOne } from '../support/synth';
import { BASE, ENGINES, synthEngine } from './support';

describe.each(ENGINES)('$construct autoscaling on $runningMetric + $queueMetric', e => {
  // A batch limit every engine can derive a target from (SGLang sizes its own at start).
  const batch = { [e.batch.prop]: 64 };
  const make = (props: any = {}, namespace?: string) =>
    e.make(new Chart(Testing.app(), 'c', namespace ? { namespace } : {}), 'svc', { ...BASE, ...batch, ...props });
  const synth = (props: any = {}, namespace?: string) => synthEngine(e, { ...batch, ...props }, namespace);

  test('an autoscaling/v2 HPA on the requests in flight per pod; the StatefulSet has no replicas; the PDB holds', () => {
    const { objects, sts, svc } = synth({
      autoscaling: { minReplicas: 2, maxReplicas: 8, targetRequestsInFlight: 3 },
    });
    const hpa = findOne(objects, 'HorizontalPodAutoscaler');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'llm' });
    expect(hpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 8 });
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'Pods',
        pods: {
          metric: { name: `${e.container}_requests_in_flight` },
          target: { type: 'AverageValue', averageValue: 3 },
        },
      },
    ]);
    expect('replicas' in sts.spec).toBe(false);
    expect(findOne(objects, 'PodDisruptionBudget').spec.maxUnavailable).toBe(1);
    expect(svc.horizontalPodAutoscaler).toBeDefined();
  });

  test('the metric name the adapter serves can be set', () => {
    const { objects } = synth({
      autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.hpa({ metricName: 'queue_depth' }) },
    });
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.metrics[0].pods.metric.name).toBe('queue_depth');
  });

  test("a KEDA ScaledObject on the requests in flight of this version's pods, with a fallback", () => {
    const { objects, svc } = synth(
      {
        version: 3,
        autoscaling: {
          minReplicas: 1,
          maxReplicas: 4,
          autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring:9090' }),
        },
      },
      'serving',
    );
    const so = findOne(objects, 'ScaledObject');
    expect(so.apiVersion).toBe('keda.sh/v1alpha1');
    expect(so.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'llm-v3' });
    expect(so.spec).toMatchObject({ minReplicaCount: 1, maxReplicaCount: 4 });
    expect(so.spec.triggers).toEqual([
      {
        type: 'prometheus',
        metadata: {
          serverAddress: 'http://prometheus.monitoring:9090',
          query:
            `sum(max by (pod) (${e.runningMetric}{namespace="serving",pod=~"llm-v3-[0-9]+"}) + ` +
            `max by (pod) (${e.queueMetric}{namespace="serving",pod=~"llm-v3-[0-9]+"}))`,
          // 80% of the batch limit (64).
          threshold: '51',
          ignoreNullValues: 'false',
        },
      },
    ]);
    // A failing query (Prometheus down, no series) holds the current replicas instead of scaling down.
    expect(so.spec.fallback).toEqual({ failureThreshold: 3, replicas: 1, behavior: 'currentReplicasIfHigher' });
    // Valid against KEDA's CRD (v2.20.2): fallback.behavior, and string trigger metadata.
    expectCrdValid([so]);
    expect(svc.autoscalingLimits!.targetRequestsInFlight).toBe(51);
    expect(objects.some(o => o.kind === 'HorizontalPodAutoscaler')).toBe(false);
    expect(svc.scaledObject).toBeDefined();
  });

  test('KEDA without a namespace needs an explicit query', () => {
    expect(() =>
      make({ autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.keda({ serverAddress: 'http://p:9090' }) } }),
    ).toThrow(`${e.construct} 'svc': autoscaling.autoscaler query is needed when the chart has no namespace`);
    const { objects } = synth({
      autoscaling: {
        maxReplicas: 4,
        autoscaler: Autoscaler.keda({
          serverAddress: 'http://p:9090',
          query: 'sum(q)',
          authenticationRef: 'prom-auth',
        }),
      },
    });
    expect(findOne(objects, 'ScaledObject').spec.triggers[0]).toMatchObject({
      metadata: { query: 'sum(q)' },
      authenticationRef: { name: 'prom-auth' },
    });
  });

  test('scale-down stabilization is longer than a new replica takes to be capacity, by default and when set', () => {
    // A shared cache: the startup budget alone (15 GiB at 100 MB/s + 300 s warm-up).
    const shared = { modelSize: Size.gibibytes(15), modelCache: ModelCache.sharedClaim({ claimName: 'models' }) };
    const { objects, svc } = synth({ ...shared, autoscaling: { maxReplicas: 4 } });
    expect(svc.startupBudgetSeconds).toBe(470);
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.behavior.scaleDown.stabilizationWindowSeconds).toBe(530);
    expect(() =>
      make({ ...shared, autoscaling: { maxReplicas: 4, scaleDownStabilization: Duration.minutes(5) } }),
    ).toThrow(
      `${e.construct} 'svc': autoscaling.scaleDownStabilization must be longer than a new replica takes to be capacity, startup budget (470s) = 470s, or replicas are removed while their replacements still load the model (got 5m)`,
    );
    // A cache per replica: a scaled-up replica downloads first (15 GiB at 25 MB/s = 645 s).
    const own = synth({ modelSize: Size.gibibytes(15), autoscaling: { maxReplicas: 4 } });
    expect(findOne(own.objects, 'HorizontalPodAutoscaler').spec.behavior.scaleDown.stabilizationWindowSeconds).toBe(
      470 + 645 + 60,
    );
    expect(() =>
      make({
        modelSize: Size.gibibytes(15),
        autoscaling: { maxReplicas: 4, scaleDownStabilization: Duration.minutes(10) },
      }),
    ).toThrow(
      `${e.construct} 'svc': autoscaling.scaleDownStabilization must be longer than a new replica takes to be capacity, download at 25 MB/s (645s) + startup budget (470s) = 1115s, or replicas are removed while their replacements still load the model (got 10m)`,
    );
    expect(() => make({ maxModelLoadTime: Duration.minutes(70), autoscaling: { maxReplicas: 4 } })).toThrow(
      `${e.construct} 'svc': autoscaling needs a scale-down window longer than a new replica takes to be capacity, startup budget (4200s) = 4200s, but the HPA allows at most 3600s`,
    );
    expect(() =>
      make({
        modelId: 'meta-llama/Llama-3.1-70B-Instruct',
        modelSize: Size.gibibytes(132),
        modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(200) }),
        autoscaling: { maxReplicas: 4 },
      }),
    ).toThrow(
      /autoscaling needs a scale-down window .* download at 25 MB\/s \(5670s\) .* use ModelCache\.sharedClaim\(\) so new replicas skip the download/,
    );
  });

  test('replicas and autoscaling together are refused', () => {
    expect(() => make({ replicas: 2, autoscaling: { maxReplicas: 4 } })).toThrow(
      `${e.construct} 'svc': replicas must not be set with autoscaling: the autoscaler owns the replica count (use autoscaling.minReplicas) (got 2)`,
    );
  });

  test.each([
    [{ maxReplicas: 0 }, 'autoscaling.maxReplicas'],
    [{ minReplicas: 0, maxReplicas: 2 }, 'autoscaling.minReplicas'],
    [{ minReplicas: 3, maxReplicas: 2 }, 'autoscaling.maxReplicas must be at least minReplicas (3)'],
    [{ maxReplicas: 2, targetRequestsInFlight: 0 }, 'autoscaling.targetRequestsInFlight'],
    [{ maxReplicas: 2, targetQueueDepth: 5 }, 'autoscaling.targetQueueDepth is replaced by targetRequestsInFlight'],
    [{ maxReplicas: 2, maxReplica: 3 }, "autoscaling.maxReplica is not a known prop; did you mean 'maxReplicas'?"],
    [
      { maxReplicas: 2, autoscaler: 'keda' },
      'autoscaling.autoscaler must be made with Autoscaler.hpa() or Autoscaler.keda()',
    ],
    [
      { maxReplicas: 2, autoscaler: Autoscaler.keda({ serverAddress: 'prometheus:9090' }) },
      'autoscaling.autoscaler serverAddress must be an http(s) URL',
    ],
    [{ maxReplicas: 2, autoscaler: Autoscaler.keda(undefined as any) }, 'autoscaling.autoscaler must be an object'],
    [
      { maxReplicas: 2, autoscaler: Autoscaler.hpa({ metricNme: 'q' } as any) },
      "autoscaling.autoscaler.metricNme is not a known prop; did you mean 'metricName'?",
    ],
    [
      { maxReplicas: 2, autoscaler: Autoscaler.hpa({ metricName: 'a/b' }) },
      'autoscaling.autoscaler metricName must be a metric name',
    ],
  ])('%p is refused naming %s', (autoscaling, message) => {
    expect(() => make({ autoscaling }, 'ns')).toThrow(`${e.construct} 'svc': ${message}`);
  });

  test("the target is 80% of the batch limit: the construct's prop, else the engine's default", () => {
    const at = (props: any) => synthEngine(e, { ...props, autoscaling: { maxReplicas: 4 } }).svc.autoscalingLimits;
    expect(at({ [e.batch.prop]: 10 })!.targetRequestsInFlight).toBe(8);
    if (e.batch.defaultTarget !== undefined) {
      expect(at({})!.targetRequestsInFlight).toBe(e.batch.defaultTarget);
      expect(synthEngine(e).svc.targetRequestsInFlight).toBe(e.batch.defaultTarget);
    } else {
      // SGLang sizes its batch from the KV cache at start: no number to derive a target from.
      expect(() => e.make(new Chart(Testing.app(), 'c'), 'svc', { ...BASE, autoscaling: { maxReplicas: 4 } })).toThrow(
        `${e.construct} 'svc': autoscaling.targetRequestsInFlight is needed, or ${e.batch.prop}: SGLang derives`,
      );
      expect(synthEngine(e).svc.targetRequestsInFlight).toBeUndefined();
    }
  });

  test('scale-up at most doubles per twice the capacity delay; the HPA caps the period at 1800 s', () => {
    const shared = { modelSize: Size.gibibytes(15), modelCache: ModelCache.sharedClaim({ claimName: 'models' }) };
    const up = (props: any) =>
      findOne(synth({ ...props, autoscaling: { maxReplicas: 4 } }).objects, 'HorizontalPodAutoscaler').spec.behavior
        .scaleUp;
    // Capacity 470 s: double per 940 s.
    expect(up(shared)).toEqual({
      stabilizationWindowSeconds: 0,
      selectPolicy: 'Max',
      policies: [{ type: 'Percent', value: 100, periodSeconds: 940 }],
    });
    // Capacity 1500 s: the period is clipped to 1800 s, the share to 1800 / 3000 = 60%.
    expect(up({ ...shared, maxModelLoadTime: Duration.seconds(1500) }).policies).toEqual([
      { type: 'Percent', value: 60, periodSeconds: 1800 },
    ]);
  });
});
