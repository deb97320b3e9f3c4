// `cdk8s-gpu guard` and `cdk8s-gpu plan` as a user runs them: `<command> --before <dir> --after <dir>
// --json` as fresh `node` processes on folders of YAML at 1,000, 10,000 and 100,000 objects, output
// written to a file. Prints per command and size the wall time, CPU time and peak RSS of the process
// (each the median of N runs, with the min-max range; the two commands alternate round by round), and
// the scaling exponent between sizes. Alone, the CLI is compiled from src/ into a temporary folder
// first, so the figures are plain `node` on compiled JavaScript and never those of a stale lib/;
// `npm run bench` passes the package's bin from the lib/ it has just built.
//
//   npx ts-node --transpile-only bench/guard.ts            (alone; BENCH_GUARD_SIZES, BENCH_GUARD_RUNS)
//   import { runGuardBench } from './guard'                 (from the bench runner)
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// The repository root, also when the bench runs compiled from a scratch folder (bench/start.js).
import { ROOT } from './env';

/** The CLI's commands the bench times. */
export type GuardCommand = 'guard' | 'plan';
const COMMANDS: readonly GuardCommand[] = ['guard', 'plan'];

export interface GuardBenchOptions {
  /** Object counts to measure. @default [1000, 10000, 100000] */
  readonly sizes?: readonly number[];
  /** Fresh processes per command and size (the median is reported). @default 5 */
  readonly runs?: number;
  /** Where lines go. @default console.log */
  readonly log?: (line: string) => void;
  /** The CLI to run (e.g. the built lib/guard/cli.js). @default src/guard compiled to a temporary folder */
  readonly cli?: string;
}

/** Median, min and max of one figure over the runs. */
export type Spread = readonly [median: number, min: number, max: number];

export interface GuardBenchRow {
  readonly command: GuardCommand;
  readonly objects: number;
  /** The YAML read: both sides. */
  readonly yamlMiB: number;
  /** Wall time of the process in ms, start-up included. */
  readonly ms: Spread;
  /** CPU time (user + system, all threads) of the process in ms. */
  readonly cpuMs: Spread;
  /** Peak RSS of the process in MiB. */
  readonly rssMiB: Spread;
  /** The JSON written to stdout. */
  readonly outputMiB: number;
  /** What the command reported, e.g. `0 errors, 0 warnings` or `10,000 restarting, 0 pruned, 0 errors`. */
  readonly summary: string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Compiles src/guard (and what it imports) to plain JavaScript in a temporary folder. */
export function compileGuard(outDir: string): string {
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(
    process.execPath,
    [
      tsc,
      '--outDir',
      outDir,
      '--rootDir',
      path.join(ROOT, 'src'),
      '--module',
      'commonjs',
      '--target',
      'ES2020',
      '--esModuleInterop',
      '--skipLibCheck',
      '--types',
      'node',
      path.join(ROOT, 'src', 'guard', 'cli.ts'),
    ],
    { cwd: ROOT, stdio: 'pipe' },
  );
  // The assets the code reads at run time (the API definitions the YAML type check uses), as
  // scripts/copy-assets.js places them beside lib/.
  (function copy(dir: string): void {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const from = path.join(dir, e.name);
      if (e.isDirectory()) copy(from);
      else if (!e.name.endsWith('.ts')) {
        const to = path.join(outDir, path.relative(path.join(ROOT, 'src'), from));
        fs.mkdirSync(path.dirname(to), { recursive: true });
        fs.copyFileSync(from, to);
      }
    }
  })(path.join(ROOT, 'src'));
  return path.join(outDir, 'guard', 'cli.js');
}

/**
 * Objects shaped like this library's output at scale: per workload a StatefulSet with claim
 * templates and probes, its headless Service, a client Service, a PodDisruptionBudget, four
 * ConfigMaps and two Secrets (10 objects), as a live export (`before`) and as new manifests with every image
 * bumped (`after`).
 */
function workload(image: string, live: boolean): object[] {
  // `@@` is the workload number, `@@H.@@L` its Service IP: filled in per copy by writeSide.
  const name = 'tgi-@@';
  const labels = {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': `${name}-v1`,
    'app.kubernetes.io/component': 'inference',
    'app.kubernetes.io/managed-by': 'cdk8s-gpu',
  };
  const meta = (n: string) =>
    live
      ? {
          name: n,
          namespace: 'ml',
          labels,
          uid: `u-${n}`,
          resourceVersion: '81234',
          creationTimestamp: '2026-11-01T10:00:00Z',
          managedFields: [
            { manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } },
          ],
        }
      : { name: n, labels };
  const probe = {
    httpGet: { path: '/health', port: 8080, ...(live ? { scheme: 'HTTP' } : {}) },
    periodSeconds: 10,
    failureThreshold: 3,
    timeoutSeconds: 5,
    ...(live ? { successThreshold: 1 } : {}),
  };
  const sts: any = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(`${name}-v1`),
    spec: {
      serviceName: `${name}-v1`,
      replicas: 2,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: labels },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
      volumeClaimTemplates: [
        {
          metadata: { name: 'model-cache' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '200Gi' } },
            ...(live ? { volumeMode: 'Filesystem' } : {}),
          },
          ...(live ? { status: { phase: 'Pending' } } : {}),
        },
      ],
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: 120,
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: false, seccompProfile: { type: 'RuntimeDefault' } },
          tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'tgi',
              image,
              ports: [{ name: 'http', containerPort: 8080, ...(live ? { protocol: 'TCP' } : {}) }],
              env: [
                { name: 'MODEL_ID', value: 'meta-llama/Llama-3.1-8B-Instruct' },
                { name: 'PORT', value: '8080' },
                { name: 'HF_HOME', value: '/data' },
              ],
              resources: {
                limits: { 'nvidia.com/gpu': live ? '1' : 1, memory: live ? '16Gi' : '16384Mi' },
                requests: { cpu: live ? '4' : '4000m', memory: '16Gi' },
              },
              startupProbe: { ...probe, failureThreshold: 90 },
              readinessProbe: probe,
              livenessProbe: { ...probe, periodSeconds: 30 },
              volumeMounts: [
                { name: 'model-cache', mountPath: '/data' },
                { name: 'dshm', mountPath: '/dev/shm' },
              ],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              ...(live
                ? {
                    imagePullPolicy: 'IfNotPresent',
                    terminationMessagePath: '/dev/termination-log',
                    terminationMessagePolicy: 'File',
                  }
                : {}),
            },
          ],
          volumes: [{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }],
          ...(live
            ? {
                dnsPolicy: 'ClusterFirst',
                restartPolicy: 'Always',
                schedulerName: 'default-scheduler',
                enableServiceLinks: true,
              }
            : {}),
        },
      },
    },
    ...(live ? { status: { replicas: 2, readyReplicas: 2, observedGeneration: 1 } } : {}),
  };
  const svc = (n: string, headless: boolean) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(n),
    spec: {
      selector: labels,
      ports: [{ name: 'http', port: headless ? 8080 : 80, targetPort: 8080, ...(live ? { protocol: 'TCP' } : {}) }],
      ...(headless ? { clusterIP: 'None', publishNotReadyAddresses: true } : {}),
      ...(live
        ? {
            type: 'ClusterIP',
            sessionAffinity: 'None',
            clusterIPs: [headless ? 'None' : '10.96.@@H.@@L'],
            ipFamilies: ['IPv4'],
            ipFamilyPolicy: 'SingleStack',
            internalTrafficPolicy: 'Cluster',
            ...(headless ? {} : { clusterIP: '10.96.@@H.@@L' }),
          }
        : {}),
    },
  });
  const pdb = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: meta(`${name}-v1`),
    spec: { maxUnavailable: 1, selector: { matchLabels: labels }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
  };
  // Small objects make up most of a real export (about 470 bytes per object on average in the
  // 108k-object export of the issue): configuration and credentials beside each workload.
  const cm = (k: number) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(`${name}-config-${k}`),
    data: { 'config.json': `{"max_batch_prefill_tokens": ${4096 * k}}`, LOG_LEVEL: 'info' },
  });
  const secret = (k: number) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(`${name}-token-${k}`),
    type: 'Opaque',
    data: { token: Buffer.from(`hf_${k}`).toString('base64') },
  });
  return [sts, svc(`${name}-v1`, true), svc(name, false), pdb, cm(1), cm(2), cm(3), cm(4), secret(1), secret(2)];
}

const PER_WORKLOAD = 10;

/** Writes `objects` objects as multi-document YAML, in files of 1,000 objects (as cdk8s writes per chart). */
export function writeSide(dir: string, objects: number, image: string, live: boolean): number {
  const jsyaml = require('js-yaml') as typeof import('js-yaml');
  fs.mkdirSync(dir, { recursive: true });
  // One block-style YAML rendering, copied per workload: writing 200k objects through a YAML
  // serializer would take longer than the guard reads them.
  const template = workload(image, live)
    .map(o => jsyaml.dump(o, { noRefs: true, lineWidth: -1 }))
    .join('---\n');
  let bytes = 0;
  const perFile = 1000;
  for (let f = 0; f * perFile < objects; f++) {
    const docs: string[] = [];
    for (let i = (f * perFile) / PER_WORKLOAD; i < Math.min(objects, (f + 1) * perFile) / PER_WORKLOAD; i++) {
      docs.push(template.replace(/@@H|@@L|@@/g, m => String(m === '@@H' ? (i >> 8) & 255 : m === '@@L' ? i & 255 : i)));
    }
    const text = docs.join('---\n');
    bytes += Buffer.byteLength(text);
    fs.writeFileSync(path.join(dir, `chart-${String(f).padStart(4, '0')}.k8s.yaml`), text);
  }
  return bytes;
}

/**
 * Loaded with `node -r` into each measured process: on exit it writes the process's own peak RSS
 * and CPU time to the file named by the environment, so the CLI runs as the package's bin does
 * (`node cli.js <command> ...`, stdout to a file) and is measured from inside without a wrapper.
 */
const USAGE_PRELOAD = `process.on('exit', () => {
  const u = process.resourceUsage();
  require('fs').writeFileSync(process.env.CDK8S_GPU_BENCH_USAGE, JSON.stringify({ maxRss: u.maxRSS, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000 }));
});
`;

interface Run {
  readonly ms: number;
  readonly cpuMs: number;
  readonly rssMiB: number;
  readonly outputMiB: number;
  readonly summary: string;
}

const num = (x: number) => x.toLocaleString('en-US');

/** What the command's JSON output reports, in a few words. */
function summarize(command: GuardCommand, output: string): string {
  const r = JSON.parse(output);
  const g = command === 'plan' ? r.guard : r;
  const findings = `${num(g.errors)} errors, ${num(g.warnings)} warnings`;
  return command === 'plan' ? `${num(r.restarting)} restarting, ${num(r.pruned.length)} pruned, ${findings}` : findings;
}

/** One fresh process running `cli <command> --before <before> --after <after> --json`, stdout to a file. */
function runOnce(work: string, cli: string, command: GuardCommand, before: string, after: string): Run {
  const preload = path.join(work, 'usage-preload.js');
  if (!fs.existsSync(preload)) fs.writeFileSync(preload, USAGE_PRELOAD);
  const usage = path.join(work, 'usage.json');
  const output = path.join(work, 'output.json');
  fs.rmSync(usage, { force: true });
  const fd = fs.openSync(output, 'w');
  let r: ReturnType<typeof spawnSync>;
  const t0 = process.hrtime.bigint();
  try {
    r = spawnSync(process.execPath, ['-r', preload, cli, command, '--before', before, '--after', after, '--json'], {
      stdio: ['ignore', fd, 'pipe'],
      encoding: 'utf8',
      env: { ...process.env, CDK8S_GPU_BENCH_USAGE: usage },
    });
  } finally {
    fs.closeSync(fd);
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  // Exit code 1 is a forbidden change found: a result, not a failure.
  if (r.status !== 0 && r.status !== 1) throw new Error(`${command} bench run failed (exit ${r.status}): ${r.stderr}`);
  const u = JSON.parse(fs.readFileSync(usage, 'utf8'));
  const text = fs.readFileSync(output, 'utf8');
  return {
    ms,
    cpuMs: u.cpuMs,
    rssMiB: u.maxRss / 1024,
    outputMiB: Buffer.byteLength(text) / 2 ** 20,
    summary: summarize(command, text),
  };
}

const spread = (xs: number[]): Spread => [median(xs), Math.min(...xs), Math.max(...xs)];

export function runGuardBench(options: GuardBenchOptions = {}): GuardBenchRow[] {
  const sizes = options.sizes ?? [1000, 10000, 100000];
  const runs = options.runs ?? 5;
  const log = options.log ?? ((l: string) => console.log(l));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-guard-'));
  const rows: GuardBenchRow[] = [];
  const cleanup = [work];
  try {
    // Compiled inside the checkout so that its requires (js-yaml) resolve from node_modules (not
    // into node_modules/, which worktrees may share).
    let cli = options.cli;
    if (!cli) {
      const jsDir = fs.mkdtempSync(path.join(ROOT, '.bench-guard-'));
      cleanup.push(jsDir);
      cli = compileGuard(jsDir);
    }
    log(
      `guard and plan as processes (node ${process.version}, ${path.relative(ROOT, cli).startsWith('lib') ? 'the built package bin' : 'compiled JS'}): \`node cli.js <command> --before <live export> --after <manifests> --json > file\`, every image bumped;`,
    );
    log(
      `median of ${runs} fresh processes per command [min-max], the commands alternating; wall time includes node start-up, reading the files and writing the JSON`,
    );
    // The floor every run pays: node start-up and loading the CLI (`--help` reads no input).
    const floor = median(
      Array.from({ length: runs }, () => {
        const t0 = process.hrtime.bigint();
        spawnSync(process.execPath, [cli, '--help'], { encoding: 'utf8' });
        return Number(process.hrtime.bigint() - t0) / 1e6;
      }),
    );
    log(`process floor (node start-up and the CLI, --help): ${floor.toFixed(0)} ms`);
    log(
      'command |  objects |    YAML | wall time                  | CPU time | peak RSS               | output   | reported',
    );
    const size = (mib: number) => (mib >= 1 ? `${mib.toFixed(1)} MiB` : `${(mib * 1024).toFixed(0)} KiB`);
    const f = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(0)} ms`);
    for (const n of sizes) {
      const before = path.join(work, `before-${n}`);
      const after = path.join(work, `after-${n}`);
      const bytes =
        writeSide(before, n, 'ghcr.io/huggingface/text-generation-inference:3.3.6', true) +
        writeSide(after, n, 'ghcr.io/huggingface/text-generation-inference:3.3.7', false);
      const results: Record<GuardCommand, Run[]> = { guard: [], plan: [] };
      for (let i = 0; i < runs; i++)
        for (let j = 0; j < COMMANDS.length; j++) {
          const command = COMMANDS[(i + j) % COMMANDS.length];
          results[command].push(runOnce(work, cli, command, before, after));
        }
      for (const command of COMMANDS) {
        const rs = results[command];
        const row: GuardBenchRow = {
          command,
          objects: n,
          yamlMiB: bytes / 2 ** 20,
          ms: spread(rs.map(r => r.ms)),
          cpuMs: spread(rs.map(r => r.cpuMs)),
          rssMiB: spread(rs.map(r => r.rssMiB)),
          outputMiB: rs[0].outputMiB,
          summary: rs[0].summary,
        };
        rows.push(row);
        const timeCell = `${f(row.ms[0]).padStart(8)} [${f(row.ms[1])}-${f(row.ms[2])}]`;
        const rssCell = `${row.rssMiB[0].toFixed(0).padStart(5)} MiB [${row.rssMiB[1].toFixed(0)}-${row.rssMiB[2].toFixed(0)}]`;
        log(
          `${command.padEnd(7)} | ${String(n).padStart(8)} | ${row.yamlMiB.toFixed(0).padStart(3)} MiB | ${timeCell.padEnd(26)} | ${f(row.cpuMs[0]).padStart(8)} | ${rssCell.padEnd(22)} | ${size(row.outputMiB).padStart(8)} | ${row.summary}`,
        );
      }
      fs.rmSync(before, { recursive: true, force: true });
      fs.rmSync(after, { recursive: true, force: true });
    }
    for (const command of COMMANDS) {
      const mine = rows.filter(r => r.command === command);
      for (let i = 1; i < mine.length; i++) {
        const [a, b] = [mine[i - 1], mine[i]];
        const exp = (x: number, y: number) => (Math.log(y / x) / Math.log(b.objects / a.objects)).toFixed(2);
        log(
          `${command} scaling exponent ${a.objects} -> ${b.objects}: time ${exp(a.ms[0], b.ms[0])} (above the process floor ${exp(Math.max(1, a.ms[0] - floor), Math.max(1, b.ms[0] - floor))}), CPU ${exp(a.cpuMs[0], b.cpuMs[0])}, peak RSS ${exp(a.rssMiB[0], b.rssMiB[0])}; 1.0 is linear`,
        );
      }
    }
  } finally {
    for (const d of cleanup) fs.rmSync(d, { recursive: true, force: true });
  }
  return rows;
}

if (require.main === module) {
  const sizes = process.env.BENCH_GUARD_SIZES?.split(',').map(Number);
  runGuardBench({ sizes, runs: process.env.BENCH_GUARD_RUNS ? Number(process.env.BENCH_GUARD_RUNS) : undefined });
}
