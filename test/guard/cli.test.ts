import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';
import { liveExport, list, seed000 } from './fixtures';

/** The built CLI (npm test builds lib/ first), run as users run it. */
const CLI = path.join(__dirname, '..', '..', 'lib', 'guard', 'cli.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  return p;
};
const run = (args: string[], input?: string) =>
  spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8' });

const before = write('before.yaml', stringify(list([liveExport(seed000('1.2.0'))])));
const sameAfter = write('same.yaml', stringify(seed000('1.2.0')));
const forbidden = write('forbidden.yaml', stringify(seed000('1.3.0', 'gpu-pvc')));

describe('cdk8s-gpu guard CLI', () => {
  test('exit 0 when clean, saying how many objects it read from each side', () => {
    const r = run(['guard', '--before', before, '--after', sameAfter]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('guard: read 1 object(s) before, 1 after; rules of Kubernetes 1.32');
    expect(r.stdout).toContain('guard: no forbidden changes');
  });

  test('--server-side answers for server-side apply: an env item without its name stops only kubectl apply', () => {
    const keyless = seed000('1.2.0');
    keyless.spec.template.spec.containers[0].env = [{ value: '90' }];
    const after = write('keyless.yaml', stringify(keyless));
    const client = run(['guard', '--before', before, '--after', after]);
    expect(client.status).toBe(1);
    expect(client.stdout).toContain('does not contain declared merge key: name');
    const server = run(['guard', '--before', before, '--after', after, '--server-side']);
    expect({ status: server.status, stdout: server.stdout }).toMatchObject({ status: 0 });
  });

  test('exit 1 with a readable report when a forbidden change is found', () => {
    const r = run(['guard', '--before', before, '--after', forbidden]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('FORBIDDEN StatefulSet/onnx-trainer spec.volumeClaimTemplates');
    expect(r.stdout).toContain('api server: spec: Forbidden: updates to statefulset spec');
    expect(r.stdout).toContain('rule:   ValidateStatefulSetUpdate');
  });

  test('--json: one stable shape, every key present, null where absent', () => {
    const r = run(['guard', '--before', before, '--after', forbidden, '--json']);
    expect(r.status).toBe(1);
    const json = JSON.parse(r.stdout);
    expect(Object.keys(json)).toEqual([
      'schemaVersion',
      'serverVersion',
      'kueueVersion',
      'objects',
      'errors',
      'warnings',
      'uncheckedKinds',
      'findings',
    ]);
    expect(json).toMatchObject({
      schemaVersion: 2,
      serverVersion: '1.32',
      objects: { before: 1, after: 1 },
      errors: 1,
      warnings: 0,
    });
    expect(Object.keys(json.findings[0])).toEqual([
      'severity',
      'code',
      'object',
      'kind',
      'namespace',
      'name',
      'path',
      'before',
      'after',
      'changes',
      'message',
      'remedy',
      'source',
    ]);
    expect(json.findings[0]).toMatchObject({
      path: 'spec.volumeClaimTemplates',
      namespace: 'ml',
      code: 'immutable-field',
    });
    const clean = JSON.parse(
      run([
        'guard',
        '--before',
        sameAfter,
        '--after',
        write('gone.yaml', stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } })),
        '--json',
      ]).stdout,
    );
    const removed = clean.findings.find((f: any) => f.code === 'object-removed');
    expect(removed.after).toBeNull();
    expect(removed.namespace).toBeNull();
    expect(removed.source).toBeNull();
    expect(removed.path).toBeNull();
  });

  test('--server-version picks the rules and wording of that release', () => {
    const rhl = (n: number) => ({ ...seed000('1.2.0'), spec: { ...seed000('1.2.0').spec, revisionHistoryLimit: n } });
    const b = write('rhl-before.yaml', stringify(rhl(10)));
    const a = write('rhl-after.yaml', stringify(rhl(2)));
    expect(run(['guard', '--before', b, '--after', a]).status).toBe(1);
    expect(run(['guard', `--before=${b}`, `--after=${a}`, '--server-version=1.32']).status).toBe(1);
    expect(run(['guard', '--before', b, '--after', a, '--server-version', '1.33']).status).toBe(0);
    expect(run(['guard', '--before', b, '--after', a, '--server-version', '1.40']).stdout).toContain(
      'rules of Kubernetes 1.40 (the table is checked through 1.35',
    );
    // Below the floor (1.32) the guard has no rules: refused, naming the floor.
    for (const v of ['1.31', '1.20']) {
      const bad = run(['guard', '--before', b, '--after', a, '--server-version', v]);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain(`cdk8s-gpu guard: server version "${v}" is not supported: give 1.NN, 1.32 or newer`);
    }
  });

  test('custom resources compared without their CRD are named: their transition rules were not checked', () => {
    const snap = (driver: string) =>
      stringify({
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshotClass',
        metadata: { name: 'vsc' },
        driver,
        deletionPolicy: 'Delete',
      });
    const b = write('vsc-before.yaml', snap('a.csi'));
    const a = write('vsc-after.yaml', snap('b.csi'));
    const text = run(['guard', '--before', b, '--after', a]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(
      'guard: no CRD for snapshot.storage.k8s.io/VolumeSnapshotClass: their transition rules (x-kubernetes-validations) were not checked; give the CRDs with --crds',
    );
    expect(JSON.parse(run(['guard', '--before', b, '--after', a, '--json']).stdout).uncheckedKinds).toEqual([
      'snapshot.storage.k8s.io/VolumeSnapshotClass',
    ]);
    // Its CRD given: checked (this one has no transition rule on driver), so nothing is named.
    const crd = write(
      'crds/vsc.yaml',
      stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'volumesnapshotclasses.snapshot.storage.k8s.io' },
        spec: {
          group: 'snapshot.storage.k8s.io',
          names: { kind: 'VolumeSnapshotClass', plural: 'volumesnapshotclasses' },
          scope: 'Cluster',
          versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
        },
      }),
    );
    const checked = run(['guard', '--before', b, '--after', a, '--crds', crd]);
    expect(checked.status).toBe(0);
    expect(checked.stdout).not.toContain('no CRD for');
    // Built-in kinds and the kinds the guard has rules of its own for are never named.
    expect(
      JSON.parse(run(['guard', '--before', before, '--after', sameAfter, '--json']).stdout).uncheckedKinds,
    ).toEqual([]);
    const app = path.join(__dirname, '..', '..', 'snapshots', 'multi-node.k8s.yaml');
    expect(JSON.parse(run(['guard', '--before', app, '--after', app, '--json']).stdout).uncheckedKinds).toEqual([
      'gateway.networking.k8s.io/HTTPRoute',
      'inference.networking.k8s.io/InferencePool',
      'monitoring.coreos.com/PrometheusRule',
    ]);
  });

  test('--crds reads CustomResourceDefinitions whose self == oldSelf rules apply', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'leaderworkersets.leaderworkerset.x-k8s.io' },
      spec: {
        group: 'leaderworkerset.x-k8s.io',
        names: { kind: 'LeaderWorkerSet', plural: 'leaderworkersets' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    properties: {
                      leaderWorkerTemplate: {
                        type: 'object',
                        properties: {
                          size: {
                            type: 'integer',
                            'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'size is immutable' }],
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    };
    const lws = (size: number) =>
      stringify({
        apiVersion: 'leaderworkerset.x-k8s.io/v1',
        kind: 'LeaderWorkerSet',
        metadata: { name: 'vllm' },
        spec: { replicas: 1, leaderWorkerTemplate: { size } },
      });
    const b = write('lws-before.yaml', lws(2));
    const a = write('lws-after.yaml', lws(4));
    expect(run(['guard', '--before', b, '--after', a]).status).toBe(0);
    const r = run(['guard', '--before', b, '--after', a, '--crds', write('crds/lws.yaml', stringify(crd))]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('spec.leaderWorkerTemplate.size: Invalid value: "integer": size is immutable');
  });

  test('reads --before from stdin, and folders with subfolders and .YAML / .yml for --after', () => {
    const folder = path.join(dir, 'after');
    write('after/a.k8s.YAML', fs.readFileSync(forbidden, 'utf8'));
    write('after/sub/b.yml', stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra' } }));
    // cdk8s synth writes this beside the manifests when validations run; it is not an object.
    write('after/construct-metadata.json', '{"version":"1.0.0","resources":{}}');
    const r = run(['guard', '--before', '-', '--after', folder], fs.readFileSync(before, 'utf8'));
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('read 1 object(s) before, 2 after');
  });

  test('--help prints usage and exits 0', () => {
    for (const args of [['--help'], ['guard', '--help'], ['guard', '-h']]) {
      const r = run(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^usage: cdk8s-gpu guard/);
      expect(r.stdout).toMatch(/exit codes: 0/);
    }
  });

  test('a closed pipe (| head) ends quietly', async () => {
    const many = write(
      'many.yaml',
      Array.from({ length: 3000 }, (_x, i) =>
        stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` } }),
      ).join('---\n'),
    );
    const child = spawn(process.execPath, [CLI, 'guard', '--before', many, '--after', sameAfter], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', d => {
      stderr += d;
    });
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise(resolve => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  test.each([
    [
      'an unreadable path',
      ['guard', '--before', path.join(dir, 'missing.yaml'), '--after', sameAfter],
      /^cdk8s-gpu guard: .*missing\.yaml: no such file or directory\n$/,
    ],
    [
      'malformed YAML, with file and line',
      [
        'guard',
        '--before',
        write('bad.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n'),
        '--after',
        sameAfter,
      ],
      /^cdk8s-gpu guard: .*bad\.yaml:4: malformed YAML: .+\n$/,
    ],
    [
      'a document that is not a Kubernetes object',
      ['guard', '--before', write('notk8s.yaml', 'hello: world\n'), '--after', sameAfter],
      /^cdk8s-gpu guard: .*notk8s\.yaml:1: not a Kubernetes object \(needs apiVersion, kind and metadata.name\)\n$/,
    ],
    [
      'a label kubectl rejects (YAML 1.1 `yes` is a bool)',
      [
        'guard',
        '--before',
        write('yes.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    enabled: yes\n'),
        '--after',
        sameAfter,
      ],
      /yes\.yaml:1: ConfigMap\/a: metadata\.labels\.enabled must be a string, got boolean true/,
    ],
    [
      'an empty folder',
      [
        'guard',
        '--before',
        (fs.mkdirSync(path.join(dir, 'empty'), { recursive: true }), path.join(dir, 'empty')),
        '--after',
        sameAfter,
      ],
      /empty: no \.yaml or \.yml files/,
    ],
    ['empty stdin', ['guard', '--before', '-', '--after', sameAfter], /<stdin>: no Kubernetes objects read/],
    [
      'a duplicate object',
      [
        'guard',
        '--before',
        write('dup.yaml', `${stringify(seed000('1.2.0'))}---\n${stringify(seed000('1.2.0'))}`),
        '--after',
        sameAfter,
      ],
      /dup\.yaml:\d+: StatefulSet\/onnx-trainer appears twice in --before \(first at .*dup\.yaml:1\)/,
    ],
    ['missing options', ['guard', '--before', before], /--before and --after are required/],
    ['a missing value', ['guard', '--before', '--after', sameAfter], /--before needs a value/],
    [
      'a repeated flag',
      ['guard', '--before', before, '--before', sameAfter, '--after', sameAfter],
      /--before given 2 times/,
    ],
    ['an unknown option', ['guard', '--befor', before], /unknown option --befor/],
    ['an unknown command', ['lint'], /unknown command "lint"/],
  ])('exit 2 and one clear line for %s', (_label, args, message) => {
    const r = run(args, '');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at |TypeError|undefined/);
    expect(r.stdout).toBe('');
  });
});
