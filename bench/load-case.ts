// `node load-case.js <module>`: require() of one module from this project in a fresh process,
// timed, with nothing else loaded first (bench/case.ts loads cdk8s before its clock starts, so it
// cannot time loading). 'cdk8s-gpu' is the built library (lib/, or BENCH_LIB). Prints the same
// JSON fields as bench/case.ts.
import * as fs from 'fs';
import { createRequire } from 'module';
import * as path from 'path';

const [id] = process.argv.slice(2);
// The repository root: the compiled file runs from <root>/.bench-build-*/bench/.
let root = __dirname;
while (!fs.existsSync(path.join(root, 'node_modules', 'cdk8s'))) {
  if (root === path.dirname(root)) throw new Error(`bench/load-case: no node_modules/cdk8s above ${__dirname}`);
  root = path.dirname(root);
}
const req = createRequire(path.join(root, 'package.json'));
const target = id === 'cdk8s-gpu' ? path.resolve(root, process.env.BENCH_LIB ?? 'lib') : id;
const rssStart = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
req(target);
const t1 = process.hrtime.bigint();
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  JSON.stringify({
    ms: Number(t1 - t0) / 1e6,
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssStartMb: rssStart / 2 ** 20,
    rssMb: process.resourceUsage().maxRSS / 1024,
    heapMb: process.memoryUsage().heapTotal / 2 ** 20,
  }),
);
