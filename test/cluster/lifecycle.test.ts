import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describeCluster } from './kube';

/**
 * `cluster:up` and `cluster:down` as documented (docs/contributing.md): up twice in a row finds the
 * control plane running, up after a component was killed stops what is left and starts clean, down
 * stops every process by its pid file and removes the run directory, and a second down finds nothing.
 * It runs a control plane of its own (the newest release only, in a cache of its own whose binaries
 * are the suite's), so the one the other tests use is not touched.
 */

const CLUSTER_JS = path.join(__dirname, 'cluster.js');
// The components cluster.js starts and writes pid files for, and the releases it pins.
const { COMPONENTS, VERSIONS } = require('./cluster') as {
  COMPONENTS: string[];
  VERSIONS: { kubernetes: string[] };
};
const NEWEST = VERSIONS.kubernetes[VERSIONS.kubernetes.length - 1];

describeCluster(
  'cluster:up and cluster:down',
  () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-cluster-'));
    const run = path.join(cache, 'run', NEWEST);
    const env = { ...process.env, CDK8S_GPU_CLUSTER_CACHE: cache, CDK8S_GPU_CLUSTER_RELEASES: NEWEST };
    const cluster = (command: string) => {
      const r = spawnSync(process.execPath, [CLUSTER_JS, command], { env, encoding: 'utf8', timeout: 400_000 });
      return { status: r.status, out: `${r.stdout}${r.stderr}` };
    };
    /** Each component's pid, from the pid files up wrote. */
    const pids = () =>
      Object.fromEntries(
        COMPONENTS.map(c => [c, Number(fs.readFileSync(path.join(run, `${c}.pid`), 'utf8').split(' ')[0])]),
      );
    /** Running, not a zombie waiting for its parent to reap it (whose cmdline is empty). */
    const alive = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') !== '';
      } catch {
        return false;
      }
    };

    beforeAll(() => {
      // The suite's binaries (its global setup built them): nothing is built again.
      fs.symlinkSync(path.join(process.env.CDK8S_GPU_CLUSTER_RUNS!, '..', 'bin'), path.join(cache, 'bin'));
    });
    afterAll(() => {
      cluster('down');
      fs.rmSync(cache, { recursive: true, force: true });
    });

    test('up, up again, up after a kill, down, down again', () => {
      const first = cluster('up');
      expect(first).toMatchObject({ status: 0 });
      expect(first.out).toContain(`export KUBECONFIG=${path.join(run, 'kubeconfig')}`);
      const started = pids();
      expect(Object.values(started).filter(p => !alive(p))).toEqual([]);

      const again = cluster('up');
      expect(again).toMatchObject({ status: 0 });
      expect(again.out).toContain(`${NEWEST} already up`);
      expect(pids()).toEqual(started);

      // A crash: the controller-manager dies hard. The next up stops the rest and starts clean.
      process.kill(started['kube-controller-manager'], 'SIGKILL');
      const recovered = cluster('up');
      expect(recovered).toMatchObject({ status: 0 });
      const restarted = pids();
      for (const c of COMPONENTS) expect({ c, same: restarted[c] === started[c] }).toEqual({ c, same: false });
      expect(Object.values(started).filter(alive)).toEqual([]);
      expect(Object.values(restarted).filter(p => !alive(p))).toEqual([]);

      const down = cluster('down');
      expect(down).toMatchObject({ status: 0 });
      expect(down.out).toContain(`${NEWEST}: stopped`);
      expect(Object.values(restarted).filter(alive)).toEqual([]);
      expect(fs.existsSync(path.join(cache, 'run'))).toBe(false);

      expect(cluster('down').out).toContain('nothing was running');
    }, 900_000);
  },
  version => version === NEWEST,
);
