import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { Duration, Testing } from 'cdk8s';
import { GpuTrainingJob } from '../../src';
import { testChart } from '../support/synth';
import {
  deadline,
  freePort,
  Launch,
  PID_NAMESPACES,
  SHELLS,
  Shell,
  sleep,
  toolbox,
  TORCHRUN,
  TRAIN,
} from './launch-harness';
import { missingTool } from '../support/missing-tool';

/**
 * GpuTrainingJob's pods with a real torchrun: each "pod" runs the container exactly as synthesized
 * (the shared launch wrapper in its forward-only mode, then torchrun with the construct's static
 * rendezvous env) as PID 1 of its own PID namespace where the machine allows it, on 127.0.0.1
 * with gloo. The JobSet restarts the gang and decides completion, so these scenarios are about
 * what the wrapper is there for:
 * SIGTERM (a preemption, a drain, a gang restart deleting the pods) reaches the workers and the
 * pod ends within its grace period, whatever torchrun is doing, and exit codes pass through.
 */

/** The test JobSet's grace period; torchrun's shutdown timeout is half of it. A loaded machine drains in 5-8 s. */
const GRACE_SECONDS = 20;
const READY = TORCHRUN !== undefined && SHELLS.dash !== undefined && SHELLS.busybox !== undefined;
const WAIT_MS = 100000;
const TEST_MS = 240000;
const scenario = READY ? test : test.skip;

test('torchrun and both shells are here, so the JobSet pods are tested against a real torchrun', () => {
  if (!PID_NAMESPACES)
    console.warn('!!! no PID namespaces here: the pods run as process groups, and torchrun-as-PID-1 is not compared');
  if (READY) return;
  const message = `!!! GpuTrainingJob's launch was NOT tested against a real torchrun (torchrun ${TORCHRUN ? 'found' : 'missing'}, dash ${SHELLS.dash ? 'found' : 'missing'}, busybox ${SHELLS.busybox ? 'found' : 'missing'})`;
  missingTool(message);
});

/** The trainer container of a synthesized GpuTrainingJob of `nodes` pods. */
function jobTrainer(nodes: number): any {
  const chart = testChart();
  new GpuTrainingJob(chart, 't', {
    name: 'job',
    image: 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime',
    gpusPerPod: 1,
    nodes,
    command: [TORCHRUN ?? 'torchrun'],
    args: [TRAIN],
    terminationGracePeriod: Duration.seconds(GRACE_SECONDS),
  });
  const jobSet = Testing.synth(chart).find(o => o.kind === 'JobSet');
  const pod = jobSet.spec.replicatedJobs[0].template.spec.template.spec;
  expect(pod.terminationGracePeriodSeconds).toBe(GRACE_SECONDS);
  return pod.containers[0];
}

/** Whether something listens on 127.0.0.1:port (rank 0's torchrun hosts the static rendezvous store). */
function listening(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until(what: string, predicate: () => boolean | Promise<boolean>, ms: number, logs: () => string) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await predicate()) return;
    await sleep(50);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}\n${logs()}`);
}

/** The pods of one JobSet attempt, each under its shell, not restarted (restartPolicy Never). */
class Attempt {
  readonly work = fs.mkdtempSync(path.join(os.tmpdir(), 'launch-jobset-'));
  readonly launches: Launch[] = [];
  private readonly bins: Record<string, string> = {};

  constructor(
    readonly port: number,
    readonly container: any,
  ) {}

  /** Starts the pod of completion index `index` under `shell`, running `container` (default: as synthesized). */
  start(index: number, shell: Shell, container = this.container): Launch {
    this.bins[shell] ??= toolbox(shell, this.work);
    const launch = new Launch(
      shell,
      container,
      {
        PATH: this.bins[shell],
        WORK: this.work,
        HOME: this.work,
        HOSTNAME: `job-node-0-${index}`,
        POD_NAMESPACE: 'ml',
        // The completion index, which the pod reads from its annotation (a fieldRef).
        NODE_RANK: String(index),
        PET_NODE_RANK: String(index),
        // On one machine, rank 0's address is 127.0.0.1 (in the cluster: its stable DNS name).
        MASTER_ADDR: '127.0.0.1',
        PET_MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(this.port),
        PET_MASTER_PORT: String(this.port),
        PET_MONITOR_INTERVAL: '0.2',
        GLOO_SOCKET_IFNAME: 'lo',
        OMP_NUM_THREADS: '1',
        CDK8S_GPU_TERMINATION_LOG: path.join(this.work, `termination-${index}`),
      },
      // PID 1 of its own PID namespace as in a container where this machine allows it.
      { pid1: PID_NAMESPACES, group: true },
    );
    this.launches.push(launch);
    return launch;
  }

  events(): string[] {
    const file = path.join(this.work, 'events');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  }

  count(event: string, node: number): number {
    return this.events().filter(e => e.startsWith(`${event} node=${node} `)).length;
  }

  /** The pod is deleted (a gang restart, a drain, a preemption): SIGTERM, SIGKILL at the end of the grace period. */
  async delete(launch: Launch): Promise<{ code: number | null; ms: number; onItsOwn: boolean }> {
    const t = Date.now();
    await launch.signal('SIGTERM');
    await Promise.race([launch.exited, deadline(GRACE_SECONDS * 1000, null)]);
    const onItsOwn = launch.exitedOnItsOwn;
    const ms = Date.now() - t;
    launch.kill();
    return { code: onItsOwn ? await launch.exited : null, ms, onItsOwn };
  }

  logs(): string {
    return (
      this.launches.map((l, i) => `--- launch ${i}\n${l.output}`).join('\n') +
      `\n--- events\n${this.events().join('\n')}`
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.launches.map(l => l.stop()));
    fs.rmSync(this.work, { recursive: true, force: true });
  }
}

describe('the forward-only wrapper without torchrun: exit codes as the JobSet reads them', () => {
  const shells = (['dash', 'busybox'] as Shell[]).filter(sh => SHELLS[sh] !== undefined);
  test.each(shells)(
    "%s: the launcher's code passes through; a missing launcher is 127; no job-model env needed",
    async sh => {
      const a = new Attempt(0, jobTrainer(1));
      try {
        const run = (args: string[]) => a.start(0, sh, { ...a.container, args }).exited;
        // The synthesized env has no CDK8S_GPU_RUN_ID or state directory: forward mode reads none.
        expect(a.container.env.map((e: any) => e.name)).not.toContain('CDK8S_GPU_RUN_ID');
        expect(await run(['sh', '-c', 'exit 3'])).toBe(3);
        expect(await run(['sh', '-c', 'exit 0'])).toBe(0);
        expect(await run(['no-such-launcher', 'train.py'])).toBe(127);
      } finally {
        await a.stop();
      }
    },
  );
});

describe("GpuTrainingJob's pods with a real torchrun: the forward-only launch wrapper as PID 1", () => {
  let attempt: Attempt | undefined;
  afterEach(async () => {
    await attempt?.stop();
    attempt = undefined;
  });

  scenario(
    'SIGTERM during training reaches every worker (a checkpoint moment) and both pods end on their own within the grace period',
    async () => {
      const container = jobTrainer(2);
      const a = (attempt = new Attempt(await freePort(), container));
      fs.writeFileSync(path.join(a.work, 'idle'), '');
      const [p0, p1] = [a.start(0, 'dash'), a.start(1, 'busybox')];
      await until(
        'both pods to train',
        () => a.count('step', 0) > 0 && a.count('step', 1) > 0,
        WAIT_MS,
        () => a.logs(),
      );
      const [d0, d1] = await Promise.all([a.delete(p0), a.delete(p1)]);
      expect({ onItsOwn: [d0.onItsOwn, d1.onItsOwn] }).toEqual({ onItsOwn: [true, true] });
      expect(Math.max(d0.ms, d1.ms)).toBeLessThan(GRACE_SECONDS * 1000);
      // The wrapper forwarded the TERM to torchrun, which forwarded it to its workers: each ran its handler.
      expect([a.count('term', 0), a.count('term', 1)]).toEqual([1, 1]);
      for (const p of [p0, p1]) expect(p.output).toMatch(/stopped by a signal; '.*torchrun' exited \d+/);
      console.log(`both pods drained ${Math.max(d0.ms, d1.ms)} ms after SIGTERM (grace ${GRACE_SECONDS} s)`);
    },
    TEST_MS,
  );

  scenario(
    "a failing worker's non-zero code passes through torchrun and the wrapper: what the JobSet's failure rules read",
    async () => {
      const a = (attempt = new Attempt(await freePort(), jobTrainer(2)));
      fs.writeFileSync(path.join(a.work, 'crash-1'), '1');
      const [p0, p1] = [a.start(0, 'busybox'), a.start(1, 'dash')];
      const codes = await Promise.all([p0.exited, p1.exited]);
      // Rank 1's worker exits 1; torchrun (no restarts of its own: the JobSet restarts the gang)
      // exits 1, and so does the wrapper. Rank 0's workers lose their peer and fail too.
      expect({ codes, crashed: a.count('crash', 1), done: a.count('done', 0) }).toEqual({
        codes: [1, 1],
        crashed: 1,
        done: 0,
      });
      for (const p of [p0, p1]) expect(p.output).not.toContain('stopped by a signal');
    },
    TEST_MS,
  );

  scenario(
    'SIGTERM while torchrun waits in its rendezvous: torchrun as PID 1 drops it (no handler until its workers start); under the wrapper the pods end at once',
    async () => {
      // Three nodes, the third never comes: rank 0 hosts the store, and both wait for the third.
      const container = jobTrainer(3);
      const a = (attempt = new Attempt(await freePort(), container));
      const [p0, p1] = [a.start(0, 'dash'), a.start(1, 'busybox')];
      await until(
        'rank 0 to host the rendezvous store',
        () => listening(a.port),
        WAIT_MS,
        () => a.logs(),
      );
      await sleep(3000);
      expect(a.events()).toEqual([]);
      const [d0, d1] = await Promise.all([a.delete(p0), a.delete(p1)]);
      expect({ onItsOwn: [d0.onItsOwn, d1.onItsOwn] }).toEqual({ onItsOwn: [true, true] });
      // At once, not at the grace period's SIGKILL (torchrun as PID 1, below); 10 s leaves a loaded machine room.
      expect(Math.max(d0.ms, d1.ms)).toBeLessThan(10000);

      // The same pod without the wrapper (torchrun exec'd as PID 1, as the construct first shipped it).
      if (!PID_NAMESPACES) return;
      const direct = { ...container, command: ['sh', '-c', 'exec "$@"', 'direct'], args: [TORCHRUN, TRAIN] };
      const b = new Attempt(await freePort(), container);
      try {
        const alone = b.start(0, 'dash', direct);
        await until(
          'the direct torchrun to host the store',
          () => listening(b.port),
          WAIT_MS,
          () => b.logs(),
        );
        // PID 1 without a SIGTERM handler: the kernel drops the signal (SIGNAL_UNKILLABLE).
        expect(await alone.catches('SIGTERM', 500)).toBe(false);
        await alone.signal('SIGTERM');
        expect(await Promise.race([alone.exited, deadline(5000, 'still running')])).toBe('still running');
        console.log(
          `in the rendezvous, under the wrapper: ${Math.max(d0.ms, d1.ms)} ms after SIGTERM; torchrun as PID 1: still running 5 s after SIGTERM (until the SIGKILL at the end of the grace period)`,
        );
      } finally {
        await b.stop();
      }
    },
    TEST_MS,
  );
});
