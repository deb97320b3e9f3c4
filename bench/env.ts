// Where the bench runs from and what it measures: the library as built by `npm run build` (lib/),
// loaded the way a user's app loads it. The bench itself runs compiled, from a scratch folder.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type * as Library from '../src';

/** The repository root, found from wherever the compiled bench runs. */
export const ROOT = ((): string => {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'cdk8s-gpu') return dir;
  }
  throw new Error(`bench: no cdk8s-gpu package.json above ${__dirname}`);
})();

/**
 * The built library (lib/), exactly what the npm package ships. BENCH_LIB names another build of it
 * (e.g. a candidate fix compiled elsewhere), for comparisons.
 */
export function library(): typeof Library {
  return require(path.resolve(ROOT, process.env.BENCH_LIB ?? 'lib'));
}

/** The `yaml` module that cdk8s itself writes manifests with (its own copy when it has one). */
export function cdk8sYaml(): typeof import('yaml') {
  const cdk8sMain = require.resolve('cdk8s', { paths: [ROOT] });

  return require(require.resolve('yaml', { paths: [path.dirname(cdk8sMain)] }));
}

export function machine(): string {
  const cpus = os.cpus();
  return (
    `${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ` +
    `Node ${process.version}, ${os.platform()} ${os.arch()}, load average ${loadavg()}`
  );
}

/** The 1, 5 and 15 minute load averages (Linux counts runnable and waiting tasks, the bench's own included). */
export function loadavg(): string {
  return os
    .loadavg()
    .map(l => l.toFixed(2))
    .join(' / ');
}

/** The commit measured, with "+ uncommitted changes" when the checkout differs from it. */
export function revision(): string {
  const { spawnSync } = require('child_process') as typeof import('child_process');
  const git = (...args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return 'unknown (no git)';
  const dirty =
    git('status', '--porcelain', '--untracked-files=no', '--', 'src', 'bench', 'package.json').stdout.trim() !== '';
  return `${head.stdout.trim()}${dirty ? ' + uncommitted changes in src/, bench/ or package.json' : ''}`;
}
