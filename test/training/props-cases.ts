import { Chart, Duration, Size } from 'cdk8s';
import {
  DeviceSelector,
  DisruptionBudget,
  EnvFrom,
  GpuTrainingStatefulSet,
  GpuTrainingStatefulSetProps,
  NetworkAccess,
  NetworkPeer,
  Rdma,
  TrainingUpdateStrategy,
} from '../../src';
import { testChart } from '../support/synth';

/**
 * GpuTrainingStatefulSet's props over boundary values, as data: the unit sweep (props-sweep.test.ts)
 * holds the construct to each verdict, and the cluster sweep (test/cluster/props-sweep.test.ts)
 * applies what it accepts to a real API server, which must accept it too.
 */

export const base: GpuTrainingStatefulSetProps = {
  name: 'trainer',
  image: 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime',
  gpusPerPod: 2,
  args: ['train.py'],
};
const gib = (n: number) => Size.gibibytes(n);

export type Values = { ok: unknown[]; bad: unknown[] };

export const TABLE: Record<string, Values> = {
  name: { ok: ['a', 'a'.repeat(52), 'trainer-2'], bad: ['', 'a'.repeat(53), 'A', '1abc', 'a_b', null, 5, ['a']] },
  image: {
    ok: ['busybox', 'nvcr.io/nvidia/pytorch:24.08-py3', `repo@sha256:${'a'.repeat(64)}`, 'localhost:5000/a/b:1'],
    bad: ['', 'a b', 'Repo', 3, null, {}],
  },
  gpusPerPod: { ok: [1, 8], bad: [0, -1, 1.5, '2', null, Infinity, NaN, 9, 64, 2 ** 31] },
  maxGpusPerNode: { ok: [8, 16, 64], bad: [0, -1, 1.5, '8', 65, Infinity, NaN] },
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
      // Past 8Ei (2^63 bytes) the quantity is written with an exponent the API server refuses.
      { size: gib(1e300) },
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
      // A ConfigMap's values total at most 1 MiB (in bytes: an "é" is two).
      { G: 'x'.repeat(1024 * 1024 + 1) },
      { A: '\u00e9'.repeat(512 * 1024 + 1) },
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
  dynamicResourceAllocation: {
    ok: [
      { kubernetesVersion: '1.34' },
      {
        kubernetesVersion: '1.36',
        deviceClassName: 'gpu.example.com',
        selectors: [
          DeviceSelector.nvidiaProduct('NVIDIA H100 80GB HBM3'),
          DeviceSelector.attributeEquals('gpu.example.com/cores', 132),
        ],
      },
    ],
    bad: [
      { kubernetesVersion: '1.33' },
      {},
      '1.34',
      { kubernetesVersion: '1.34', deviceClassName: 'Gpu' },
      { kubernetesVersion: '1.34', selectors: ['device.driver == "x"'] },
      { kubernetesVersion: '1.34', selectors: [DeviceSelector.attributeEquals('productName', 'x')] },
    ],
  },
  extendedResources: {
    ok: [{ 'example.com/x': 1 }, {}],
    bad: [{ 'example.com/x': 0 }, { cpu: 1 }, { 'example.com/x': '1' }, []],
  },
  cpu: { ok: [0.5, 96], bad: [0, -1, '4', NaN] },
  guaranteedQos: { ok: [true, false], bad: ['true', 1] },
  memory: {
    ok: [gib(64), Size.mebibytes(8193 * 4)],
    bad: [gib(0), '64Gi', gib(1.3), gib(1e300), Size.tebibytes(8 * 1024 ** 2 + 1)],
  },
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
      // 256 KiB of annotations, counted in bytes as the API server counts them (an "é" is two).
      { annotations: { a: '\u00e9'.repeat(128 * 1024) } },
    ],
  },
};

/** The construct (id `trainer`) over `base` and `props`, in a chart of `namespace` (none by default). */
export function buildTrainer(
  props: Record<string, unknown>,
  namespace?: string,
): { chart: Chart; trainer: GpuTrainingStatefulSet } {
  const chart = testChart(namespace);
  const trainer = new GpuTrainingStatefulSet(chart, 'trainer', { ...base, ...props });
  return { chart, trainer };
}

/** A value as a test title shows it; a value past 300 characters (a 1 MiB gpuConfig) is cut. */
export const describeValue = (x: unknown) => {
  if (x instanceof Size || x instanceof Duration) return x.constructor.name;
  let text: string;
  try {
    text = JSON.stringify(x) ?? String(x);
  } catch {
    text = String(x);
  }
  return text.length > 300 ? `${text.slice(0, 60)}... (${text.length} characters)` : text;
};

// Every accepted value of every prop, combined: the k-th combination takes each prop's k-th
// accepted value (cycling), so props meet each other's boundaries.
// Dynamic Resource Allocation is its own dimension: it is refused beside the device plugin's
// gpuResource and a Kueue queue, which every combination has.
const DRA_ALTERNATIVES = ['gpuResource', 'queueName'];
const combinable = Object.entries(TABLE).filter(
  ([prop, values]) => values.ok.length > 0 && !['name', 'version', 'dynamicResourceAllocation'].includes(prop),
);
const BASE_ROUNDS = Math.max(...combinable.map(([, values]) => values.ok.length));

/**
 * How many combinations there are: as many as the most accepted values of one prop, and as many
 * again with each of dynamicResourceAllocation's accepted values in place of gpuResource and queueName.
 */
export const COMBINATION_ROUNDS = 2 * BASE_ROUNDS;

/** The props of the k-th combination of every prop's accepted values. */
export function combination(k: number): Record<string, unknown> {
  const props: Record<string, unknown> = { name: 'combo', version: k + 1 };
  const round = k % BASE_ROUNDS;
  for (const [prop, values] of combinable) props[prop] = values.ok[round % values.ok.length];
  if (k >= BASE_ROUNDS) {
    for (const prop of DRA_ALTERNATIVES) delete props[prop];
    const dra = TABLE.dynamicResourceAllocation.ok;
    props.dynamicResourceAllocation = dra[round % dra.length];
  }
  // Pairs of accepted values that contradict each other are refused (tested on their own):
  // a UID for a root pod, and a non-root pod with the RDMA choices whose IPC_LOCK needs root.
  if (props.rdma !== undefined && (props.rdma as Rdma).podSecurityLevel === 'privileged') props.runAsRoot = true;
  if (props.runAsRoot === true) delete props.runAsUser;
  // ... and a fraction of a CPU in a Guaranteed pod (the CPU manager pins whole CPUs).
  if (props.guaranteedQos === true && typeof props.cpu === 'number') props.cpu = Math.ceil(props.cpu);
  return props;
}

/** adoptVolumes, which has no accepted value alone: with storage (naming its class) and one volume per replica. */
export const ADOPTION: Record<string, unknown> = {
  replicas: 2,
  storage: { size: gib(1), storageClassName: 'gp3' },
  adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] },
};

/**
 * Extremes a caller may pass, judged as they come: each must be refused by the construct, naming the
 * prop, or else accepted by a real API server (test/cluster/props-sweep.test.ts).
 */
export const EXTREMES: Array<[string, unknown]> = [
  ['memory', gib(1e300)],
  ['sharedMemory', gib(1e300)],
  ['storage', { size: gib(1e300) }],
  ['cpu', 1e300],
  // 2^63 bytes, the largest size Kubernetes counts in an int64.
  ['memory', Size.tebibytes(8 * 1024 ** 2)],
  // A ConfigMap holds at most 1 MiB of values.
  ['gpuConfig', { G: 'x'.repeat(1024 * 1024 + 1) }],
  ['gpuConfig', { G: 'x'.repeat(1024 * 1024) }],
  ['gpuConfig', { A: 'x'.repeat(512 * 1024), B: 'x'.repeat(512 * 1024) }],
  ['gpuConfig', { A: '\u00e9'.repeat(512 * 1024 + 1) }],
  // The API server allows 256 KiB of annotations on the pod template, counted in bytes, its own included.
  ['pod', { annotations: { a: 'x'.repeat(256 * 1024 - 1) } }],
  ['pod', { annotations: { a: '\u00e9'.repeat(128 * 1024) } }],
  // Not here yet: an object over etcd's request limit (1.5 MiB by default, e.g. a 2 MiB env value) is
  // refused when stored ("trying to send message larger than max"); the constructs do not bound an
  // object's whole size yet.
];
