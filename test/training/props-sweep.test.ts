import { ConfigurationError, Rdma } from '../../src';
import { synthValid } from '../support/synth';
import { ADOPTION, buildTrainer, combination, COMBINATION_ROUNDS, describeValue, TABLE } from './props-cases';

/**
 * Every prop over boundary values, wrong types included (as a JavaScript caller or `as any` would
 * pass them). An accepted input must synthesize strictly valid objects (1.28 and 1.36 schemas, and
 * the construct's synth-time checks); a refused one must throw a ConfigurationError that names the
 * prop, never a TypeError from inside cdk8s or the library.
 */

function attempt(props: Record<string, unknown>): { objects?: any[]; error?: unknown } {
  try {
    return { objects: synthValid(buildTrainer(props).chart) };
  } catch (error) {
    return { error };
  }
}

const accepted: Array<[string, string, unknown]> = [];
const refused: Array<[string, string, unknown]> = [];
for (const [prop, values] of Object.entries(TABLE)) {
  for (const x of values.ok) accepted.push([prop, describeValue(x), x]);
  for (const x of values.bad) refused.push([prop, describeValue(x), x]);
}

describe('GpuTrainingStatefulSet props sweep', () => {
  test('the table covers every prop the construct knows', () => {
    const probe = attempt({ notAProp: 1 });
    const known = /known: ([^)]*)\)/.exec(String((probe.error as Error).message))![1].split(', ');
    expect(Object.keys(TABLE).sort()).toEqual([...known].sort());
  });

  test.each(accepted)('%s = %s synthesizes strictly valid objects', (prop, _shown, value) => {
    const result = attempt({ [prop]: value });
    if (result.error) throw result.error as Error;
    expect(result.objects!.some(o => o.kind === 'StatefulSet')).toBe(true);
  });

  test.each(refused)('%s = %s is refused with a ConfigurationError naming the prop', (prop, _shown, value) => {
    const result = attempt({ [prop]: value });
    expect(result.error).toBeInstanceOf(ConfigurationError);
    expect((result.error as Error).message).toMatch(
      new RegExp(`^GpuTrainingStatefulSet 'trainer': ${prop.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[ .\\[(]`),
    );
  });

  // Every accepted value of every prop, combined (props-cases.ts combination).
  test.each(Array.from({ length: COMBINATION_ROUNDS }, (_, k) => [k]))(
    "combination %i of every prop's accepted values synthesizes strictly valid objects",
    k => {
      const result = attempt(combination(k));
      if (result.error) throw result.error as Error;
    },
  );

  test.each<[string, Record<string, unknown>]>([
    ['env', { env: 'E=1', gpuConfig: { E: '1' } }],
    [
      'pod.annotations',
      { pod: { annotations: 'a=b' }, rdma: Rdma.sriov({ networks: ['n'], resourceName: 'example.com/vf' }) },
    ],
    ['pod.labels', { pod: { labels: 'a=b' } }],
    ['extendedResources', { extendedResources: 'x', rdma: Rdma.efa(1) }],
  ])('a wrong-typed %s next to the props that read it is refused by name', (prop, props) => {
    const { error } = attempt(props);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(
      new RegExp(`^GpuTrainingStatefulSet 'trainer': ${prop.replace('.', '\\.')}`),
    );
  });

  test('a world size beyond int32 is refused on replicas', () => {
    const { error } = attempt({ replicas: 2 ** 20, gpusPerPod: 2 ** 12 });
    expect(String((error as Error).message)).toMatch(
      /^GpuTrainingStatefulSet 'trainer': replicas times gpusPerPod \(4096\) must be at most 2147483647 processes/,
    );
  });

  test('adoptVolumes is accepted with storage (naming its class) and one volume per replica', () => {
    const result = attempt(ADOPTION);
    if (result.error) throw result.error as Error;
    expect(result.objects!.filter(o => o.kind === 'PersistentVolumeClaim')).toHaveLength(2);
  });

  test('wrong types never surface as a TypeError', () => {
    for (const [prop, , value] of refused) {
      const { error } = attempt({ [prop]: value });
      expect([prop, error instanceof TypeError]).toEqual([prop, false]);
    }
  });
});
