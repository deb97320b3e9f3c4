import { Testing } from 'cdk8s';
import { GpuTrainingJob, GpuTrainingJobProps, guard } from '../../src';
import { celRules } from '../../src/guard/crd';
import { JOBSET_CEL_IMMUTABLE } from '../../src/guard/jobset-rules';
import { testChart } from '../support/synth';

const CRD = require('../../src/validation/crds/jobset/jobset.x-k8s.io_jobsets.json');

function jobSet(props: Partial<GpuTrainingJobProps> = {}): any {
  const chart = testChart('ml');
  new GpuTrainingJob(chart, 'job', {
    name: 'pretrain',
    image: 'img:1',
    gpusPerPod: 8,
    nodes: 2,
    args: ['train.py'],
    ...props,
  });
  return Testing.synth(chart).find(o => o.kind === 'JobSet');
}

const paths = (before: any, after: any) =>
  guard([before], [after])
    .findings.filter(f => f.severity === 'error')
    .map(f => f.path);

describe('JobSet guard rules (jobset v0.12.0)', () => {
  test("the CRD's immutable properties are exactly those the vendored CRD's transition rules name", () => {
    const derived = celRules([CRD]).get('jobset.x-k8s.io/JobSet')!.get('v1alpha2')!;
    expect(derived.map(r => [r.path, r.type])).toEqual(JOBSET_CEL_IMMUTABLE.map(([p, t]) => [p, t]));
  });

  test('a changed image, node count or launcher is refused: replicatedJobs is immutable', () => {
    const before = jobSet();
    expect(paths(before, jobSet({ image: 'img:2' }))).toEqual(['spec.replicatedJobs']);
    expect(paths(before, jobSet({ args: ['train.py', '--lr', '1'] }))).toEqual(['spec.replicatedJobs']);
    const [finding] = guard([before], [jobSet({ image: 'img:2' })]).findings;
    expect(finding.message).toMatch(
      /^admission webhook "vjobset.kb.io" denied the request: spec.replicatedJobs: Invalid value: .*: field is immutable$/,
    );
  });

  test('the failure and success policies and the network are immutable (CRD transition rules)', () => {
    const before = jobSet();
    expect(paths(before, jobSet({ maxRestarts: 5 }))).toEqual(['spec.failurePolicy']);
    const renet = { ...before, spec: { ...before.spec, network: { enableDNSHostnames: false } } };
    expect(paths(before, renet)).toEqual(['spec.network']);
  });

  test('what may change: labels, annotations, suspend and the TTL', () => {
    const before = jobSet();
    const after = {
      ...before,
      metadata: { ...before.metadata, labels: { ...before.metadata.labels, team: 'nlp' } },
      spec: { ...before.spec, suspend: true, ttlSecondsAfterFinished: 600 },
    };
    expect(paths(before, after)).toEqual([]);
    expect(paths(before, jobSet())).toEqual([]);
  });
});

describe('JobSet guard: what a suspended JobSet may change ((*jobSetWebhook).ValidateUpdate v0.12.0)', () => {
  const podTemplate = (o: any) => o.spec.replicatedJobs[0].template.spec.template;
  /** A copy as `kubectl get -o yaml` returns it, with `suspend` as stored. */
  const live = (o: any, suspend: boolean) => {
    const c = JSON.parse(JSON.stringify(o));
    c.metadata = { ...c.metadata, uid: 'u-1', resourceVersion: '7' };
    c.spec.suspend = suspend;
    c.status = {};
    return c;
  };
  /** The manifest with Kueue's scheduling directives changed in its pod template, and `suspend` as given. */
  const rescheduled = (o: any, suspend?: boolean) => {
    const c = JSON.parse(JSON.stringify(o));
    const t = podTemplate(c);
    t.metadata.labels = { ...t.metadata.labels, 'kueue.x-k8s.io/podset': 'node' };
    t.metadata.annotations = { ...t.metadata.annotations, 'kueue.x-k8s.io/workload': 'w' };
    t.spec.nodeSelector = { 'cloud.google.com/gke-nodepool': 'a3' };
    t.spec.tolerations = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
    t.spec.schedulingGates = [{ name: 'kueue.x-k8s.io/topology' }];
    if (suspend !== undefined) c.spec.suspend = suspend;
    return c;
  };
  const changed = (o: any, f: (t: any) => void) => {
    const c = JSON.parse(JSON.stringify(o));
    f(podTemplate(c));
    return c;
  };

  test('old suspended: the pod template labels, annotations, nodeSelector, tolerations and gates may change', () => {
    const base = jobSet();
    expect(paths(live(base, true), rescheduled(base, true))).toEqual([]);
    // Each field alone, and removing what the old one had.
    for (const f of [
      (t: any) => (t.metadata.labels.extra = 'x'),
      (t: any) => delete t.metadata.labels,
      (t: any) => (t.metadata.annotations = { a: 'b' }),
      (t: any) => (t.spec.nodeSelector = { zone: 'a' }),
      (t: any) => (t.spec.tolerations = [{ key: 'k', operator: 'Exists' }]),
      (t: any) => (t.spec.schedulingGates = [{ name: 'g' }]),
    ])
      expect(paths(live(base, true), changed(base, f))).toEqual([]);
    // The same manifest change is refused on a running JobSet.
    expect(paths(live(base, false), rescheduled(base))).toEqual(['spec.replicatedJobs']);
  });

  test('new suspended (the update suspends it): allowed too; neither suspended: refused', () => {
    const base = jobSet();
    expect(paths(live(base, false), rescheduled(base, true))).toEqual([]);
    expect(paths(live(base, true), rescheduled(base, false))).toEqual([]);
    expect(paths(live(base, false), rescheduled(base, false))).toEqual(['spec.replicatedJobs']);
  });

  test('suspended or not, the rest of the pod template, the Job template and the names may not change', () => {
    const base = jobSet();
    for (const f of [
      (t: any) => (t.spec.containers[0].image = 'img:2'),
      // Unlike a batch/v1 Job's exemption, node affinity is not among the fields.
      (t: any) =>
        (t.spec.affinity = {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
            },
          },
        }),
      (t: any) => (t.spec.priorityClassName = 'high'),
      (t: any) => (t.metadata.name = 'renamed'),
    ])
      expect(paths(live(base, true), changed(base, f))).toEqual(['spec.replicatedJobs']);
    // The Job template's own labels (one level up) are not the pod template's.
    const jobLabels = JSON.parse(JSON.stringify(base));
    jobLabels.spec.replicatedJobs[0].template.metadata = { labels: { a: 'b' } };
    expect(paths(live(base, true), jobLabels)).toEqual(['spec.replicatedJobs']);
    // A renamed replicated Job has no old counterpart: nothing is exempt, and the name differs anyway.
    const renamed = rescheduled(base);
    renamed.spec.replicatedJobs[0].name = 'workers';
    expect(paths(live(base, true), renamed)).toEqual(['spec.replicatedJobs']);
  });

  test('a manifest baseline: its suspend is the stored one, unless Kueue owns suspend (queued)', () => {
    const base = jobSet({ suspend: true });
    expect(paths(base, rescheduled(base))).toEqual([]);
    expect(paths(jobSet(), rescheduled(jobSet()))).toEqual(['spec.replicatedJobs']);
    // Queued: Kueue resumed it on admission, so the manifest's suspend says nothing of the stored one.
    // (The construct refuses suspend with queueName; a hand-written manifest may still say it.)
    const queued = jobSet({ queueName: 'team' });
    queued.spec.suspend = true;
    expect(paths(queued, rescheduled(queued, false))).toEqual(['spec.replicatedJobs']);
    // ...unless the new manifest suspends it: the apply sends suspend: true.
    const q = jobSet({ queueName: 'team' });
    expect(paths(q, rescheduled(q, true))).toEqual([]);
    expect(paths(q, rescheduled(q))).toEqual(['spec.replicatedJobs']);
    // A live export of a queued JobSet says what is stored.
    expect(paths(live(q, true), rescheduled(q))).toEqual([]);
  });
});
