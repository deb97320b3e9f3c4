// Kueue's Job, JobSet and LeaderWorkerSet webhooks (src/guard/kueue-rules.ts), per release. Each case
// names the Kueue function it checks, as read at the release tags of kubernetes-sigs/kueue:
// jobframework.ValidateJobOnUpdate and ValidateUpdateForWorkloadPriorityClassName
// (pkg/controller/jobframework/validation.go), (*Webhook).ValidateUpdate in
// pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go. The same rules are held against
// Kueue v0.17.0 itself in test/cluster/guard-differential.test.ts.
import { Chart, Size, Testing } from 'cdk8s';
import { GpuTrainingJob, guard, IMMUTABLE_FIELDS, VllmInferenceService } from '../../src';
import { KueueRunning } from '../../src/guard/rules';
import { liveExport } from './live-export';

const QUEUE = 'kueue.x-k8s.io/queue-name';
const PRIORITY = 'kueue.x-k8s.io/priority-class';
const MAX_EXEC = 'kueue.x-k8s.io/max-exec-time-seconds';
const copy = <T>(x: T): T => JSON.parse(JSON.stringify(x));

function jobSet(labels: Record<string, string> = {}): any {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'ml' });
  new GpuTrainingJob(chart, 'train', {
    name: 'pretrain',
    image: 'nvcr.io/nvidia/pytorch:25.01-py3',
    command: ['python', 'train.py'],
    nodes: 2,
    gpusPerPod: 8,
    queueName: 'gpu',
  });
  const o = Testing.synth(chart).find((x: any) => x.kind === 'JobSet');
  o.metadata.labels = { ...o.metadata.labels, ...labels };
  return o;
}

function lws(props: { queueName?: string; size?: number } = { queueName: 'serving' }): any {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'ml' });
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-405B-Instruct',
    gpusPerReplica: 8,
    nodes: 2,
    modelSize: Size.gibibytes(800),
    queueName: props.queueName,
  });
  return Testing.synth(chart).find((x: any) => x.kind === 'LeaderWorkerSet');
}

/** A live JobSet: Kueue suspended it on create; `admitted` is whether it has been resumed since. */
const liveJobSet = (manifest: any, admitted: boolean) => {
  const o = liveExport(manifest);
  o.spec.suspend = !admitted;
  return o;
};
/** A live LeaderWorkerSet with `ready` groups Ready. */
const liveLws = (manifest: any, ready: number) => {
  const o = liveExport(manifest);
  o.status = { replicas: manifest.spec.replicas ?? 1, readyReplicas: ready };
  return o;
};
const relabel = (o: any, labels: Record<string, string | undefined>) => {
  const c = copy(o);
  for (const [k, v] of Object.entries(labels)) {
    if (v === undefined) delete c.metadata.labels[k];
    else c.metadata.labels[k] = v;
  }
  return c;
};
const errors = (before: any, after: any, kueueVersion: string) =>
  guard([before], [after], { kueueVersion, serverVersion: '1.35' }).findings.filter(f => f.severity === 'error');
const paths = (before: any, after: any, kueueVersion: string) => errors(before, after, kueueVersion).map(f => f.path);

describe('the table: Kueue rules for Job, JobSet and LeaderWorkerSet', () => {
  test.each([
    ['batch', 'Job', 'vjob.kb.io'],
    ['jobset.x-k8s.io', 'JobSet', 'vjobset.kb.io'],
    ['leaderworkerset.x-k8s.io', 'LeaderWorkerSet', 'vleaderworkerset.kb.io'],
  ])('%s/%s: each rule names its Kueue function, its releases and the webhook %s', (group, kind, webhook) => {
    const rules = IMMUTABLE_FIELDS.find(k => k.group === group && k.kind === kind)!.fields.filter(r => r.kueue);
    expect(rules.length).toBeGreaterThanOrEqual(4);
    for (const r of rules) {
      expect(r.source).toMatch(/^Kueue /);
      expect(r.message.startsWith(`admission webhook "${webhook}" denied the request: `)).toBe(true);
      for (const v of r.kueue!) expect(v.from).toMatch(/^0\.\d+\.\d+$/);
    }
    // Job and JobSet rules read "running" from spec.suspend, the others from Ready pods.
    const running = new Set(rules.filter(r => r.kueueRunning !== undefined).map(r => r.kueueRunning));
    expect([...running]).toEqual(kind === 'LeaderWorkerSet' ? [] : [KueueRunning.NOT_SUSPENDED]);
  });
});

describe('JobSet: jobframework.ValidateJobOnUpdate, every release from v0.9', () => {
  const m = jobSet({ [PRIORITY]: 'research' });

  test('the queue name: immutable unless the new JobSet is suspended (validateUpdateForQueueName), quoting the new name', () => {
    const moved = relabel(m, { [QUEUE]: 'other' });
    for (const v of ['0.9', '0.10', '0.14', '0.17.0', '0.19']) {
      expect(errors(liveJobSet(m, true), moved, v).map(f => f.message)).toEqual([
        'admission webhook "vjobset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable',
      ]);
      // Never admitted (still suspended by Kueue): the queue may change.
      expect(paths(liveJobSet(m, false), moved, v)).toEqual([]);
    }
    // From the manifest, a queued JobSet is taken to be admitted and running.
    expect(paths(m, moved, '0.17.0')).toEqual([`metadata.labels[${QUEUE}]`]);
    // Suspending it in the same apply is what lets the queue change.
    const suspended = copy(moved);
    suspended.spec.suspend = true;
    expect(paths(m, suspended, '0.17.0')).toEqual([]);
  });

  test('the priority class: any change to v0.11; v0.12-v0.14 while running or removed; v0.15+ added while running or removed', () => {
    const high = relabel(m, { [PRIORITY]: 'high' });
    const none = relabel(m, { [PRIORITY]: undefined });
    const running = liveJobSet(m, true);
    const waiting = liveJobSet(m, false);
    expect(paths(waiting, high, '0.11')).toEqual([`metadata.labels[${PRIORITY}]`]);
    expect(paths(waiting, high, '0.12')).toEqual([]);
    expect(paths(running, high, '0.14')).toEqual([`metadata.labels[${PRIORITY}]`]);
    expect(paths(running, high, '0.15')).toEqual([]);
    expect(paths(waiting, none, '0.14')).toEqual([`metadata.labels[${PRIORITY}]`]);
    // v0.15.2 reworded both refusals.
    expect(errors(waiting, none, '0.17.0').map(f => f.message)).toEqual([
      'admission webhook "vjobset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload',
    ]);
    expect(errors(waiting, none, '0.15.1').map(f => f.message)).toEqual([
      'admission webhook "vjobset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": field is immutable',
    ]);
    const bare = jobSet();
    expect(errors(liveJobSet(bare, true), relabel(bare, { [PRIORITY]: 'high' }), '0.17.0').map(f => f.message)).toEqual(
      [
        'admission webhook "vjobset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload',
      ],
    );
    expect(paths(liveJobSet(bare, false), relabel(bare, { [PRIORITY]: 'high' }), '0.17.0')).toEqual([]);
  });

  test('the maximum execution time: immutable unless the old and the new JobSet are suspended (validateUpdateForMaxExecTime)', () => {
    const limited = jobSet({ [MAX_EXEC]: '3600' });
    const longer = relabel(limited, { [MAX_EXEC]: '7200' });
    expect(paths(liveJobSet(limited, true), longer, '0.17.0')).toEqual([`metadata.labels[${MAX_EXEC}]`]);
    expect(paths(liveJobSet(limited, false), longer, '0.17.0')).toEqual([]);
  });

  test('checked on every JobSet, queued or not: the webhook has no isManagedByKueue guard', () => {
    const unqueued = relabel(jobSet({ [PRIORITY]: 'research' }), { [QUEUE]: undefined });
    const live = liveExport(unqueued);
    expect(paths(live, relabel(unqueued, { [PRIORITY]: undefined }), '0.17.0')).toEqual([
      `metadata.labels[${PRIORITY}]`,
    ]);
    // With no Kueue label on either side, nothing of Kueue's applies.
    const plain = relabel(unqueued, { [PRIORITY]: undefined });
    expect(paths(liveExport(plain), relabel(plain, { team: 'nlp' }), '0.17.0')).toEqual([]);
  });
});

describe('batch Job: the same ValidateJobOnUpdate rules under vjob.kb.io', () => {
  const job = (labels: Record<string, string>, suspend?: boolean) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'eval', namespace: 'ml', labels },
    spec: {
      ...(suspend === undefined ? {} : { suspend }),
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i:1' }] },
      },
    },
  });
  test('the queue name of an admitted Job may not change; of a suspended one it may', () => {
    const admitted = liveExport(job({ [QUEUE]: 'a' }, false));
    expect(errors(admitted, job({ [QUEUE]: 'b' }), '0.17.0').map(f => f.message)).toEqual([
      'admission webhook "vjob.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable',
    ]);
    // Suspended by Kueue (not by the manifest, whose last-applied would unset it): the queue may change.
    const waiting = liveExport(job({ [QUEUE]: 'a' }));
    waiting.spec.suspend = true;
    expect(paths(waiting, job({ [QUEUE]: 'b' }), '0.17.0')).toEqual([]);
    // A manifest that itself drops `suspend: true` resumes the Job in the same apply: refused.
    expect(paths(liveExport(job({ [QUEUE]: 'a' }, true)), job({ [QUEUE]: 'b' }), '0.17.0')).toEqual([
      `metadata.labels[${QUEUE}]`,
    ]);
  });
});

describe('LeaderWorkerSet: (*Webhook).ValidateUpdate, from v0.11 (the integration)', () => {
  const m = lws();

  test('the queue name: immutable on v0.11-v0.17; v0.18+ only while a group is Ready, or removed', () => {
    const moved = relabel(m, { [QUEUE]: 'other' });
    expect(paths(liveLws(m, 0), moved, '0.10')).toEqual([]); // no LeaderWorkerSet integration yet
    expect(errors(liveLws(m, 0), moved, '0.17.0').map(f => f.message)).toEqual([
      'admission webhook "vleaderworkerset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable',
    ]);
    expect(paths(liveLws(m, 0), moved, '0.18')).toEqual([]);
    expect(paths(liveLws(m, 1), moved, '0.18')).toEqual([`metadata.labels[${QUEUE}]`]);
    expect(paths(liveLws(m, 0), relabel(m, { [QUEUE]: undefined }), '0.18')).toEqual([`metadata.labels[${QUEUE}]`]);
    // From the manifest, groups are taken to be Ready.
    expect(paths(m, moved, '0.18')).toEqual([`metadata.labels[${QUEUE}]`]);
  });

  test('the priority class follows ValidateUpdateForWorkloadPriorityClassName with Ready groups as running', () => {
    const classed = relabel(m, { [PRIORITY]: 'low' });
    expect(paths(liveLws(classed, 0), relabel(m, { [PRIORITY]: 'high' }), '0.11')).toEqual([
      `metadata.labels[${PRIORITY}]`,
    ]);
    expect(paths(liveLws(classed, 0), relabel(m, { [PRIORITY]: 'high' }), '0.13')).toEqual([]);
    expect(paths(liveLws(m, 2), classed, '0.17.0')).toEqual([`metadata.labels[${PRIORITY}]`]);
    expect(paths(liveLws(m, 0), classed, '0.17.0')).toEqual([]);
  });

  test("the leader's and the workers' scheduling shape is fixed while queued; the image is not (validateImmutablePodTemplateSpec)", () => {
    const worker = (o: any) => o.spec.leaderWorkerTemplate.workerTemplate.spec;
    const leader = (o: any) => o.spec.leaderWorkerTemplate.leaderTemplate.spec;
    const more = copy(m);
    worker(more).containers[0].resources.requests.memory = '900Gi';
    leader(more).tolerations = [...(leader(more).tolerations ?? []), { key: 'spot', operator: 'Exists' }];
    expect(paths(liveLws(m, 1), more, '0.17.0').sort()).toEqual([
      'spec.leaderWorkerTemplate.leaderTemplate.spec.tolerations',
      'spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests',
    ]);
    const image = copy(m);
    worker(image).containers[0].image = 'vllm/vllm-openai:v0.99.0';
    leader(image).containers[0].image = 'vllm/vllm-openai:v0.99.0';
    expect(paths(liveLws(m, 1), image, '0.17.0')).toEqual([]);
    // Not queued: Kueue's webhook leaves the templates alone.
    const plain = lws({});
    const plainMore = copy(plain);
    worker(plainMore).containers[0].resources.requests.memory = '900Gi';
    expect(paths(liveLws(plain, 1), plainMore, '0.17.0')).toEqual([]);
    // A leader template added or removed is itself refused.
    const leaderless = copy(m);
    delete leaderless.spec.leaderWorkerTemplate.leaderTemplate;
    expect(paths(liveLws(m, 1), leaderless, '0.17.0')).toEqual(['spec.leaderWorkerTemplate.leaderTemplate']);
  });

  test('the group size: mutable to v0.18.4 and on v0.19.0; fixed while queued from v0.18.5 and v0.19.1 (LWSImmutableGroupSize)', () => {
    const bigger = copy(m);
    bigger.spec.leaderWorkerTemplate.size = 4;
    for (const [v, n] of [
      ['0.17.0', 0],
      ['0.18.4', 0],
      ['0.18.5', 1],
      ['0.19.0', 0],
      ['0.19.1', 1],
    ] as const)
      expect([v, paths(liveLws(m, 1), bigger, v).filter(p => p.endsWith('.size')).length]).toEqual([v, n]);
  });
});

describe('StatefulSet: v0.15.2 reworded the priority-class refusals', () => {
  test('removal reads "WorkloadPriorityClass cannot be removed from a workload"', () => {
    const sts = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 't', namespace: 'ml', labels: { [QUEUE]: 'q', [PRIORITY]: 'low' } },
      spec: {
        serviceName: 't',
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } },
      },
    };
    expect(errors(sts, relabel(sts, { [PRIORITY]: undefined }), '0.16').map(f => f.message)).toEqual([
      'admission webhook "vstatefulset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload',
    ]);
  });
});

describe('checks every release runs on every object, queued or not', () => {
  const plainSts = (labels: Record<string, string>) => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 't', namespace: 'ml', labels },
    spec: {
      serviceName: 't',
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } },
    },
  });
  test('StatefulSet: the priority class removed from one with no queue name is refused (ValidateUpdateForWorkloadPriorityClassName runs before the managed check)', () => {
    const before = plainSts({ [PRIORITY]: 'low' });
    expect(paths(before, plainSts({}), '0.16')).toEqual([`metadata.labels[${PRIORITY}]`]);
    expect(paths(before, plainSts({}), '0.9.3')).toEqual([]); // before the check was backported
  });
});

describe('LeaderWorkerSet: v0.11-v0.14 pass (new, old) as (old, new), so the refusal quotes the old class', () => {
  test('v0.11 quotes "low", v0.15.2 quotes the new one', () => {
    const m = lws();
    const low = relabel(m, { [PRIORITY]: 'low' });
    expect(errors(liveLws(low, 1), relabel(m, { [PRIORITY]: 'high' }), '0.11').map(f => f.message)).toEqual([
      'admission webhook "vleaderworkerset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "low": field is immutable',
    ]);
    expect(errors(liveLws(low, 1), m, '0.17.0').map(f => f.message)).toEqual([
      'admission webhook "vleaderworkerset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload',
    ]);
  });
});

describe('annotations on by default from v0.18 and v0.19 (feature gates at their defaults)', () => {
  const annotate = (o: any, a: Record<string, string | undefined>) => {
    const c = copy(o);
    c.metadata.annotations = { ...(c.metadata.annotations ?? {}) };
    for (const [k, v] of Object.entries(a)) {
      if (v === undefined) delete c.metadata.annotations[k];
      else c.metadata.annotations[k] = v;
    }
    return c;
  };
  const ELASTIC = 'kueue.x-k8s.io/elastic-job';
  const GATES = 'kueue.x-k8s.io/admission-gated-by';
  const PREBUILT = 'kueue.x-k8s.io/prebuilt-workload-name';

  test('elastic-job: turning workload slicing on or off is refused from v0.18 (validatedUpdateForEnabledWorkloadSlice), suspended or not', () => {
    const m = jobSet();
    const elastic = annotate(m, { [ELASTIC]: 'true' });
    expect(paths(liveJobSet(m, false), elastic, '0.18')).toEqual([`metadata.annotations[${ELASTIC}]`]);
    expect(paths(liveJobSet(elastic, true), m, '0.19')).toEqual([`metadata.annotations[${ELASTIC}]`]);
    expect(paths(liveJobSet(m, false), elastic, '0.17.0')).toEqual([]);
    // "false" is no slicing: not a change.
    expect(paths(liveJobSet(m, false), annotate(m, { [ELASTIC]: 'false' }), '0.18')).toEqual([]);
  });

  test('admission-gated-by: not added after creation, gates only removed, from v0.19 on every kind', () => {
    const m = jobSet();
    const gated = annotate(m, { [GATES]: 'example.com/a,example.com/b' });
    expect(errors(liveJobSet(m, false), gated, '0.19').map(f => f.message)).toEqual([
      'admission webhook "vjobset.kb.io" denied the request: metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation',
    ]);
    expect(paths(liveJobSet(gated, false), annotate(m, { [GATES]: 'example.com/a' }), '0.19')).toEqual([]);
    expect(paths(liveJobSet(gated, false), annotate(m, { [GATES]: undefined }), '0.19')).toEqual([]);
    expect(
      errors(liveJobSet(gated, false), annotate(m, { [GATES]: 'example.com/a, example.com/c' }), '0.19').map(
        f => f.message,
      ),
    ).toEqual([
      'admission webhook "vjobset.kb.io" denied the request: metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones',
    ]);
    expect(paths(liveJobSet(m, false), gated, '0.18')).toEqual([]);
    const set = lws();
    expect(paths(liveLws(set, 0), annotate(set, { [GATES]: 'example.com/a' }), '0.19')).toEqual([
      `metadata.annotations[${GATES}]`,
    ]);
  });

  test('prebuilt workload: from v0.18 its annotation names it first, immutable unless the new JobSet is suspended', () => {
    const m = jobSet();
    const pre = annotate(m, { [PREBUILT]: 'wl-a' });
    expect(paths(liveJobSet(pre, true), annotate(m, { [PREBUILT]: 'wl-b' }), '0.18')).toEqual([
      `metadata.annotations[${PREBUILT}]`,
    ]);
    expect(paths(liveJobSet(pre, false), annotate(m, { [PREBUILT]: 'wl-b' }), '0.18')).toEqual([]);
    // Before v0.18 the annotation meant nothing.
    expect(paths(liveJobSet(pre, true), annotate(m, { [PREBUILT]: 'wl-b' }), '0.17.0')).toEqual([]);
  });
});

describe('batch Job: validatePartialAdmissionUpdate', () => {
  const job = (annotations: Record<string, string>, parallelism: number) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'eval', namespace: 'ml', labels: { [QUEUE]: 'q' }, annotations },
    spec: {
      parallelism,
      completions: 4,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i:1' }] } },
    },
  });
  const running = (o: any) => {
    const l = liveExport(o);
    l.spec.suspend = false;
    return l;
  };
  const waiting = (o: any) => {
    const l = liveExport(o);
    l.spec.suspend = true;
    return l;
  };
  test('with job-min-parallelism, parallelism is fixed while the old Job runs', () => {
    const partial = { 'kueue.x-k8s.io/job-min-parallelism': '2' };
    expect(errors(running(job(partial, 4)), job(partial, 3), '0.17.0').map(f => f.message)).toEqual([
      'admission webhook "vjob.kb.io" denied the request: spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended',
    ]);
    expect(paths(waiting(job(partial, 4)), job(partial, 3), '0.17.0')).toEqual([]);
    expect(paths(running(job({}, 4)), job({}, 3), '0.17.0')).toEqual([]);
  });
  test('job-completions-equal-parallelism may not flip while neither Job is suspended (strconv.ParseBool)', () => {
    const sync = { 'kueue.x-k8s.io/job-completions-equal-parallelism': 'True' };
    expect(paths(running(job({}, 4)), job(sync, 4), '0.17.0')).toEqual([
      'metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]',
    ]);
    expect(
      paths(running(job(sync, 4)), job({ 'kueue.x-k8s.io/job-completions-equal-parallelism': '1' }, 4), '0.17.0'),
    ).toEqual([]);
    expect(paths(waiting(job({}, 4)), job(sync, 4), '0.17.0')).toEqual([]);
  });
});

describe('pod-level resources (v0.17.7+): set on one side only is a change, even empty', () => {
  test('a queued LeaderWorkerSet whose worker template gains resources: {}', () => {
    const m = lws();
    const more = copy(m);
    more.spec.leaderWorkerTemplate.workerTemplate.spec.resources = {};
    expect(paths(liveLws(m, 1), more, '0.19')).toEqual(['spec.leaderWorkerTemplate.workerTemplate.spec.resources']);
    expect(paths(liveLws(m, 1), more, '0.17.6')).toEqual([]);
  });
});

describe('"running" read from a live object the controller has not reported on yet', () => {
  test('a live LeaderWorkerSet with no status has no Ready group: a priority class may be added (v0.15+); from a manifest it is taken to be running', () => {
    const m = lws();
    const noStatus = liveExport(m);
    delete noStatus.status;
    const classed = relabel(m, { [PRIORITY]: 'high' });
    expect(paths(noStatus, classed, '0.17.0')).toEqual([]);
    expect(paths(m, classed, '0.17.0')).toEqual([`metadata.labels[${PRIORITY}]`]);
  });
});
