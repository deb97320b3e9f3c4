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
      /versions must be among 1\.28\.0, 1\.36\.0 \(got "1\.27\.0"\)/,
    );
    expect(() => new StrictSchemaValidation({ versions: ['1.36.0'] })).not.toThrow();
  });

  test('the validator reports nulls, wrong types and missing fields', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strict-'));
    const file = path.join(dir, 'm.yaml');
    fs.writeFileSync(
      file,
      stringify(
        pod({ containers: [{ name: 'c', image: 'busybox', ports: [{ containerPort: '80' }], resources: null }] }),
      ),
    );
    const violations: any[] = [];
    let status = '';
    await new StrictSchemaValidation().validate({
      manifests: [file],
      report: {
        addViolation: x => violations.push(x),
        submit: s => {
          status = s;
        },
      },
      logger: { log: () => undefined },
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(status).toBe('failure');
    const text = violations.map(x => x.recommendation).join('\n');
    expect(text).toContain('containerPort: expected integer, got string');
    expect(text).toContain('resources: null is not allowed');
  });
});
