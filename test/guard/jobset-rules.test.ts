import { Testing } from 'cdk8s';
import { GpuTrainingJob, GpuTrainingJobProps, guard } from '../../src';
import { celRules } from '../../src/guard/crd';
import { JOBSET_CEL_IMMUTABLE } from '../../src/guard/jobset-rules';
import { testChart } from '../support/synth';
import { liveExport } from './live-export';

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

describe('JobSet guard: replicatedJobs compared as the webhook decodes them (Go types, Semantic.DeepEqual)', () => {
  /**
   * A JobSet as kube-apiserver v1.35.4 with the jobset v0.12.0 controller and webhooks returned it
   * after `kubectl apply` (`kubectl get -o json`; managedFields dropped, the launcher script
   * shortened in the object and in its last-applied configuration alike).
   */
  const LIVE = require('./jobset-live-v1.35.4.json');
  /** What was applied: the example app's JobSet `llm-pretrain-job` (apps/pretraining.ts), under a generated name. */
  const MANIFEST = JSON.parse(LIVE.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
  const copy = (x: any) => JSON.parse(JSON.stringify(x));
  const rJob = (o: any) => o.spec.replicatedJobs[0];
  const podSpec = (o: any) => rJob(o).template.spec.template.spec;
  const container = (o: any) => podSpec(o).containers[0];
  /** The manifest (or `o`) changed by `f`. */
  const edit = (f: (o: any) => void, o: any = MANIFEST) => {
    const c = copy(o);
    f(c);
    return c;
  };
  const errors = (before: any, after: any, options: { customResourceDefinitions?: any[] } = {}) =>
    guard([before], [after], { serverVersion: '1.35', ...options })
      .findings.filter(f => f.severity === 'error')
      .map(f => f.path);
  const REFUSED = ['spec.replicatedJobs'];

  test('the live object is the manifest with groupName defaulted, an empty Job template metadata and quantities as strings', () => {
    const reverted = copy(LIVE.spec.replicatedJobs);
    delete reverted[0].groupName;
    delete reverted[0].template.metadata;
    const resources = reverted[0].template.spec.template.spec.containers[0].resources;
    for (const list of ['limits', 'requests'])
      for (const r of ['nvidia.com/gpu', 'vpc.amazonaws.com/efa']) resources[list][r] = Number(resources[list][r]);
    expect(reverted).toEqual(MANIFEST.spec.replicatedJobs);
    expect(rJob(LIVE).groupName).toBe('default');
    expect(rJob(LIVE).template.metadata).toEqual({});
    expect(container(LIVE).resources.limits['nvidia.com/gpu']).toBe('8');
  });

  test('against that live object, the manifest with a label added or removed is clean (the server accepted both; Kueue refuses its labels removed)', () => {
    expect(errors(LIVE, MANIFEST)).toEqual([]);
    expect(
      errors(
        LIVE,
        edit(o => (o.metadata.labels.team = 'nlp')),
      ),
    ).toEqual([]);
    // The live object was taken from a server without Kueue; Kueue's JobSet webhook refuses its own
    // labels removed from a running JobSet (kueue-rules.ts; shown on the server in kueue.test.ts).
    for (const label of Object.keys(MANIFEST.metadata.labels))
      expect(
        errors(
          LIVE,
          edit(o => delete o.metadata.labels[label]),
        ),
      ).toEqual(label.startsWith('kueue.x-k8s.io/') ? [`metadata.labels[${label}]`] : []);
    // A live export re-applied as it is, against the live object or against the manifest.
    const exported = copy(LIVE);
    exported.metadata = { name: LIVE.metadata.name, namespace: 'default', labels: LIVE.metadata.labels };
    expect(errors(LIVE, exported)).toEqual([]);
    expect(errors(MANIFEST, exported)).toEqual([]);
  });

  test('against the same live object, a real change to a replicated Job is still refused', () => {
    for (const f of [
      (o: any) => (container(o).image = 'nvcr.io/nvidia/pytorch:24.09-py3'),
      (o: any) => (container(o).env.find((e: any) => e.name === 'MASTER_PORT').value = '29501'),
      (o: any) => (container(o).command = ['sh', '-c', 'exec "$@"', 'cdk8s-gpu-launch']),
      (o: any) => (container(o).args = [...container(o).args, '--resume']),
      (o: any) => (rJob(o).template.spec.completions = 8),
      (o: any) => (rJob(o).template.spec.parallelism = 8),
      (o: any) => delete rJob(o).template.spec.backoffLimit,
      (o: any) => (container(o).resources.limits['nvidia.com/gpu'] = 4),
      (o: any) => (rJob(o).groupName = 'workers'),
      (o: any) => (rJob(o).template.metadata = { labels: { a: 'b' } }),
    ])
      expect(errors(LIVE, edit(f))).toEqual(REFUSED);
  });

  test('Go value fields: false and 0 written out equal absent (hostNetwork, hostPID, hostIPC, stdin, readOnly)', () => {
    const zeros = edit(o => {
      Object.assign(podSpec(o), { hostNetwork: false, hostPID: false, hostIPC: false });
      Object.assign(container(o), { stdin: false, tty: false });
      container(o).volumeMounts[0].readOnly = false;
      container(o).ports[0].hostPort = 0;
    });
    expect(errors(MANIFEST, zeros)).toEqual([]);
    expect(errors(zeros, MANIFEST)).toEqual([]);
    expect(errors(LIVE, zeros)).toEqual([]);
    expect(
      errors(
        LIVE,
        edit(o => (podSpec(o).hostNetwork = true)),
      ),
    ).toEqual(REFUSED);
  });

  test('Go pointer fields: set to their zero they differ from absent (backoffLimit, suspend, shareProcessNamespace, securityContext)', () => {
    // The manifest writes backoffLimit: 0; the same manifest without it.
    const noBackoff = edit(o => delete rJob(o).template.spec.backoffLimit);
    expect(errors(MANIFEST, noBackoff)).toEqual(REFUSED);
    expect(errors(noBackoff, MANIFEST)).toEqual(REFUSED);
    for (const f of [
      (o: any) => (rJob(o).template.spec.suspend = false),
      (o: any) => (podSpec(o).shareProcessNamespace = false),
      (o: any) => (podSpec(o).automountServiceAccountToken = undefined),
      (o: any) => (container(o).securityContext = {}),
      (o: any) => (podSpec(o).volumes.find((v: any) => v.name === 'home').emptyDir = undefined),
    ]) {
      expect(errors(MANIFEST, edit(f))).toEqual(REFUSED);
      expect(errors(LIVE, edit(f))).toEqual(REFUSED);
    }
  });

  test('value structs and lists: an empty Job template metadata, an empty list and none are the same', () => {
    const empties = edit(o => {
      rJob(o).template.metadata = {};
      rJob(o).template.spec.template.metadata.annotations = { ...rJob(o).template.spec.template.metadata.annotations };
      podSpec(o).initContainers = [];
      podSpec(o).imagePullSecrets = [];
      container(o).volumeDevices = [];
    });
    expect(errors(MANIFEST, empties)).toEqual([]);
    expect(errors(LIVE, empties)).toEqual([]);
  });

  test("the CRD's structural defaults apply to both sides: groupName default, replicas 1", () => {
    const spelled = edit(o => Object.assign(rJob(o), { groupName: 'default', replicas: 1 }));
    expect(errors(MANIFEST, spelled)).toEqual([]);
    expect(errors(spelled, MANIFEST)).toEqual([]);
    expect(
      errors(
        MANIFEST,
        edit(o => delete rJob(o).replicas),
      ),
    ).toEqual([]);
    expect(
      errors(
        MANIFEST,
        edit(o => (rJob(o).replicas = 2)),
      ),
    ).toEqual(REFUSED);
    expect(
      errors(
        MANIFEST,
        edit(o => (rJob(o).groupName = 'workers')),
      ),
    ).toEqual(REFUSED);
    // A CRD in the input is the one the server defaults from: here its groupName default differs.
    const crd = copy(CRD);
    const rjSchema = crd.spec.versions.find((v: any) => v.name === 'v1alpha2').schema.openAPIV3Schema.properties.spec
      .properties.replicatedJobs.items;
    rjSchema.properties.groupName.default = 'group';
    expect(errors(MANIFEST, spelled, { customResourceDefinitions: [crd] })).toEqual(REFUSED);
    expect(
      errors(
        MANIFEST,
        edit(o => (rJob(o).groupName = 'group')),
        { customResourceDefinitions: [crd] },
      ),
    ).toEqual([]);
  });

  test('quantities compare by value, as numbers or strings', () => {
    const strings = edit(o => {
      const r = container(o).resources;
      r.limits = { ...r.limits, 'nvidia.com/gpu': '8', 'vpc.amazonaws.com/efa': '32' };
      r.requests = { ...r.requests, cpu: 88, 'nvidia.com/gpu': '8', 'vpc.amazonaws.com/efa': '32' };
    });
    expect(errors(MANIFEST, strings)).toEqual([]);
    expect(errors(strings, MANIFEST)).toEqual([]);
    expect(
      errors(
        LIVE,
        edit(o => (container(o).resources.requests.cpu = '88000m')),
      ),
    ).toEqual([]);
    expect(
      errors(
        LIVE,
        edit(o => (container(o).resources.requests.memory = '655360Mi')),
      ),
    ).toEqual([]);
    expect(
      errors(
        LIVE,
        edit(o => (container(o).resources.requests['vpc.amazonaws.com/efa'] = '16')),
      ),
    ).toEqual(REFUSED);
    // A resource added at 0 is a new map entry.
    expect(
      errors(
        LIVE,
        edit(o => (container(o).resources.limits['example.com/nic'] = 0)),
      ),
    ).toEqual(REFUSED);
  });

  test("the webhook's create defaults (completionMode: Indexed, restartPolicy: OnFailure) are stored: spelling them out later is no change", () => {
    // A manifest baseline that leaves them to the webhook, as a hand-written JobSet does.
    const bare = edit(o => {
      delete rJob(o).template.spec.completionMode;
      delete podSpec(o).restartPolicy;
    });
    const spelled = edit(o => {
      rJob(o).template.spec.completionMode = 'Indexed';
      Object.assign(podSpec(o), { restartPolicy: 'OnFailure', hostNetwork: false });
    }, bare);
    expect(errors(bare, spelled)).toEqual([]);
    expect(
      errors(
        bare,
        edit(o => (rJob(o).template.spec.completionMode = 'NonIndexed'), bare),
      ),
    ).toEqual(REFUSED);
    expect(
      errors(
        bare,
        edit(o => (podSpec(o).restartPolicy = 'Never'), bare),
      ),
    ).toEqual(REFUSED);
    // The webhook defaults on create only, and kubectl apply sends the replicatedJobs list whole (a
    // JSON merge patch replaces lists): the same manifest again takes them away from the stored
    // object, which the webhook refuses.
    expect(errors(bare, bare)).toEqual(REFUSED);
    // The live object has them: re-applying it is no change.
    const created = edit(o => {
      rJob(o).template.spec.completionMode = 'Indexed';
      podSpec(o).restartPolicy = 'OnFailure';
      Object.assign(o.metadata, { uid: 'u-1', resourceVersion: '1' });
    }, bare);
    expect(errors(created, spelled)).toEqual([]);
    expect(errors(created, bare)).toEqual(REFUSED);
  });

  test("the webhook's other create defaults are stored too: the CRD's transition rules compare them", () => {
    const bare = edit(o => {
      delete o.spec.network;
      delete o.spec.startupPolicy;
      delete o.spec.failurePolicy.restartStrategy;
    });
    // What `kubectl get` shows: network and startupPolicy from the webhook, restartStrategy from the CRD.
    const exported = edit(o => {
      o.spec.network = { enableDNSHostnames: true, publishNotReadyAddresses: true };
      o.spec.startupPolicy = { startupPolicyOrder: 'AnyOrder' };
      o.spec.failurePolicy.restartStrategy = 'Recreate';
    }, bare);
    expect(errors(bare, exported)).toEqual([]);
    expect(
      errors(
        bare,
        edit(o => (o.spec.network = { enableDNSHostnames: false }), bare),
      ),
    ).toEqual(['spec.network']);
    expect(
      errors(
        bare,
        edit(o => (o.spec.startupPolicy = { startupPolicyOrder: 'InOrder' }), bare),
      ),
    ).toEqual(['spec.startupPolicy']);
  });
});

describe('a forbidden JobSet change reads like a StatefulSet one (the value is 5+ KB)', () => {
  const { formatReport, toJson } = require('../../src/guard/report') as typeof import('../../src/guard/report');
  const before = jobSet();
  const after = JSON.parse(JSON.stringify(before));
  after.spec.replicatedJobs[0].template.spec.template.spec.containers[0].image = 'img:2';
  const result = guard([before], [after], { serverVersion: '1.35' });

  test('the text report is under 2 KB, no line over 300 characters, and names the changed field', () => {
    expect(JSON.stringify(before.spec.replicatedJobs).length).toBeGreaterThan(5_000);
    const text = formatReport(result);
    expect(text.length).toBeLessThan(2048);
    expect(text.split('\n').filter(l => l.length > 300)).toEqual([]);
    expect(text).toContain('changed: [node].template.spec.template.spec.containers[');
    expect(text).toContain('"img:1" -> "img:2"');
    expect(text).toMatch(/Invalid value: \[\{"name":"node".*… \(\d+ characters\): field is immutable/);
  });

  test('--json carries the changed fields and short values; the whole values only on request', () => {
    const json = toJson(result) as any;
    expect(JSON.stringify(json).length).toBeLessThan(4096);
    expect(json.findings[0].changes).toEqual([
      expect.objectContaining({ before: 'img:1', after: 'img:2', script: null }),
    ]);
    expect(json.findings[0].before).toMatch(/… \(\d+ characters\)$/);
    const whole = toJson(result, { wholeValues: true }) as any;
    expect(whole.findings[0].before).toEqual(before.spec.replicatedJobs);
  });
});

describe('upgrading the library: an exit-code rule no longer sends onPodConditions: [] (0.2.0)', () => {
  // The JobSet webhook compares replicatedJobs with equality.Semantic.DeepEqual, for which an empty
  // list equals a missing one (apimachinery third_party/forked/golang/reflect: equateNilAndEmpty).
  const withEmpty = (o: any) => {
    const c = JSON.parse(JSON.stringify(o));
    for (const r of c.spec.replicatedJobs[0].template.spec.podFailurePolicy.rules)
      if (r.onExitCodes) r.onPodConditions = [];
    return c;
  };
  test('is no change the webhook refuses: from the old manifest, and from a live export, both apply ways', () => {
    const now = jobSet();
    expect(
      now.spec.replicatedJobs[0].template.spec.podFailurePolicy.rules.some(
        (r: any) => 'onPodConditions' in r && r.onExitCodes,
      ),
    ).toBe(false);
    for (const serverSideApply of [false, true]) {
      expect(guard([withEmpty(now)], [now], { serverSideApply }).findings.filter(f => f.severity === 'error')).toEqual(
        [],
      );
      expect(
        guard([liveExport(withEmpty(now))], [now], { serverSideApply }).findings.filter(f => f.severity === 'error'),
      ).toEqual([]);
    }
  });
});
