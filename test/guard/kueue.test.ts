// Kueue's StatefulSet admission webhook (vstatefulset.kb.io), per release. Each case names the
// Kueue function it checks: (*Webhook).ValidateUpdate in pkg/controller/jobs/statefulset/
// statefulset_webhook.go, jobframework.ValidateImmutablePodGroupPodSpec and
// ValidateUpdateForWorkloadPriorityClassName in pkg/controller/jobframework/validation.go, and
// utilpod.SpecShape in pkg/util/pod/pod.go, as read at each release tag of kubernetes-sigs/kueue.
import { Chart, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, guard, GuardValidation, IMMUTABLE_FIELDS } from '../../src';
import { main } from '../../src/guard/cli';
import { liveExport } from './live-export';

const WEBHOOK = 'admission webhook "vstatefulset.kb.io" denied the request: ';

function trainer(props: Partial<ConstructorParameters<typeof GpuTrainingStatefulSet>[2]> = {}): any {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'ml' });
  new GpuTrainingStatefulSet(chart, 't', {
    name: 'trainer',
    image: 'nvcr.io/nvidia/pytorch:24.08-py3',
    gpusPerPod: 2,
    replicas: 2,
    args: ['train.py'],
    queueName: 'team-a',
    ...props,
  });
  return Testing.synth(chart).find((o: any) => o.kind === 'StatefulSet');
}

/**
 * The StatefulSet as the cluster holds it under Kueue: (*Webhook).Default wrote the queue name and
 * pod group into the template on create, and the controller reports its pods.
 */
function live(
  sts: any,
  status: { replicas?: number; readyReplicas?: number } = {
    replicas: sts.spec.replicas,
    readyReplicas: sts.spec.replicas,
  },
): any {
  const o = liveExport(sts);
  const queue = sts.metadata.labels?.['kueue.x-k8s.io/queue-name'];
  if (queue) {
    o.spec.template.metadata.labels = {
      ...o.spec.template.metadata.labels,
      'kueue.x-k8s.io/queue-name': queue,
      'kueue.x-k8s.io/pod-group-name': `statefulset-${sts.metadata.name}-abcde`,
    };
    o.spec.template.metadata.annotations = {
      ...o.spec.template.metadata.annotations,
      'kueue.x-k8s.io/pod-group-total-count': String(sts.spec.replicas),
      'kueue.x-k8s.io/pod-group-fast-admission': 'true',
    };
  }
  o.status = { availableReplicas: status.readyReplicas ?? 0, currentReplicas: status.replicas ?? 0, ...status };
  return o;
}

/** `kubectl scale`: the library refuses replicas 0 in props; a live StatefulSet gets there by scaling. */
const scaled = (sts: any, replicas: number) => ({
  ...JSON.parse(JSON.stringify(sts)),
  spec: { ...sts.spec, replicas },
});

const errors = (before: any, after: any, kueueVersion?: string) =>
  guard([before], [after], { kueueVersion }).findings.filter(f => f.severity === 'error');
const relabel = (sts: any, labels: Record<string, string | undefined>) => {
  const o = JSON.parse(JSON.stringify(sts));
  for (const [k, v] of Object.entries(labels)) {
    if (v === undefined) delete o.metadata.labels[k];
    else o.metadata.labels[k] = v;
  }
  return o;
};

const VERSIONS = [
  '0.9',
  '0.9.0',
  '0.9.4',
  '0.10.0',
  '0.10.2',
  '0.11',
  '0.12.8',
  '0.12.9',
  '0.13',
  '0.14',
  '0.15',
  '0.17.6',
  '0.17.7',
  '0.19',
  '0.19.2',
];

describe('the Kueue rules in the table', () => {
  test('each names the Kueue function and the releases it holds for', () => {
    const rules = IMMUTABLE_FIELDS.find(k => k.kind === 'StatefulSet')!.fields.filter(r => r.kueue);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const r of rules) {
      expect(r.source).toMatch(
        /^Kueue .*(ValidateUpdate|ValidateImmutablePodGroupPodSpec|ValidateUpdateForWorkloadPriorityClassName)/,
      );
      expect(r.message.startsWith(WEBHOOK)).toBe(true);
      for (const v of r.kueue!) expect(v.from).toMatch(/^0\.\d+\.\d+$/);
    }
  });

  test('the Kueue version: 0.NN or 0.NN.P (with or without v), from 0.9; default 0.10, the StatefulSet floor', () => {
    expect(guard([], []).kueueVersion).toBe('0.10');
    expect(guard([], [], { kueueVersion: '0.9' }).kueueVersion).toBe('0.9');
    expect(guard([], [], { kueueVersion: 'v0.10.2' }).kueueVersion).toBe('0.10.2');
    for (const bad of ['0.8', '0.8.9', '1.0', 'latest', '0.10.x', ''])
      expect(() => guard([], [], { kueueVersion: bad })).toThrow(/Kueue version .* is not supported/);
  });
});

describe('(*Webhook).ValidateUpdate: no false alarm', () => {
  test.each(VERSIONS)(
    "Kueue %s: the library's queued training StatefulSet, unchanged, against its live export (webhook-added template labels, status) is clean",
    v => {
      expect(errors(live(trainer()), trainer(), v)).toEqual([]);
    },
  );

  test.each(VERSIONS.filter(v => v !== '0.9.0' && v !== '0.10.0'))(
    "Kueue %s: a StatefulSet without the queue-name label is not Kueue's: replicas and requests change freely",
    v => {
      const before = trainer({ queueName: undefined });
      expect(errors(live(before), trainer({ queueName: undefined, replicas: 4, gpusPerPod: 4 }), v)).toEqual([]);
    },
  );

  // v0.9.0-v0.9.2 and v0.10.0 check replicas with no isManagedByKueue guard (added in v0.9.3 and
  // v0.10.1): every StatefulSet's resize is refused; the pod shape stays a queued-only rule.
  test.each(['0.9.0', '0.9.2', '0.10.0'])(
    'Kueue %s: the replicas check applies to every StatefulSet, queued or not',
    v => {
      const before = trainer({ queueName: undefined });
      expect(
        errors(live(before), trainer({ queueName: undefined, replicas: 4, gpusPerPod: 4 }), v).map(e => e.message),
      ).toEqual([`${WEBHOOK}spec.replicas: Invalid value: 4: field is immutable`]);
      expect(
        errors(live(before), trainer({ queueName: undefined, replicas: 4 }), v === '0.10.0' ? '0.10.1' : '0.9.3'),
      ).toEqual([]);
    },
  );

  test.each(VERSIONS)('Kueue %s: an image bump is not part of SpecShape and passes', v => {
    expect(errors(live(trainer()), trainer({ image: 'nvcr.io/nvidia/pytorch:24.09-py3' }), v)).toEqual([]);
  });
});

describe('(*Webhook).ValidateUpdate: spec.replicas', () => {
  test('Kueue v0.9: ValidateImmutableField(new, old) on spec.replicas refuses any resize (kueue#3279), quoting the new value', () => {
    const [f, ...rest] = errors(live(trainer()), trainer({ replicas: 4 }), '0.9');
    expect(rest).toEqual([]);
    expect(f.path).toBe('spec.replicas');
    expect(f.message).toBe(`${WEBHOOK}spec.replicas: Invalid value: 4: field is immutable`);
    expect(f.source).toMatch(/statefulset_webhook\.go/);
    // Scaling to 0 too.
    expect(errors(live(trainer()), scaled(trainer(), 0), '0.9').map(e => e.path)).toEqual(['spec.replicas']);
  });

  test.each(['0.10.0', '0.11', '0.15', '0.19'])(
    'Kueue %s: "Allow only scale down to zero and scale up from zero"',
    v => {
      expect(errors(live(trainer()), trainer({ replicas: 4 }), v).map(e => e.message)).toEqual([
        `${WEBHOOK}spec.replicas: Invalid value: 4: field is immutable`,
      ]);
      expect(errors(live(trainer()), scaled(trainer(), 0), v)).toEqual([]);
      const stopped = scaled(trainer(), 0);
      expect(errors(live(stopped, { replicas: 0, readyReplicas: 0 }), trainer({ replicas: 4 }), v)).toEqual([]);
    },
  );

  test('Kueue v0.10+: scaling up from 0 while status.replicas > 0: Forbidden "scaling down is still in progress"; v0.9 refuses it as a resize', () => {
    const stopped = scaled(trainer(), 0);
    const draining = live(stopped, { replicas: 2, readyReplicas: 0 });
    expect(errors(draining, trainer({ replicas: 2 }), '0.10').map(e => e.message)).toEqual([
      `${WEBHOOK}spec.replicas: Forbidden: scaling down is still in progress`,
    ]);
    expect(errors(draining, trainer({ replicas: 2 }), '0.9').map(e => e.message)).toEqual([
      `${WEBHOOK}spec.replicas: Invalid value: 2: field is immutable`,
    ]);
    // A manifest baseline has no status: the transient state is not guessed.
    expect(errors(stopped, trainer({ replicas: 2 }), '0.10')).toEqual([]);
  });
});

describe('(*Webhook).ValidateUpdate: the queue-name label', () => {
  const moved = relabel(trainer(), { 'kueue.x-k8s.io/queue-name': 'team-b' });

  test('Kueue v0.9: immutable; ValidateImmutableField(new, old) quotes the new name', () => {
    expect(errors(live(trainer()), moved, '0.9').map(e => [e.path, e.message])).toEqual([
      [
        'metadata.labels[kueue.x-k8s.io/queue-name]',
        `${WEBHOOK}metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-b": field is immutable`,
      ],
    ]);
  });

  test('Kueue v0.10: immutable even with no pod running; ValidateImmutableField(old, new) quotes the old name, and the template label its Default rewrote the new one', () => {
    expect(errors(live(trainer(), { replicas: 0, readyReplicas: 0 }), moved, '0.10').map(e => e.message)).toEqual([
      `${WEBHOOK}metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a": field is immutable`,
      `${WEBHOOK}spec.template.metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-b": field is immutable`,
    ]);
  });

  test.each([
    ['0.11', 'team-a'],
    ['0.12.8', 'team-a'],
    ['0.13.3', 'team-a'],
    ['0.12.9', 'team-b'],
    ['0.13.4', 'team-b'],
    ['0.14', 'team-b'],
    ['0.19', 'team-b'],
  ])('Kueue %s: refused only while a pod is Ready (status.readyReplicas > 0), quoting %s', (v, shown) => {
    expect(errors(live(trainer(), { replicas: 2, readyReplicas: 0 }), moved, v)).toEqual([]);
    expect(errors(live(trainer(), { replicas: 2, readyReplicas: 1 }), moved, v).map(e => e.message)).toEqual([
      `${WEBHOOK}metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "${shown}": field is immutable`,
    ]);
    // A manifest baseline says nothing of its pods: a queued job is taken to be running.
    expect(errors(trainer(), moved, v)).toHaveLength(1);
  });

  test.each(VERSIONS)('Kueue %s: removing the queue name is always refused (newQueueName == "")', v => {
    const dropped = errors(live(trainer(), { replicas: 2, readyReplicas: 0 }), trainer({ queueName: undefined }), v);
    expect(dropped.map(e => e.path)).toEqual(['metadata.labels[kueue.x-k8s.io/queue-name]']);
  });

  test('adding a queue name to a running StatefulSet: refused on v0.9-v0.10 ("" -> name) and on v0.11+ while a pod is Ready', () => {
    const plain = live(trainer({ queueName: undefined }), { replicas: 2, readyReplicas: 2 });
    const idle = live(trainer({ queueName: undefined }), { replicas: 2, readyReplicas: 0 });
    expect(errors(plain, trainer(), '0.9').map(e => e.message)).toEqual([
      `${WEBHOOK}metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a": field is immutable`,
    ]);
    expect(errors(plain, trainer(), '0.10').map(e => e.message)).toEqual([
      `${WEBHOOK}metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": field is immutable`,
      `${WEBHOOK}spec.template.metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a": field is immutable`,
    ]);
    expect(errors(plain, trainer(), '0.11')).toHaveLength(1);
    expect(errors(idle, trainer(), '0.11')).toEqual([]);
  });

  test("Kueue v0.9: the template's queue-name label, once the manifest sets it, may not change (podSpecQueueNameLabelPath); v0.10's Default rewrites it on update first", () => {
    const before = live(trainer());
    const after = trainer();
    after.spec.template.metadata.labels['kueue.x-k8s.io/queue-name'] = 'team-b';
    expect(errors(before, after, '0.9').map(e => e.path)).toEqual([
      'spec.template.metadata.labels[kueue.x-k8s.io/queue-name]',
    ]);
    expect(errors(before, after, '0.10')).toEqual([]);
    expect(errors(before, after, '0.11')).toEqual([]);
  });
});

describe('jobframework.ValidateUpdateForWorkloadPriorityClassName: the kueue.x-k8s.io/priority-class label', () => {
  const withClass = (c?: string) => relabel(trainer(), { 'kueue.x-k8s.io/priority-class': c });
  test.each([
    ['0.9.3', 0],
    ['0.9.4', 1],
    ['0.10.1', 0],
    ['0.10.2', 1],
    ['0.11', 1],
  ])('Kueue %s: immutable (backported to v0.9.4 and v0.10.2): %d error(s)', (v, n) => {
    expect(errors(live(withClass('low'), { replicas: 2, readyReplicas: 0 }), withClass('high'), v)).toHaveLength(n);
  });
  test('Kueue v0.12-v0.14: may change while no pod is Ready; v0.15+: may change while running too, but not be added then', () => {
    const idle = { replicas: 2, readyReplicas: 0 };
    const busy = { replicas: 2, readyReplicas: 2 };
    expect(errors(live(withClass('low'), idle), withClass('high'), '0.12')).toEqual([]);
    expect(errors(live(withClass('low'), busy), withClass('high'), '0.14').map(e => e.message)).toEqual([
      `${WEBHOOK}metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": field is immutable`,
    ]);
    expect(errors(live(withClass('low'), busy), withClass('high'), '0.15')).toEqual([]);
    expect(errors(live(withClass(undefined), busy), withClass('high'), '0.15')).toHaveLength(1);
    expect(errors(live(withClass(undefined), idle), withClass('high'), '0.15')).toEqual([]);
    expect(errors(live(withClass('low'), idle), withClass(undefined), '0.15')).toHaveLength(1);
  });
});

describe('jobframework.ValidateImmutablePodGroupPodSpec over utilpod.SpecShape', () => {
  test.each([
    ['0.9.0', false],
    ['0.9.3', false],
    ['0.9', true],
    ['0.9.4', true],
    ['0.10.1', false],
    ['0.10.2', true],
    ['0.11', true],
    ['0.19', true],
  ])('Kueue %s: a gpusPerPod change (container requests) refused: %s', (v, refused) => {
    const found = errors(live(trainer()), trainer({ gpusPerPod: 4 }), v);
    expect(found.map(e => e.path)).toEqual(refused ? ['spec.template.spec.containers[0].resources.requests'] : []);
    if (refused) {
      expect(found[0].message).toMatch(
        new RegExp(
          `^${WEBHOOK.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}spec\\.template\\.spec\\.containers\\[0\\]\\.resources\\.requests: Invalid value: .*"nvidia.com/gpu":4.*: field is immutable$`,
        ),
      );
      expect(found[0].source).toMatch(/ValidateImmutablePodGroupPodSpec/);
    }
  });

  test('Kueue v0.11: ports, nodeSelector, tolerations, affinity and a container count change are each named; quantities compare by value', () => {
    const before = live(trainer());
    const after = trainer({
      masterPort: 29600,
      nodeSelector: { pool: 'h100' },
      pod: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    });
    expect(
      errors(before, after, '0.11')
        .map(e => e.path)
        .sort(),
    ).toEqual(
      expect.arrayContaining([
        'spec.template.spec.containers[0].ports',
        'spec.template.spec.nodeSelector',
        'spec.template.spec.tolerations',
      ]),
    );
    const sidecar = trainer();
    sidecar.spec.template.spec.containers.push({ name: 'log', image: 'busybox:1.36' });
    expect(errors(before, sidecar, '0.11').map(e => e.path)).toEqual(['spec.template.spec.containers']);
    const milli = trainer();
    milli.spec.template.spec.containers[0].resources.requests.cpu = '8000m';
    expect(errors(before, milli, '0.11')).toEqual([]);
  });

  test('Kueue v0.17.7, v0.18.3, v0.19+: pod-level spec.resources.requests join the shape when set', () => {
    const before = live(trainer());
    const after = trainer();
    after.spec.template.spec.resources = { requests: { cpu: '16' } };
    expect(errors(before, after, '0.17.6')).toEqual([]);
    expect(errors(before, after, '0.17.7').map(e => e.path)).toEqual(['spec.template.spec.resources']);
    expect(errors(before, after, '0.18.2')).toEqual([]);
    expect(errors(before, after, '0.18.3')).toHaveLength(1);
    expect(errors(before, after, '0.19')).toHaveLength(1);
  });
});

describe('choosing the Kueue version', () => {
  test('--kueue-version on the CLI; a bad or repeated value is a usage error (exit 2)', () => {
    const fs = require('fs') as typeof import('fs');
    const os = require('os') as typeof import('os');
    const path = require('path') as typeof import('path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-kueue-'));
    try {
      const b = path.join(dir, 'b.json');
      const a = path.join(dir, 'a.json');
      fs.writeFileSync(b, JSON.stringify(live(trainer())));
      fs.writeFileSync(a, JSON.stringify(scaled(trainer(), 0)));
      const run = (...flags: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        return {
          code: main(
            ['guard', '--before', b, '--after', a, ...flags],
            s => out.push(s),
            s => err.push(s),
          ),
          out: out.join('\n'),
          err: err.join('\n'),
        };
      };
      expect(run().code).toBe(0); // default 0.10: scaling to 0 is allowed
      expect(run('--kueue-version', '0.9').code).toBe(1); // on 0.9 it is a resize
      const json = run('--kueue-version', '0.10', '--json');
      expect(json.code).toBe(0);
      expect(JSON.parse(json.out).kueueVersion).toBe('0.10');
      expect(run('--kueue-version=0.9.4').out).toMatch(/Kueue 0\.9\.4 webhook rules/);
      expect(run('--kueue-version', '0.8').code).toBe(2);
      const twice = run('--kueue-version', '0.10', '--kueue-version', '0.11');
      expect(twice.code).toBe(2);
      expect(twice.err).toMatch(/--kueue-version given 2 times/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the validation plugin takes kueueVersion as a quoted string', () => {
    expect(() => new GuardValidation({ baseline: 'x', kueueVersion: '0.10.2' })).not.toThrow();
    expect(() => new GuardValidation({ baseline: 'x', kueueVersion: 0.1 as any })).toThrow(
      /kueueVersion must be a Kueue release .*quote it in cdk8s.yaml/,
    );
    expect(() => new GuardValidation({ baseline: 'x', kueueVersion: 'latest' })).toThrow(
      /kueueVersion must be a Kueue release/,
    );
  });
});
