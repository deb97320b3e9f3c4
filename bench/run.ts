// `npm run bench` (through bench/start.js, which builds lib/ and compiles this folder): prints
// figures, never a verdict, as Markdown on stdout (progress goes to stderr), ready to paste.
// Every measured case runs in a fresh `node` process on compiled JavaScript; the sides of a
// comparison are paired round by round in rotating order. Only the package's public API and
// cdk8s's public API are used.
//   BENCH_ROUNDS         rounds per comparison (default and minimum 5)
//   BENCH_ONLY           sections, comma-separated: synth, cli, guard (guard and plan; the default set) and load
//   BENCH_SIZES          workload counts of the synth section (default 100,1000)
//   BENCH_GUARD_SIZES    object counts of the guard section (default 1000,10000,100000)
//   BENCH_LIB            another build of the library than lib/ (e.g. a candidate fix)
//   BENCH_CASE_LIMIT_S   longest a single synth case may take before its configuration is skipped (default 60)
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loadavg, machine, revision, ROOT } from './env';
import { childrenCpuMs, diffCell, med, mibCell, msCell, paired, ratioCell, ROUNDS, Sample, table } from './stats';
import { Layout, usableKinds } from './workloads';

const only = (process.env.BENCH_ONLY ?? 'synth,cli,guard').split(',').map(s => s.trim());
const section = (name: string) => only.includes(name);
for (const s of only)
  if (!['synth', 'cli', 'guard', 'load'].includes(s))
    process.stderr.write(`bench: unknown section ${s} in BENCH_ONLY (synth, cli, guard, load)\n`);
const sizes = (process.env.BENCH_SIZES ?? '100,1000').split(',').map(Number);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-bench-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));
const CASE_LIMIT_MS = Number(process.env.BENCH_CASE_LIMIT_S ?? 60) * 1000;
const started = Date.now();
const progress = (line: string) =>
  process.stderr.write(`bench [${((Date.now() - started) / 1000).toFixed(0)} s]: ${line}\n`);
const out = (line = '') => console.log(line);

class TooSlow extends Error {}

/** A case of bench/case.ts (or another case file) in a fresh process. */
function measure(...args: string[]): Sample & Record<string, number> {
  return measureIn('case.js', ...args);
}

function measureIn(file: string, ...args: string[]): Sample & Record<string, number> {
  const r = spawnSync(process.execPath, [path.join(__dirname, file), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    timeout: CASE_LIMIT_MS,
    killSignal: 'SIGKILL',
  });
  if (r.signal === 'SIGKILL') throw new TooSlow(`a case took over ${CASE_LIMIT_MS / 1000} s`);
  if (r.status !== 0) throw new Error(`bench case ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A command as a process, start-up included, as a user waits for it: wall time and its CPU time. */
function wall(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Sample & { ok: boolean; out: string } {
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu1 = childrenCpuMs();
  return {
    ms,
    cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
    ok: r.status === 0,
    out: `${r.stdout}${r.stderr}`,
  };
}

/** Every file of a synth output folder, by name. */
function readOutput(dir: string): Map<string, Buffer> {
  return new Map(
    fs
      .readdirSync(dir)
      .sort()
      .map(f => [f, fs.readFileSync(path.join(dir, f))]),
  );
}

function assertIdentical(what: string, expected: Map<string, Buffer>, dir: string): void {
  const got = readOutput(dir);
  for (const n of new Set([...expected.keys(), ...got.keys()])) {
    const a = expected.get(n);
    const b = got.get(n);
    if (!a || !b || !a.equals(b)) {
      const at = a && b ? a.findIndex((x, i) => x !== b[i]) : -1;
      const near = (x: Buffer) => JSON.stringify(x.subarray(Math.max(0, at - 80), at + 80).toString());
      throw new Error(
        `bench: ${what} is not byte-identical to the library's output in ${n}` +
          (a && b
            ? ` at byte ${at < 0 ? Math.min(a.length, b.length) : at}:\n  library: ${near(a)}\n  other:   ${near(b)}`
            : ' (file missing on one side)'),
      );
    }
  }
}

out('# cdk8s-gpu benchmarks (`npm run bench`)');
out();
out(
  `- measured: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, commit ${revision()}${process.env.BENCH_LIB ? `, library from ${process.env.BENCH_LIB}` : ''}`,
);
out(`- machine: ${machine()}`);
out(`- load average (1 / 5 / 15 min) at the start: ${loadavg()} (the bench itself keeps about one core busy)`);
out(
  `- every figure: median of ${ROUNDS} fresh processes (min–max); the sides of a comparison alternate round by round in rotating order, and ratios are medians of the round-by-round ratios`,
);
out();

// ---------------------------------------------------------------------------------------------
if (section('synth')) {
  const { kinds, skipped } = usableKinds();
  const mix = kinds.map(k => k.name).join(',');
  out('## 1. Synth: the constructs against identical plain ApiObjects and the YAML floor');
  out();
  out(
    `Workloads cycle through: ${kinds.map(k => `\`${k.name}\``).join(', ')}.${skipped.length ? ` Not in the mix: ${skipped.join('; ')}.` : ''}`,
  );
  out();
  out('- **constructs**: `new App()`, the cdk8s-gpu constructs, `app.synth()` to a folder.');
  out(
    "- **ApiObjects**: `new App()`, the same charts holding plain `cdk8s.ApiObject`s created from exactly the JSON the constructs synthesized (`chart.toJson()`, taken in an untimed run), `app.synth()`. Output checked byte-identical to the constructs' every round.",
  );
  out(
    "- **YAML floor**: no cdk8s; the `yaml` package cdk8s uses writing the same documents the way cdk8s's `Yaml.save` does (`stringify` per object, version 1.1, lineWidth 0, joined by `---`), one file per chart. Also checked byte-identical. No cdk8s app can go below it.",
  );
  out();
  out(
    "Times are the synth alone: module loading and, for the other sides, reading the JSON happen before the clock starts. CPU is user + system time of the process in that window, all threads (V8's GC threads included, so it can exceed wall time). Peak RSS is the whole process (node and its modules included: the constructs side loads cdk8s-plus-32 and the library, the others do not); heap is V8's committed heap at the end of the synth.",
  );
  out();

  type Side = 'constructs' | 'ApiObjects' | 'YAML floor';
  interface Config {
    n: number;
    layout: Layout;
    objects?: number;
    mib?: number;
    r?: Record<Side, Sample[]>;
    skipped?: string;
  }
  const layouts: Layout[] = ['one-chart', 'chart-per-workload'];
  const configs: Config[] = layouts.flatMap(layout => sizes.map(n => ({ n, layout })));
  const num = (x: number) => x.toLocaleString('en-US');
  const layoutName = (c: Config) => (c.layout === 'one-chart' ? '1 chart' : `${num(c.n)} charts (one per workload)`);
  for (const c of configs) {
    const dir = fs.mkdtempSync(path.join(scratch, `${c.layout}-${c.n}-`));
    try {
      progress(`synth, ${c.n} workloads in ${layoutName(c)}: fixture`);
      const fixture = path.join(dir, 'fixture.json');
      c.objects = measure('fixture', mix, String(c.n), c.layout, fixture).objects;
      let reference: Map<string, Buffer> | undefined;
      let run = 0;
      const side = (what: 'library' | 'raw' | 'yaml') => () => {
        const o = path.join(dir, `out-${run++}`);
        const s = what === 'library' ? measure('library', mix, String(c.n), c.layout, o) : measure(what, fixture, o);
        if (what === 'library' && !reference) reference = readOutput(o);
        else assertIdentical(what === 'raw' ? 'the ApiObjects side' : 'the YAML floor', reference ?? readOutput(o), o);
        fs.rmSync(o, { recursive: true, force: true });
        return s;
      };
      // The constructs go first in round 0, so their output is the reference of the others.
      c.r = paired({ constructs: side('library'), ApiObjects: side('raw'), 'YAML floor': side('yaml') }, ROUNDS, r =>
        progress(`synth, ${c.n} workloads in ${layoutName(c)}: round ${r + 1}/${ROUNDS}`),
      );
      c.mib = [...reference!.values()].reduce((a, b) => a + b.length, 0) / 2 ** 20;
    } catch (e) {
      if (!(e instanceof TooSlow)) throw e;
      c.skipped = `${e.message} (BENCH_CASE_LIMIT_S raises the limit)`;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  out('#### Ratios');
  out();
  const measured = configs.filter(c => c.r);
  out(
    table(
      [
        'Workloads',
        'Charts',
        'Objects',
        'YAML',
        'constructs / ApiObjects, wall',
        'CPU',
        'constructs / YAML floor, wall',
        'CPU',
        'ApiObjects / YAML floor, wall',
        'CPU',
      ],
      configs.map(c => {
        if (!c.r)
          return [
            num(c.n),
            layoutName(c),
            c.objects === undefined ? '' : num(c.objects),
            '',
            `not measured: ${c.skipped}`,
            '',
            '',
            '',
            '',
            '',
          ];
        const { constructs: a, ApiObjects: b, 'YAML floor': y } = c.r;
        return [
          num(c.n),
          layoutName(c),
          num(c.objects!),
          `${c.mib!.toFixed(1)} MiB`,
          ratioCell(a, b),
          ratioCell(a, b, 'cpuMs'),
          ratioCell(a, y),
          ratioCell(a, y, 'cpuMs'),
          ratioCell(b, y),
          ratioCell(b, y, 'cpuMs'),
        ];
      }),
      ['r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
  );
  out();
  out('#### Absolute figures');
  out();
  out(
    table(
      ['Workloads', 'Charts', 'Side', 'Wall ms', 'CPU ms', 'Peak RSS MiB', 'Heap MiB', 'Wall − ApiObjects, ms'],
      measured.flatMap(c =>
        (['constructs', 'ApiObjects', 'YAML floor'] as Side[]).map(s => [
          num(c.n),
          layoutName(c),
          s,
          msCell(c.r![s]),
          msCell(c.r![s], 'cpuMs'),
          mibCell(c.r![s], 'rssMb'),
          mibCell(c.r![s], 'heapMb'),
          s === 'ApiObjects' ? '' : diffCell(c.r![s], c.r!.ApiObjects),
        ]),
      ),
      ['r', 'l', 'l', 'r', 'r', 'r', 'r', 'r'],
    ),
  );
  out();
  // How each side grows from the smallest to the largest size: 1.00 is linear, 2.00 quadratic.
  const [lo, hi] = [Math.min(...sizes), Math.max(...sizes)];
  if (lo !== hi) {
    const exps = layouts.map(layout => {
      const at = (n: number) => configs.find(c => c.layout === layout && c.n === n && c.r);
      const [a, b] = [at(lo), at(hi)];
      const e = (s: Side) =>
        a && b ? (Math.log(med(b.r![s], 'cpuMs') / med(a.r![s], 'cpuMs')) / Math.log(hi / lo)).toFixed(2) : 'n/a';
      return `${layout === 'one-chart' ? 'one chart' : 'one chart per workload'}: constructs ${e('constructs')}, ApiObjects ${e('ApiObjects')}, YAML floor ${e('YAML floor')}`;
    });
    out(
      `Growth ${lo} → ${hi} workloads, log(t₂/t₁)/log(n₂/n₁) of the CPU medians (1.00 is linear, 2.00 quadratic): ${exps.join('; ')}.`,
    );
    out();
  }
}

// ---------------------------------------------------------------------------------------------
if (section('cli')) {
  out('## 2. `cdk8s synth` of the example apps against an empty app');
  out();
  const cdk8s = path.join(ROOT, 'node_modules', '.bin', 'cdk8s');
  const dist = path.join(scratch, 'cli-dist');
  const app = (fs.readFileSync(path.join(ROOT, 'cdk8s.yaml'), 'utf8').match(/^app:\s*(.+)$/m)?.[1] ?? '').trim();
  // The same runner as the apps' (`npx ts-node ... apps/main.ts`), on bench/empty-app.ts.
  const emptyApp = /\S\.ts$/.test(app)
    ? app.replace(/\S+\.ts$/, 'bench/empty-app.ts')
    : 'npx ts-node --transpile-only bench/empty-app.ts';
  const notes: string[] = [];
  const synth = (what: string, extra: string[]) => () => {
    const s = wall(cdk8s, ['synth', '--no-check-upgrade', '--output', dist, ...extra]);
    fs.rmSync(dist, { recursive: true, force: true });
    if (!s.ok) {
      const note = `${what} failed: ${s.out
        .split('\n')
        .filter(l => l.trim())
        .slice(-3)
        .join(' / ')}`;
      if (!notes.includes(note)) notes.push(note);
    }
    return s;
  };
  const sides = {
    'apps/main.ts, repo cdk8s.yaml as is (guard validation plugin included)': synth(
      'the apps with the guard plugin',
      [],
    ),
    'apps/main.ts, `--no-validate`': synth('the apps', ['--no-validate']),
    'empty app (`new App().synth()`), `--no-validate`': synth('the empty app', ['--no-validate', '--app', emptyApp]),
  };
  type K = keyof typeof sides;
  const r = paired(sides, ROUNDS, i => progress(`cdk8s synth: round ${i + 1}/${ROUNDS}`));
  const empty = r['empty app (`new App().synth()`), `--no-validate`'];
  out(
    `The cdk8s CLI in node_modules/.bin (cdk8s-cli ${version('cdk8s-cli')}, cdk8s ${version('cdk8s')}) run from the repository with its cdk8s.yaml (\`app: ${app}\`), \`--no-check-upgrade\` (skips a registry request) and \`--output\` to a scratch folder; the empty app (bench/empty-app.ts) runs with the same runner through \`--app "${emptyApp}"\`. Process wall time, start-up and the TypeScript runner included; CPU is all its processes.`,
  );
  out();
  out(
    table(
      ['Run', 'Wall ms', 'CPU ms', 'Wall − empty app, ms', 'Wall / empty app'],
      (Object.keys(sides) as K[]).map(k => [
        k,
        msCell(r[k]),
        msCell(r[k], 'cpuMs'),
        r[k] === empty ? '' : diffCell(r[k], empty),
        r[k] === empty ? '' : ratioCell(r[k], empty),
      ]),
      ['l', 'r', 'r', 'r', 'r'],
    ),
  );
  out();
  out(
    "The empty app cannot run with the guard plugin: the guard refuses output with no objects. The apps' runs without and with the plugin differ by the guard's cost (reading snapshots/ and comparing).",
  );
  for (const n of notes) out(`\n**Note:** ${n}`);
  out();
}

function version(pkg: string): string {
  try {
    return JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

// ---------------------------------------------------------------------------------------------
if (section('load')) {
  out('## Load time: `require()` in a fresh process');
  out();
  const modules = ['cdk8s-gpu', 'cdk8s-plus-32', 'cdk8s', 'yaml'];
  const r = paired(Object.fromEntries(modules.map(id => [id, () => measureIn('load-case.js', id)])), ROUNDS, i =>
    progress(`load: round ${i + 1}/${ROUNDS}`),
  );
  out(
    table(
      ['Module', 'Wall ms', 'CPU ms', 'Peak RSS MiB', 'Wall / cdk8s-plus-32'],
      modules.map(k => [
        `\`${k}\``,
        msCell(r[k]),
        msCell(r[k], 'cpuMs'),
        mibCell(r[k], 'rssMb'),
        k === 'cdk8s-plus-32' ? '' : ratioCell(r[k], r['cdk8s-plus-32']),
      ]),
      ['l', 'r', 'r', 'r', 'r'],
    ),
  );
  out();
  out(
    'cdk8s-gpu is lib/ (what the package ships) and loads cdk8s-plus-32, cdk8s and constructs with it; each module is measured cold, alone in its process.',
  );
  out();
}

// ---------------------------------------------------------------------------------------------
if (section('guard')) {
  out('## 3. `guard` and `plan` as a user runs them: the CLI as a process on folders of YAML');
  out();
  progress('guard');
  // bench/guard.ts (its own owner) exports runGuardBench({ runs, log, cli }), which measures and logs its rows.

  const { runGuardBench } = require('./guard') as typeof import('./guard');
  // The package's own bin (package.json "bin"), as built by start.js, instead of a second compile of src/.
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const bin = process.env.BENCH_LIB
    ? undefined
    : path.join(ROOT, typeof pkg.bin === 'string' ? pkg.bin : Object.values(pkg.bin as Record<string, string>)[0]);
  const lines: string[] = [];
  try {
    runGuardBench({
      sizes: process.env.BENCH_GUARD_SIZES?.split(',').map(Number),
      runs: ROUNDS,
      log: line => lines.push(line),
      cli: bin && fs.existsSync(bin) ? bin : undefined,
    });
  } catch (e) {
    lines.push(`the guard and plan benchmark failed: ${(e as Error).message.split('\n').slice(0, 5).join(' / ')}`);
    process.exitCode = 1;
  }
  out('```');
  for (const l of lines) out(l);
  out('```');
  out();
}

out(
  `Load average (1 / 5 / 15 min) at the end: ${loadavg()}; the bench took ${((Date.now() - started) / 1000).toFixed(0)} s after the build.`,
);
