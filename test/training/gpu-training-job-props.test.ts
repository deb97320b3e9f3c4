import { Duration, Size, Testing } from 'cdk8s';
import { ConfigurationError, GpuTrainingJob, GpuTrainingJobProps, Rdma, TrainingFailureAction } from '../../src';
import { checkManifests } from '../../src/checks/manifests';
import { testChart, validateApp } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

/**
 * GpuTrainingJob's own props over boundary values, wrong types included: an accepted input
 * synthesizes a JobSet valid against the vendored CRD (and its Job strictly as a built-in Job); a
 * refused one throws a ConfigurationError naming the prop, never a TypeError.
 */

const base: GpuTrainingJobProps = { name: 'run', image: 'img:1', gpusPerPod: 2, args: ['train.py'] };

const TABLE: Record<string, { ok: unknown[]; bad: unknown[] }> = {
  name: { ok: ['a', 'a'.repeat(63 - '-node-0-0'.length - 6)], bad: ['', 'A', '1abc', 'a'.repeat(50), null, 5] },
  nodes: { ok: [1, 64], bad: [0, -1, 1.5, '2', {}] },
  maxRestarts: { ok: [0, 1000], bad: [-1, 1001, '3', 1.5] },
  failurePolicy: {
    ok: [
      [],
      [{ exitCodes: [255], action: TrainingFailureAction.RESTART }],
      [{ podCondition: 'ConfigIssue', action: TrainingFailureAction.FAIL }],
    ],
    bad: [
      'x',
      [{}],
      [null],
      [{ exitCodes: 'x', action: TrainingFailureAction.FAIL }],
      [{ podCondition: 'a b', action: TrainingFailureAction.FAIL }],
    ],
  },
  ttlAfterFinished: { ok: [Duration.seconds(0), Duration.days(7)], bad: [60, '1h', Duration.millis(1500)] },
  activeDeadline: { ok: [Duration.seconds(1), Duration.days(30)], bad: [Duration.seconds(0), 60, 'x'] },
  suspend: { ok: [true, false], bad: ['true', 1] },
  checkpoints: {
    ok: [{ claimName: 'ckpt' }, { claimName: 'ckpt', mountPath: '/data/ckpt' }],
    bad: [{}, { claimName: 'A' }, { claimName: 'c', mountPath: 'rel' }, { claimName: 'c', other: 1 }, 'ckpt'],
  },
  topology: {
    ok: [{ exclusive: 'cloud.google.com/gke-nodepool' }],
    bad: [{ exclusive: 'a b' }, { nope: 'x' }, 'x'],
  },
  rdma: { ok: [Rdma.efa(32)], bad: [{}, 'efa'] },
  sharedMemory: { ok: [Size.gibibytes(1)], bad: [1, '1Gi'] },
};

function attempt(props: Record<string, unknown>): { error?: unknown; objects?: any[] } {
  try {
    const chart = testChart();
    new GpuTrainingJob(chart, 'job', { ...base, ...props });
    validateApp(chart);
    const objects = Testing.synth(chart);
    expectValidOutput(objects);
    const errors = checkManifests(objects);
    if (errors.length) throw new Error(errors.join('\n'));
    return { objects };
  } catch (error) {
    return { error };
  }
}

const show = (x: unknown) =>
  x instanceof Duration || x instanceof Size || x instanceof Rdma ? x.constructor.name : JSON.stringify(x);
const accepted = Object.entries(TABLE).flatMap(([p, v]) => v.ok.map(x => [p, show(x), x] as const));
const refused = Object.entries(TABLE).flatMap(([p, v]) => v.bad.map(x => [p, show(x), x] as const));

describe('GpuTrainingJob props sweep', () => {
  test.each(accepted)('%s = %s synthesizes a valid JobSet', (prop, _shown, value) => {
    const result = attempt({ [prop]: value });
    if (result.error) throw result.error as Error;
    expect(result.objects!.some(o => o.kind === 'JobSet')).toBe(true);
  });

  test.each(refused)('%s = %s is refused with a ConfigurationError naming the prop', (prop, _shown, value) => {
    const { error } = attempt({ [prop]: value });
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(new RegExp(`^GpuTrainingJob 'job': ${prop}[ .\\[(]`));
  });

  test('a world size beyond int32 is refused on nodes', () => {
    const { error } = attempt({ nodes: 2 ** 20, gpusPerPod: 2 ** 12 });
    expect(String((error as Error).message)).toMatch(/^GpuTrainingJob 'job': nodes times gpusPerPod/);
  });
});
