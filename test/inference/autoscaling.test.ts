import { Chart, Duration, Size, Testing } from 'cdk8s';
import { Autoscaler, ModelCache } from '../../src';
import { findOne } from '../support/synth';
import { BASE, ENGINES, synthEngine } from './support';

describe.each(ENGINES)('$construct autoscaling on $queueMetric', e => {
  const make = (props: any = {}, namespace?: string) =>
    e.make(new Chart(Testing.app(), 'c', namespace ? { namespace } : {}), 'svc', { ...BASE, ...props });

  test('an autoscaling/v2 HPA on the per-pod queue metric; the StatefulSet has no replicas; the PDB holds', () => {
    const { objects, sts, svc } = synthEngine(e, {
      autoscaling: { minReplicas: 2, maxReplicas: 8, targetQueueDepth: 3 },
    });
    const hpa = findOne(objects, 'HorizontalPodAutoscaler');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'llm' });
    expect(hpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 8 });
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'Pods',
        pods: { metric: { name: e.queueMetric.replace(/:/g, '_') }, target: { type: 'AverageValue', averageValue: 3 } },
      },
    ]);
    expect('replicas' in sts.spec).toBe(false);
    expect(findOne(objects, 'PodDisruptionBudget').spec.maxUnavailable).toBe(1);
    expect(svc.horizontalPodAutoscaler).toBeDefined();
  });

  test('the metric name the adapter serves can be set', () => {
    const { objects } = synthEngine(e, {
      autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.hpa({ metricName: 'queue_depth' }) },
    });
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.metrics[0].pods.metric.name).toBe('queue_depth');
  });

  test("a KEDA ScaledObject with a Prometheus trigger on the queue of this version's pods", () => {
    const { objects, svc } = synthEngine(
      e,
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
          query: `sum(max by (pod) (${e.queueMetric}{namespace="serving",pod=~"llm-v3-[0-9]+"}))`,
          threshold: '5',
        },
      },
    ]);
    expect(objects.some(o => o.kind === 'HorizontalPodAutoscaler')).toBe(false);
    expect(svc.scaledObject).toBeDefined();
  });

  test('KEDA without a namespace needs an explicit query', () => {
    expect(() =>
      make({ autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.keda({ serverAddress: 'http://p:9090' }) } }),
    ).toThrow(`${e.construct} 'svc': autoscaling.autoscaler query is needed when the chart has no namespace`);
    const { objects } = synthEngine(e, {
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
    const { objects, svc } = synthEngine(e, { ...shared, autoscaling: { maxReplicas: 4 } });
    expect(svc.startupBudgetSeconds).toBe(470);
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.behavior.scaleDown.stabilizationWindowSeconds).toBe(530);
    expect(() =>
      make({ ...shared, autoscaling: { maxReplicas: 4, scaleDownStabilization: Duration.minutes(5) } }),
    ).toThrow(
      `${e.construct} 'svc': autoscaling.scaleDownStabilization must be longer than a new replica takes to be capacity, startup budget (470s) = 470s, or replicas are removed while their replacements still load the model (got 5m)`,
    );
    // A cache per replica: a scaled-up replica downloads first (15 GiB at 25 MB/s = 645 s).
    const own = synthEngine(e, { modelSize: Size.gibibytes(15), autoscaling: { maxReplicas: 4 } });
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
    [{ maxReplicas: 2, targetQueueDepth: 0 }, 'autoscaling.targetQueueDepth'],
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
});
