import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, guard, GuardInputError, GuardValidation, parseObjects } from '../../src';
import { seed000 } from './fixtures';

describe('YAML as kubectl reads it (sigs.k8s.io/yaml: go-yaml v2, YAML 1.1 scalars)', () => {
  test('yes/on booleans, 0644 octal, 1_000, << merge keys; quoted strings stay strings', () => {
    const [o] = parseObjects(
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: {name: w, labels: {quoted: "yes"}}',
        'x-defaults: &d {hostNetwork: on, terminationGracePeriodSeconds: 1_000}',
        'spec:',
        '  template:',
        '    spec:',
        '      <<: *d',
        '      volumes:',
        '      - name: s',
        '        secret: {secretName: s, defaultMode: 0644, optional: yes}',
      ].join('\n'),
      'f.yaml',
    );
    expect(o.metadata.labels).toEqual({ quoted: 'yes' });
    // Only go-yaml's own words are booleans or nulls: not 'toString' (an inherited property name).
    expect(
      parseObjects(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: toString, b: constructor, c: Null, d: "~"}\n',
        'x',
      )[0].data,
    ).toEqual({ a: 'toString', b: 'constructor', c: null, d: '~' });
    expect(o.spec.template.spec).toMatchObject({
      hostNetwork: true,
      terminationGracePeriodSeconds: 1000,
      volumes: [{ secret: { defaultMode: 420, optional: true } }],
    });
  });

  test('a duplicate key keeps its last value, as kubectl 1.32 does (kubernetes#14791), and the guard warns', () => {
    const text =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: "1"\n  k: "2"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n';
    const [a, b] = parseObjects(text, 'dup.yaml');
    expect(a.data).toEqual({ k: '2' });
    const result = guard([], [a, b]);
    expect(result.findings).toEqual([
      expect.objectContaining({
        severity: 'warning',
        code: 'duplicate-key',
        object: 'ConfigMap/a',
        path: 'k',
        message:
          '"k" (dup.yaml:7) appears twice in one mapping: kubectl keeps the last value and drops the earlier one without a word',
      }),
    ]);
    expect(result.errors).toBe(0);
  });

  test('a file kubectl rejects is rejected with file and line: bool labels, numeric env values, quoted integers', () => {
    expect(() =>
      parseObjects('apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: "3"\n', 'q.yaml'),
    ).toThrow(
      /^q\.yaml:1: StatefulSet\/s: spec\.replicas must be an integer, got string "3" \(written in quotes; unquote it\); the API server cannot decode it/,
    );
    expect(() =>
      parseObjects('apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: 2.5\n', 'f.yaml'),
    ).toThrow(/spec\.replicas must be an integer, got number 2\.5 \(not a whole number\)/);
    // The boundary: a whole number, and a quoted or bare Quantity or IntOrString, decode.
    expect(() =>
      parseObjects(
        'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 3\n  strategy: {rollingUpdate: {maxSurge: "25%", maxUnavailable: 1}}\n  template: {spec: {containers: [{name: c, image: i, resources: {limits: {cpu: 2, memory: "1Gi"}}}]}}\n',
        'ok.yaml',
      ),
    ).not.toThrow();
    expect(() =>
      parseObjects('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {enabled: true}\n', 'cm.yaml'),
    ).toThrow(/cm\.yaml:1: ConfigMap\/a: data\.enabled must be a string, got boolean true/);
    const pod =
      'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: i, env: [{name: N, value: 1.10}]}\n';
    expect(() => parseObjects(`---\n${pod}`, 'pod.yaml')).toThrow(
      /pod\.yaml:2: Pod\/p: spec\.containers\[0\]\.env\[0\]\.value must be a string, got number 1\.1/,
    );
    expect(() => parseObjects('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n', 'ok.yaml')).not.toThrow();
    // Every string field of a built-in kind, from its schema, not a hand-made list (the API server cannot
    // decode a number or a bool into a Go string: "cannot unmarshal number into ... of type string").
    const sts = (field: string) =>
      `apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  ${field}\n  template: {metadata: {labels: {v: "1"}}, spec: {containers: [{name: c, image: i}]}}\n`;
    expect(() => parseObjects(sts('selector: {matchLabels: {v: 1.10}}'), 'sel.yaml')).toThrow(
      /sel\.yaml:1: StatefulSet\/s: spec\.selector\.matchLabels\.v must be a string, got number 1\.1 \(YAML 1\.1 reads it so; quote it\)/,
    );
    expect(() => parseObjects(sts('serviceName: no'), 'svc.yaml')).toThrow(
      /spec\.serviceName must be a string, got boolean false/,
    );
    expect(() =>
      parseObjects(
        sts('volumeClaimTemplates: [{metadata: {name: d, labels: {tier: on}}, spec: {accessModes: [ReadWriteOnce]}}]'),
        'vct.yaml',
      ),
    ).toThrow(/spec\.volumeClaimTemplates\[0\]\.metadata\.labels\.tier must be a string, got boolean true/);
    expect(() =>
      parseObjects(
        'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: on}, ports: [{port: 80}]}\n',
        's.yaml',
      ),
    ).toThrow(/Service\/s: spec\.selector\.app must be a string, got boolean true/);
    // Numbers where the schema has numbers (or int-or-string) are fine.
    expect(() =>
      parseObjects(
        'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, targetPort: 8080}]}\n',
        'ok2.yaml',
      ),
    ).not.toThrow();
    expect(() => parseObjects('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 0644}\n', 'n.yaml')).toThrow(
      /^n\.yaml:1: metadata\.name must be a string, got number 420/,
    );
    try {
      parseObjects('a: [1, 2\n', 'x.yaml');
    } catch (e) {
      expect(e).toBeInstanceOf(GuardInputError);
    }
  });

  test('List exports are expanded', () => {
    const objects = parseObjects(
      'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n',
      'x',
    );
    expect(objects.map(o => o.metadata.name)).toEqual(['a']);
  });
});

describe('import cost', () => {
  test("require('cdk8s-gpu') loads neither a YAML parser nor the guard engine until the guard runs", () => {
    const lib = path.join(__dirname, '..', '..', 'lib', 'index.js');
    const script = `const before = new Set(Object.keys(require.cache)); require(${JSON.stringify(lib)});
      const loaded = () => Object.keys(require.cache).filter(f => !before.has(f));
      const heavy = f => /node_modules[\\\\/](js-yaml|yaml)[\\\\/]|guard[\\\\/](engine|yaml|normalize|equal|crd)\\.js$/.test(f);
      const first = loaded().filter(heavy);
      require(${JSON.stringify(lib)}).guard([], []);
      console.log(JSON.stringify({ first, after: loaded().filter(heavy).map(f => f.split(/[\\\\/]/).slice(-2).join('/')) }));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    const out = JSON.parse(r.stdout);
    expect(out.first.filter((f: string) => /guard|js-yaml/.test(f))).toEqual([]);
    expect(out.after).toEqual(expect.arrayContaining(['guard/engine.js']));
  });
});

describe('GuardValidation (the cdk8s-cli plugin)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-plugin-unit-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const context = (manifests: string[]) => {
    const violations: any[] = [];
    const submitted: any[] = [];
    const logs: string[] = [];
    return {
      violations,
      submitted,
      logs,
      ctx: {
        manifests,
        report: { addViolation: (v: any) => violations.push(v), submit: (s: any, m: any) => submitted.push([s, m]) },
        logger: { log: (m: string) => logs.push(m) },
      },
    };
  };
  const yaml = (objects: object[]) => objects.map(o => JSON.stringify(o)).join('\n---\n');

  test('a missing baseline fails the synth: a guard that compared nothing must not pass', async () => {
    const c = context([]);
    await new GuardValidation({ baseline: path.join(dir, 'nope') }).validate(c.ctx);
    expect(c.submitted[0][0]).toBe('failure');
    const empty = context([]);
    fs.writeFileSync(path.join(dir, 'base-one.yaml'), yaml([seed000('1.2.0')]));
    await new GuardValidation({ baseline: path.join(dir, 'base-one.yaml') }).validate(empty.ctx);
    expect(empty.submitted[0]).toEqual(['failure', { error: expect.stringMatching(/hold no objects/) }]);
    expect(() => new GuardValidation({} as any)).toThrow(/baseline is required/);
    expect(() => new GuardValidation({ baseline: 'x', serverVersion: 'new' })).toThrow(/serverVersion must be/);
    expect(() => new GuardValidation({ baseline: 'x', serverVersion: 1.3 as any })).toThrow(/quote it in cdk8s.yaml/);
  });

  test("a shared name from one cdk8s-gpu construct is reported on that construct's path", async () => {
    const chart = new Chart(Testing.app(), 'app');
    new GpuTrainingStatefulSet(chart, 'trainer', { name: 'trainer', image: 'i:1', gpusPerPod: 1, args: ['train.py'] });
    const before = Testing.synth(chart);
    const after = JSON.parse(JSON.stringify(before));
    const sts = after.find((o: any) => o.kind === 'StatefulSet');
    sts.spec.podManagementPolicy = sts.spec.podManagementPolicy === 'Parallel' ? 'OrderedReady' : 'Parallel';
    const shared = after.filter((o: any) => o.metadata.name === sts.metadata.name);
    expect(shared.length).toBeGreaterThan(1);
    fs.writeFileSync(path.join(dir, 'lib-base.yaml'), yaml(before));
    const out = path.join(dir, 'lib-after.k8s.yaml');
    fs.writeFileSync(out, yaml(after));
    const c = context([out]);
    // cdk8s writes one path per name: the last object of that name wins (here a sibling of the StatefulSet).
    const metadata: Record<string, { path?: string }> = { [sts.metadata.name]: { path: 'app/trainer/Sibling' } };
    await new GuardValidation({ baseline: path.join(dir, 'lib-base.yaml') }).validate({ ...c.ctx, metadata });
    expect(c.violations[0].violatingResources[0].resourceName).toBe(`StatefulSet/${sts.metadata.name}`);
    expect(metadata[`StatefulSet/${sts.metadata.name}`]).toEqual({ path: 'app/trainer' });
  });

  test('a StatefulSet violation names the StatefulSet, not the PDB that shares its name', async () => {
    const pdb = {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'onnx-trainer' },
      spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'onnx-trainer' } } },
    };
    fs.writeFileSync(path.join(dir, 'base.yaml'), yaml([seed000('1.2.0'), pdb]));
    const pdbFile = path.join(dir, 'pdb.k8s.yaml');
    const stsFile = path.join(dir, 'sts.k8s.yaml');
    fs.writeFileSync(pdbFile, yaml([pdb]));
    fs.writeFileSync(stsFile, yaml([seed000('1.3.0', 'gpu-pvc')]));
    const emptyChart = path.join(dir, 'empty.k8s.yaml');
    fs.writeFileSync(emptyChart, '');
    const c = context([pdbFile, stsFile, emptyChart]);
    await new GuardValidation({ baseline: path.join(dir, 'base.yaml'), serverVersion: '1.33' }).validate(c.ctx);
    expect(c.submitted[0][0]).toBe('failure');
    expect(c.submitted[0][1]).toMatchObject({ serverVersion: '1.33', objectsBefore: '2', objectsAfter: '2' });
    expect(c.violations).toHaveLength(1);
    expect(c.violations[0].violatingResources[0]).toEqual({
      resourceName: 'StatefulSet/onnx-trainer',
      locations: ['StatefulSet/onnx-trainer: spec.volumeClaimTemplates'],
      manifestPath: stsFile,
    });
  });
});

describe('JSON input (kubectl get -o json)', () => {
  test('reads as the YAML reader does, through JSON.parse; JSON followed by more falls back to YAML', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { on: 'yes', n: '0644' } }],
    };
    const json = `\n${JSON.stringify(list, null, 2)}\n`;
    // The same text with a document end is not one JSON value: the YAML reader takes it.
    expect(parseObjects(json, 'l.json')).toEqual(parseObjects(`${json}---\n`, 'l.yaml'));
    expect(parseObjects(json, 'l.json')[0].data).toEqual({ on: 'yes', n: '0644' });
    expect(() =>
      parseObjects('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 1}}', 'bad.json'),
    ).toThrow(/^bad\.json:\d+: metadata\.name must be a string/);
    // Two JSON documents are YAML, not JSON.
    const two = `${JSON.stringify(list.items[0])}\n---\n${JSON.stringify({ ...list.items[0], metadata: { name: 'b' } })}`;
    expect(parseObjects(two, 'two.yaml').map(o => o.metadata.name)).toEqual(['a', 'b']);
  });
});
