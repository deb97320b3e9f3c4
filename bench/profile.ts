// `npm run bench -- profile [workloads] [one-chart|chart-per-workload] [without-secret]`: where synth
// time goes (`without-secret` leaves RotatingGpuSecret out of the mix).
// Runs the library side and the identical-ApiObjects side of bench/case.ts under `node --cpu-prof`
// and sums the samples inside the timed window (module loading excluded) by package and by function.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { machine, ROOT } from './env';
import { Layout, usableKinds } from './workloads';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const [, , , nArg = '1000', layoutArg = 'one-chart', mixArg = ''] = process.argv;
const n = Number(nArg);
const layout = layoutArg as Layout;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-profile-'));
const names = usableKinds()
  .kinds.map(k => k.name)
  .filter(k => mixArg !== 'without-secret' || !/RotatingGpuSecret/.test(k))
  .join(',');

function profiled(...args: string[]): { profile: Profile; fromUs: number; toUs: number; ms: number } {
  const profDir = fs.mkdtempSync(path.join(dir, 'prof-'));
  const r = spawnSync(
    process.execPath,
    ['--cpu-prof', '--cpu-prof-dir', profDir, path.join(__dirname, 'case.js'), ...args],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) throw new Error(`profiled case failed:\n${r.stdout}${r.stderr}`);
  const res = JSON.parse(r.stdout);
  const file = fs.readdirSync(profDir).find(f => f.endsWith('.cpuprofile'))!;
  return { ...res, profile: JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) };
}

/** The package a frame belongs to, for the summary by package. */
function owner(url: string): string {
  if (!url) return '(V8: GC, builtins, idle)';
  const file = url.replace(/^file:\/\//, '');
  if (file.startsWith(path.join(ROOT, 'lib') + path.sep)) return 'cdk8s-gpu (lib/)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)(?:\/node_modules\/((?:@[^/]+\/)?[^/]+))?/.exec(file);
  if (m) return m[2] ? `${m[2]} (under ${m[1]})` : m[1];
  if (file.startsWith('node:')) return 'node internals';
  return file.includes('.bench-build-') ? 'bench harness' : 'other';
}

function summarize(title: string, p: { profile: Profile; fromUs: number; toUs: number; ms: number }): void {
  const { nodes, samples, timeDeltas, startTime } = p.profile;
  const byId = new Map(nodes.map(x => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const self = new Map<string, number>();
  const pkg = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  let t = startTime;
  samples.forEach((id, i) => {
    t += timeDeltas[i];
    if (t < p.fromUs || t > p.toUs) return;
    const dt = timeDeltas[i];
    total += dt;
    const node = byId.get(id)!;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    pkg.set(owner(f.url), (pkg.get(owner(f.url)) ?? 0) + dt);
    // Inclusive time of the library's own functions: each function counted once per sample.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      if (owner(cf.url) !== 'cdk8s-gpu (lib/)') continue;
      const k = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${cf.lineNumber + 1}`;
      if (!seen.has(k)) {
        seen.add(k);
        inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
      }
    }
  });
  const pct = (x: number) => `${((100 * x) / total).toFixed(1).padStart(5)}%`;
  const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
  console.log(`\n${title}: ${p.ms.toFixed(0)} ms timed, ${(total / 1000).toFixed(0)} ms of samples`);
  console.log('  self time by package:');
  for (const [k, v] of top(pkg, 12)) console.log(`    ${pct(v)}  ${k}`);
  console.log('  self time, top functions:');
  for (const [k, v] of top(self, 15)) console.log(`    ${pct(v)}  ${k}`);
  if (inclusive.size) {
    console.log('  inclusive time of cdk8s-gpu functions (what runs under them, cdk8s and yaml included):');
    for (const [k, v] of top(inclusive, 15)) console.log(`    ${pct(v)}  ${k}`);
  }
}

console.log(`profile of ${n} workloads, ${layout} (${names}); machine: ${machine()}`);
const fixture = path.join(dir, 'fixture.json');
spawnSync(process.execPath, [path.join(__dirname, 'case.js'), 'fixture', names, String(n), layout, fixture], {
  cwd: ROOT,
});
summarize('(a) cdk8s-gpu constructs + synth', profiled('library', names, String(n), layout, path.join(dir, 'out-a')));
summarize('(b) identical plain ApiObjects + synth', profiled('raw', fixture, path.join(dir, 'out-b')));
fs.rmSync(dir, { recursive: true, force: true });
