#!/usr/bin/env node
// `npm run bench`: builds the library with the project's own build script (lib/, as the package
// ships it), compiles bench/ to a scratch folder, and runs it in plain node: no ts-node, whose
// compiler would add tens of MiB of RSS and CPU time to every measured process.
//   npm run bench                      everything (Markdown on stdout, progress on stderr)
//   npm run bench -- profile [n] [layout] [without-secret]   where synth time goes, by package and function
// Environment: BENCH_ROUNDS (≥ 5), BENCH_ONLY=synth,cli,guard,load, BENCH_SIZES=100,1000,
// BENCH_GUARD_SIZES, BENCH_LIB=<folder> (another build of the library), BENCH_CASE_LIMIT_S (default 60).
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');
// Inside this checkout (never in node_modules/, which worktrees may share), so that the compiled
// bench resolves cdk8s and friends from the project's node_modules; removed at the end.
const OUT = fs.mkdtempSync(path.join(ROOT, '.bench-build-'));
const cleanup = () => fs.rmSync(OUT, { recursive: true, force: true });
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

function step(what, cmd, args) {
  process.stderr.write(`bench: ${what}\n`);
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`${what} failed:\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
}

step('npm run build', 'npm', ['run', 'build']);
// tsc writes JavaScript even when it reports type errors; the bench runs if it got its entry point
// (`npm run typecheck` is where type errors fail).
process.stderr.write('bench: compiling bench/\n');
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
const entry = process.argv[2] === 'profile' ? 'profile.js' : 'run.js';
const r = spawnSync(process.execPath, [path.join(OUT, 'bench', entry), ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
