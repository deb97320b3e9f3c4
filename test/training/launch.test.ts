import { inlineCommand } from '../support/runtime-scripts';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Size, Testing } from 'cdk8s';
import { GpuTrainingJob } from '../../src';
import {
  deadline,
  kubeletExpand,
  Launch,
  LaunchOptions,
  LAUNCH_SCRIPT,
  onPath,
  PID_NAMESPACES,
  SHELLS,
  Shell,
  sleep,
  synthesizedTrainer,
  toolbox,
  waitFor,
  WRAPPER_TOOLS,
} from './launch-harness';
import { missingTool } from '../support/missing-tool';

/**
 * A stand-in for torchrun: records each start (with the rendezvous id it saw) and its arguments,
 * blocks while a `block` file exists, records SIGTERM (and keeps running while an `ignore-term`
 * file exists, like a launcher still checkpointing), and exits with the code in the `rc` file.
 * Its trap is set before it records its start, so a test that signals once it has started is
 * never ahead of the trap.
 */
const FAKE_TORCHRUN = [
  'trap \'echo term >> "$WORK/runs"; [ -f "$WORK/ignore-term" ] || exit 0\' TERM',
  'echo "run $PET_RDZV_ID" >> "$WORK/runs"',
  'printf \'%s\\n\' "$@" > "$WORK/args"',
  'while [ -f "$WORK/block" ]; do sleep 0.05; done',
  'read -r rc < "$WORK/rc"',
  'exit "$rc"',
].join('\n');

/** Arguments a shell or the kubelet could mangle: spaces, quotes, globs, `$` forms, an empty one. */
const AWKWARD_ARGS = ['train.py', 'two words', '"double"', "it's", '*', '$HOME', '${X:-y}', '$$', '', '--lr=1e-4'];

const available = (Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s] !== undefined);

test("the wrapper survives the kubelet's $(VAR) and $$ expansion of the container command unchanged", () => {
  const container = synthesizedTrainer({});
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, 'X']));
  // The StatefulSet's pods source the wrapper from its ConfigMap (no expansion there); the -c string itself,
  // and GpuTrainingJob's inline forwarding script, go through the kubelet's expansion unchanged.
  expect(container.command[2]).toBe('. /opt/cdk8s-gpu/launch/launch.sh');
  expect(inlineCommand(container.command)[2]).toBe(LAUNCH_SCRIPT);
  expect(kubeletExpand(container.command[2], env)).toBe(container.command[2]);
  expect(kubeletExpand(LAUNCH_SCRIPT, env)).toBe(LAUNCH_SCRIPT);
  const chart = new Chart(Testing.app(), 'job');
  const job = new GpuTrainingJob(chart, 'j', { name: 'j', image: 'i', gpusPerPod: 1, args: ['train.py'] });
  const forward = job._podTemplate.main.command![2];
  expect(kubeletExpand(forward, env)).toBe(forward);
  expect(kubeletExpand('a$$b $(A) $(B) $(', { A: '1' })).toBe('a$b 1 $(B) $(');
});

test('PID namespaces are available here, so the wrapper is also tested as PID 1', () => {
  if (!PID_NAMESPACES)
    console.warn(
      '!!! The launch wrapper was NOT tested as PID 1: `unshare --user --map-root-user --pid --fork` does not work here.',
    );
  expect(typeof PID_NAMESPACES).toBe('boolean');
});

test("both shells training images have are installed here (dash, and busybox from Debian's busybox package)", () => {
  const missing = (Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s] === undefined);
  if (missing.length === 0) return;
  const message =
    `!!! The training launch wrapper was NOT tested under: ${missing.join(', ')}. ` +
    'Install it (apt-get install -y busybox dash); .ci/run does this in CI.';
  missingTool(message);
});

describe.each(available)('the launch wrapper under %s', shell => {
  let work: string;
  let bin: string;
  const launches: Launch[] = [];
  const trainer = synthesizedTrainer({
    command: ['sh', '-c', FAKE_TORCHRUN, 'fake-torchrun'],
    storage: { size: Size.gibibytes(1) },
  });
  const awkward = synthesizedTrainer({
    command: ['sh', '-c', FAKE_TORCHRUN, 'fake-torchrun'],
    args: AWKWARD_ARGS,
    storage: { size: Size.gibibytes(1) },
  });

  beforeEach(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'launch-'));
    bin = toolbox(shell, work);
    fs.writeFileSync(path.join(work, 'rc'), '0\n');
  });

  afterEach(async () => {
    fs.rmSync(path.join(work, 'block'), { force: true });
    await Promise.all(launches.splice(0).map(l => l.stop()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  const runs = () =>
    fs.existsSync(path.join(work, 'runs'))
      ? fs.readFileSync(path.join(work, 'runs'), 'utf8').split('\n').filter(Boolean)
      : [];
  const termination = () => fs.readFileSync(path.join(work, 'termination-log'), 'utf8');
  const marker = (run = 'job', rank = 1) => path.join(work, 'state', 'runs', run, `rank-${rank}.done`);

  /** One start of the container: `pod` names the pod's emptyDir, so a new name is a re-created pod. */
  function start(
    o: { pod?: string; env?: Record<string, string>; binDir?: string; container?: any } & LaunchOptions = {},
  ): Launch {
    const launch = new Launch(
      shell,
      o.container ?? trainer,
      {
        PATH: o.binDir ?? bin,
        WORK: work,
        NODE_RANK: '1',
        CDK8S_GPU_STATE_DIR: path.join(work, 'state'),
        CDK8S_GPU_POD_STATE_DIR: path.join(work, o.pod ?? 'pod-a'),
        CDK8S_GPU_TERMINATION_LOG: path.join(work, 'termination-log'),
        POD_NAMESPACE: 'ml',
        ...o.env,
      },
      { pid1: o.pid1, termIgnored: o.termIgnored },
    );
    launches.push(launch);
    return launch;
  }

  test('the wrapper runs the launcher with the synthesized rendezvous id', async () => {
    expect(await start().exited).toBe(0);
    const rdzv = trainer.env.find((e: any) => e.name === 'PET_RDZV_ID').value;
    expect(runs()).toEqual([`run ${rdzv}`]);
  });

  test('a run that exits 0 is recorded, announced as Completed, and never trains again in that pod', async () => {
    const first = start();
    expect(await first.exited).toBe(0);
    // When, which pod and which rank spec (rendezvous id) finished the run: one line.
    const rdzv = trainer.env.find((e: any) => e.name === 'PET_RDZV_ID').value;
    expect(fs.readFileSync(marker(), 'utf8')).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ host=\\S+ start=\\S+ rdzv=${rdzv}\\n$`),
    );
    expect(termination()).toMatch(/^run job completed on rank 1 \(\d{4}-/);

    // The kubelet restarts the container (restartPolicy Always): it idles instead of retraining.
    const again = start();
    expect(await waitFor(() => again.output.includes('idling'), 5000)).toBe(true);
    await sleep(300);
    expect(again.running).toBe(true);
    expect(runs()).toHaveLength(1);

    // Pod deletion: SIGTERM ends the idle wrapper at once, with success.
    const t = Date.now();
    await again.signal('SIGTERM');
    expect(await again.exited).toBe(0);
    expect(Date.now() - t).toBeLessThan(2000);
  });

  test('a re-created pod of a completed rank announces completion once, then idles, without training', async () => {
    expect(await start({ pod: 'pod-a' }).exited).toBe(0);
    fs.writeFileSync(path.join(work, 'termination-log'), '');
    const recreated = start({ pod: 'pod-b' });
    expect(await recreated.exited).toBe(0);
    expect(termination()).toMatch(/^run job completed on rank 1/);
    const restarted = start({ pod: 'pod-b' });
    expect(await waitFor(() => restarted.output.includes('idling'), 5000)).toBe(true);
    expect(runs()).toHaveLength(1);
  });

  test('another run id trains again; the markers of other ranks and runs do not count', async () => {
    expect(await start().exited).toBe(0);
    expect(await start({ pod: 'pod-b', env: { CDK8S_GPU_RUN_ID: 'job-2' } }).exited).toBe(0);
    expect(await start({ pod: 'pod-c', env: { NODE_RANK: '2' } }).exited).toBe(0);
    expect(runs()).toHaveLength(3);
    expect(fs.existsSync(marker('job-2', 1))).toBe(true);
    expect(fs.existsSync(marker('job', 2))).toBe(true);
  });

  test('a failure is passed on (the pod shows Error, restarts and back-off) and never marks the run complete', async () => {
    fs.writeFileSync(path.join(work, 'rc'), '3\n');
    const failed = start();
    expect(await failed.exited).toBe(3);
    expect(fs.existsSync(marker())).toBe(false);
    expect(termination()).toMatch(/'sh' exited 3 on rank 1 \(start 1 in this pod, failed start 1 of 10\)/);
    // The kubelet's restart trains again (torchrun has a fresh --max-restarts budget), counting starts.
    fs.writeFileSync(path.join(work, 'rc'), '0\n');
    const retry = start();
    expect(await retry.exited).toBe(0);
    expect(retry.output).toContain('start 2 in this pod');
    expect(runs()).toHaveLength(2);
  });

  test('SIGTERM during training reaches the launcher, and a stopped run is not complete even if it exits 0', async () => {
    fs.writeFileSync(path.join(work, 'block'), '');
    const running = start();
    expect(await waitFor(() => runs().length === 1, 5000)).toBe(true);
    await sleep(100);
    await running.signal('SIGTERM');
    expect(await running.exited).toBe(0);
    expect(runs()).toEqual([expect.stringMatching(/^run /), 'term']);
    expect(fs.existsSync(marker())).toBe(false);
    expect(running.output).toContain('stopped by a signal');
  });

  test('the rank falls back to the pod name when the pod-index label is missing', async () => {
    expect(await start({ env: { NODE_RANK: '', HOSTNAME: 'job-2' } }).exited).toBe(0);
    expect(fs.existsSync(marker('job', 2))).toBe(true);
  });

  test.each(WRAPPER_TOOLS)('an image without %s fails loudly at start instead of training', async tool => {
    const poor = toolbox(shell, path.join(work, 'poor'), [tool]);
    const launch = start({ binDir: poor });
    expect(await launch.exited).toBe(127);
    expect(launch.output).toContain(`the image has no "${tool}"`);
    expect(termination()).toBe(`cdk8s-gpu-launch: the image has no ${tool}\n`);
    expect(runs()).toEqual([]);
  });

  test('arguments with spaces, quotes, globs and $ forms reach the launcher exactly as written', async () => {
    expect(await start({ container: awkward }).exited).toBe(0);
    // The kubelet turns $$ into $ in args (as in any pod); nothing else changes on the way.
    const expected = AWKWARD_ARGS.map(a => kubeletExpand(a, {}));
    expect(fs.readFileSync(path.join(work, 'args'), 'utf8')).toBe(expected.map(a => `${a}\n`).join(''));
  });

  test('a launcher that keeps running after SIGTERM (still checkpointing) is waited for, and its exit code passed on', async () => {
    fs.writeFileSync(path.join(work, 'block'), '');
    fs.writeFileSync(path.join(work, 'ignore-term'), '');
    fs.writeFileSync(path.join(work, 'rc'), '7\n');
    const running = start();
    expect(await waitFor(() => runs().length === 1, 5000)).toBe(true);
    await running.signal('SIGTERM');
    expect(await waitFor(() => runs().includes('term'), 5000)).toBe(true);
    await sleep(300);
    // Exiting now would SIGKILL the launcher (and every process of the pod) mid-checkpoint.
    expect(running.running).toBe(true);
    fs.rmSync(path.join(work, 'block'));
    expect(await running.exited).toBe(7);
    expect(running.output).toContain("stopped by a signal; 'sh' exited 7");
    expect(fs.existsSync(marker())).toBe(false);
  });

  test('a completion marker that cannot be written fails loudly, and a restart retries the write instead of training again', async () => {
    const state = path.join(work, 'state');
    expect(await start({ pod: 'pod-a' }).exited).toBe(0);
    expect(runs()).toHaveLength(1);
    // A new pod of the same rank: make the durable marker unwritable after training has begun.
    fs.rmSync(marker());
    fs.rmSync(marker('job', 1).replace(/\.done$/, '.ok'));
    fs.writeFileSync(path.join(work, 'block'), '');
    const second = start({ pod: 'pod-b', env: { CDK8S_GPU_RUN_ID: 'job' } });
    expect(await waitFor(() => runs().length === 2, 5000)).toBe(true);
    fs.rmSync(path.join(state, 'runs', 'job'), { recursive: true });
    fs.writeFileSync(path.join(state, 'runs', 'job'), 'not a directory');
    fs.rmSync(path.join(work, 'block'));
    expect(await second.exited).toBe(2);
    expect(termination()).toMatch(
      /exited 0 on rank 1 but the success marker .* cannot be written; this rank will not train again in this pod/,
    );
    // The kubelet restarts the container: still unwritable, so it fails again, without training.
    const third = start({ pod: 'pod-b' });
    expect(await third.exited).toBe(2);
    expect(runs()).toHaveLength(2);
    // Once the volume is writable again, the restart records completion and announces it.
    fs.rmSync(path.join(state, 'runs', 'job'));
    const fourth = start({ pod: 'pod-b' });
    expect(await fourth.exited).toBe(0);
    expect(fs.existsSync(marker())).toBe(true);
    expect(termination()).toMatch(/^run job completed on rank 1/);
    expect(runs()).toHaveLength(2);
  });

  describe('markers', () => {
    const runDir = (run = 'job') => path.join(work, 'state', 'runs', run);
    const rdzv = () => trainer.env.find((e: any) => e.name === 'PET_RDZV_ID').value;

    test('a symlinked marker is refused with a log line, not followed (here: a FIFO that would block a read)', async () => {
      fs.mkdirSync(runDir(), { recursive: true });
      execFileSync('mkfifo', [path.join(work, 'fifo')]);
      fs.symlinkSync(path.join(work, 'fifo'), marker());
      fs.symlinkSync(path.join(work, 'fifo'), path.join(runDir(), 'rank-1.failures'));
      const launch = start();
      expect(await Promise.race([launch.exited, deadline(5000, 'blocked')])).toBe(0);
      expect(launch.output).toContain(`ignoring ${marker()}: it is a symlink`);
      expect(runs()).toHaveLength(1);
    });

    test('a 64 MiB marker is read at most 512 bytes deep, fast', async () => {
      fs.mkdirSync(runDir(), { recursive: true });
      const big = Buffer.alloc(64 * 1024 * 1024, 'x');
      fs.writeFileSync(marker(), big);
      const t = Date.now();
      const first = start();
      expect(await first.exited).toBe(0);
      expect(Date.now() - t).toBeLessThan(3000);
      expect(runs()).toEqual([]);
      // The termination message quotes the marker's first word, cut at 512 bytes.
      expect(termination()).toBe(`run job completed on rank 1 (${'x'.repeat(512)})\n`);
      // A 64 MiB failure count: not a number, so 0; a 511-byte one is read whole.
      fs.rmSync(marker());
      fs.writeFileSync(path.join(runDir(), 'rank-1.failures'), big);
      fs.writeFileSync(path.join(work, 'rc'), '3\n');
      const failing = start({ pod: 'pod-b', env: { CDK8S_GPU_MAX_FAILED_STARTS: '5' } });
      expect(await failing.exited).toBe(3);
      expect(termination()).toContain('failed start 1 of 5');
      fs.writeFileSync(path.join(runDir(), 'rank-1.failures'), `${'0'.repeat(510)}3\n`);
      expect(await start({ pod: 'pod-b', env: { CDK8S_GPU_MAX_FAILED_STARTS: '5' } }).exited).toBe(3);
      expect(termination()).toContain('failed start 4 of 5');
    });

    test('two pods of one rank finishing together both record it (temp names unique per pod and process, renamed in place)', async () => {
      for (let round = 0; round < 5; round++) {
        fs.writeFileSync(path.join(work, 'block'), '');
        const run = `job-${round}`;
        const pair = [
          start({ pod: `a-${round}`, env: { CDK8S_GPU_RUN_ID: run, HOSTNAME: 'job-1' } }),
          start({ pod: `b-${round}`, env: { CDK8S_GPU_RUN_ID: run, HOSTNAME: 'job-1' } }),
        ];
        expect(await waitFor(() => runs().length === 2 * (round + 1), 5000)).toBe(true);
        fs.rmSync(path.join(work, 'block'));
        expect(await Promise.all(pair.map(l => l.exited))).toEqual([0, 0]);
        expect(fs.readdirSync(runDir(run)).sort()).toEqual(['rank-1.done', 'rank-1.ok', 'rank-1.start']);
      }
    });

    test('a marker of the same run id from another rank spec is said loudly, and what to do', async () => {
      fs.mkdirSync(runDir(), { recursive: true });
      fs.writeFileSync(marker(), '2025-01-01T00:00:00Z host=job-1 rdzv=job-0000000000\n');
      const launch = start();
      expect(await launch.exited).toBe(0);
      expect(runs()).toEqual([]);
      expect(launch.output).toContain(
        `found the completion marker ${marker()} (2025-01-01T00:00:00Z host=job-1 rdzv=job-0000000000) of run job: the run completed, it does not train again; set a new runId to train again`,
      );
      expect(launch.output).toContain(
        `that marker was written by another rank spec (this pod's rendezvous id is ${rdzv()}): the spec changed but the runId did not`,
      );
      // Written by this spec: said, without the spec line.
      fs.writeFileSync(marker(), `2025-01-01T00:00:00Z host=job-1 rdzv=${rdzv()}\n`);
      const again = start({ pod: 'pod-b' });
      expect(await again.exited).toBe(0);
      expect(again.output).toContain('found the completion marker');
      expect(again.output).not.toContain('another rank spec');
    });
  });

  describe('the cap on failed starts', () => {
    test('counts failed starts durably per rank and run, across pods; at the cap the run is FAILED, once with an error, then idle', async () => {
      fs.writeFileSync(path.join(work, 'rc'), '3\n');
      const env = { CDK8S_GPU_MAX_FAILED_STARTS: '3', HOSTNAME: 'job-1', POD_NAMESPACE: 'ml' };
      expect(await start({ env }).exited).toBe(3);
      expect(termination()).toMatch(/failed start 1 of 3\); the kubelet restarts it with back-off\n$/);
      // A new pod of the rank continues the count (it lives on the state volume).
      expect(await start({ pod: 'pod-b', env }).exited).toBe(3);
      expect(termination()).toMatch(/failed start 2 of 3\)/);
      const last = start({ pod: 'pod-b', env });
      expect(await last.exited).toBe(3);
      expect(runs()).toHaveLength(3);
      const failed = path.join(work, 'state', 'runs', 'job', 'rank-1.failed');
      expect(fs.readFileSync(failed, 'utf8')).toMatch(
        /^3 failed starts \(the cap, CDK8S_GPU_MAX_FAILED_STARTS=3\), the last: 'sh' exited 3 at \S+ on job-1\n$/,
      );
      expect(termination()).toBe(
        `run job FAILED on rank 1: ${fs.readFileSync(failed, 'utf8').trim()}; free the GPUs with: kubectl -n ml scale statefulset job --replicas=0 (or delete the StatefulSet); a new runId starts a new run\n`,
      );
      // The kubelet's next start idles, saying how to free the GPUs; nothing trains again.
      const idle = start({ pod: 'pod-b', env });
      expect(await waitFor(() => idle.output.includes('idling'), 5000)).toBe(true);
      expect(idle.output).toContain(
        'run job FAILED (on rank 1): idling instead of training again (free the GPUs with: kubectl -n ml scale statefulset job --replicas=0',
      );
      // A re-created pod shows the failure once (reason Error, with the message), then idles.
      const recreated = start({ pod: 'pod-c', env });
      expect(await recreated.exited).toBe(1);
      expect(termination()).toMatch(/^run job FAILED on rank 1: 3 failed starts/);
      expect(runs()).toHaveLength(3);
      // A stop during training is not a failed start; a new run id has its own count.
      fs.writeFileSync(path.join(work, 'rc'), '0\n');
      expect(await start({ pod: 'pod-d', env: { ...env, CDK8S_GPU_RUN_ID: 'job-2' } }).exited).toBe(0);
    });

    test('a start stopped by SIGTERM is not a failed start', async () => {
      fs.writeFileSync(path.join(work, 'block'), '');
      fs.writeFileSync(path.join(work, 'rc'), '3\n');
      const running = start({ env: { CDK8S_GPU_MAX_FAILED_STARTS: '1' } });
      expect(await waitFor(() => runs().length === 1, 5000)).toBe(true);
      await running.signal('SIGTERM');
      await running.exited;
      expect(fs.existsSync(path.join(work, 'state', 'runs', 'job', 'rank-1.failures'))).toBe(false);
      expect(fs.existsSync(path.join(work, 'state', 'runs', 'job', 'rank-1.failed'))).toBe(false);
    });
  });

  describe('run-wide completion (two ranks sharing the state directory)', () => {
    const two = (rank: number, o: { pod?: string; env?: Record<string, string> } = {}) =>
      start({
        pod: o.pod ?? `pod-${rank}`,
        env: { NNODES: '2', NODE_RANK: String(rank), HOSTNAME: `job-${rank}`, CDK8S_GPU_POLL_SECONDS: '0.1', ...o.env },
      });
    const file = (rank: number, kind: string) => path.join(work, 'state', 'runs', 'job', `rank-${rank}.${kind}`);

    test('a rank whose launcher exited 0 waits, not complete, until every rank has; then completes', async () => {
      // Rank 0 has started (its start marker is visible: the state is shared) and is still at it.
      fs.mkdirSync(path.join(work, 'state', 'runs', 'job'), { recursive: true });
      fs.writeFileSync(file(0, 'start'), 'T host=job-0 start=a rdzv=r\n');
      const r1 = two(1, { env: { CDK8S_GPU_POLL_SECONDS: '1' } });
      expect(
        await waitFor(() => r1.output.includes('rank 1 finished; run job is not complete until ranks 0 finish'), 5000),
      ).toBe(true);
      await sleep(300);
      expect(r1.running).toBe(true);
      expect(fs.existsSync(file(1, 'ok'))).toBe(true);
      expect(fs.existsSync(file(1, 'done'))).toBe(false);
      // Rank 0 finishes: rank 1 completes.
      fs.writeFileSync(file(0, 'ok'), 'T host=job-0 start=a rdzv=r\n');
      expect(await r1.exited).toBe(0);
      expect(termination()).toMatch(/^run job completed on rank 1/);
      expect(runs()).toHaveLength(1);
    });

    test('a finished rank rejoins when another rank starts again, and ends FAILED when another rank does', async () => {
      fs.mkdirSync(path.join(work, 'state', 'runs', 'job'), { recursive: true });
      fs.writeFileSync(file(0, 'start'), 'T host=job-0 start=a rdzv=r\n');
      const r1 = two(1, { env: { CDK8S_GPU_POLL_SECONDS: '1' } });
      expect(await waitFor(() => r1.output.includes('not complete until ranks 0 finish'), 5000)).toBe(true);
      // Rank 0 failed and the kubelet started it again: it waits for rank 1 in a new rendezvous.
      fs.writeFileSync(path.join(work, 'block'), '');
      fs.writeFileSync(file(0, 'start'), 'T host=job-0 start=b rdzv=r\n');
      expect(await waitFor(() => runs().length === 2, 5000)).toBe(true);
      expect(r1.output).toContain('rank 0 started again and waits for rank 1: run job is not complete, rejoining it');
      // While rank 1 trains again, rank 0 reaches the cap: the wrapper stops rank 1's launcher.
      fs.writeFileSync(file(0, 'failed'), '10 failed starts (the cap)\n');
      expect(await r1.exited).toBe(1);
      expect(runs()).toContain('term');
      expect(termination()).toMatch(/^run job FAILED on rank 0: 10 failed starts \(the cap\); free the GPUs/);
      expect(fs.existsSync(file(1, 'failures'))).toBe(false);
      // Its next start idles.
      fs.rmSync(path.join(work, 'block'));
      const idle = two(1);
      expect(await waitFor(() => idle.output.includes('idling'), 5000)).toBe(true);
    });

    test('SIGTERM while waiting for the other ranks ends the wrapper at once, the run not complete', async () => {
      fs.mkdirSync(path.join(work, 'state', 'runs', 'job'), { recursive: true });
      fs.writeFileSync(file(0, 'start'), 'T host=job-0 start=a rdzv=r\n');
      const r1 = two(1, { env: { CDK8S_GPU_POLL_SECONDS: '30' } });
      expect(await waitFor(() => r1.output.includes('not complete until ranks 0 finish'), 5000)).toBe(true);
      const t = Date.now();
      await r1.signal('SIGTERM');
      expect(await r1.exited).toBe(143);
      expect(Date.now() - t).toBeLessThan(2000);
      expect(fs.existsSync(file(1, 'done'))).toBe(false);
    });

    test("without shared state (the other ranks' markers are not visible) completion is per rank, said in the log", async () => {
      const r1 = two(1);
      expect(await r1.exited).toBe(0);
      expect(r1.output).toContain('is not shared by the ranks): completion is per rank');
      // CDK8S_GPU_STATE_SHARED=1 says it is shared: then rank 1 waits for rank 0.
      const shared = two(1, { pod: 'pod-x', env: { CDK8S_GPU_RUN_ID: 'job-2', CDK8S_GPU_STATE_SHARED: '1' } });
      expect(await waitFor(() => shared.output.includes('not complete until ranks 0 finish'), 5000)).toBe(true);
    });

    // The wrapper stops its run watcher (a subshell) with TERM when the launcher exits. A TERM that
    // reaches the subshell before it has replaced the wrapper's trap with its own is dropped (dash
    // and busybox clear an inherited trap after the fork): the watcher must still end, or the
    // wrapper waits on it forever. Started with TERM ignored, the watcher never gets its TERM at all.
    test('a launcher that exits at once never leaves the wrapper waiting on a watcher that missed its TERM', async () => {
      for (let i = 0; i < 3; i++) {
        const r = start({
          pod: `pod-w${i}`,
          termIgnored: true,
          env: {
            NNODES: '2',
            NODE_RANK: '1',
            HOSTNAME: 'job-1',
            CDK8S_GPU_POLL_SECONDS: '0.1',
            CDK8S_GPU_RUN_ID: `job-w${i}`,
          },
        });
        expect(await Promise.race([r.exited, deadline(10000, 'still running after 10 s')])).toBe(0);
        expect(r.output).toContain('completion is per rank');
      }
    });

    test("a rank outside the run's ranks fails loudly", async () => {
      const launch = two(2);
      expect(await launch.exited).toBe(2);
      expect(launch.output).toContain("rank 2 is outside the run's 2 ranks (0 to 1)");
      expect(runs()).toEqual([]);
    });
  });

  // Root writes anywhere, so this runs only as another user (CI); the marker test above covers root.
  (process.getuid?.() === 0 ? test.skip : test)(
    'a checkpoint directory the user cannot write stops the wrapper before training',
    async () => {
      fs.mkdirSync(path.join(work, 'state', 'runs', 'job'), { recursive: true });
      fs.chmodSync(path.join(work, 'state', 'runs', 'job'), 0o555);
      const launch = start();
      expect(await launch.exited).toBe(2);
      expect(launch.output).toContain('is not writable by this user');
      expect(runs()).toEqual([]);
    },
  );

  describe('as PID 1 of its container', () => {
    const pid1Test = PID_NAMESPACES ? test : test.skip;

    pid1Test('SIGTERM during training reaches the launcher; the run is not marked complete', async () => {
      fs.writeFileSync(path.join(work, 'block'), '');
      const running = start({ pid1: true });
      expect(await waitFor(() => runs().length === 1, 5000)).toBe(true);
      await running.signal('SIGTERM');
      expect(await running.exited).toBe(0);
      expect(runs()).toEqual([expect.stringMatching(/^run /), 'term']);
      expect(fs.existsSync(marker())).toBe(false);
    });

    pid1Test('SIGTERM while idle after completion exits at once', async () => {
      expect(await start({ pid1: true }).exited).toBe(0);
      const idle = start({ pid1: true });
      expect(await waitFor(() => idle.output.includes('idling'), 5000)).toBe(true);
      await idle.signal('SIGTERM');
      expect(await Promise.race([idle.exited, deadline(3000, 'still running')])).toBe(0);
    });

    pid1Test('fault injection: a TERM at any moment once the shell runs its first line is never lost', async () => {
      // PID 1 drops a signal it has no handler for; the script's first line installs them. What
      // comes before it (exec, the shell's own start) is the runtime's, and no script can close it.
      expect(LAUNCH_SCRIPT.split('\n')[0]).toBe("trap 'exit 143' TERM; trap 'exit 130' INT");
      fs.writeFileSync(path.join(work, 'block'), '');
      const lost: number[] = [];
      for (let i = 0; i < 12; i++) {
        const delay = i * 10;
        const launch = start({ pid1: true, pod: `pod-${i}`, env: { CDK8S_GPU_RUN_ID: `run-${i}` } });
        expect(await launch.catches('SIGTERM')).toBe(true);
        await sleep(delay);
        await launch.signal('SIGTERM');
        if ((await Promise.race([launch.exited, deadline(3000, 'lost')])) === 'lost') lost.push(delay);
        await launch.stop();
      }
      expect(lost).toEqual([]);
    });

    pid1Test('SIGTERM before the launcher starts ends the wrapper instead of being ignored', async () => {
      // A date that blocks while date-block exists holds the wrapper in its first log line.
      const bin = toolbox(shell, path.join(work, 'slow'), ['date']);
      const realDate = shell === 'busybox' ? `${SHELLS.busybox} date` : onPath('date')!;
      fs.writeFileSync(
        path.join(bin, 'date'),
        `#!${SHELLS[shell] === SHELLS.busybox ? `${SHELLS.busybox} sh` : SHELLS.dash}\n` +
          `while [ -f "$WORK/date-block" ]; do ${shell === 'busybox' ? `${SHELLS.busybox} ` : ''}sleep 0.05; done\nexec ${realDate} "$@"\n`,
        { mode: 0o755 },
      );
      fs.writeFileSync(path.join(work, 'date-block'), '');
      const starting = start({ pid1: true, binDir: bin });
      // Once its first line has run (before that, PID 1 drops the signal, whatever the script says).
      expect(await starting.catches('SIGTERM')).toBe(true);
      await starting.signal('SIGTERM');
      await sleep(100);
      fs.rmSync(path.join(work, 'date-block'));
      expect(await Promise.race([starting.exited, deadline(3000, 'still running')])).toBe(143);
      expect(runs()).toEqual([]);
    });
  });

  test('missing wrapper state is a loud error, not a run', async () => {
    const launch = start({ env: { CDK8S_GPU_STATE_DIR: '' } });
    expect(await launch.exited).toBe(2);
    expect(launch.output).toContain('CDK8S_GPU_STATE_DIR');
    expect(runs()).toEqual([]);
  });
});
