import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Size } from 'cdk8s';
import { Launch, SHELLS, Shell, sleep, synthesizedTrainer, toolbox, waitFor } from './launch-harness';

/**
 * A stand-in for torchrun: records each start (with the rendezvous id it saw), blocks while a
 * `block` file exists, records SIGTERM, and exits with the code in the `rc` file.
 */
const FAKE_TORCHRUN = [
  'echo "run $PET_RDZV_ID" >> "$WORK/runs"',
  'trap \'echo term >> "$WORK/runs"; exit 0\' TERM',
  'while [ -f "$WORK/block" ]; do sleep 0.05; done',
  'read -r rc < "$WORK/rc"',
  'exit "$rc"',
].join('\n');

const available = (Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s] !== undefined);

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
  function start(o: { pod?: string; env?: Record<string, string>; binDir?: string } = {}): Launch {
    const launch = new Launch(shell, trainer, {
      PATH: o.binDir ?? bin,
      WORK: work,
      NODE_RANK: '1',
      CDK8S_GPU_STATE_DIR: path.join(work, 'state'),
      CDK8S_GPU_POD_STATE_DIR: path.join(work, o.pod ?? 'pod-a'),
      CDK8S_GPU_TERMINATION_LOG: path.join(work, 'termination-log'),
      ...o.env,
    });
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
    expect(fs.readFileSync(marker(), 'utf8')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
    expect(termination()).toMatch(/^run job completed on rank 1 \(\d{4}-/);

    // The kubelet restarts the container (restartPolicy Always): it idles instead of retraining.
    const again = start();
    expect(await waitFor(() => again.output.includes('idling'), 5000)).toBe(true);
    await sleep(300);
    expect(again.running).toBe(true);
    expect(runs()).toHaveLength(1);

    // Pod deletion: SIGTERM ends the idle wrapper at once, with success.
    const t = Date.now();
    again.signal('SIGTERM');
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
    expect(termination()).toMatch(/'sh' exited 3 on rank 1 \(start 1 in this pod\)/);
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
    running.signal('SIGTERM');
    expect(await running.exited).toBe(0);
    expect(runs()).toEqual([expect.stringMatching(/^run /), 'term']);
    expect(fs.existsSync(marker())).toBe(false);
    expect(running.output).toContain('stopped by a signal');
  });

  test('the rank falls back to the pod name when the pod-index label is missing', async () => {
    expect(await start({ env: { NODE_RANK: '', HOSTNAME: 'job-2' } }).exited).toBe(0);
    expect(fs.existsSync(marker('job', 2))).toBe(true);
  });

  test('an image without a tool the wrapper needs fails loudly instead of retraining forever', async () => {
    const poor = toolbox(shell, path.join(work, 'poor'), ['mv']);
    const launch = start({ binDir: poor });
    expect(await launch.exited).toBe(127);
    expect(launch.output).toContain('the image has no "mv"');
    expect(runs()).toEqual([]);
  });

  test('missing wrapper state is a loud error, not a run', async () => {
    const launch = start({ env: { CDK8S_GPU_STATE_DIR: '' } });
    expect(await launch.exited).toBe(2);
    expect(launch.output).toContain('CDK8S_GPU_STATE_DIR');
    expect(runs()).toEqual([]);
  });
});
