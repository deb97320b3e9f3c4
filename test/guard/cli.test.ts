import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';
import { liveExport, list, seed000 } from './fixtures';

/** The built CLI (npm test builds lib/ first), run as users run it. */
const CLI = path.join(__dirname, '..', '..', 'lib', 'guard', 'cli.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-cli-'));
const write = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
};
const run = (args: string[], input?: string) => spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8' });

const before = write('before.yaml', stringify(list([liveExport(seed000('1.2.0'))])));
const sameAfter = write('same.yaml', stringify(seed000('1.2.0')));
const forbidden = write('forbidden.yaml', stringify(seed000('1.3.0', 'gpu-pvc')));

describe('cdk8s-gpu guard CLI', () => {
  test('exit 0 when clean', () => {
    const r = run(['guard', '--before', before, '--after', sameAfter]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('guard: no forbidden changes');
  });

  test('exit 1 with a readable report when a forbidden change is found', () => {
    const r = run(['guard', '--before', before, '--after', forbidden]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('FORBIDDEN StatefulSet/onnx-trainer spec.volumeClaimTemplates');
    expect(r.stdout).toContain("api server: spec: Forbidden: updates to statefulset spec");
    expect(r.stdout).toContain('remedy:');
  });

  test('--json gives machine output', () => {
    const r = run(['guard', '--before', before, '--after', forbidden, '--json']);
    expect(r.status).toBe(1);
    const json = JSON.parse(r.stdout);
    expect(json.errors).toBe(1);
    expect(json.findings[0].path).toBe('spec.volumeClaimTemplates');
  });

  test('reads --before from stdin and folders for --after', () => {
    const folder = path.join(dir, 'after');
    fs.mkdirSync(folder, { recursive: true });
    fs.copyFileSync(forbidden, path.join(folder, 'a.k8s.yaml'));
    // cdk8s synth writes this beside the manifests when validations run; it is not an object.
    fs.writeFileSync(path.join(folder, 'construct-metadata.json'), '{"version":"1.0.0","resources":{}}');
    const r = run(['guard', '--before', '-', '--after', folder], fs.readFileSync(before, 'utf8'));
    expect(r.status).toBe(1);
  });

  test.each([
    ['an unreadable path', ['guard', '--before', path.join(dir, 'missing.yaml'), '--after', sameAfter], /^cdk8s-gpu guard: .*missing\.yaml: no such file or directory\n$/],
    ['malformed YAML, with file and line', ['guard', '--before', write('bad.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n'), '--after', sameAfter], /^cdk8s-gpu guard: .*bad\.yaml:\d+: malformed YAML: .+\n$/],
    ['a document that is not a Kubernetes object', ['guard', '--before', write('notk8s.yaml', 'hello: world\n'), '--after', sameAfter], /^cdk8s-gpu guard: .*notk8s\.yaml:1: not a Kubernetes object \(needs apiVersion, kind and metadata.name\)\n$/],
    ['missing options', ['guard', '--before', before], /--before and --after are required/],
    ['an unknown command', ['lint'], /unknown command "lint"/],
  ])('exit 2 and one clear line for %s', (_label, args, message) => {
    const r = run(args as string[]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout).toBe('');
  });
});
