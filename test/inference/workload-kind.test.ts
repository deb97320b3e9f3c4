import { Chart, Size, Testing } from 'cdk8s';
import {
  Autoscaler,
  InferenceServiceMonitoring,
  InferenceServiceProps,
  ModelCache,
  VllmInferenceService,
  WorkloadKind,
} from '../../src';
import { podNamePattern } from '../../src/common/names';
import { plan } from '../../src/guard/plan';
import { KubeObject } from '../../src/guard/normalize';
import { servingBumpWarnings } from '../../src/guard/serving-bump';
import { describePromtool, podNotReadyRun, ruleSpec } from '../monitoring/promtool';
import { findOne, synthValid } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';
import { BASE, configError, ENGINES, synthEngine } from './support';

const SHARED = ModelCache.sharedClaim({ claimName: 'models' });

describe.each(ENGINES)('$construct workload kind', e => {
  test('the default fits the cache: a StatefulSet for a per-replica claim, a Deployment for a shared claim or an emptyDir', () => {
    const cases: Array<[Partial<InferenceServiceProps>, WorkloadKind]> = [
      [{}, WorkloadKind.STATEFUL_SET],
      [{ modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(50) }) }, WorkloadKind.STATEFUL_SET],
      [{ modelCache: SHARED }, WorkloadKind.DEPLOYMENT],
      [{ modelCache: ModelCache.emptyDir() }, WorkloadKind.DEPLOYMENT],
    ];
    for (const [props, kind] of cases) {
      const { svc, objects } = synthEngine(e, props);
      expect([props, svc.workloadKind]).toEqual([props, kind]);
      expect(objects.filter(o => o.kind === 'StatefulSet' || o.kind === 'Deployment').map(o => o.kind)).toEqual([kind]);
      expectValidOutput(objects);
    }
  });

  test('the handles: workload and workloadName for either kind; statefulSet or deployment for its own only', () => {
    const d = synthEngine(e, { modelCache: SHARED }).svc;
    expect(d.workload).toBe(d.deployment);
    expect(d.statefulSet).toBeUndefined();
    expect(d.statefulSetName).toBeUndefined();
    expect(d.workloadName).toBe('llm');
    const s = synthEngine(e, { version: 2 }).svc;
    expect(s.workload).toBe(s.statefulSet);
    expect(s.deployment).toBeUndefined();
    expect([s.workloadName, s.statefulSetName]).toEqual(['llm-v2', 'llm-v2']);
  });

  test('the Deployment replaces by surge: maxSurge 1, maxUnavailable 0; a progress deadline past a load and a drain', () => {
    const { sts: d, svc } = synthEngine(e, { modelCache: ModelCache.emptyDir(), replicas: 2 });
    expect(d.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(d.spec.replicas).toBe(2);
    // An emptyDir: no fill to wait for; a new pod downloads, then loads.
    expect(d.spec.progressDeadlineSeconds).toBe(svc.capacitySeconds + svc.terminationGracePeriodSeconds);
    expect(d.spec.progressDeadlineSeconds).toBeGreaterThan(svc.startupBudgetSeconds);
    // No StatefulSet-only fields; the same pod as a StatefulSet's (probes, drain, grace).
    for (const f of ['serviceName', 'podManagementPolicy', 'updateStrategy', 'volumeClaimTemplates'])
      expect([f, d.spec[f]]).toEqual([f, undefined]);
    const asSts = synthEngine(e, {
      modelCache: ModelCache.emptyDir(),
      replicas: 2,
      workloadKind: WorkloadKind.STATEFUL_SET,
    });
    expect(asSts.sts.kind).toBe('StatefulSet');
    expect(asSts.sts.spec.volumeClaimTemplates).toBeUndefined();
    expect(d.spec.template).toEqual(asSts.sts.spec.template);
  });

  test('the PDB and both Services select the Deployment pods, as they do a StatefulSet', () => {
    const { objects, sts: d } = synthEngine(e, { modelCache: SHARED });
    const labels = d.spec.template.metadata.labels;
    const selects = (sel: Record<string, string>) => Object.entries(sel).every(([k, v]) => labels[k] === v);
    expect(selects(findOne(objects, 'PodDisruptionBudget').spec.selector.matchLabels)).toBe(true);
    expect(selects(findOne(objects, 'Service', 'llm').spec.selector)).toBe(true);
    expect(selects(findOne(objects, 'Service', 'llm-headless').spec.selector)).toBe(true);
    expect(findOne(objects, 'PodDisruptionBudget').spec.maxUnavailable).toBe(1);
  });

  test('a per-replica claim with a Deployment is refused, naming the prop; an unknown kind too', () => {
    expect(configError(() => synthEngine(e, { workloadKind: WorkloadKind.DEPLOYMENT })).message).toMatch(
      new RegExp(
        `${e.construct} 'svc': workloadKind must be WorkloadKind.STATEFUL_SET with a per-replica model cache \\(ModelCache.persistentClaim\\(\\)\\).*\\(got "Deployment"\\)`,
      ),
    );
    expect(
      configError(() => synthEngine(e, { modelCache: SHARED, workloadKind: 'DaemonSet' as WorkloadKind })).message,
    ).toMatch(/workloadKind must be one of Deployment, StatefulSet, LeaderWorkerSet \(got "DaemonSet"\)/);
  });

  test('an autoscaled Deployment: no replicas field; the HPA scales the Deployment by name', () => {
    const { sts: d, objects } = synthEngine(e, {
      modelCache: SHARED,
      autoscaling: { maxReplicas: 4, targetRequestsInFlight: 8 },
    });
    expect(d.spec.replicas).toBeUndefined();
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'llm',
    });
  });
});

describe('pod names: one pattern per kind, for every query that finds pods by name', () => {
  const matches = (pattern: string, pod: string) => new RegExp(`^(?:${pattern})$`).test(pod);

  test("a Deployment's pods are <name>-<pod-template-hash>-<suffix>; a StatefulSet's <name>-<ordinal>; never another version's", () => {
    const d = podNamePattern('Deployment', 'llm');
    expect(matches(d, 'llm-6d4cf56db6-x2v9k')).toBe(true);
    expect(matches(d, 'llm-7b9c5-zz2qp')).toBe(true);
    for (const other of [
      'llm-0',
      'llm-v2-6d4cf56db6-x2v9k',
      'llm-6d4cf56db6-x2v9',
      'llm-6d4cf56db6-abcde',
      'llm-fill-x',
    ])
      expect([other, matches(d, other)]).toEqual([other, false]);
    const s = podNamePattern('StatefulSet', 'llm');
    expect(matches(s, 'llm-12')).toBe(true);
    for (const other of ['llm-v2-0', 'llm-6d4cf56db6-x2v9k'])
      expect([other, matches(s, other)]).toEqual([other, false]);
    expect(() => podNamePattern('DaemonSet', 'x')).toThrow(/no pod name pattern/);
  });

  function deploymentApp() {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    const svc = new VllmInferenceService(chart, 'llm', {
      ...BASE,
      modelSize: Size.gibibytes(15),
      modelCache: SHARED,
      serviceMonitor: true,
      autoscaling: {
        maxReplicas: 4,
        autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
      },
    });
    const monitoring = new InferenceServiceMonitoring(chart, 'monitoring', svc);
    const objects = synthValid(chart);
    return { chart, svc, monitoring, objects };
  }

  test('KEDA scales the Deployment and its default query counts the Deployment pods', () => {
    const { objects } = deploymentApp();
    const scaled = findOne(objects, 'ScaledObject');
    expect(scaled.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'llm' });
    expect(scaled.spec.triggers[0].metadata.query).toContain(`pod=~"${podNamePattern('Deployment', 'llm')}"`);
  });

  test("the monitoring rules select the Deployment's pods and label alerts with the deployment", () => {
    const { monitoring } = deploymentApp();
    const pattern = podNamePattern('Deployment', 'llm');
    for (const a of monitoring.alerts.filter(x => x.expr.includes('pod=~')))
      expect([a.alert, a.expr.includes(`pod=~"${pattern}"`)]).toEqual([a.alert, true]);
    const rules = ruleSpec(monitoring).groups[0].rules;
    expect(rules.every((r: any) => r.labels.deployment === 'llm' && r.labels.statefulset === undefined)).toBe(true);
  });

  describePromtool('under promtool', () => {
    test('GpuServingPodNotReady fires for a Deployment pod, not for a pod of another version', () => {
      const { monitoring, svc } = deploymentApp();
      const r = podNotReadyRun(monitoring, svc.capacitySeconds, 'llm-6d4cf56db6-x2v9k', 'llm-v2-6d4cf56db6-x2v9k');
      expect(r.output).toMatch(/SUCCESS/);
      expect(r.ok).toBe(true);
    });
  });
});

describe('the guard knows serving Deployments', () => {
  const output = (version: number) => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    new VllmInferenceService(chart, 'llm', { ...BASE, version, modelSize: Size.gibibytes(15), modelCache: SHARED });
    return Testing.synth(chart) as KubeObject[];
  };

  test('plan: a template change rolls by surge, one more replica of GPUs during the rollout', () => {
    const before = output(1);
    const after = JSON.parse(JSON.stringify(before)) as KubeObject[];
    const d = after.find(o => o.kind === 'Deployment') as any;
    d.spec.template.spec.containers[0].image = 'vllm/vllm-openai:v0.32.0';
    const w = plan(before, after).workloads.find(x => x.kind === 'Deployment')!;
    expect(w.mode).toBe('rolling');
    expect(w.note).toMatch(/maxSurge 1, maxUnavailable 0/);
    expect(w.gpusDuringRollout).toEqual({ min: 2, max: 2 });
  });

  test('a one-step version bump of a serving Deployment is warned about', () => {
    const before = output(1);
    const after = output(2);
    const out: any[] = [];
    const matched = new Set(
      before.filter(o => after.some(a => a.kind === o.kind && a.metadata.name === o.metadata.name)),
    );
    const created = after.filter(a => !before.some(o => o.kind === a.kind && o.metadata.name === a.metadata.name));
    servingBumpWarnings(before, matched, created, out);
    expect(out.map(f => [f.code, f.before, f.after])).toEqual([['serving-version-gap', 'llm-v1', 'llm-v2']]);
    expect(out[0].remedy).toContain('kubectl rollout status deployment/llm-v2');
  });
});
