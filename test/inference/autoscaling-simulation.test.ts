import { Chart, Duration, Size, Testing } from 'cdk8s';
import { Autoscaler, ModelCache, VllmInferenceService } from '../../src';
import { findOne } from '../support/synth';
import { Behavior, reversals, simulate, Simulation } from './autoscaling-simulation';

// The library's autoscaling through a model of the HPA (what KEDA's ScaledObject becomes) and of a
// fleet whose new replicas serve 15 minutes after they are asked for: the behavior and the target
// come from the synthesized ScaledObject. docs/serving.md quotes these figures.

const BATCH = 256;
const CAPACITY = 900;
const HOURS = 3600;

/** A vLLM service on a shared cache whose startup budget (the capacity delay) is 900 s. */
function scaledObject(maxReplicas: number) {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  const svc = new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    maxModelLoadTime: Duration.seconds(CAPACITY),
    modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
    autoscaling: { maxReplicas, autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus:9090' }) },
  });
  expect(svc.capacitySeconds).toBe(CAPACITY);
  const so = findOne(Testing.synth(chart), 'ScaledObject');
  return {
    behavior: so.spec.advanced.horizontalPodAutoscalerConfig.behavior as Behavior,
    target: Number(so.spec.triggers[0].metadata.threshold),
    minReplicas: so.spec.minReplicaCount,
    maxReplicas: so.spec.maxReplicaCount,
  };
}

function run(over: Partial<Simulation> & Pick<Simulation, 'load' | 'initialReplicas'>) {
  return simulate({
    ...scaledObject(12),
    signal: 'inFlight',
    capacitySeconds: CAPACITY,
    batchLimit: BATCH,
    serviceSeconds: 30,
    clientTimeoutSeconds: 300,
    durationSeconds: 8 * HOURS,
    ...over,
  });
}

const replicasOf = (o: { samples: { t: number; replicas: number }[] }, from: number, to = Infinity) =>
  o.samples.filter(s => s.t >= from && s.t < to).map(s => s.replicas);

describe('autoscaling simulation (vLLM, batch 256, 900 s until a new replica serves, max 12)', () => {
  test('the target is 80% of the batch limit', () => {
    expect(scaledObject(12).target).toBe(204);
  });

  test('a steady load worth 3.5 replicas settles at 5 (3.5 / 0.8 = 4.4) and stays there', () => {
    const o = run({ load: () => 3.5, initialReplicas: 4 });
    // One step up while the queue of the first minutes drains, one back, then steady.
    expect(reversals(o.samples)).toBeLessThanOrEqual(1);
    expect(Math.max(...replicasOf(o, 0))).toBeLessThanOrEqual(6);
    expect(new Set(replicasOf(o, 2 * HOURS))).toEqual(new Set([5]));
    expect(o.abandoned).toBe(0);
  });

  test('the queue alone (the former policy: 5 waiting per replica) oscillates under the same load', () => {
    const so = scaledObject(12);
    const o = run({
      // The former behavior: the default scale-up (4 pods or 100% per 15 s), the same scale-down.
      behavior: { scaleDown: so.behavior.scaleDown },
      signal: 'waiting',
      target: 5,
      load: () => 3.5,
      initialReplicas: 4,
    });
    expect(reversals(o.samples)).toBeGreaterThanOrEqual(10);
    const late = replicasOf(o, 2 * HOURS);
    expect(Math.min(...late)).toBeLessThanOrEqual(4);
    expect(Math.max(...late)).toBe(12);
  });

  test('a burst from 1 to 6 replicas worth (8 needed) reaches 8 in two doublings and launches no more', () => {
    const burst = (t: number) => (t < 1 * HOURS ? 1 : t < 4 * HOURS ? 6 : 1);
    const o = run({ load: burst, initialReplicas: 2 });
    const during = replicasOf(o, 1 * HOURS, 4 * HOURS);
    expect(Math.max(...during)).toBe(8);
    // Asked for within 3 capacity delays of the burst (2 -> 4 -> 8), and held until it ends.
    const reached = o.samples.find(s => s.t >= HOURS && s.replicas >= 8)!.t;
    expect(reached - HOURS).toBeLessThanOrEqual(3 * CAPACITY);
    expect(new Set(replicasOf(o, reached, 4 * HOURS))).toEqual(new Set([8]));
    // After the burst: back down to what the load needs (1 / 0.8 -> 2).
    expect(replicasOf(o, 6 * HOURS).every(r => r === 2)).toBe(true);
  });

  test('without the scale-up policy the same burst asks for every replica at once', () => {
    const so = scaledObject(12);
    const burst = (t: number) => (t < 1 * HOURS ? 1 : t < 4 * HOURS ? 6 : 1);
    const o = run({ behavior: { scaleDown: so.behavior.scaleDown }, load: burst, initialReplicas: 2 });
    expect(Math.max(...replicasOf(o, HOURS, HOURS + CAPACITY))).toBe(12);
  });

  test('an HPA on the Pods metric (loading pods count as 0 on a scale-up) settles the same way', () => {
    const steady = run({ metric: 'pods', load: () => 3.5, initialReplicas: 4 });
    expect(new Set(replicasOf(steady, 2 * HOURS))).toEqual(new Set([5]));
    const burst = run({ metric: 'pods', load: t => (t < HOURS ? 1 : t < 4 * HOURS ? 6 : 1), initialReplicas: 2 });
    expect(Math.max(...replicasOf(burst, HOURS, 4 * HOURS))).toBe(8);
  });
});

describe('the limit of the policy: a cache per replica (download 645 s + load 900 s)', () => {
  // 15 GiB downloaded at 25 MB/s by every new replica: 1545 s until it serves, past what the HPA's
  // 1800 s policy period can wait twice for, so the doubling compounds (documented in docs/serving.md).
  test('a steady load still settles; a burst overshoots to the maximum before settling at 8', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    const svc = new VllmInferenceService(chart, 'llm', {
      name: 'llm',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      modelSize: Size.gibibytes(15),
      maxModelLoadTime: Duration.seconds(CAPACITY),
      autoscaling: { maxReplicas: 12, autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus:9090' }) },
    });
    expect(svc.capacitySeconds).toBe(1545);
    const so = findOne(Testing.synth(chart), 'ScaledObject');
    const over = {
      behavior: so.spec.advanced.horizontalPodAutoscalerConfig.behavior as Behavior,
      capacitySeconds: 1545,
      pendingSeconds: 645,
    };
    const steady = run({ ...over, load: () => 3.5, initialReplicas: 4 });
    expect(new Set(replicasOf(steady, 2 * HOURS))).toEqual(new Set([5]));
    const burst = run({ ...over, load: t => (t < HOURS ? 1 : t < 4 * HOURS ? 6 : 1), initialReplicas: 2 });
    expect(Math.max(...replicasOf(burst, HOURS, 4 * HOURS))).toBe(12);
    expect(new Set(replicasOf(burst, 3 * HOURS, 4 * HOURS))).toEqual(new Set([8]));
  });
});
