// One measurement in a fresh process, so that time and peak memory belong to this case alone.
// Module loading happens before the clock starts (bench/load-case.ts times loading on its own).
//   node case.js fixture <kinds> <n> <layout> <fixture.json>   the library's objects, per chart (not timed)
//   node case.js library <kinds> <n> <layout> <outdir>         constructs + cdk8s synth
//   node case.js raw <fixture.json> <outdir>                   the same objects as plain ApiObjects + cdk8s synth
//   node case.js yaml <fixture.json> <outdir>                 the same bytes, written by `yaml` alone
// Prints one JSON object: ms (wall), cpuMs (user + system), rssMb (peak RSS of the process),
// rssStartMb (RSS when the clock started: node, the modules, the fixture), heapMb (V8 heap
// committed when the clock stopped), fromUs/toUs (the timed window, for bench/profile).
import * as fs from 'fs';
import * as path from 'path';
import { ApiObject, App, Chart, Names } from 'cdk8s';
import { cdk8sYaml } from './env';
import { buildWithLibrary, kindsNamed, Layout } from './workloads';

/** What `fixture` writes: each chart's id, file name and synthesized objects, in output order. */
export interface Fixture {
  readonly charts: Array<{ id: string; file: string; objects: any[] }>;
}

const MiB = 2 ** 20;
const result: Record<string, number> = {};
let t0 = 0n;
let cpu0 = process.cpuUsage();
/** Starts the clock (and the CPU clock). */
const start = () => {
  result.rssStartMb = process.memoryUsage().rss / MiB;
  cpu0 = process.cpuUsage();
  t0 = process.hrtime.bigint();
};
/** Stops it: wall and CPU time since start(), the heap, the window (monotonic µs, the clock of --cpu-prof). */
const stop = () => {
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  result.ms = Number(t1 - t0) / 1e6;
  result.cpuMs = (cpu.user + cpu.system) / 1000;
  result.heapMb = process.memoryUsage().heapTotal / MiB;
  result.fromUs = Number(t0 / 1000n);
  result.toUs = Number(t1 / 1000n);
};
const [what, ...args] = process.argv.slice(2);

if (what === 'fixture') {
  const [kinds, n, layout, file] = args;
  const app = new App({ outdir: path.dirname(file) });
  buildWithLibrary(app, kindsNamed(kinds.split(',')), Number(n), layout as Layout);
  // Chart.toJson() is what app.synth() writes for each chart (resolved, sanitized, in dependency order).
  const charts = app.charts.map(c => ({
    id: c.node.id,
    file: `${Names.toDnsLabel(c)}${app.outputFileExtension}`,
    objects: c.toJson(),
  }));
  fs.writeFileSync(file, JSON.stringify({ charts } satisfies Fixture));
  result.objects = charts.reduce((s, c) => s + c.objects.length, 0);
} else if (what === 'library') {
  const [kinds, n, layout, outdir] = args;
  const mix = kindsNamed(kinds.split(','));
  start();
  const app = new App({ outdir });
  buildWithLibrary(app, mix, Number(n), layout as Layout);
  app.synth();
  stop();
} else if (what === 'raw') {
  const [file, outdir] = args;
  const fixture: Fixture = JSON.parse(fs.readFileSync(file, 'utf8'));
  start();
  const app = new App({ outdir });
  for (const c of fixture.charts) {
    const chart = new Chart(app, c.id);
    c.objects.forEach((o, j) => new ApiObject(chart, `o${j}`, o));
  }
  app.synth();
  stop();
} else if (what === 'yaml') {
  const [file, outdir] = args;
  const fixture: Fixture = JSON.parse(fs.readFileSync(file, 'utf8'));
  const YAML = cdk8sYaml();
  start();
  fs.mkdirSync(outdir, { recursive: true });
  // Exactly cdk8s's Yaml.save (node_modules/cdk8s/lib/yaml.js): one stringify per object, joined by '---'.
  for (const c of fixture.charts) {
    const text = c.objects
      .map(o => YAML.stringify(o, { keepUndefined: true, lineWidth: 0, version: '1.1' }))
      .join('---\n');
    fs.writeFileSync(path.join(outdir, c.file), text, { encoding: 'utf8' });
  }
  stop();
} else {
  throw new Error(`bench/case: unknown case ${what}`);
}
result.rssMb = process.resourceUsage().maxRSS / 1024;
process.stdout.write(JSON.stringify(result));
