// `cdk8s-gpu guard` and `cdk8s-gpu plan` as fresh processes on generated YAML (a live export and
// new manifests with every image bumped, bench/guard.ts's corpus): wall time and peak RSS per size.
// For the bench runner to call; alone: npx ts-node --transpile-only test/support/guard-plan-bench.ts
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { writeSide } from '../../bench/guard';

export interface GuardPlanRow {
  readonly command: 'guard' | 'plan';
  readonly objects: number;
  readonly ms: number;
  readonly rssMiB: number;
  /** CPU time (user + system): on a shared machine, wall time also counts the wait for a core. */
  readonly cpuMs: number;
}

/** Runs the built CLI (`cli`, e.g. lib/guard/cli.js) once per command and size. */
export function measureGuardAndPlan(
  cli: string,
  sizes: readonly number[] = [1000, 10000, 100000],
  log: (l: string) => void = console.log,
): GuardPlanRow[] {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-plan-bench-'));
  const rows: GuardPlanRow[] = [];
  try {
    for (const n of sizes) {
      const before = path.join(work, `before-${n}`);
      const after = path.join(work, `after-${n}`);
      writeSide(before, n, 'ghcr.io/huggingface/text-generation-inference:3.3.6', true);
      writeSide(after, n, 'ghcr.io/huggingface/text-generation-inference:3.3.7', false);
      for (const command of ['guard', 'plan'] as const) {
        const script = `const { main } = require(${JSON.stringify(cli)}); let n = 0;
          const code = main([${JSON.stringify(command)}, '--before', ${JSON.stringify(before)}, '--after', ${JSON.stringify(after)}, '--json'], s => { n += s.length; }, s => process.stderr.write(s + '\\n'));
          const u = process.resourceUsage(); process.stdout.write(JSON.stringify({ code, maxRss: u.maxRSS, cpu: (u.userCPUTime + u.systemCPUTime) / 1000 }));`;
        const t0 = process.hrtime.bigint();
        const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (r.status !== 0) throw new Error(`${command} at ${n} failed: ${r.stderr}`);
        const out = JSON.parse(r.stdout);
        const rssMiB = out.maxRss / 1024;
        rows.push({ command, objects: n, ms, rssMiB, cpuMs: out.cpu });
        log(
          `${command.padEnd(5)} ${String(n).padStart(7)} objects: ${(ms / 1000).toFixed(2)} s wall, ${(out.cpu / 1000).toFixed(2)} s CPU, ${rssMiB.toFixed(0)} MiB`,
        );
      }
      fs.rmSync(before, { recursive: true, force: true });
      fs.rmSync(after, { recursive: true, force: true });
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

if (require.main === module) {
  const sizes = process.argv.slice(2).map(Number);
  measureGuardAndPlan(path.join(__dirname, '..', '..', 'lib', 'guard', 'cli.js'), sizes.length ? sizes : undefined);
}
