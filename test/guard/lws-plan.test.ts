// The plan of a LeaderWorkerSet rollout (kubernetes-sigs/lws v0.10.0: leaderworkerset_controller.go
// rollingUpdateParameters / rollingUpdatePartition, pod_controller.go, revision_utils.go getPatch),
// on manifests written by hand: the constructs that emit LeaderWorkerSets live elsewhere.
import type { KubeObject } from '../../src/guard/normalize';
import { plan } from '../../src/guard/plan';
import { formatPlan } from '../../src/guard/plan-report';
import { liveExport } from './live-export';

/** A pod: 60 s grace, a startup budget of 30 + 10 × 9 = 120 s, `gpus` GPUs. */
const pod = (image = 'i:1', gpus = 2, grace = 60, startup = 9) => ({
  spec: {
    terminationGracePeriodSeconds: grace,
    containers: [
      {
        name: 'c',
        image,
        resources: { limits: { 'nvidia.com/gpu': gpus } },
        startupProbe: {
          httpGet: { path: '/', port: 80 },
          initialDelaySeconds: 30,
          periodSeconds: 10,
          failureThreshold: startup,
        },
      },
    ],
  },
});
function lws(spec: Record<string, any> = {}, template: Record<string, any> = {}): KubeObject {
  return {
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { name: 'big', namespace: 'n' },
    spec: { replicas: 3, leaderWorkerTemplate: { size: 4, workerTemplate: pod(), ...template }, ...spec },
  };
}
const ru = (c: object) => ({ rolloutStrategy: { type: 'RollingUpdate', rollingUpdateConfiguration: c } });
const bumped = (spec: Record<string, any> = {}, template: Record<string, any> = {}) =>
  lws(spec, { workerTemplate: pod('i:2'), ...template });
const planOf = (before: KubeObject, after: KubeObject, serverVersion?: string) =>
  plan([before], [after], { serverVersion }).workloads[0];
const STEP = 60 + 120;

describe('plan: a LeaderWorkerSet whose leader pods change without a new revision', () => {
  // constructLeaderStatefulSetApplyConfiguration copies the exclusive-topology annotation onto the leader
  // StatefulSet's pod template: adding, changing or removing it replaces every leader, and each group with it.
  const placed = (key?: string) => {
    const o = lws();
    return key === undefined
      ? o
      : { ...o, metadata: { ...o.metadata, annotations: { 'leaderworkerset.sigs.k8s.io/exclusive-topology': key } } };
  };
  test.each([
    [undefined, 'rack'],
    ['rack', 'block'],
    ['rack', undefined],
  ])('exclusive-topology %p -> %p restarts every group', (from, to) => {
    const w = planOf(placed(from), placed(to));
    expect(w).toMatchObject({ restarts: true, unit: 'group', pods: { min: 3, max: 3 } });
    expect(w.changes).toEqual(['metadata.annotations.leaderworkerset.sigs.k8s.io/exclusive-topology']);
  });
  test('the leaders roll in place: no surge groups, capacity drops by a group at a time even with maxSurge', () => {
    const surged = (key?: string) => ({
      ...placed(key),
      spec: { ...placed(key).spec, ...ru({ maxUnavailable: 0, maxSurge: 1 }) },
    });
    for (const version of ['1.32', '1.35']) {
      const w = planOf(surged(), surged('rack'), version);
      expect(w).toMatchObject({
        restarts: true,
        pods: { min: 3, max: 3 },
        perStep: 1,
        seconds: { min: 3 * STEP, max: 3 * STEP },
        gpusDuringRollout: { min: 24, max: 24 },
      });
      expect(w.note).toMatch(
        /without a new revision: the leader StatefulSet replaces its pods in place.*no surge groups, (1 group\(s\)|one group) out of service at a time/,
      );
    }
    // The same strategy with a new revision starts the surge group first.
    expect(
      planOf(surged('rack'), {
        ...surged('rack'),
        spec: { ...surged('rack').spec, leaderWorkerTemplate: { size: 4, workerTemplate: pod('i:2') } },
      }).gpusDuringRollout,
    ).toEqual({ min: 32, max: 32 });
  });

  test('another annotation of the LeaderWorkerSet restarts nothing', () => {
    const o = lws();
    const w = planOf(o, { ...o, metadata: { ...o.metadata, annotations: { team: 'x' } } });
    expect(w.restarts).toBe(false);
  });
});

describe('plan: a LeaderWorkerSet whose templates change', () => {
  test('replaces groups, not pods, one at a time by default (maxUnavailable 1, maxSurge 0)', () => {
    const w = planOf(lws(), bumped());
    expect(w).toMatchObject({
      restarts: true,
      mode: 'rolling',
      unit: 'group',
      pods: { min: 3, max: 3 },
      perStep: 1,
      drainSeconds: 60,
      startupSeconds: 120,
      seconds: { min: 3 * STEP, max: 3 * STEP },
      changes: ['leaderWorkerTemplate.workerTemplate.spec.containers[c].image'],
    });
    expect(w.note).toMatch(
      /^RollingUpdate by group of 4 pod\(s\); maxUnavailable 1, maxSurge 0: 3 group\(s\), 1 at a time/,
    );
    expect(formatPlan(plan([lws()], [bumped()]))).toMatch(/24 GPU\(s\) \(8 per group\)/);
  });

  test('GPUs per group: the leader (its own template, or the workers’) plus size - 1 workers', () => {
    // No leader template: 4 pods of 2.
    expect(planOf(lws(), bumped())).toMatchObject({ gpusPerPod: 8, gpus: { min: 24, max: 24 } });
    // A leader of 1 GPU: 1 + 3 × 2.
    const leader = { leaderTemplate: pod('i:1', 1) };
    expect(planOf(lws({}, leader), bumped({}, leader))).toMatchObject({
      gpusPerPod: 7,
      gpus: { min: 21, max: 21 },
      gpusDuringRollout: { min: 21, max: 21 },
    });
  });

  test('maxUnavailable and maxSurge: surge groups first, then maxUnavailable + maxSurge at a time (1.35+)', () => {
    // 6 groups, maxUnavailable 2, maxSurge 1: the first wave replaces 2 beside the surge group,
    // then 3 at a time: 1 + ceil(4 / 3) = 3 waves. The surge group holds 8 GPUs more.
    const before = lws({ replicas: 6, ...ru({ maxUnavailable: 2, maxSurge: 1 }) });
    const after = bumped({ replicas: 6, ...ru({ maxUnavailable: 2, maxSurge: 1 }) });
    expect(planOf(before, after, '1.35')).toMatchObject({
      perStep: 3,
      seconds: { min: 3 * STEP, max: 3 * STEP },
      gpus: { min: 48, max: 48 },
      gpusDuringRollout: { min: 56, max: 56 },
    });
    // Before 1.35 the leader StatefulSet's maxUnavailable is ignored (MaxUnavailableStatefulSet off by
    // default): one leader, so one group, at a time; the surge group still starts first.
    const old = planOf(before, after, '1.34');
    expect(old).toMatchObject({ perStep: 1, seconds: { min: 6 * STEP, max: 6 * STEP } });
    expect(old.note).toMatch(/one group at a time: before 1\.35 .* MaxUnavailableStatefulSet/);
  });

  test('maxUnavailable 0 with maxSurge 1: the surge group, then one group per wave (not 2 at a time)', () => {
    const w = planOf(
      lws(ru({ maxUnavailable: 0, maxSurge: 1 })),
      bumped(ru({ maxUnavailable: 0, maxSurge: 1 })),
      '1.35',
    );
    expect(w).toMatchObject({
      perStep: 1,
      seconds: { min: 4 * STEP, max: 4 * STEP },
      gpusDuringRollout: { min: 32, max: 32 },
    });
  });

  test('percentages of replicas: maxUnavailable rounds down, maxSurge up', () => {
    // 4 groups: 50% -> 2 unavailable, 10% -> 1 surge (0.4 rounded up).
    const c = ru({ maxUnavailable: '50%', maxSurge: '10%' });
    const w = planOf(lws({ replicas: 4, ...c }), bumped({ replicas: 4, ...c }), '1.35');
    expect(w).toMatchObject({ perStep: 3, seconds: { min: 2 * STEP, max: 2 * STEP } });
    expect(w.note).toMatch(/maxUnavailable 2, maxSurge 1/);
  });

  test('a partition keeps the groups below it on the old revision', () => {
    const c = ru({ partition: 2 });
    const w = planOf(lws({ replicas: 5, ...c }), bumped({ replicas: 5, ...c }));
    expect(w).toMatchObject({ pods: { min: 3, max: 3 }, seconds: { min: 3 * STEP, max: 3 * STEP } });
    expect(w.note).toMatch(/below the partition 2 keep the old revision/);
  });

  test('a group drains as its slowest pod and, with LeaderReady, starts leader then workers', () => {
    const leader = { leaderTemplate: pod('i:1', 2, 120, 3) }; // 120 s grace, 30 + 30 = 60 s startup
    expect(planOf(lws({}, leader), bumped({}, leader))).toMatchObject({
      drainSeconds: 120,
      startupSeconds: 120,
      seconds: { min: 3 * 240, max: 3 * 240 },
    });
    const ready = { startupPolicy: 'LeaderReady' };
    const w = planOf(lws(ready, leader), bumped(ready, leader));
    expect(w).toMatchObject({ startupSeconds: 180, seconds: { min: 3 * 300, max: 3 * 300 } });
    expect(w.note).toMatch(/LeaderReady/);
  });

  test('a new size rolls every group; the GPUs during the rollout count the larger groups', () => {
    const w = planOf(lws(), lws({}, { size: 8 }));
    expect(w).toMatchObject({
      restarts: true,
      changes: ['leaderWorkerTemplate.size'],
      gpusPerPod: 16,
      gpus: { min: 48, max: 48 },
      gpusDuringRollout: { min: 48, max: 48 },
    });
  });

  test('networkConfig is part of the revision: a new subdomainPolicy restarts every group', () => {
    const w = planOf(lws(), lws({ networkConfig: { subdomainPolicy: 'UniquePerReplica' } }));
    expect(w).toMatchObject({ restarts: true, changes: ['networkConfig.subdomainPolicy'] });
  });

  test('no restart: replicas, the rollout settings, or the defaults written out', () => {
    for (const after of [
      lws({ replicas: 5 }),
      lws(ru({ maxSurge: 2 })),
      lws({ networkConfig: { subdomainPolicy: 'Shared' } }),
      lws({}, { restartPolicy: 'RecreateGroupOnPodRestart' }),
    ])
      expect(planOf(lws(), after)).toMatchObject({ restarts: false, mode: 'none', changes: [] });
    // The deprecated restartPolicy Default is stored as None (the mutating webhook).
    expect(planOf(lws({}, { restartPolicy: 'None' }), lws({}, { restartPolicy: 'Default' }))).toMatchObject({
      restarts: false,
    });
  });

  test('a live export carries the defaults the server stored: the same manifest restarts nothing', () => {
    const live = liveExport(lws());
    live.spec.startupPolicy = 'LeaderCreated';
    live.spec.networkConfig = { subdomainPolicy: 'Shared' };
    live.spec.rolloutStrategy = {
      type: 'RollingUpdate',
      rollingUpdateConfiguration: { maxSurge: 0, maxUnavailable: 1, partition: 0 },
    };
    live.spec.leaderWorkerTemplate.restartPolicy = 'RecreateGroupOnPodRestart';
    const result = plan([live], [lws()]);
    expect(result.guard.findings).toEqual([]);
    expect(result.workloads[0]).toMatchObject({ restarts: false, changes: [] });
    expect(plan([live], [bumped()]).workloads[0]).toMatchObject({ restarts: true, perStep: 1 });
  });

  test('a new LeaderWorkerSet: its groups start, needing their GPUs', () => {
    const w = plan([], [lws()]).workloads[0];
    expect(w).toMatchObject({ mode: 'new', unit: 'group', gpusPerPod: 8, gpusDuringRollout: { min: 24, max: 24 } });
    expect(w.note).toMatch(/^new: 3 group\(s\) start, each within 2 min, needing 24 GPU\(s\) more/);
  });
});
