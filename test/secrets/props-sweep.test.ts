import { Chart, Duration, Size, Testing } from 'cdk8s';
import {
  ConfigurationError,
  GpuTrainingStatefulSet,
  GpuWorkload,
  Reload,
  RotatingGpuSecret,
  RotatingGpuSecretProps,
  TgiInferenceService,
  TrainingUpdateStrategy,
  VllmInferenceService,
} from '../../src';
import { synthValid } from '../support/synth';
import { apiServerNameErrors } from './names';

/**
 * Table-driven sweep of RotatingGpuSecret's props, mountInto's options and the Reload factories
 * over boundary values: every accepted combination synthesizes objects a strict API server takes
 * (schema, names, labels, unique mounts), every rejected one throws a ConfigurationError that
 * names the prop.
 */

const rotation = { image: 'myorg/rotator:1.0.0' };
const name = (n: number) => `s${'x'.repeat(n - 1)}`;

type Workload = 'training' | 'training-rolling' | 'tgi' | 'vllm';
const WORKLOADS: Record<Workload, (chart: Chart) => GpuWorkload> = {
  training: chart =>
    new GpuTrainingStatefulSet(chart, 'w', {
      name: 'w',
      image: 'i',
      gpusPerPod: 1,
      args: ['train.py'],
      storage: { size: Size.gibibytes(10) },
    }),
  'training-rolling': chart =>
    new GpuTrainingStatefulSet(chart, 'w', {
      name: 'w',
      image: 'i',
      gpusPerPod: 1,
      args: ['train.py'],
      updateStrategy: TrainingUpdateStrategy.ROLLING_UPDATE,
    }),
  tgi: chart => new TgiInferenceService(chart, 'w', { name: 'w', modelId: 'm' }),
  vllm: chart => new VllmInferenceService(chart, 'w', { name: 'w', modelId: 'org/model' }),
};

interface Case {
  readonly props?: Partial<RotatingGpuSecretProps> | Record<string, unknown>;
  readonly path?: unknown;
  readonly onRotation?: () => Reload;
  readonly workload?: Workload;
  /** The prop a ConfigurationError must name; undefined when the combination is accepted. */
  readonly refused?: string;
}

function attempt(c: Case): { objects?: any[]; error?: unknown } {
  try {
    const chart = new Chart(Testing.app(), 'c');
    const workload = WORKLOADS[c.workload ?? 'training'](chart);
    const secret = new RotatingGpuSecret(chart, 'creds', { name: 'creds', rotation, ...c.props });
    secret.mountInto(workload, {
      path: ('path' in c ? c.path : '/etc/creds') as string,
      onRotation: (c.onRotation ?? (() => Reload.sync()))(),
    });
    return { objects: synthValid(chart) };
  } catch (error) {
    return { error };
  }
}

function check(c: Case): void {
  const { objects, error } = attempt(c);
  if (c.refused === undefined) {
    if (error) throw error as Error;
    expect(apiServerNameErrors(objects!)).toEqual([]);
    return;
  }
  expect(error).toBeInstanceOf(ConfigurationError);
  const message = (error as Error).message;
  expect(message.startsWith(`RotatingGpuSecret 'creds': ${c.refused} `)).toBe(true);
}

/** One factor at a time, around every boundary. */
const single: Array<[string, Case]> = [
  // name: a DNS-1123 label of 1 to 63 characters.
  ...[1, 38, 39, 40, 44, 45, 52, 53, 62, 63].map((n): [string, Case] => [
    `name of ${n} characters`,
    { props: { name: name(n) } },
  ]),
  ['name of 64 characters', { props: { name: name(64) }, refused: 'name' }],
  ...['', 'Creds', '-creds', 'creds-', 'cr_eds', 'cr.eds', ' creds'].map((n): [string, Case] => [
    `name ${JSON.stringify(n)}`,
    { props: { name: n }, refused: 'name' },
  ]),
  ['name null', { props: { name: null }, refused: 'name' }],
  ['name a number', { props: { name: 7 }, refused: 'name' }],
  ['name starting with a digit', { props: { name: '0creds' } }],
  // keys: IsConfigMapKey, and no ".." prefix.
  ...[['k'], ['.dot'], ['-dash'], ['a', 'b', '.c'], ['k'.repeat(253)], ['A.b_c-D9']].map((k): [string, Case] => [
    `keys ${JSON.stringify(k).slice(0, 40)}`,
    { props: { keys: k } },
  ]),
  ...[[''], ['.'], ['..'], ['..x'], ['a b'], ['a/b'], ['k'.repeat(254)], ['é']].map((k): [string, Case] => [
    `key ${JSON.stringify(k).slice(0, 40)}`,
    { props: { keys: k }, refused: 'keys[0]' },
  ]),
  ['keys empty', { props: { keys: [] }, refused: 'keys' }],
  ['keys a string', { props: { keys: 'k' }, refused: 'keys' }],
  ['keys repeated', { props: { keys: ['a', 'a'] }, refused: 'keys' }],
  // reloadPollInterval: whole seconds from 1 to 600.
  ...[Duration.seconds(1), Duration.seconds(600), Duration.minutes(10), Duration.millis(2000)].map(
    (d): [string, Case] => [`reloadPollInterval ${d.toHumanString()}`, { props: { reloadPollInterval: d } }],
  ),
  ...[Duration.seconds(0), Duration.seconds(601), Duration.millis(1500), Duration.seconds(NaN), null, 10, '10s'].map(
    (d): [string, Case] => [
      `reloadPollInterval ${String(d instanceof Duration ? d.toHumanString() : d)}`,
      { props: { reloadPollInterval: d as any }, refused: 'reloadPollInterval' },
    ],
  ),
  // kubeletSecretCacheTtl: whole seconds from 0 to 3600.
  ...[Duration.seconds(0), Duration.seconds(600), Duration.hours(1)].map((d): [string, Case] => [
    `kubeletSecretCacheTtl ${d.toHumanString()}`,
    { props: { kubeletSecretCacheTtl: d } },
  ]),
  ...[Duration.seconds(3601), Duration.millis(1), null, 'x'].map((d): [string, Case] => [
    `kubeletSecretCacheTtl ${String(d instanceof Duration ? d.toHumanString() : d)}`,
    { props: { kubeletSecretCacheTtl: d as any }, refused: 'kubeletSecretCacheTtl' },
  ]),
  // rotation.every: hours dividing 24, or whole days up to 31.
  ...[1, 2, 3, 4, 6, 8, 12, 24, 48, 24 * 31].map((h): [string, Case] => [
    `rotation.every ${h}h`,
    { props: { rotation: { ...rotation, every: Duration.hours(h) } } },
  ]),
  ...[
    Duration.minutes(59),
    Duration.hours(5),
    Duration.hours(7),
    Duration.hours(25),
    Duration.hours(36),
    Duration.days(32),
    Duration.millis(3600500),
    null,
    3600,
  ].map((d): [string, Case] => [
    `rotation.every ${String(d instanceof Duration ? d.toHumanString() : d)}`,
    { props: { rotation: { ...rotation, every: d as any } }, refused: 'rotation.every' },
  ]),
  // rotation.credentialTtl: at least two periods plus propagation (12 h: 87700 s + the reload timeout of 30 s).
  [
    'rotation.credentialTtl exactly enough',
    { props: { rotation: { ...rotation, every: Duration.hours(12), credentialTtl: Duration.seconds(87730) } } },
  ],
  [
    'rotation.credentialTtl one second short at mountInto',
    {
      props: { rotation: { ...rotation, every: Duration.hours(12), credentialTtl: Duration.seconds(87729) } },
      refused: 'rotation.credentialTtl',
    },
  ],
  [
    'rotation.credentialTtl one second short at construction',
    {
      props: { rotation: { ...rotation, every: Duration.hours(12), credentialTtl: Duration.seconds(87699) } },
      refused: 'rotation.credentialTtl',
    },
  ],
  ...[null, 0, Duration.millis(1500), Duration.seconds(0)].map((d): [string, Case] => [
    `rotation.credentialTtl ${String(d instanceof Duration ? d.toHumanString() : d)}`,
    { props: { rotation: { ...rotation, credentialTtl: d as any } }, refused: 'rotation.credentialTtl' },
  ]),
  // rotation.image and friends.
  ...['a', 'registry.example.com:5000/team/rotator:1.0', `rotator@sha256:${'a'.repeat(64)}`].map(
    (i): [string, Case] => [`rotation.image ${i.slice(0, 30)}`, { props: { rotation: { image: i } } }],
  ),
  ...['', ' rotator', 'Rotator', 'rotator:', 'a b', 3].map((i): [string, Case] => [
    `rotation.image ${JSON.stringify(i)}`,
    { props: { rotation: { image: i } }, refused: 'rotation.image' },
  ]),
  ['rotation.command []', { props: { rotation: { ...rotation, command: [] } }, refused: 'rotation.command' }],
  ['rotation.args a string', { props: { rotation: { ...rotation, args: '--x' } }, refused: 'rotation.args' }],
  ['rotation.args with an empty string', { props: { rotation: { ...rotation, args: [''] } } }],
  ['rotation.env', { props: { rotation: { ...rotation, env: { PROVIDER: 'x', _A: '' } } } }],
  [
    'rotation.env SECRET_NAMESPACE',
    { props: { rotation: { ...rotation, env: { SECRET_NAMESPACE: 'x' } } }, refused: 'rotation.env.SECRET_NAMESPACE' },
  ],
  ['rotation null-ish', { props: { rotation: 0 }, refused: 'rotation' }],
  // mountInto path.
  ...['/a', '/etc/creds', `/etc/${'p'.repeat(200)}`, '/home/trainer/.config/gcloud', '/var/run/creds'].map(
    (p): [string, Case] => [`path ${p.slice(0, 40)}`, { path: p }],
  ),
  ...[
    '',
    'etc',
    '/etc/../x',
    '/etc/creds/',
    '/etc//creds',
    '/etc/./creds',
    '/',
    '/etc',
    '/tmp',
    '/dev/shm',
    '/checkpoints',
    '/var/run/cdk8s-gpu',
    null,
    3,
  ].map((p): [string, Case] => [`path ${JSON.stringify(p)}`, { path: p, refused: 'path' }]),
  // Reload factories.
  ...['SIGHUP', 'hup', 'USR1', 'sigusr2', 'SIGTERM', 'QUIT'].map((s): [string, Case] => [
    `Reload.signal ${s}`,
    { onRotation: () => Reload.signal(s, { process: 'trainer', exposeWorkloadToSidecar: true }) },
  ]),
  ...['SIGKILL', 'STOP', '1', '', 'SIG'].map((s): [string, Case] => [
    `Reload.signal ${JSON.stringify(s)}`,
    {
      onRotation: () => Reload.signal(s, { process: 'trainer', exposeWorkloadToSidecar: true }),
      refused: 'onRotation signal',
    },
  ]),
  ...['t', 'a'.repeat(15), 'python3'].map((p): [string, Case] => [
    `Reload.signal process ${p}`,
    { onRotation: () => Reload.signal('HUP', { process: p, exposeWorkloadToSidecar: true }) },
  ]),
  ...['a'.repeat(16), 'text-generation-launcher'].map((p): [string, Case] => [
    `Reload.signal process ${p}`,
    {
      onRotation: () => Reload.signal('HUP', { process: p, exposeWorkloadToSidecar: true }),
      refused: p === 'a'.repeat(16) ? 'onRotation process' : 'onRotation',
    },
  ]),
  ...['', 'sh', 'sleep', 'pause', '/bin/x', 'a b'].map((p): [string, Case] => [
    `Reload.signal process ${JSON.stringify(p)}`,
    {
      onRotation: () => Reload.signal('HUP', { process: p, exposeWorkloadToSidecar: true }),
      refused: 'onRotation process',
    },
  ]),
  [
    'Reload.signal torchrun',
    {
      onRotation: () => Reload.signal('USR2', { process: 'torchrun', exposeWorkloadToSidecar: true }),
      refused: 'onRotation',
    },
  ],
  ...[
    [['/r']],
    [['r', '--x', '']],
    [['/r'], { timeout: Duration.seconds(1) }],
    [['/r'], { timeout: Duration.seconds(600) }],
    [['/r'], { image: 'myorg/driver:2.1.0' }],
  ].map(([cmd, o]: any[]): [string, Case] => [
    `Reload.exec ${JSON.stringify([cmd, o ?? {}]).slice(0, 60)}`,
    { onRotation: () => Reload.exec(cmd, o) },
  ]),
  ...(
    [
      [[], 'onRotation command'],
      [[''], 'onRotation command[0]'],
      [['a b'], 'onRotation command[0]'],
      [null, 'onRotation command'],
      [[1], 'onRotation command[0]'],
    ] as Array<[any, string]>
  ).map(([cmd, prop]): [string, Case] => [
    `Reload.exec command ${JSON.stringify(cmd)}`,
    { onRotation: () => Reload.exec(cmd), refused: prop },
  ]),
  ...[Duration.seconds(0), Duration.seconds(601), Duration.millis(100)].map((t): [string, Case] => [
    `Reload.exec timeout ${t.toHumanString()}`,
    { onRotation: () => Reload.exec(['/r'], { timeout: t }), refused: 'onRotation timeout' },
  ]),
  [
    'Reload.exec image with a space',
    { onRotation: () => Reload.exec(['/r'], { image: 'my image' }), refused: 'onRotation image' },
  ],
  ...['http://localhost:8080/reload', 'https://127.0.0.1/x', 'http://[::1]:1/x', 'http://reloader.ns.svc:65535/'].map(
    (u): [string, Case] => [`Reload.httpPost ${u}`, { onRotation: () => Reload.httpPost(u) }],
  ),
  ...['', 'localhost:8080', 'ftp://x/y', 'http://', 'http://a b/', 'http://x:65536/', 'file:///etc/passwd'].map(
    (u): [string, Case] => [
      `Reload.httpPost ${JSON.stringify(u)}`,
      { onRotation: () => Reload.httpPost(u), refused: 'onRotation url' },
    ],
  ),
  ['Reload.restart on OnDelete', { onRotation: () => Reload.restart(), refused: 'onRotation' }],
  ['Reload.restart on RollingUpdate', { onRotation: () => Reload.restart(), workload: 'training-rolling' }],
  [
    'Reload.signal on root TGI',
    {
      onRotation: () => Reload.signal('HUP', { process: 'x', exposeWorkloadToSidecar: true }),
      workload: 'tgi',
      refused: 'onRotation',
    },
  ],
];

describe('RotatingGpuSecret props sweep', () => {
  test.each(single)('%s', (_label, c) => check(c));

  // Accepted values of the dimensions that shape derived names and pods, crossed.
  const reloads: Array<[string, () => Reload]> = [
    ['exec', () => Reload.exec(['/r'])],
    ['signal', () => Reload.signal('SIGHUP', { process: 'trainer', exposeWorkloadToSidecar: true })],
    ['http', () => Reload.httpPost('http://localhost:8080/r')],
    ['sync', () => Reload.sync()],
    ['restart', () => Reload.restart()],
  ];
  const crossed: Array<[string, Case]> = [];
  for (const n of [1, 44, 45, 63]) {
    for (const [kind, onRotation] of reloads) {
      for (const workload of Object.keys(WORKLOADS) as Workload[]) {
        const refused =
          (kind === 'restart' && workload === 'training') || (kind === 'signal' && workload === 'tgi')
            ? 'onRotation'
            : undefined;
        crossed.push([
          `${n}-character name, ${kind}, ${workload}`,
          { props: { name: name(n), keys: ['token', '.docker'] }, onRotation, workload, refused },
        ]);
      }
    }
  }
  test.each(crossed)('%s', (_label, c) => check(c));
});
