// `npm run bench`: prints figures, never a verdict. Each measurement runs in its own process.
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { Impl, Layout } from './workloads';

const ROOT = path.join(__dirname, '..');
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);

function measure(args: string[]): { ms: number; maxRssMb: number; [k: string]: number } {
  const out = execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'case.ts'), ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 });
  return JSON.parse(out);
}

/** The median of REPEAT runs (by time), with its peak memory. */
function median(args: string[], repeat = REPEAT) {
  const runs = Array.from({ length: repeat }, () => measure(args)).sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(runs.length / 2)];
}

function wall(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const f = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const mb = (x: number) => `${x.toFixed(0)} MiB`;

console.log(`machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${os.platform()} ${os.arch()}`);
console.log(`each figure is the median of ${REPEAT} runs in a fresh process\n`);

console.log('1. Library overhead: synth wall time and peak RSS, cdk8s-gpu constructs vs hand-written cdk8s-plus-28 (same number and kinds of objects), one chart');
console.log('   workloads | cdk8s-gpu          | cdk8s-plus         | time ratio | memory ratio | YAML cdk8s-gpu / cdk8s-plus');
const oneChart: Record<string, Record<number, number>> = { 'cdk8s-gpu': {}, 'cdk8s-plus': {} };
for (const n of [10, 100, 1000]) {
  const g = median(['synth', 'cdk8s-gpu', String(n), 'one-chart']);
  const p = median(['synth', 'cdk8s-plus', String(n), 'one-chart']);
  oneChart['cdk8s-gpu'][n] = g.ms;
  oneChart['cdk8s-plus'][n] = p.ms;
  console.log(`   ${String(n).padStart(9)} | ${f(g.ms).padStart(8)} ${mb(g.maxRssMb).padStart(8)} | ${f(p.ms).padStart(8)} ${mb(p.maxRssMb).padStart(8)} | ${(g.ms / p.ms).toFixed(2).padStart(9)}x | ${(g.maxRssMb / p.maxRssMb).toFixed(2).padStart(11)}x | ${g.yamlKb.toFixed(0)} KiB / ${p.yamlKb.toFixed(0)} KiB`);
}

console.log('\n2. Scaling exponent from 100 to 1000 workloads: log10(t1000 / t100); 1.0 is linear');
const layouts: Layout[] = ['one-chart', 'chart-per-workload'];
for (const impl of ['cdk8s-gpu', 'cdk8s-plus'] as Impl[]) {
  for (const layout of layouts) {
    const t100 = layout === 'one-chart' ? oneChart[impl][100] : median(['synth', impl, '100', layout]).ms;
    const t1000 = layout === 'one-chart' ? oneChart[impl][1000] : median(['synth', impl, '1000', layout], 1).ms;
    console.log(`   ${impl.padEnd(10)} ${layout.padEnd(18)} 100: ${f(t100).padStart(8)}  1000: ${f(t1000).padStart(8)}  exponent ${Math.log10(t1000 / t100).toFixed(2)}`);
  }
}

console.log('\n3. Guard: 1000 objects against their previous version (every image bumped)');
const g = median(['guard', '1000']);
console.log(`   ${g.objects} objects: ${f(g.ms)}, peak ${mb(g.maxRssMb)}, ${g.errors} forbidden changes`);

console.log('\n4. Cold start of the example apps (warm install): TypeScript compile vs synth');
const tsc = wall(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json']);
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-apps-'));
const tsNode = path.join(ROOT, 'node_modules', '.bin', 'ts-node');
const transpileOnly = wall(tsNode, ['--transpile-only', 'apps/main.ts'], { CDK8S_OUTDIR: out });
const typeChecked = wall(tsNode, ['apps/main.ts'], { CDK8S_OUTDIR: out });
const cli = wall(path.join(ROOT, 'node_modules', '.bin', 'cdk8s'), ['synth', '--no-validate', '--output', out]);
const withGuard = wall(path.join(ROOT, 'node_modules', '.bin', 'cdk8s'), ['synth', '--output', out]);
fs.rmSync(out, { recursive: true, force: true });
console.log(`   tsc build of src/ (npm run build):                ${f(tsc)}`);
console.log(`   apps with ts-node --transpile-only (cdk8s.yaml):   ${f(transpileOnly)}`);
console.log(`   apps with ts-node type-checking:                  ${f(typeChecked)}  (+${f(typeChecked - transpileOnly)} for type-checking)`);
console.log(`   cdk8s synth --no-validate (transpile-only):        ${f(cli)}`);
console.log(`   cdk8s synth with the guard plugin:                 ${f(withGuard)}`);
console.log(`   npm run synth = build + synth with guard:          ${f(tsc + withGuard)}`);
