// One measurement in a fresh process, so peak memory belongs to this case alone.
// Usage: node -r ts-node/register/transpile-only bench/case.ts synth <impl> <n> <layout>
//        node -r ts-node/register/transpile-only bench/case.ts guard <objects>
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, Chart, Testing } from 'cdk8s';
import { guard, TgiInferenceService } from '../src';
import { build, Impl, Layout } from './workloads';

const [what, ...args] = process.argv.slice(2);
const result: Record<string, number> = {};

if (what === 'synth') {
  const [impl, n, layout] = args as [Impl, string, Layout];
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const t0 = process.hrtime.bigint();
  const app = new App({ outdir });
  build(app, impl, Number(n), layout);
  app.synth();
  result.ms = Number(process.hrtime.bigint() - t0) / 1e6;
  result.yamlKb = fs.readdirSync(outdir).reduce((sum, f) => sum + fs.statSync(path.join(outdir, f)).size, 0) / 1024;
  fs.rmSync(outdir, { recursive: true, force: true });
} else if (what === 'guard') {
  // Objects from the constructs, then the same app with every image bumped: in-place changes.
  const services = Math.ceil(Number(args[0]) / 4);
  const synth = (image: string) => {
    const chart = new Chart(Testing.app(), 'c');
    for (let i = 0; i < services; i++) new TgiInferenceService(chart, `t${i}`, { name: `tgi-${i}`, modelId: 'm', image });
    return Testing.synth(chart);
  };
  const before = synth('tgi:3.3.6');
  const after = synth('tgi:3.3.7');
  const t0 = process.hrtime.bigint();
  const r = guard(before, after);
  result.ms = Number(process.hrtime.bigint() - t0) / 1e6;
  result.objects = before.length;
  result.errors = r.errors;
}
result.maxRssMb = process.resourceUsage().maxRSS / 1024;
process.stdout.write(JSON.stringify(result));
