import { Duration, Size } from 'cdk8s';
import {
  ConfigurationError,
  DisruptionBudget,
  EnvFrom,
  GpuTrainingStatefulSet,
  GpuTrainingStatefulSetProps,
  NetworkAccess,
  NetworkPeer,
  Rdma,
  TrainingUpdateStrategy,
} from '../../src';
import { synthValid, testChart } from '../support/synth';

/**
 * Every prop over boundary values, wrong types included (as a JavaScript caller or `as any` would
 * pass them). An accepted input must synthesize strictly valid objects (1.28 and 1.36 schemas, and
 * the construct's synth-time checks); a refused one must throw a ConfigurationError that names the
 * prop, never a TypeError from inside cdk8s or the library.
 */

const base: GpuTrainingStatefulSetProps = {
  name: 'trainer',
  image: 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime',
  gpusPerPod: 2,
  args: ['train.py'],
};
const gib = (n: number) => Size.gibibytes(n);

type Values = { ok: unknown[]; bad: unknown[] };

const TABLE: Record<string, Values> = {
  name: { ok: ['a', 'a'.repeat(52), 'trainer-2'], bad: ['', 'a'.repeat(53), 'A', '1abc', 'a_b', null, 5, ['a']] },
  image: {
    ok: ['busybox', 'nvcr.io/nvidia/pytorch:24.08-py3', `repo@sha256:${'a'.repeat(64)}`, 'localhost:5000/a/b:1'],
    bad: ['', 'a b', 'Repo', 3, null, {}],
  },
  gpusPerPod: { ok: [1, 8, 64], bad: [0, -1, 1.5, '2', null, Infinity, NaN, 2 ** 31] },
  replicas: { ok: [1, 100], bad: [0, -1, 2 ** 31, NaN, '3', 1.5, {}] },
  version: { ok: [1, 99], bad: [0, 1.5, 'v2', -1] },
  masterPort: { ok: [1024, 65535], bad: [1023, 65536, '29500', 0.5] },
  maxRestarts: { ok: [0, 1000], bad: [1001, -1, '3', 2.5, true] },
  maxFailedStarts: { ok: [1, 1000], bad: [0, 1001, -1, '10', 2.5, true] },
  queueName: { ok: ['q', 'team.a', 'a'.repeat(63)], bad: ['a'.repeat(64), 'Q', 'a_b', '', 7, ['q']] },
  runId: { ok: ['r', 'a'.repeat(63), '2026-01-run'], bad: ['a'.repeat(64), 'a/b', '.x', '', 1, {}] },
  terminationGracePeriod: {
    ok: [Duration.seconds(0), Duration.hours(1), Duration.days(365)],
    bad: [Duration.millis(1500), 30, '5m', Duration.days(366)],
  },
  sharedMemory: { ok: [Size.mebibytes(1), gib(31)], bad: [gib(32), gib(1.3), '8Gi', 8, gib(0)] },
  storage: {
    ok: [{ size: gib(1) }, { size: gib(1), claimName: 'x', mountPath: '/x', storageClassName: 'fast.ssd' }],
    bad: [
      {},
      { size: '1Gi' },
      'x',
      { size: gib(1), claimName: 'X' },
      { size: gib(1), storageClassName: 'Fast' },
      { size: gib(1), extra: 1 },
      null,
    ],
  },
  sharedCheckpoints: {
    ok: [{ claimName: 'c' }, { claimName: 'c.d', mountPath: '/s' }],
    bad: [{}, { claimName: 5 }, { claimName: 'c', mountPath: 's' }, 'c'],
  },
  adoptVolumes: { ok: [], bad: [{ persistentVolumes: ['pv'] }] },
  command: {
    ok: [['python'], ['torchrun', '--rdzv-conf', 'read_timeout=300']],
    bad: [[], 'torchrun', [1], {}, ['torchrun', '--standalone'], ['torchrun', '--nnodes=2']],
  },
  args: {
    ok: [['x'], ['train.py', '--lr', '0.1', '--nnodes', '2']],
    bad: [[], 'train.py', [null], ['--max-restarts', '9', 'train.py']],
  },
  gpuConfig: {
    ok: [{ G: 'b' }, {}, { ['G'.repeat(253)]: 'x' }],
    bad: [
      { '1G': 'x' },
      { G: 1 },
      [],
      'G=b',
      { WORLD_SIZE: '1' },
      { PET_STANDALONE: '1' },
      { '.': 'x' },
      { '..x': 'x' },
      { ['G'.repeat(254)]: 'x' },
    ],
  },
  updateStrategy: {
    ok: [TrainingUpdateStrategy.ON_DELETE, TrainingUpdateStrategy.ROLLING_UPDATE],
    bad: ['Recreate', 1],
  },
  disruptionBudget: {
    ok: [DisruptionBudget.maxUnavailable(1), DisruptionBudget.none(), DisruptionBudget.minAvailable(1)],
    bad: [DisruptionBudget.minAvailable(2), DisruptionBudget.maxUnavailable(0.5), 'x', {}],
  },
  rdma: {
    ok: [Rdma.efa(1), Rdma.sharedDevice(), Rdma.sriov({ networks: ['n'], resourceName: 'example.com/vf' })],
    bad: [true, {}, 'efa', Rdma.efa(65)],
  },
  runAsRoot: { ok: [true, false], bad: ['yes', 1] },
  env: {
    ok: [{ E: 'b' }, {}],
    bad: [{ E: 1 }, { 'A B': 'x' }, { WORLD_SIZE: '1' }, { PET_SHUTDOWN_TIMEOUT: '900' }, 'x', [], { E: null }],
  },
  envFrom: { ok: [[EnvFrom.configMap('c')], []], bad: [['c'], 'c', [{}]] },
  volumes: {
    ok: [[{ volume: { name: 'v', emptyDir: {} }, mountPath: '/v' }], []],
    bad: [
      [{ volume: { name: 'V', emptyDir: {} } }],
      'v',
      [{ volume: { name: 'v' } }],
      [{ volume: { name: 'v', emptyDir: {} }, mountPath: '/tmp' }],
    ],
  },
  gpuResource: { ok: ['nvidia.com/mig-1g.10gb'], bad: ['gpu', 'kubernetes.io/gpu', 5] },
  extendedResources: {
    ok: [{ 'example.com/x': 1 }, {}],
    bad: [{ 'example.com/x': 0 }, { cpu: 1 }, { 'example.com/x': '1' }, []],
  },
  cpu: { ok: [0.5, 96], bad: [0, -1, '4', NaN] },
  guaranteedQos: { ok: [true, false], bad: ['true', 1] },
  memory: { ok: [gib(64), Size.mebibytes(8193 * 4)], bad: [gib(0), '64Gi', gib(1.3)] },
  nodeSelector: {
    ok: [{ a: 'b' }, { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' }],
    bad: [{ a: 'b c' }, { a: 1 }, 'a=b', { 'a b': 'c' }],
  },
  runAsUser: { ok: [1, 2147483647], bad: [0, -1, '1000', 2 ** 31] },
  clusterDomain: { ok: ['corp.local', 'cluster.local'], bad: ['Corp', '', 5] },
  networkPolicy: {
    ok: [NetworkAccess.unrestricted(), NetworkAccess.restricted({ clients: [NetworkPeer.namespace('tools')] })],
    bad: [
      {},
      'none',
      NetworkAccess.restricted({ clients: 'x' as any }),
      NetworkAccess.restricted({ clients: [NetworkPeer.cidr('169.254.169.254/32')] }),
      NetworkAccess.restricted({ clients: [{} as any] }),
      NetworkAccess.restricted({ port: 1 } as any),
    ],
  },
  pod: {
    ok: [{ priorityClassName: 'x' }, {}],
    bad: [
      { priority: 'x' },
      'x',
      { labels: { 'app.kubernetes.io/name': 'x' } },
      { imagePullSecrets: 'ngc' },
      { tolerations: 'x' },
      { topologySpreadConstraints: 'x' },
      { sidecars: {} },
      { initContainers: 'x' },
    ],
  },
};

function attempt(props: Record<string, unknown>): { objects?: any[]; error?: unknown } {
  try {
    const chart = testChart();
    new GpuTrainingStatefulSet(chart, 'trainer', { ...base, ...props });
    return { objects: synthValid(chart) };
  } catch (error) {
    return { error };
  }
}

const describeValue = (x: unknown) => {
  if (x instanceof Size || x instanceof Duration) return x.constructor.name;
  try {
    return JSON.stringify(x) ?? String(x);
  } catch {
    return String(x);
  }
};

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

  // Every accepted value of every prop, combined: the k-th combination takes each prop's k-th
  // accepted value (cycling), so props meet each other's boundaries.
  const combinable = Object.entries(TABLE).filter(
    ([prop, values]) => values.ok.length > 0 && !['name', 'version'].includes(prop),
  );
  const rounds = Math.max(...combinable.map(([, values]) => values.ok.length));
  test.each(Array.from({ length: rounds }, (_, k) => [k]))(
    "combination %i of every prop's accepted values synthesizes strictly valid objects",
    k => {
      const props: Record<string, unknown> = { name: 'combo', version: k + 1 };
      for (const [prop, values] of combinable) props[prop] = values.ok[k % values.ok.length];
      // Pairs of accepted values that contradict each other are refused (tested on their own):
      // a UID for a root pod, and a non-root pod with the RDMA choices whose IPC_LOCK needs root.
      if (props.rdma !== undefined && (props.rdma as Rdma).podSecurityLevel === 'privileged') props.runAsRoot = true;
      if (props.runAsRoot === true) delete props.runAsUser;
      // ... and a fraction of a CPU in a Guaranteed pod (the CPU manager pins whole CPUs).
      if (props.guaranteedQos === true && typeof props.cpu === 'number') props.cpu = Math.ceil(props.cpu);
      const result = attempt(props);
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
    const result = attempt({
      replicas: 2,
      storage: { size: gib(1), storageClassName: 'gp3' },
      adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] },
    });
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
