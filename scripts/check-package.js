#!/usr/bin/env node
// Proves the package works as installed, not only in this repo: packs it, installs the tarball
// into a fresh TypeScript cdk8s project outside the repo, synthesizes an app that uses all three
// constructs and the guard with the real `cdk8s synth`, and checks the output. Run by `npm test`.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.join(__dirname, '..');
const pkg = require(path.join(ROOT, 'package.json'));
let passed = 0;
let failed = 0;

function check(name, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${ok || !detail ? '' : `\n    ${String(detail).trim().split('\n').slice(-15).join('\n    ')}`}`);
  return ok;
}

function run(cmd, args, cwd, extra = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_yes: 'true' }, ...extra });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
}

function finish() {
  console.log(`pack-check: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

const installed = name => require(path.join(ROOT, 'node_modules', name, 'package.json')).version;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-pack-'));

// 1. The tarball: compiled library and declarations, nothing else of the repo.
const packed = run('npm', ['pack', '--json', '--pack-destination', work], ROOT);
if (!check('npm pack', packed.status === 0, packed.out)) finish();
const info = JSON.parse(packed.stdout)[0];
const files = info.files.map(f => f.path);
const allowed = f => f.startsWith('lib/') || ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(f);
check('the tarball holds only lib/ and package metadata', files.every(allowed), files.filter(f => !allowed(f)).join('\n'));
check('the tarball holds the compiled library, declarations, CLI and sidecar script',
  ['lib/index.js', 'lib/index.d.ts', 'lib/guard/cli.js', 'lib/secrets/reload-sidecar.sh'].every(f => files.includes(f)));
check('no tests, apps, snapshots or sources', !files.some(f => /^(test|apps|snapshots|src)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts')));

// 2. A fresh TypeScript cdk8s project that depends on the tarball.
const project = path.join(work, 'user-project');
fs.mkdirSync(path.join(project, 'baseline'), { recursive: true });
const write = (f, text) => fs.writeFileSync(path.join(project, f), text);
write('package.json', JSON.stringify({
  name: 'user-project', private: true, version: '0.0.0',
  dependencies: {
    'cdk8s-gpu': `file:${path.join(work, info.filename)}`,
    'cdk8s': installed('cdk8s'), 'cdk8s-plus-28': installed('cdk8s-plus-28'), 'constructs': installed('constructs'),
  },
  devDependencies: {
    'typescript': installed('typescript'), 'ts-node': installed('ts-node'), 'cdk8s-cli': installed('cdk8s-cli'), '@types/node': installed('@types/node'),
  },
}, null, 2));
write('tsconfig.json', JSON.stringify({ compilerOptions: { target: 'ES2020', module: 'commonjs', strict: true, esModuleInterop: true, skipLibCheck: true, types: ['node'] } }, null, 2));
write('main.ts', `
import { App, Chart, Duration, Size } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, TgiInferenceService, guard, parseObjects } from 'cdk8s-gpu';

const app = new App();
const chart = new Chart(app, 'ml');
const trainer = new GpuTrainingStatefulSet(chart, 'trainer', {
  name: 'trainer', image: 'nvcr.io/nvidia/pytorch:24.08-py3', gpusPerPod: 8, replicas: 2,
  storage: { size: Size.gibibytes(500) },
});
new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'meta-llama/Llama-3.1-8B-Instruct', replicas: 2 });
const creds = new RotatingGpuSecret(chart, 'creds', {
  name: 'gpu-credentials', rotation: { image: 'myorg/rotator:1.0.0', every: Duration.hours(12) },
});
creds.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.signal('SIGHUP', { process: 'python' }) });

// The guard as a library: the app against itself is clean.
const objects = parseObjects(app.synthYaml(), 'app');
const result = guard(objects, objects);
if (result.errors !== 0) throw new Error('guard reported forbidden changes on identical input');
app.synth();
`);
write('cdk8s.yaml', [
  'language: typescript',
  'app: npx ts-node main.ts', // type-checked: proves the shipped declarations work
  'output: dist',
  'validations:',
  '  - package: ./node_modules/cdk8s-gpu',
  `    version: ${pkg.version}`,
  '    class: GuardValidation',
  '    properties:',
  '      baseline: baseline',
  '',
].join('\n'));

const install = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], project);
if (!check('npm install of the tarball into a fresh project', install.status === 0, install.out)) finish();

// 3. The real cdk8s synth, twice: the second run compares against the first with the guard plugin.
const synth = run('npx', ['cdk8s', 'synth'], project);
if (!check('cdk8s synth of an app using all three constructs and the guard', synth.status === 0, synth.out)) finish();
const yaml = fs.readdirSync(path.join(project, 'dist')).map(f => fs.readFileSync(path.join(project, 'dist', f), 'utf8')).join('\n---\n');
const { parseAllDocuments } = require(path.join(project, 'node_modules', 'yaml'));
const objs = parseAllDocuments(yaml).map(d => d.toJS()).filter(Boolean);
const kinds = new Set(objs.map(o => o.kind));
check('the output holds the expected kinds', ['StatefulSet', 'Service', 'PodDisruptionBudget', 'Secret', 'CronJob', 'Job', 'Role', 'RoleBinding'].every(k => kinds.has(k)), [...kinds].join(', '));
const trainer = objs.find(o => o.kind === 'StatefulSet' && o.metadata.name === 'trainer');
check('GPU limits are real numbers', trainer?.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu'] === 8);
check('the reload sidecar script shipped and is embedded', trainer?.spec.template.spec.containers.some(c => (c.command ?? []).join(' ').includes('..data')));

for (const f of fs.readdirSync(path.join(project, 'dist'))) fs.copyFileSync(path.join(project, 'dist', f), path.join(project, 'baseline', f));
const again = run('npx', ['cdk8s', 'synth'], project);
check('cdk8s synth with the guard plugin against a baseline', again.status === 0 && again.out.includes('Validations ended succesfully'), again.out);

const cli = run('npx', ['cdk8s-gpu', 'guard', '--before', 'baseline', '--after', 'dist'], project);
check('the cdk8s-gpu bin runs the guard', cli.status === 0 && cli.out.includes('no forbidden changes'), cli.out);

const deep = run(process.execPath, ['-e', "require('cdk8s-gpu/lib/common/names')"], project);
check('internal modules are not importable', deep.status !== 0 && deep.out.includes('ERR_PACKAGE_PATH_NOT_EXPORTED'), deep.out);

// 4. Helm output, as documented in the README.
const helm = run('npx', ['cdk8s', 'synth', '--format', 'helm', '--chart-version', '1.0.0', '--output', 'helm', '--no-validate'], project);
check('cdk8s synth --format helm', helm.status === 0 && fs.existsSync(path.join(project, 'helm', 'Chart.yaml'))
  && fs.readdirSync(path.join(project, 'helm', 'templates')).length > 0, helm.out);

fs.rmSync(work, { recursive: true, force: true });
finish();
