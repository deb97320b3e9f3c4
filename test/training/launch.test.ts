import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Size } from 'cdk8s';
import {
  deadline, kubeletExpand, Launch, LaunchOptions, LAUNCH_SCRIPT, onPath, PID_NAMESPACES, SHELLS, Shell, sleep, synthesizedTrainer, toolbox, waitFor, WRAPPER_TOOLS,
} from './launch-harness';

/**
 * A stand-in for torchrun: records each start (with the rendezvous id it saw) and its arguments,
 * blocks while a `block` file exists, records SIGTERM (and keeps running while an `ignore-term`
 * file exists, like a launcher still checkpointing), and exits with the code in the `rc` file.
 */
const FAKE_TORCHRUN = [
  'echo "run $PET_RDZV_ID" >> "$WORK/runs"',
  'printf \'%s\\n\' "$@" > "$WORK/args"',
  'trap \'echo term >> "$WORK/runs"; [ -f "$WORK/ignore-term" ] || exit 0\' TERM',
  'while [ -f "$WORK/block" ]; do sleep 0.05; done',
  'read -r rc < "$WORK/rc"',
  'exit "$rc"',
].join('\n');

/** Arguments a shell or the kubelet could mangle: spaces, quotes, globs, `$` forms, an empty one. */
const AWKWARD_ARGS = ['train.py', 'two words', '"double"', "it's", '*', '$HOME', '${X:-y}', '$$', '', '--lr=1e-4'];

const available = (Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s] !== undefined);

test('the wrapper survives the kubelet\'s $(VAR) and $$ expansion of the container command unchanged', () => {
  const container = synthesizedTrainer({});
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, 'X']));
  expect(container.command[2]).toBe(LAUNCH_SCRIPT);
  expect(kubeletExpand(LAUNCH_SCRIPT, env)).toBe(LAUNCH_SCRIPT);
  expect(kubeletExpand('a$$b $(A) $(B) $(', { A: '1' })).toBe('a$b 1 $(B) $(');
});

test('PID namespaces are available here, so the wrapper is also tested as PID 1', () => {
  if (!PID_NAMESPACES) console.warn('!!! The launch wrapper was NOT tested as PID 1: `unshare --user --map-root-user --pid --fork` does not work here.');
  expect(typeof PID_NAMESPACES).toBe('boolean');
});

test('both shells training images have are installed here (dash, and busybox from Debian\'s busybox package)', () => {
  const missing = (Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s] === undefined);
  if (missing.length === 0) return;
  const message = `!!! The training launch wrapper was NOT tested under: ${missing.join(', ')}. `
    + 'Install it (apt-get install -y busybox dash); .ci/run does this in CI.';
  console.warn(message);
  if (process.env.CI) throw new Error(message);
});

describe.each(available)('the launch wrapper under %s', shell => {
  let work: string;
  let bin: string;
  const launches: Launch[] = [];
  const trainer = synthesizedTrainer({ command: ['sh', '-c', FAKE_TORCHRUN, 'fake-torchrun'], storage: { size: Size.gibibytes(1) } });
  const awkward = synthesizedTrainer({ command: ['sh', '-c', FAKE_TORCHRUN, 'fake-torchrun'], args: AWKWARD_ARGS, storage: { size: Size.gibibytes(1) } });

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

  const runs = () => (fs.existsSync(path.join(work, 'runs')) ? fs.readFileSync(path.join(work, 'runs'), 'utf8').split('\n').filter(Boolean) : []);
  const termination = () => fs.readFileSync(path.join(work, 'termination-log'), 'utf8');
  const marker = (run = 'job', rank = 1) => path.join(work, 'state', 'runs', run, `rank-${rank}.done`);

  /** One start of the container: `pod` names the pod's emptyDir, so a new name is a re-created pod. */
  function start(o: { pod?: string; env?: Record<string, string>; binDir?: string; container?: any } & LaunchOptions = {}): Launch {
    const launch = new Launch(shell, o.container ?? trainer, {
      PATH: o.binDir ?? bin,
      WORK: work,
      NODE_RANK: '1',
      CDK8S_GPU_STATE_DIR: path.join(work, 'state'),
      CDK8S_GPU_POD_STATE_DIR: path.join(work, o.pod ?? 'pod-a'),
      CDK8S_GPU_TERMINATION_LOG: path.join(work, 'termination-log'),
      POD_NAMESPACE: 'ml',
      ...o.env,
    }, { pid1: o.pid1 });
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
    expect(fs.readFileSync(marker(), 'utf8')).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ host=\\S+ rdzv=${rdzv}\\n$`));
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
    expect(termination()).toMatch(/exited 0 on rank 1 but the success marker .* cannot be written; this rank will not train again in this pod/);
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

  // Root writes anywhere, so this runs only as another user (CI); the marker test above covers root.
  (process.getuid?.() === 0 ? test.skip : test)('a checkpoint directory the user cannot write stops the wrapper before training', async () => {
    fs.mkdirSync(path.join(work, 'state', 'runs', 'job'), { recursive: true });
    fs.chmodSync(path.join(work, 'state', 'runs', 'job'), 0o555);
    const launch = start();
    expect(await launch.exited).toBe(2);
    expect(launch.output).toContain('is not writable by this user');
    expect(runs()).toEqual([]);
  });

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

    pid1Test('SIGTERM before the launcher starts ends the wrapper instead of being ignored', async () => {
      // A date that blocks while date-block exists holds the wrapper in its first log line.
      const bin = toolbox(shell, path.join(work, 'slow'), ['date']);
      const realDate = shell === 'busybox' ? `${SHELLS.busybox} date` : onPath('date')!;
      fs.writeFileSync(path.join(bin, 'date'), `#!${SHELLS[shell] === SHELLS.busybox ? `${SHELLS.busybox} sh` : SHELLS.dash}\n`
        + `while [ -f "$WORK/date-block" ]; do ${shell === 'busybox' ? `${SHELLS.busybox} ` : ''}sleep 0.05; done\nexec ${realDate} "$@"\n`, { mode: 0o755 });
      fs.writeFileSync(path.join(work, 'date-block'), '');
      const starting = start({ pid1: true, binDir: bin });
      await sleep(300);
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
