import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Duration } from 'cdk8s';
import {
  deadline,
  freePort,
  Launch,
  PID_NAMESPACES,
  SHELLS,
  Shell,
  sleep,
  synthesizedTrainer,
  toolbox,
  TORCHRUN,
  TRAIN,
  waitFor,
} from './launch-harness';
import { missingTool } from '../support/missing-tool';

/**
 * The launch wrapper with a real torchrun: two "pods" of one GpuTrainingStatefulSet as local
 * process trees on 127.0.0.1 (each wrapper as PID 1 of its own PID namespace where this machine
 * allows it), the c10d rendezvous hosted by rank 0's agent as in the cluster, the gloo backend,
 * and a tiny training script (torchrun/train.py) that takes its faults from files. A "kubelet"
 * restarts each pod's container when it exits (restartPolicy Always, with a short back-off). The
 * ranks share one state directory, as with sharedCheckpoints.
 *
 * Each scenario runs rank 0 under one shell and rank 1 under the other (dash and busybox sh), so
 * that both shells play both roles across the file while each torchrun start (about two seconds
 * of importing torch per process) is paid once.
 */

const READY = TORCHRUN !== undefined && SHELLS.dash !== undefined && SHELLS.busybox !== undefined;

test('torchrun and both shells are here, so the wrapper is tested against a real torchrun', () => {
  if (READY) return;
  const message =
    `!!! The launch wrapper was NOT tested against a real torchrun: ${TORCHRUN ? '' : 'no torchrun (set TORCHRUN, or run .ci/run to make .cache/torch-venv) '}` +
    `${SHELLS.dash ? '' : 'no dash '}${SHELLS.busybox ? '' : 'no busybox'}`;
  missingTool(message);
});

interface GangOptions {
  /** The construct's maxRestarts (torchrun's --max-restarts, per node). */
  readonly maxRestarts: number;
  /** CDK8S_GPU_MAX_FAILED_STARTS. */
  readonly maxFailedStarts: number;
  /** The shells of rank 0 and rank 1. */
  readonly shells: [Shell, Shell];
  /** Seconds a rank waits in a rendezvous for the others (the c10d join_timeout). */
  readonly joinTimeout?: number;
  /**
   * Seconds a rank's torchrun waits for the rendezvous store (the c10d read_timeout). 3 s by default, so
   * that a rank restarted without the store's host fails fast.
   */
  readonly readTimeout?: number;
}

/**
 * The grace period of the test StatefulSet: torchrun's shutdown timeout is half of it (10 s). A loaded machine
 * drains in 5-8 s.
 */
const GRACE_SECONDS = 20;
/**
 * How long a scenario waits for torchrun to get somewhere: generous, for a loaded machine (each
 * torchrun agent and worker imports torch, seconds of CPU); a scenario takes 10 to 25 s on 2 idle cores.
 */
const WAIT_MS = 100000;
const TEST_MS = 240000;

/** One rank's pod: its container, restarted by the "kubelet" whenever it exits, until deleted or lost. */
class Pod {
  readonly launches: Launch[] = [];
  readonly exits: Array<number | null> = [];
  private restarting = true;
  private readonly done: Promise<void>;

  constructor(
    private readonly gang: Gang,
    readonly rank: number,
    readonly name: string,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (this.restarting) {
      const launch = this.gang.launch(this);
      this.launches.push(launch);
      this.exits.push(await launch.exited);
      if (this.restarting) await sleep(300);
    }
  }

  get current(): Launch {
    return this.launches[this.launches.length - 1];
  }

  get output(): string {
    return this.launches.map(l => l.output).join('');
  }

  termination(): string {
    const file = path.join(this.gang.work, `${this.name}.termination`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  }

  /** The pod is deleted: SIGTERM, then SIGKILL at the end of the grace period. */
  async delete(): Promise<void> {
    this.restarting = false;
    const current = this.current;
    await current.signal('SIGTERM').catch(() => undefined);
    await Promise.race([current.exited, deadline(GRACE_SECONDS * 1000, null)]);
    current.kill();
    await this.done;
  }

  /** The node is lost: everything in the pod dies at once, and the pod does not come back. */
  async lose(): Promise<void> {
    this.restarting = false;
    this.current.kill();
    await this.done;
  }

  /** Ends whatever is left (afterEach). */
  async stop(): Promise<void> {
    this.restarting = false;
    await this.current?.stop();
    await Promise.race([this.done, deadline(5000, undefined)]);
  }
}

/** Two ranks of one StatefulSet, as synthesized, sharing a state directory and a rendezvous. */
class Gang {
  readonly work = fs.mkdtempSync(path.join(os.tmpdir(), 'launch-torchrun-'));
  readonly state = path.join(this.work, 'shared-checkpoints', '.cdk8s-gpu');
  readonly pods: Pod[] = [];
  private readonly trainer: any;
  private readonly bins: Record<string, string> = {};

  constructor(
    private readonly port: number,
    private readonly o: GangOptions,
  ) {
    this.trainer = synthesizedTrainer({
      replicas: 2,
      gpusPerPod: 1,
      command: [TORCHRUN!],
      args: [TRAIN],
      maxRestarts: o.maxRestarts,
      terminationGracePeriod: Duration.seconds(GRACE_SECONDS),
      sharedCheckpoints: { claimName: 'shared' },
    });
    for (const shell of o.shells) this.bins[shell] ??= toolbox(shell, this.work);
  }

  /** The synthesized env value of `name`. */
  env(name: string): string {
    return this.trainer.env.find((e: any) => e.name === name).value;
  }

  start(rank: number, name = `job-${rank}`): Pod {
    const pod = new Pod(this, rank, name);
    this.pods.push(pod);
    return pod;
  }

  launch(pod: Pod): Launch {
    const shell = this.o.shells[pod.rank];
    return new Launch(
      shell,
      this.trainer,
      {
        PATH: this.bins[shell],
        WORK: this.work,
        HOSTNAME: `job-${pod.rank}`,
        NODE_RANK: String(pod.rank),
        POD_NAMESPACE: 'ml',
        // What the cluster has by address: rank 0's agent hosts the c10d store (its address is the
        // endpoint's), the others connect to it. On one machine every agent would match 127.0.0.1.
        MASTER_ADDR: '127.0.0.1',
        PET_RDZV_ENDPOINT: `127.0.0.1:${this.port}`,
        PET_RDZV_CONF: `is_host=${pod.rank === 0 ? 1 : 0},join_timeout=${this.o.joinTimeout ?? 30},read_timeout=${this.o.readTimeout ?? 3}`,
        // A pod's own address: the rendezvous tells nodes apart by address and pid, and with PID
        // namespaces both agents can have the same pid.
        PET_LOCAL_ADDR: `127.0.0.${pod.rank + 1}`,
        PET_MONITOR_INTERVAL: '0.2',
        GLOO_SOCKET_IFNAME: 'lo',
        OMP_NUM_THREADS: '1',
        CDK8S_GPU_STATE_DIR: this.state,
        CDK8S_GPU_POD_STATE_DIR: path.join(this.work, pod.name),
        CDK8S_GPU_TERMINATION_LOG: path.join(this.work, `${pod.name}.termination`),
        CDK8S_GPU_MAX_FAILED_STARTS: String(this.o.maxFailedStarts),
        CDK8S_GPU_POLL_SECONDS: '0.2',
      },
      { pid1: PID_NAMESPACES, group: true },
    );
  }

  /** The training script's events, e.g. `start node=1`, as `start 1` (event and node). */
  events(): string[] {
    const file = path.join(this.work, 'events');
    if (!fs.existsSync(file)) return [];
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(line => {
        const [what, node] = line.split(' ');
        return `${what} ${node.replace('node=', '')}`;
      });
  }

  count(event: string): number {
    return this.events().filter(e => e === event).length;
  }

  marker(rank: number, kind: string): string {
    return path.join(this.state, 'runs', this.env('CDK8S_GPU_RUN_ID'), `rank-${rank}.${kind}`);
  }

  has(rank: number, kind: string): boolean {
    return fs.existsSync(this.marker(rank, kind));
  }

  fault(name: string, rank: number, times = ''): void {
    fs.writeFileSync(path.join(this.work, `${name}-${rank}`), times);
  }

  async stop(): Promise<void> {
    await Promise.all(this.pods.map(p => p.stop()));
    fs.rmSync(this.work, { recursive: true, force: true });
  }

  /** Both logs, for a failing expectation's message. */
  logs(): string {
    return (
      this.pods.map(p => `--- ${p.name} (exits ${p.exits.join(', ')})\n${p.output}`).join('\n') +
      `\n--- events\n${this.events().join('\n')}`
    );
  }
}

const scenario = READY ? test : test.skip;

/** The wrapper's starts of torchrun after the first in one container, each with whether it rejoined a run. */
function laterStarts(output: string): Array<{ line: string; rejoin: boolean }> {
  const lines = output.split('\n').filter(l => l.includes('cdk8s-gpu-launch: '));
  return lines.flatMap((line, i) => {
    const n = /, start (\d+) in this pod/.exec(line);
    return n && n[1] !== '1' ? [{ line, rejoin: i > 0 && lines[i - 1].includes('rejoining it') }] : [];
  });
}

describe('the launch wrapper with a real torchrun, two ranks on 127.0.0.1', () => {
  let gang: Gang | undefined;

  afterEach(async () => {
    // LAUNCH_LOGS=dir keeps each scenario's logs (both pods and the training events) there.
    if (gang && process.env.LAUNCH_LOGS) {
      fs.writeFileSync(
        path.join(
          process.env.LAUNCH_LOGS,
          `${expect.getState().currentTestName!.slice(63, 160).replace(/\W+/g, '-')}.log`,
        ),
        gang.logs(),
      );
    }
    await gang?.stop();
    gang = undefined;
  });

  async function newGang(o: GangOptions): Promise<Gang> {
    gang = new Gang(await freePort(), o);
    return gang;
  }

  /** Waits for `predicate`, failing with both pods' logs. */
  async function until(g: Gang, what: string, predicate: () => boolean, ms: number): Promise<void> {
    if (!(await waitFor(predicate, ms))) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${g.logs()}`);
  }

  scenario(
    "a worker crash restarts the whole gang in place (torchrun's --max-restarts), and the run completes on every rank",
    async () => {
      // A budget of 3: the workers' re-rendezvous after a restart can itself fail (gloo's connect), and
      // then torchrun restarts the gang again.
      const g = await newGang({ maxRestarts: 3, maxFailedStarts: 3, shells: ['dash', 'busybox'] });
      g.fault('crash', 1, '1');
      const [r0, r1] = [g.start(0), g.start(1)];
      await until(g, 'both ranks to complete', () => r0.exits.length > 0 && r1.exits.length > 0, WAIT_MS);
      expect({ exits: [r0.exits[0], r1.exits[0]] }).toEqual({ exits: [0, 0] });
      // Rank 1's worker crashed once; the workers of both ranks started again, in the same
      // containers: each wrapper started torchrun once.
      expect(g.count('crash 1')).toBe(1);
      expect(g.count('start 0')).toBeGreaterThanOrEqual(2);
      expect(g.count('start 1')).toBeGreaterThanOrEqual(2);
      expect([g.count('done 0'), g.count('done 1')]).toEqual([1, 1]);
      for (const pod of [r0, r1]) {
        expect(pod.launches[0].output).toContain('start 1 in this pod');
        expect(pod.termination()).toMatch(new RegExp(`^run job completed on rank ${pod.rank} `));
      }
      expect([g.has(0, 'done'), g.has(1, 'done'), g.has(0, 'failures'), g.has(1, 'failures')]).toEqual([
        true,
        true,
        false,
        false,
      ]);
      // The kubelet starts the containers again (restartPolicy Always): they idle, without training.
      await until(g, 'both ranks to idle', () => r0.output.includes('idling') && r1.output.includes('idling'), 10000);
      expect(r0.launches.length + r1.launches.length).toBe(4);
      // The restart happened inside torchrun: no wrapper started it again after a failure (no failed start is
      // counted, above). A rank that finished first may start torchrun once more to rejoin, when the other
      // rank's success marker takes longer than three polls to appear (0.6 s here, on a loaded machine):
      // that start waits in a rendezvous until the other rank's marker is there, and ends without a failed
      // start. Every later start must be that rejoin; the logs say what else it was.
      for (const pod of [r0, r1]) {
        const unexplained = laterStarts(pod.output).filter(s => !s.rejoin);
        if (unexplained.length > 0) {
          throw new Error(
            `rank ${pod.rank} started torchrun again, not to rejoin:\n${unexplained.map(s => s.line)}\n${g.logs()}`,
          );
        }
      }
    },
    TEST_MS,
  );

  scenario(
    'a late failure on one rank marks the run complete nowhere; the finished rank rejoins when the failed one restarts',
    async () => {
      // Rank 1 rejoins three polls (0.6 s) after it finished, before the kubelet has restarted rank 0: its torchrun
      // waits for the store of rank 0's next torchrun, which a loaded machine takes more than 3 s to start.
      const g = await newGang({ maxRestarts: 0, maxFailedStarts: 3, shells: ['busybox', 'dash'], readTimeout: 30 });
      // Rank 0 (the store's host) fails after the last collective, once, while rank 1 finishes.
      g.fault('fail-late', 0, '1');
      const [r0, r1] = [g.start(0), g.start(1)];
      await until(
        g,
        'rank 1 to wait for the run',
        () => r1.output.includes('is not complete until ranks 0 finish'),
        WAIT_MS,
      );
      // torchrun exited 0 on rank 1 (its exit barrier failed, and torchrun said nothing of it), yet
      // the run is complete nowhere: rank 1 waits, running, and no completion marker exists.
      expect(g.has(1, 'ok')).toBe(true);
      expect(r1.exits).toEqual([]);
      expect([g.has(0, 'done'), g.has(1, 'done'), g.has(0, 'ok')]).toEqual([false, false, false]);
      await until(g, 'rank 0 to fail', () => r0.exits.length > 0, WAIT_MS);
      expect(r0.exits[0]).not.toBe(0);
      expect(r0.termination()).toMatch(/exited \d+ on rank 0 \(start 1 in this pod, failed start 1 of 3\)/);
      expect([g.has(0, 'done'), g.has(1, 'done')]).toEqual([false, false]);
      // The kubelet restarts rank 0; rank 1 sees it and rejoins; the gang trains again and completes.
      await until(g, 'both ranks to complete', () => r0.exits.length > 1 && r1.exits.length > 0, WAIT_MS);
      expect({ exits: [r0.exits[1], r1.exits[0]] }).toEqual({ exits: [0, 0] });
      expect(r1.output).toContain('rank 0 started again and waits for rank 1: run job is not complete, rejoining it');
      expect([g.count('start 0'), g.count('start 1'), g.count('fail-late 0')]).toEqual([2, 2, 1]);
      expect([g.has(0, 'done'), g.has(1, 'done')]).toEqual([true, true]);
    },
    TEST_MS,
  );

  scenario(
    'exhausted restarts end in the terminal FAILED state on every rank, which idles and says how to free the GPUs',
    async () => {
      const g = await newGang({ maxRestarts: 1, maxFailedStarts: 1, shells: ['dash', 'busybox'] });
      // Rank 1's worker crashes at every start: the gang restarts in place (each rank's budget is
      // one restart), then torchrun gives up, on rank 1 or on rank 0 (whose workers fail with it).
      g.fault('crash', 1);
      const [r0, r1] = [g.start(0), g.start(1)];
      await until(g, 'both ranks to end', () => r0.exits.length > 0 && r1.exits.length > 0, WAIT_MS);
      expect(g.count('crash 1')).toBeGreaterThanOrEqual(1);
      expect(g.count('start 1')).toBeGreaterThanOrEqual(2);
      // The rank that used up its failed starts (the cap is 1 here) ends the run FAILED; the other
      // one's torchrun, waiting in its rendezvous, is stopped by the wrapper, which ends FAILED too.
      expect([r0.exits[0], r1.exits[0]]).not.toContain(0);
      const failedOn = [0, 1].filter(r => g.has(r, 'failed'));
      expect(failedOn.length).toBeGreaterThan(0);
      expect(fs.readFileSync(g.marker(failedOn[0], 'failed'), 'utf8')).toMatch(
        /^1 failed starts \(the cap, CDK8S_GPU_MAX_FAILED_STARTS=1\), the last: '.*torchrun' exited \d+ at \S+ on job-[01]\n$/,
      );
      for (const pod of [r0, r1]) {
        expect(pod.termination()).toMatch(
          /^run job FAILED on rank [01]: 1 failed starts .*; free the GPUs with: kubectl -n ml scale statefulset job --replicas=0 \(or delete the StatefulSet\); a new runId starts a new run\n$/,
        );
      }
      // Later starts idle instead of crash-looping, saying what to do.
      await until(g, 'both ranks to idle', () => r0.output.includes('idling') && r1.output.includes('idling'), 10000);
      expect(r1.output).toMatch(
        /run job FAILED \(on rank [01]\): idling instead of training again \(free the GPUs with: kubectl -n ml scale statefulset job --replicas=0/,
      );
      await sleep(500);
      expect([r0.exits.length, r1.exits.length]).toEqual([1, 1]);
      expect([g.has(0, 'done'), g.has(1, 'done'), g.has(0, 'ok'), g.has(1, 'ok')]).toEqual([
        false,
        false,
        false,
        false,
      ]);
    },
    TEST_MS,
  );

  scenario(
    "losing rank 0 (the rendezvous store) ends the other ranks' torchrun at once; they restart, each a failed start, and end FAILED at the cap",
    async () => {
      const g = await newGang({ maxRestarts: 1, maxFailedStarts: 2, shells: ['busybox', 'dash'] });
      fs.writeFileSync(path.join(g.work, 'hang'), '');
      const [r0, r1] = [g.start(0), g.start(1)];
      await until(g, 'both ranks to train', () => g.count('step 0') > 0 && g.count('step 1') > 0, WAIT_MS);
      const lost = Date.now();
      await r0.lose();
      await until(g, 'rank 1 to exit', () => r1.exits.length > 0, WAIT_MS);
      const exitedAfter = Date.now() - lost;
      expect(r1.exits[0]).not.toBe(0);
      // Its workers fail in their collective and its re-rendezvous cannot reach the store (read_timeout, 3 s):
      // a few seconds, and well before it would give up waiting for a rendezvous (join_timeout, 30 s here).
      expect(exitedAfter).toBeLessThan(20000);
      expect(r1.termination()).toMatch(
        /exited \d+ on rank 1 \(start 1 in this pod, failed start 1 of 2\); the kubelet restarts it/,
      );
      // Restarted without rank 0, its torchrun cannot reach the store (read_timeout): the cap ends it.
      await until(g, 'rank 1 to end FAILED', () => r1.exits.length > 1, WAIT_MS);
      expect(r1.termination()).toMatch(/^run job FAILED on rank 1: 2 failed starts/);
      await until(g, 'rank 1 to idle', () => r1.output.includes('idling'), 10000);
      expect(g.has(1, 'failed')).toBe(true);
      console.log(`rank 1's torchrun exited ${exitedAfter} ms after rank 0 was lost`);
    },
    TEST_MS,
  );

  scenario(
    'SIGTERM (pod deletion) reaches torchrun and its workers; the wrappers exit within the grace period, nothing marked',
    async () => {
      const g = await newGang({ maxRestarts: 1, maxFailedStarts: 3, shells: ['dash', 'busybox'] });
      fs.writeFileSync(path.join(g.work, 'idle'), '');
      // torchrun's window for its workers after SIGTERM (TORCH_ELASTIC_SHUTDOWN_TIMEOUT): half the 20 s grace here.
      expect(g.env('TORCH_ELASTIC_SHUTDOWN_TIMEOUT')).toBe('10');
      const [r0, r1] = [g.start(0), g.start(1)];
      await until(g, 'both ranks to train', () => g.count('step 0') > 0 && g.count('step 1') > 0, WAIT_MS);
      const t = Date.now();
      const [l0, l1] = [r0.current, r1.current];
      await Promise.all([r0.delete(), r1.delete()]);
      const took = Date.now() - t;
      // Exited on their own, before the SIGKILL at the end of the grace period.
      expect({ exitedOnItsOwn: [l0.exitedOnItsOwn, l1.exitedOnItsOwn], took: took < GRACE_SECONDS * 1000 }).toEqual({
        exitedOnItsOwn: [true, true],
        took: true,
      });
      // The wrapper forwarded the TERM to torchrun, which forwarded it to its workers.
      expect([g.count('term 0'), g.count('term 1')]).toEqual([1, 1]);
      for (const pod of [r0, r1]) expect(pod.output).toContain('stopped by a signal');
      expect(g.count('done 0') + g.count('done 1')).toBe(0);
      expect([0, 1].flatMap(r => ['ok', 'done', 'failures', 'failed'].filter(k => g.has(r, k)))).toEqual([]);
      console.log(`both ranks drained ${took} ms after SIGTERM`);
    },
    TEST_MS,
  );
});
