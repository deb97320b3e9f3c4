// The guard as a user runs it: `cdk8s-gpu guard --before <dir> --after <dir> --json` as a fresh
// process on YAML files, at 1,000, 10,000 and 100,000 objects. Prints wall time and peak RSS (each
// the median of N fresh processes, with the min-max range) and the scaling exponent between sizes.
// Alone, the guard is compiled from src/ into a temporary folder first, so the figures are plain
// `node` on compiled JavaScript and never those of a stale lib/; `npm run bench` passes the package's
// bin from the lib/ it has just built.
//
//   npx ts-node --transpile-only bench/guard.ts            (alone)
//   import { runGuardBench } from './guard'                 (from the bench runner)
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// The repository root, also when the bench runs compiled from a scratch folder (bench/start.js).
import { ROOT } from './env';

export interface GuardBenchOptions {
  /** Object counts to measure. @default [1000, 10000, 100000] */
  readonly sizes?: readonly number[];
  /** Fresh processes per size (the median is reported). @default 5 */
  readonly runs?: number;
  /** Where lines go. @default console.log */
  readonly log?: (line: string) => void;
  /** The CLI to run (e.g. the built lib/guard/cli.js). @default src/guard compiled to a temporary folder */
  readonly cli?: string;
}

export interface GuardBenchRow {
  readonly objects: number;
  readonly yamlMiB: number;
  /** Wall time in ms: median, min, max. */
  readonly ms: readonly [number, number, number];
  /** Peak RSS in MiB: median, min, max. */
  readonly rssMiB: readonly [number, number, number];
  readonly errors: number;
  readonly warnings: number;
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

/** One fresh process running the CLI; returns wall ms, peak RSS and the findings counts. */
function runOnce(
  cli: string,
  before: string,
  after: string,
): { ms: number; rssMiB: number; errors: number; warnings: number } {
  const script = `process.argv = [process.argv[0], ${JSON.stringify(cli)}, 'guard', '--before', ${JSON.stringify(before)}, '--after', ${JSON.stringify(after)}, '--json'];
    let out = ''; const { main } = require(${JSON.stringify(cli)});
    const code = main(process.argv.slice(2), s => { out += s; }, s => process.stderr.write(s + '\\n'));
    const r = JSON.parse(out); process.stdout.write(JSON.stringify({ code, errors: r.errors, warnings: r.warnings, maxRss: process.resourceUsage().maxRSS }));`;
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`guard bench run failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  return { ms, rssMiB: out.maxRss / 1024, errors: out.errors, warnings: out.warnings };
}

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
      `Guard as a process (node ${process.version}, ${path.relative(ROOT, cli).startsWith('lib') ? 'the built package bin' : 'compiled JS'}): \`cdk8s-gpu guard --before <live export> --after <manifests> --json\`, every image bumped;`,
    );
    log(`median of ${runs} fresh processes [min-max]; wall time includes node start-up and reading the files`);
    // The floor every run pays: node start-up and loading the CLI (`--help` reads no input).
    const floor = median(
      Array.from({ length: runs }, () => {
        const t0 = process.hrtime.bigint();
        spawnSync(process.execPath, [cli, '--help'], { encoding: 'utf8' });
        return Number(process.hrtime.bigint() - t0) / 1e6;
      }),
    );
    log(`process floor (node start-up and the CLI, --help): ${floor.toFixed(0)} ms`);
    log('   objects |    YAML | time                       | peak RSS                 | findings');
    for (const n of sizes) {
      const before = path.join(work, `before-${n}`);
      const after = path.join(work, `after-${n}`);
      const bytes =
        writeSide(before, n, 'ghcr.io/huggingface/text-generation-inference:3.3.6', true) +
        writeSide(after, n, 'ghcr.io/huggingface/text-generation-inference:3.3.7', false);
      const results = Array.from({ length: runs }, () => runOnce(cli, before, after));
      const ms = results.map(r => r.ms);
      const rss = results.map(r => r.rssMiB);
      const row: GuardBenchRow = {
        objects: n,
        yamlMiB: bytes / 2 ** 20,
        ms: [median(ms), Math.min(...ms), Math.max(...ms)],
        rssMiB: [median(rss), Math.min(...rss), Math.max(...rss)],
        errors: results[0].errors,
        warnings: results[0].warnings,
      };
      rows.push(row);
      const f = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(0)} ms`);
      const timeCell = `${f(row.ms[0]).padStart(8)} [${f(row.ms[1])}-${f(row.ms[2])}]`;
      const rssCell = `${row.rssMiB[0].toFixed(0).padStart(5)} MiB [${row.rssMiB[1].toFixed(0)}-${row.rssMiB[2].toFixed(0)}]`;
      log(
        `   ${String(n).padStart(7)} | ${row.yamlMiB.toFixed(0).padStart(3)} MiB | ${timeCell.padEnd(26)} | ${rssCell.padEnd(24)} | ${row.errors} errors, ${row.warnings} warnings`,
      );
      fs.rmSync(before, { recursive: true, force: true });
      fs.rmSync(after, { recursive: true, force: true });
    }
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1], rows[i]];
      const exp = (x: number, y: number) => (Math.log(y / x) / Math.log(b.objects / a.objects)).toFixed(2);
      log(
        `   scaling exponent ${a.objects} -> ${b.objects}: time ${exp(a.ms[0], b.ms[0])} (above the process floor ${exp(Math.max(1, a.ms[0] - floor), Math.max(1, b.ms[0] - floor))}), peak RSS ${exp(a.rssMiB[0], b.rssMiB[0])}; 1.0 is linear`,
      );
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
