import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';
import { StrictSchemaValidation } from '../../src/plugins/strict-schema-plugin';
import { synthProject } from '../support/cdk8s-project';

/** The real `cdk8s synth` of the objects with the strict-schema plugin declared. */
function synthStrict(objects: object[], properties?: object) {
  return synthProject(objects, [{ class: 'StrictSchemaValidation', ...(properties ? { properties } : {}) }]);
}

const pod = (spec: object) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec });

describe('StrictSchemaValidation through the real cdk8s synth', () => {
  test('a valid app passes', () => {
    const r = synthStrict([pod({ containers: [{ name: 'c', image: 'busybox:1.36.1' }] })]);
    expect(r.stdout + r.stderr).toContain('0 error(s)');
    expect(r.status).toBe(0);
  });

  test('an unknown field anywhere in the app fails synth, naming object and field', () => {
    const r = synthStrict([
      pod({ containers: [{ name: 'c', image: 'busybox:1.36.1' }], preStop: { exec: { command: ['sleep', '5'] } } }),
    ]);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toContain('cdk8s-gpu/strict-schema');
    expect(r.stdout).toContain('unknown field "preStop"');
    expect(r.stdout).toContain('Pod/p');
  });
});

describe('StrictSchemaValidation props', () => {
  test('only shipped API versions are accepted', () => {
    expect(() => new StrictSchemaValidation({ versions: ['1.27.0'] })).toThrow(
      /versions must be among 1\.32\.0, 1\.36\.0 \(got "1\.27\.0"\)/,
    );
    expect(() => new StrictSchemaValidation({ versions: ['1.36.0'] })).not.toThrow();
  });

  const run = async (files: Record<string, unknown>, props?: { versions: string[] }) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strict-'));
    const manifests = Object.entries(files).map(([name, obj]) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, stringify(obj));
      return file;
    });
    const violations: any[] = [];
    let status = '';
    await new StrictSchemaValidation(props).validate({
      manifests,
      report: {
        addViolation: x => violations.push(x),
        submit: s => {
          status = s;
        },
      },
      logger: { log: () => undefined },
    });
    fs.rmSync(dir, { recursive: true, force: true });
    return { status, violations, text: violations.map(x => x.recommendation).join('\n') };
  };

  test('the validator reports null quantities (stored as 0) and missing fields; a file kubectl cannot decode is reported as such', async () => {
    const { status, text, violations } = await run({
      'a.yaml': pod({
        containers: [{ name: 'c', image: 'busybox', resources: { limits: { 'nvidia.com/gpu': null } } }],
      }),
      // A quoted number in an integer field: kubectl's decoder refuses the whole file.
      'b.yaml': pod({ containers: [{ name: 'c', image: 'busybox', ports: [{ containerPort: '80' }] }] }),
    });
    expect(status).toBe('failure');
    expect(text).toContain('nvidia.com/gpu: null is stored as the quantity 0');
    expect(violations.map(v => v.ruleName).sort()).toEqual(['cdk8s-gpu/output', 'cdk8s-gpu/readable']);
    expect(text).toMatch(/containerPort must be an integer, got string "80"/);
  });

  test('the output rules run once over the whole app: a duplicate across two files is reported', async () => {
    const { status, violations } = await run({
      'a.yaml': pod({ containers: [{ name: 'c', image: 'busybox' }] }),
      'b.yaml': pod({ containers: [{ name: 'd', image: 'busybox' }] }),
    });
    expect(status).toBe('failure');
    expect(violations.map(v => v.ruleName)).toEqual(['cdk8s-gpu/output']);
    expect(violations[0].recommendation).toMatch(/Pod\/p: name must make objects unique/);
  });

  const claimTemplate = (count: unknown) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: 't', namespace: 'ml' },
    spec: {
      spec: {
        devices: { requests: [{ name: 'gpus', exactly: { deviceClassName: 'gpu.nvidia.com', count } }] },
      },
    },
  });

  test('an API newer than the floor (resource.k8s.io/v1, 1.34) is checked against the versions that serve it', async () => {
    // Valid at 1.36; not held against 1.32, which has no such kind.
    expect((await run({ 't.yaml': claimTemplate(8) })).violations).toEqual([]);
    const wrong = await run({ 't.yaml': claimTemplate('8') });
    expect(wrong.text).toMatch(
      /\[1\.36\.0\] ResourceClaimTemplate\/t\.spec\.spec\.devices\.requests\[0\]\.exactly\.count: expected integer/,
    );
    expect(wrong.text).not.toContain('[1.32.0]');
    // Only versions that do not serve it: said, not passed silently.
    const floorOnly = await run({ 't.yaml': claimTemplate(8) }, { versions: ['1.32.0'] });
    expect(floorOnly.text).toMatch(
      /resource\.k8s\.io\/v1 is served from Kubernetes 1\.34: none of the versions checked \(1\.32\.0\) has it; add 1\.36\.0/,
    );
  });
});
