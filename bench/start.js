#!/usr/bin/env node
// `npm run bench`: builds the library with the project's own build script (lib/, as the package
// ships it), compiles bench/ to a scratch folder, and runs it in plain node: no ts-node, whose
// compiler would add tens of MiB of RSS and CPU time to every measured process.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');
// Under node_modules/ so the compiled bench resolves cdk8s and friends from the project; ignored by git.
const OUT = path.join(ROOT, 'node_modules', '.cache', 'cdk8s-gpu-bench');

function step(what, cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`${what} failed:\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
}

step('npm run build', 'npm', ['run', 'build']);
fs.rmSync(OUT, { recursive: true, force: true });
// tsc writes JavaScript even when it reports type errors; the bench runs if it got its entry point
// (`npm run typecheck` is where type errors fail).
const tsc = spawnSync(
  process.execPath,
  [
    require.resolve('typescript/bin/tsc', { paths: [ROOT] }),
    '-p',
    path.join(__dirname, 'tsconfig.json'),
    '--outDir',
    OUT,
  ],
  { cwd: ROOT, encoding: 'utf8' },
);
if (tsc.status !== 0) process.stderr.write(`warning: compiling bench/ reported errors:\n${tsc.stdout}${tsc.stderr}`);
if (!fs.existsSync(path.join(OUT, 'bench', 'run.js'))) process.exit(1);
// `npm run bench -- profile [workloads] [layout]` profiles one configuration instead.
const entry = process.argv[2] === 'profile' ? 'profile.js' : 'run.js';
const r = spawnSync(process.execPath, [path.join(OUT, 'bench', entry), ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
});
fs.rmSync(OUT, { recursive: true, force: true });
process.exit(r.status ?? 1);
