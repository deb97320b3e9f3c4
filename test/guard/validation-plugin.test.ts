import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';
import { seed000 } from './fixtures';

const ROOT = path.join(__dirname, '..', '..');
const CDK8S = path.join(ROOT, 'node_modules', '.bin', 'cdk8s');
const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;

/**
 * A throwaway cdk8s project whose app writes one manifest, with the guard declared under
 * `validations:` against a baseline folder, run through the real `cdk8s synth`.
 */
function synthWithGuard(manifest: object) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-plugin-'));
  fs.mkdirSync(path.join(dir, 'baseline'));
  fs.writeFileSync(path.join(dir, 'baseline', 'app.k8s.yaml'), stringify(seed000('1.2.0')));
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
  fs.writeFileSync(path.join(dir, 'app.js'), [
    "const fs = require('fs');",
    "const { App, Chart, ApiObject } = require('cdk8s');",
    'const app = new App();',
    "const chart = new Chart(app, 'app');",
    "const m = JSON.parse(fs.readFileSync('manifest.json', 'utf8'));",
    "new ApiObject(chart, 'sts', m);",
    'app.synth();',
  ].join('\n'));
  fs.writeFileSync(path.join(dir, 'cdk8s.yaml'), stringify({
    language: 'typescript',
    app: 'node app.js',
    output: 'dist',
    validations: [{ package: ROOT, version: VERSION, class: 'GuardValidation', properties: { baseline: 'baseline' } }],
  }));
  return spawnSync(CDK8S, ['synth'], { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules') } });
}

describe('GuardValidation as a cdk8s-cli validation plugin', () => {
  test('cdk8s synth passes on an allowed change', () => {
    const r = synthWithGuard(seed000('1.3.0'));
    expect(r.stdout + r.stderr).toContain('Validations ended succesfully');
    expect(r.status).toBe(0);
  });

  test('cdk8s synth fails with the guard findings on an immutable change', () => {
    const r = synthWithGuard(seed000('1.3.0', 'gpu-pvc'));
    expect(r.status).not.toBe(0);
    expect(r.stdout).toContain('cdk8s-gpu/immutable-field');
    expect(r.stdout).toContain('spec.volumeClaimTemplates');
    expect(r.stdout + r.stderr).toContain('Validation failed');
  });
});
