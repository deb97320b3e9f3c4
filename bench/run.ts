// `npm run bench` (through bench/start.js, which builds lib/ and compiles this folder): prints
// figures, never a verdict. Every measured case runs in a fresh `node` process on compiled
// JavaScript; the sides of a comparison are paired round by round. BENCH_ROUNDS (default and
// minimum 5) sets the rounds; BENCH_ONLY=overhead,load,user,cold,guard runs only those sections;
// BENCH_LIB=<folder> measures another build of the library than lib/ (e.g. a candidate fix).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { machine, ROOT } from './env';
import { both, childrenCpuMs, median, overBoth, paired, rss, ROUNDS, Sample, time } from './stats';
import { Layout, usableKinds, WorkloadKind } from './workloads';

const scaffold: {
  pack(work: string): { status: number | null; out: string; tarball?: string };
  consumerProject(
    work: string,
    tarball: string,
    files: Record<string, string>,
    devTools?: boolean,
  ): { project: string; install: { status: number | null; out: string } };
  bin(project: string, name: string): string;
} = require(path.join(ROOT, 'scripts', 'check-package.js'));

const only = process.env.BENCH_ONLY?.split(',');
const section = (name: string) => !only || only.includes(name);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-bench-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));

/** Longest a single synth case may take before its configuration is reported as too slow. */
const CASE_LIMIT_MS = Number(process.env.BENCH_CASE_LIMIT_S ?? 60) * 1000;

class TooSlow extends Error {}

/** A case of bench/case.ts in a fresh process. */
function measure(...args: string[]): Sample & Record<string, number> {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'case.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    timeout: CASE_LIMIT_MS,
    killSignal: 'SIGKILL',
  });
  if (r.signal === 'SIGKILL') throw new TooSlow(`over ${time(CASE_LIMIT_MS)}`);
  if (r.status !== 0) throw new Error(`bench case ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Wall time of a command, start-up included, as a user waits for it. */
function wall(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): Sample & { ok: boolean; out: string } {
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu1 = childrenCpuMs();
  return {
    ms,
    cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
    ok: r.status === 0,
    out: `${r.stdout}${r.stderr}`,
  };
}

function mustPass(what: string, s: Sample & { ok: boolean; out: string }): Sample {
  if (!s.ok) throw new Error(`${what} failed:\n${s.out.split('\n').slice(-20).join('\n')}`);
  return s;
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
  const names = [...new Set([...expected.keys(), ...got.keys()])];
  for (const n of names) {
    const a = expected.get(n);
    const b = got.get(n);
    if (!a || !b || !a.equals(b)) {
      const at = a && b ? [...a].findIndex((x, i) => x !== b[i]) : -1;
      throw new Error(
        `bench: ${what} is not byte-identical to the library's output in ${n}` +
          (at >= 0
            ? ` at byte ${at}:\n  library: ${JSON.stringify(a!.subarray(Math.max(0, at - 80), at + 80).toString())}\n  other:   ${JSON.stringify(b!.subarray(Math.max(0, at - 80), at + 80).toString())}`
            : ' (file missing on one side)'),
      );
    }
  }
}

console.log(`cdk8s-gpu benchmarks (npm run bench)\nmachine: ${machine()}`);
console.log(
  `each figure: median of ${ROUNDS} fresh processes, (min–max); sides paired round by round in rotating order\n`,
);

// ---------------------------------------------------------------------------------------------
if (section('overhead')) {
  const { kinds, skipped } = usableKinds();
  const names = kinds.map(k => k.name);
  console.log('1. Synth cost of the constructs, against the same manifests written without them');
  console.log(`   workload mix, cycled: ${names.join(', ')}`);
  for (const s of skipped) console.log(`   not in the mix: ${s}`);
  console.log(
    '   sides: (a) cdk8s-gpu constructs + app.synth(); (b) the objects (a) synthesized, created as plain cdk8s',
  );
  console.log(
    '   ApiObjects + app.synth(), byte-identical output (checked every round); (c) the YAML floor: the `yaml`',
  );
  console.log(
    '   package alone writing the same bytes the way cdk8s does (stringify per object, version 1.1, lineWidth 0).',
  );
  console.log('   Times exclude module loading (section 2); the overhead is the round-by-round ratio (a)/(b).\n');

  const configs: Array<{ n: number; layout: Layout }> = [
    { n: 100, layout: 'one-chart' },
    { n: 1000, layout: 'one-chart' },
    { n: 2000, layout: 'one-chart' },
    { n: 100, layout: 'chart-per-workload' },
    { n: 1000, layout: 'chart-per-workload' },
  ];
  const med: Record<string, { library: number; raw: number; yaml: number }> = {}; // CPU-time medians
  /** One configuration, all rounds; false when a case went over the limit. */
  const overhead = (mix: WorkloadKind[], n: number, layout: Layout, label: string): boolean => {
    const mixNames = mix.map(k => k.name).join(',');
    const dir = fs.mkdtempSync(path.join(scratch, `${layout}-${n}-`));
    try {
      const fixture = path.join(dir, 'fixture.json');
      const fx = measure('fixture', mixNames, String(n), layout, fixture);
      let reference: Map<string, Buffer> | undefined;
      let run = 0;
      const side = (what: 'library' | 'raw' | 'yaml') => () => {
        const out = path.join(dir, `out-${run++}`);
        const s =
          what === 'library' ? measure('library', mixNames, String(n), layout, out) : measure(what, fixture, out);
        if (what === 'library' && !reference) reference = readOutput(out);
        else
          assertIdentical(
            what === 'raw' ? 'the ApiObject baseline' : 'the YAML floor',
            reference ?? readOutput(out),
            out,
          );
        fs.rmSync(out, { recursive: true, force: true });
        return s;
      };
      // The library side runs first in round 0, so its output is the reference for the others.
      const r = paired({ library: side('library'), raw: side('raw'), yaml: side('yaml') });
      const bytes = [...reference!.values()].reduce((a, b) => a + b.length, 0);
      const charts = layout === 'one-chart' ? 'one chart' : `${n} charts, one per workload`;
      console.log(
        `   ${n} workloads, ${charts}${label}: ${fx.objects} objects, ${(bytes / 2 ** 20).toFixed(1)} MiB of YAML`,
      );
      console.log(`     (a) cdk8s-gpu constructs         ${both(r.library)} peak RSS ${rss(r.library)}`);
      console.log(`     (b) identical plain ApiObjects   ${both(r.raw)} peak RSS ${rss(r.raw)}`);
      console.log(`     (c) yaml alone, same bytes       ${both(r.yaml)} peak RSS ${rss(r.yaml)}`);
      console.log(`     overhead of the constructs (a)/(b): ${overBoth(r.library, r.raw)}`);
      console.log(
        `     over the YAML floor (a)/(c): ${overBoth(r.library, r.yaml)}; (b)/(c): ${overBoth(r.raw, r.yaml)}\n`,
      );
      const cpu = (xs: Sample[]) => median(xs.map(s => s.cpuMs ?? s.ms));
      med[`${layout}-${n}${label}`] = { library: cpu(r.library), raw: cpu(r.raw), yaml: cpu(r.yaml) };
      return true;
    } catch (e) {
      if (!(e instanceof TooSlow)) throw e;
      console.log(
        `   ${n} workloads, ${layout}${label}: a case took ${e.message}; not measured (BENCH_CASE_LIMIT_S raises the limit)\n`,
      );
      return false;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  // A configuration too slow with the whole mix is measured again without the kind that makes it
  // slow, so the rest of the construct layer still gets figures; larger sizes of it are skipped.
  const withoutSecrets = kinds.filter(k => !/RotatingGpuSecret/.test(k.name));
  const tooSlow = new Set<Layout>();
  const done: Array<{ n: number; layout: Layout }> = [];
  for (const { n, layout } of configs) {
    if (!tooSlow.has(layout) && overhead(kinds, n, layout, '')) {
      done.push({ n, layout });
      continue;
    }
    if (!tooSlow.has(layout)) {
      console.log(
        `   → ${layout} again without the rotating Secret (${withoutSecrets.map(k => k.name).join(', ')}), smaller sizes included:\n`,
      );
      tooSlow.add(layout);
      for (const d of done.filter(x => x.layout === layout))
        overhead(withoutSecrets, d.n, layout, ' [mix without RotatingGpuSecret]');
    }
    overhead(withoutSecrets, n, layout, ' [mix without RotatingGpuSecret]');
  }

  console.log('   Scaling exponents, log(t2/t1)/log(n2/n1) of the CPU-time medians (1.00 is linear):');
  const exp = (a: number, b: number, n1: number, n2: number) => (Math.log(b / a) / Math.log(n2 / n1)).toFixed(2);
  const suffix = (layout: Layout) => (tooSlow.has(layout) ? ' [mix without RotatingGpuSecret]' : '');
  for (const side of ['library', 'raw', 'yaml'] as const) {
    const label = { library: '(a) constructs', raw: '(b) ApiObjects', yaml: '(c) yaml alone' }[side];
    const t = (layout: Layout, n: number) => med[`${layout}-${n}${suffix(layout)}`]?.[side] ?? NaN;
    console.log(
      `     ${label}: one chart 100→1000 ${exp(t('one-chart', 100), t('one-chart', 1000), 100, 1000)}, 1000→2000 ${exp(t('one-chart', 1000), t('one-chart', 2000), 1000, 2000)}; ` +
        `chart per workload 100→1000 ${exp(t('chart-per-workload', 100), t('chart-per-workload', 1000), 100, 1000)}`,
    );
  }
  for (const layout of tooSlow) console.log(`     (${layout}: exponents of the mix without RotatingGpuSecret)`);
  console.log('   (The 10-workload case is left out: at ~50 ms it measures JIT warm-up, not the constructs.)\n');
}

// ---------------------------------------------------------------------------------------------
// A fresh consumer project with the packed library, as in the pack-and-install check.
let consumer: string | undefined;
function consumerProject(): string {
  if (consumer) return consumer;
  const work = fs.mkdtempSync(path.join(scratch, 'consumer-'));
  const packed = scaffold.pack(work);
  if (packed.status !== 0 || !packed.tarball) throw new Error(`npm pack failed:\n${packed.out}`);
  const { project, install } = scaffold.consumerProject(
    work,
    packed.tarball,
    {
      'main.ts': USER_APP,
      'cdk8s.yaml': 'language: typescript\napp: npx ts-node main.ts\noutput: dist\n',
      'empty.js': "new (require('cdk8s').App)().synth();\n",
    },
    true,
  );
  if (install.status !== 0) throw new Error(`npm install in the consumer project failed:\n${install.out}`);
  return (consumer = project);
}

/** A user's app: one chart with a training job, a TGI service and a rotating Secret mounted into the job. */
const USER_APP = `import { App, Chart, Duration, Size } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, TgiInferenceService } from 'cdk8s-gpu';

const app = new App();
const chart = new Chart(app, 'ml');
const trainer = new GpuTrainingStatefulSet(chart, 'trainer', {
  name: 'trainer', image: 'nvcr.io/nvidia/pytorch:24.08-py3', args: ['train.py'], gpusPerPod: 8, replicas: 2, storage: { size: Size.gibibytes(500) },
});
new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'meta-llama/Llama-3.1-8B-Instruct', replicas: 2 });
const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials', rotation: { image: 'myorg/rotator:1.0.0', every: Duration.hours(12) } });
creds.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.signal('SIGHUP', { process: 'python' }) });
app.synth();
`;

if (section('load')) {
  const project = consumerProject();
  console.log(
    '2. Load time: require() of a module in a fresh process, from a consumer project with the packed library',
  );
  const modules = {
    'cdk8s-gpu': 'cdk8s-gpu',
    'cdk8s-plus-28': 'cdk8s-plus-28',
    cdk8s: 'cdk8s',
    'cdk8s-plus-28 k8s imports only': 'cdk8s-plus-28/lib/imports/k8s',
    yaml: 'yaml',
  };
  const r = paired(
    Object.fromEntries(Object.entries(modules).map(([k, id]) => [k, () => measure('load', project, id)])),
    Math.max(ROUNDS, 9),
  );
  for (const k of Object.keys(modules))
    console.log(
      `   require('${modules[k as keyof typeof modules]}')`.padEnd(48) + `${both(r[k])} peak RSS ${rss(r[k])}`,
    );
  console.log(
    `   cdk8s-gpu / cdk8s-plus-28 alone: ${overBoth(r['cdk8s-gpu'], r['cdk8s-plus-28'])} (goal: within 1.10×)`,
  );
  console.log(
    '   (cdk8s-gpu includes cdk8s-plus-28, cdk8s and constructs; each require() is measured cold in its own process.)\n',
  );
}

if (section('user')) {
  const project = consumerProject();
  console.log(
    "3. A user's `cdk8s synth` in a fresh consumer project (app: one chart, training job + TGI + rotating Secret)",
  );
  const cdk8s = scaffold.bin(project, 'cdk8s');
  const tsc = scaffold.bin(project, 'tsc');
  mustPass('tsc in the consumer project', wall(tsc, ['-p', '.'], project)); // main.js for the precompiled side
  const synth = (app: string) => () =>
    mustPass(`cdk8s synth --app "${app}"`, wall(cdk8s, ['synth', '--no-check-upgrade', '--app', app], project));
  const sides = {
    'app: npx ts-node main.ts (cdk8s init default)': synth('npx ts-node main.ts'),
    'app: npx ts-node --transpile-only main.ts': synth('npx ts-node --transpile-only main.ts'),
    'app: node main.js (precompiled with tsc)': synth('node main.js'),
    'the CLI with an empty cdk8s app (floor)': synth('node empty.js'),
    'tsc --noEmit (the type-check, e.g. in CI)': () =>
      mustPass('tsc --noEmit', wall(tsc, ['--noEmit', '-p', '.'], project)),
  };
  const r = paired(sides);
  for (const k of Object.keys(sides)) console.log(`   ${k.padEnd(48)} ${both(r[k as keyof typeof sides])}`);
  const [typeChecked, transpiled, precompiled] = Object.keys(sides).map(k => r[k as keyof typeof sides]);
  console.log(`   type-checked / transpile-only: ${overBoth(typeChecked, transpiled)}`);
  console.log(`   transpile-only / precompiled:  ${overBoth(transpiled, precompiled)}`);
  console.log(
    '   (cdk8s synth runs with --no-check-upgrade, which skips a registry request the CLI makes by default.)\n',
  );
}

if (section('cold')) {
  console.log('4. Cold start of `npm run synth` in this repository (the example apps in apps/, warm install)');
  const out = path.join(scratch, 'cold-dist');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const cdk8s = path.join(ROOT, 'node_modules', '.bin', 'cdk8s');
  let guardFailure: string | undefined;
  const sides = {
    'npm run build (tsc of src/ + copy of the assets)': () =>
      mustPass('npm run build', wall(npm, ['run', 'build'], ROOT)),
    'cdk8s synth --no-validate (app under ts-node --transpile-only)': () =>
      mustPass(
        'cdk8s synth --no-validate',
        wall(cdk8s, ['synth', '--no-check-upgrade', '--no-validate', '--output', out], ROOT),
      ),
    'cdk8s synth with the guard plugin (against snapshots/)': () => {
      const s = wall(cdk8s, ['synth', '--no-check-upgrade', '--output', out], ROOT);
      if (!s.ok)
        guardFailure = s.out
          .split('\n')
          .filter(l => l.trim())
          .slice(-3)
          .join(' / ');
      return s;
    },
  };
  const r = paired(sides);
  for (const k of Object.keys(sides)) console.log(`   ${k.padEnd(62)} ${both(r[k as keyof typeof sides])}`);
  const [build, , guarded] = Object.keys(sides).map(k => r[k as keyof typeof sides]);
  const total = build.map((b, i) => ({
    ms: b.ms + guarded[i].ms,
    cpuMs: (b.cpuMs ?? NaN) + (guarded[i].cpuMs ?? NaN),
  }));
  console.log(`   ${'npm run synth = build + synth with the guard'.padEnd(62)} ${both(total)}`);
  if (guardFailure)
    console.log(
      `   note: the guard plugin failed the synth (the apps changed an immutable field of snapshots/): ${guardFailure}`,
    );
  console.log('');
}

if (section('guard')) {
  console.log('5. The guard as a user runs it: the CLI as a process on folders of YAML');
  const file = path.join(__dirname, 'guard.js');
  // bench/guard.ts (its own owner) exports runGuardBench({ runs, log }), which measures and logs its rows.

  const mod = fs.existsSync(file) ? (require(file) as Record<string, unknown>) : {};
  const fn = (mod.runGuardBench ?? Object.values(mod).find(v => typeof v === 'function')) as
    ((o: object) => unknown) | undefined;
  if (!fn) {
    console.log('   (bench/guard.ts is not there, or exports no function)\n');
  } else {
    try {
      fn({ runs: ROUNDS, log: (line: string) => console.log(`   ${line}`) });
    } catch (e) {
      console.log(`   the guard benchmark failed: ${(e as Error).message.split('\n').slice(0, 5).join(' / ')}`);
      process.exitCode = 1;
    }
    console.log('');
  }
}
