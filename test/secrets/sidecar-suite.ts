import { inlineCommand } from '../support/runtime-scripts';
import { execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { Chart, Duration, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret } from '../../src';
import { atomicWrite } from '../support/atomic-writer';
import {
  lines,
  pause,
  Shell,
  SHELLS,
  Sidecar,
  startSidecar,
  toolbox,
  ToolboxOptions,
  waitFor,
} from './sidecar-harness';
import { missingTool } from '../support/missing-tool';

/** The sidecar exactly as synthesized: its command, args and env, taken from the YAML. */
function synthesized(
  onRotation: Reload,
  keys?: string[],
): { script: string; argv0: string; args: string[]; env: Record<string, string>; startupProbe: string[] } {
  const chart = new Chart(Testing.app(), 'c');
  const trainer = new GpuTrainingStatefulSet(chart, 't', { name: 't', image: 'i', gpusPerPod: 1, args: ['train.py'] });
  new RotatingGpuSecret(chart, 's', { name: 'creds', keys }).mountInto(trainer, { path: '/etc/gpu', onRotation });
  const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
  // A native sidecar: an init container that restarts always.
  const sidecar = sts.spec.template.spec.initContainers.find((c: any) => c.name.startsWith('reload-'));
  expect(sidecar.restartPolicy).toBe('Always');
  expect(sidecar.command.slice(0, 2)).toEqual(['sh', '-c']);
  const [, , script, argv0] = inlineCommand(sidecar.command);
  return {
    script,
    argv0,
    args: sidecar.args ?? [],
    env: Object.fromEntries(sidecar.env.map((e: any) => [e.name, e.value])),
    startupProbe: sidecar.startupProbe.exec.command,
  };
}

/** Fast settings for tests: the script takes fractions of a second. */
const FAST = { POLL_SECONDS: '0.05', BACKOFF_SECONDS: '0.05', BACKOFF_MAX_SECONDS: '0.1' };

/** The shortest action timeout each world's `timeout` honours (busybox counts whole seconds). */
const SHORT_TIMEOUT: Record<Shell, string> = { dash: '0.3', busybox: '1' };

/**
 * The sidecar's behaviour under one shell. Each shell has its own test file, so that jest runs
 * them in parallel: the tests mostly wait on child processes.
 */
export function describeSidecar(shell: Shell): void {
  if (SHELLS[shell] === undefined) {
    test(`${shell} is installed, so that the sidecar script is tested under it`, () => {
      const message =
        `!!! The reload sidecar script was NOT tested under ${shell}: it is not installed. ` +
        `Install it (apt-get install -y ${shell}); .ci/run does this before the tests.`;
      missingTool(message);
    });
    return;
  }
  describe(`reload sidecar script under ${shell}`, () => suite(shell));
}

function suite(shell: Shell): void {
  let work: string;
  let watch: string;
  let reloads: string;
  let polls: string;
  let state: string;
  const started: Sidecar[] = [];
  const helpers: Array<{ kill: () => void }> = [];

  beforeEach(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), `reload-${shell}-`));
    watch = path.join(work, 'etc-gpu');
    reloads = path.join(work, 'reloads.log');
    polls = path.join(work, 'polls.log');
    state = path.join(work, 'state');
    fs.mkdirSync(state);
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}' });
  });

  afterEach(async () => {
    await Promise.all(started.splice(0).map(s => s.stop()));
    for (const h of helpers.splice(0)) h.kill();
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** A toolbox whose sha256sum also counts the fingerprints, so tests can wait for polls. */
  function bin(options: ToolboxOptions = {}): string {
    return toolbox(shell, work, {
      ...options,
      replace: { sha256sum: `echo poll >> ${polls}; exec $REAL "$@"`, ...options.replace },
    });
  }

  function run(
    s: ReturnType<typeof synthesized>,
    env: Record<string, string>,
    options: ToolboxOptions = {},
    launcher: string[] = [],
  ): Sidecar {
    const sidecar = startSidecar(
      shell,
      s.script,
      s.argv0,
      s.args,
      { ...s.env, WATCH_DIR: watch, STATE_DIR: state, ...FAST, ...env },
      bin(options),
      launcher,
    );
    started.push(sidecar);
    return sidecar;
  }

  /** Waits until the sidecar has fingerprinted `n` more times than now: a condition, not a fixed sleep. */
  async function morePolls(n: number): Promise<void> {
    const target = lines(polls).length + n;
    expect(await waitFor(() => lines(polls).length >= target)).toBe(true);
  }

  /**
   * The exec action replaced by a recorder that appends the credential it saw, and fails while a
   * `fail` file holds a count above zero.
   */
  function recorder(extra: Partial<{ keys: string[] }> = {}) {
    const cmd =
      `if [ -f ${work}/fail ]; then n=$(cat ${work}/fail); if [ "$n" -gt 0 ]; then echo $((n-1)) > ${work}/fail; exit 1; fi; fi; ` +
      `cat ${watch}/credentials.json >> ${reloads}; echo >> ${reloads}`;
    return synthesized(Reload.exec(['sh', '-c', cmd]), extra.keys);
  }

  async function startRecorder(env: Record<string, string> = {}): Promise<Sidecar> {
    const s = run(recorder(), env);
    expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
    return s;
  }

  test('exactly one reload per rotation, seeing the new content', async () => {
    const s = await startRecorder();
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => lines(reloads).length === 1)).toBe(true);
    await morePolls(3);
    expect(lines(reloads)).toEqual(['{"token":"v2"}']);
    atomicWrite(watch, { 'credentials.json': '{"token":"v3"}' });
    expect(await waitFor(() => lines(reloads).length === 2)).toBe(true);
    await morePolls(3);
    expect(lines(reloads)).toEqual(['{"token":"v2"}', '{"token":"v3"}']);
    expect(s.output).toMatch(/^reload-sidecar: reloaded after a change/m);
    expect(s.running).toBe(true);
  });

  test('no reload on a resync that changed nothing', async () => {
    await startRecorder();
    // Same payload through a fresh timestamped directory and ..data swap.
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}' });
    await morePolls(4);
    expect(lines(reloads)).toEqual([]);
  });

  test('a key starting with "." is watched like any other', async () => {
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}', '.dockerconfigjson': '{"auths":1}' });
    const s = run(recorder({ keys: ['credentials.json', '.dockerconfigjson'] }), {});
    expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
    expect(s.output).toContain('watching credentials.json .dockerconfigjson');
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}', '.dockerconfigjson': '{"auths":2}' });
    expect(await waitFor(() => lines(reloads).length === 1)).toBe(true);
  });

  test('recovers after failing reloads, retrying with backoff', async () => {
    fs.writeFileSync(path.join(work, 'fail'), '2');
    const s = await startRecorder();
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => lines(reloads).length === 1)).toBe(true);
    expect(lines(reloads)).toEqual(['{"token":"v2"}']);
    expect(s.output.match(/reload failed \(\d in a row\); retrying in 0\.\d+s/g)).toHaveLength(2);
  });

  test('a reload that hangs is killed at its timeout and retried', async () => {
    // The first run hangs, later runs record.
    const cmd = `if [ ! -f ${work}/hung ]; then : > ${work}/hung; exec sleep 30; fi; cat ${watch}/credentials.json >> ${reloads}; echo >> ${reloads}`;
    const s = run(synthesized(Reload.exec(['sh', '-c', cmd])), { ACTION_TIMEOUT_SECONDS: SHORT_TIMEOUT[shell] });
    expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => lines(reloads).length === 1, 8000)).toBe(true);
    expect(s.output).toMatch(/reload timed out after [\d.]+s; TERM to its process group/);
    expect(s.output).toMatch(/reload failed \(1 in a row\); retrying/);
  });

  test('quick successive rotations coalesce and end on the latest content', async () => {
    // Reloads fail until the gate opens, so two more rotations land while the first one retries.
    const gate = path.join(work, 'gate');
    const cmd = `[ -f ${gate} ] || exit 1; cat ${watch}/credentials.json >> ${reloads}; echo >> ${reloads}`;
    const s = run(synthesized(Reload.exec(['sh', '-c', cmd])), {});
    expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => s.output.includes('reload failed'))).toBe(true);
    for (const token of ['v3', 'v4']) atomicWrite(watch, { 'credentials.json': `{"token":"${token}"}` });
    fs.writeFileSync(gate, '');
    expect(await waitFor(() => lines(reloads).length >= 1)).toBe(true);
    // The retry re-read the fingerprint: the next polls see no change, so no second reload.
    await morePolls(3);
    expect(lines(reloads)).toEqual(['{"token":"v4"}']);
  });

  test('http mode POSTs, and an endpoint that never answers is a failure with backoff', async () => {
    let hang = true;
    const requests: string[] = [];
    const server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      if (hang) return; // never answers
      res.end('ok');
    });
    await new Promise<void>(r => server.listen(0, '127.0.0.1', r));
    helpers.push({
      kill: () => {
        server.closeAllConnections();
        server.close();
      },
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/reload`;
    const s = run(synthesized(Reload.httpPost(url)), { ACTION_TIMEOUT_SECONDS: SHORT_TIMEOUT[shell] });
    expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => s.output.includes('reload failed'), 8000)).toBe(true);
    hang = false;
    expect(await waitFor(() => s.output.includes('reloaded after a change'), 8000)).toBe(true);
    expect(requests.every(r => r === 'POST /reload')).toBe(true);
    expect(requests.length).toBeGreaterThanOrEqual(2);
  });

  test('sync mode swaps every key at once, dot-files included, as links into one directory of plain files', async () => {
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}', '.hidden': 'h1' });
    const s = synthesized(Reload.sync(), ['credentials.json', '.hidden']);
    const plain = path.join(work, 'plain');
    fs.mkdirSync(plain);
    const once = run(s, { SYNC_DIR: plain, RUN_ONCE: '1' });
    expect((await once.exited).code).toBe(0);
    expect(fs.readFileSync(path.join(plain, 'credentials.json'), 'utf8')).toBe('{"token":"v1"}');
    expect(fs.readFileSync(path.join(plain, '.hidden'), 'utf8')).toBe('h1');
    // The atomic writer's layout: <key> -> ..data/<key>, ..data -> a directory of regular files.
    expect(fs.readlinkSync(path.join(plain, 'credentials.json'))).toBe('..data/credentials.json');
    expect(fs.lstatSync(fs.realpathSync(path.join(plain, 'credentials.json'))).isFile()).toBe(true);
    const first = fs.readlinkSync(path.join(plain, '..data'));
    const watcher = run(s, { SYNC_DIR: plain });
    expect(await waitFor(() => watcher.output.includes('watching'))).toBe(true);
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}', '.hidden': 'h2' });
    const synced = await waitFor(() => fs.readFileSync(path.join(plain, '.hidden'), 'utf8') === 'h2');
    expect(synced).toBe(true);
    expect(fs.readFileSync(path.join(plain, 'credentials.json'), 'utf8')).toBe('{"token":"v2"}');
    expect(fs.readlinkSync(path.join(plain, '..data'))).not.toBe(first);
    // The previous set is gone once nothing links to it.
    const current = fs.readlinkSync(path.join(plain, '..data'));
    expect(await waitFor(() => fs.readdirSync(plain).length === 4)).toBe(true);
    expect(fs.readdirSync(plain).sort()).toEqual(['.hidden', '..data', current, 'credentials.json'].sort());
  });

  /** Whether a process is gone (or a zombie waiting for its reaper, which holds no resources). */
  function gone(pid: number): boolean {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
    } catch {
      return true;
    }
  }

  describe('never loses a rotation', () => {
    const record = () => fs.readFileSync(path.join(state, 'reloaded'), 'utf8');

    test('a new pod takes the current content as reloaded, without a reload', async () => {
      await startRecorder();
      await morePolls(3);
      expect(lines(reloads)).toEqual([]);
      expect(record()).toContain('./credentials.json');
    });

    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      test(`a rotation while the sidecar is down (${signal}) is reloaded when it is back`, async () => {
        const first = await startRecorder();
        first.proc.kill(signal);
        await first.exited;
        atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
        const second = await startRecorder();
        expect(second.output).toContain('changed since the last reload');
        expect(lines(reloads)).toEqual(['{"token":"v2"}']);
        // Recorded: a third start reloads nothing.
        await second.stop();
        await startRecorder();
        await morePolls(3);
        expect(lines(reloads)).toEqual(['{"token":"v2"}']);
      });
    }

    test('a sidecar killed during a reload reloads again when it is back', async () => {
      // The first reload hangs (and records its process group); later ones record the credential.
      const pgid = path.join(work, 'pgid');
      const cmd =
        `if [ ! -f ${pgid} ]; then echo $$ > ${pgid}; exec sleep 30; fi; ` +
        `cat ${watch}/credentials.json >> ${reloads}; echo >> ${reloads}`;
      const s = synthesized(Reload.exec(['sh', '-c', cmd]));
      const first = run(s, {});
      expect(await waitFor(() => first.output.includes('watching'))).toBe(true);
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      expect(await waitFor(() => fs.existsSync(pgid) && fs.readFileSync(pgid, 'utf8').trim() !== '')).toBe(true);
      first.proc.kill('SIGKILL');
      await first.exited;
      // The container's end takes all of its processes with it: the reload's group and its deadline's.
      const group = Number(fs.readFileSync(pgid, 'utf8'));
      process.kill(-group, 'SIGKILL');
      for (const pid of fs.readdirSync('/proc').filter(p => /^\d+$/.test(p))) {
        let cmdline = '';
        try {
          cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          continue;
        }
        if (cmdline.endsWith(['', 'deadline', '30', String(group), ''].join('\0')))
          process.kill(-Number(pid), 'SIGKILL');
      }
      const second = run(s, {});
      // The log line reaches this process through a pipe, which may be read after the reload has written its record.
      await waitFor(() => lines(reloads).length === 1 && second.output.includes('changed since the last reload'));
      expect(second.output).toContain('changed since the last reload');
      expect(lines(reloads)).toEqual(['{"token":"v2"}']);
    });

    test('a dangling ..data stops the sidecar; once repaired, the rotation is reloaded', async () => {
      const first = await startRecorder();
      // The kubelet removed the timestamped directory: ..data points nowhere.
      fs.rmSync(path.join(watch, fs.readlinkSync(path.join(watch, '..data'))), { recursive: true });
      expect((await first.exited).code).toBe(1);
      expect(first.output).toMatch(/cannot fingerprint .* three times in a row/);
      const early = run(recorder(), {});
      expect((await early.exited).code).toBe(1);
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      const back = await startRecorder();
      expect(back.output).toContain('changed since the last reload');
      expect(lines(reloads)).toEqual(['{"token":"v2"}']);
    });

    test('reloads that keep failing mark the sidecar unhealthy until one succeeds', async () => {
      fs.writeFileSync(path.join(work, 'fail'), '3');
      const s = await startRecorder({ UNHEALTHY_AFTER: '2', BACKOFF_SECONDS: '0.2', BACKOFF_MAX_SECONDS: '0.2' });
      const unhealthy = path.join(state, 'unhealthy');
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      expect(await waitFor(() => fs.existsSync(unhealthy))).toBe(true);
      // The script writes the file, then logs: the line follows the file by a moment.
      expect(await waitFor(() => /unhealthy: 2 reloads failed in a row/.test(s.output))).toBe(true);
      expect(await waitFor(() => lines(reloads).length === 1)).toBe(true);
      expect(await waitFor(() => !fs.existsSync(unhealthy))).toBe(true);
      // The probe the construct sets reads the same file.
      const chart = new Chart(Testing.app(), 'p');
      const trainer = new GpuTrainingStatefulSet(chart, 't', { name: 't', image: 'i', gpusPerPod: 1, args: ['x'] });
      const secret = new RotatingGpuSecret(chart, 's', { name: 'creds' });
      secret.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.exec(['true']) });
      const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
      const sidecar = sts.spec.template.spec.initContainers.find((c: any) => c.name.startsWith('reload-'));
      const stateDir = sidecar.env.find((e: any) => e.name === 'STATE_DIR').value;
      expect(sidecar.livenessProbe.exec.command).toEqual(['sh', '-c', `! [ -e ${stateDir}/unhealthy ]`]);
    });

    /** A probe command of the synthesized sidecar, run under this shell against the test's state directory. */
    function probeOf(kind: 'livenessProbe' | 'startupProbe', onRotation: Reload): () => number {
      const chart = new Chart(Testing.app(), 'p');
      const trainer = new GpuTrainingStatefulSet(chart, 't', { name: 't', image: 'i', gpusPerPod: 1, args: ['x'] });
      new RotatingGpuSecret(chart, 's', { name: 'creds' }).mountInto(trainer, { path: '/etc/gpu', onRotation });
      const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
      const sidecar = sts.spec.template.spec.initContainers.find((c: any) => c.name.startsWith('reload-'));
      const stateDir = sidecar.env.find((e: any) => e.name === 'STATE_DIR').value;
      const [sh, flag, script] = sidecar[kind].exec.command;
      expect([sh, flag]).toEqual(['sh', '-c']);
      return () => {
        const args =
          shell === 'busybox'
            ? ['sh', '-c', script.split(stateDir).join(state)]
            : ['-c', script.split(stateDir).join(state)];
        try {
          execFileSync(SHELLS[shell]!, args, { stdio: 'ignore' });
          return 0;
        } catch (e) {
          return (e as { status: number }).status;
        }
      };
    }

    test("the liveness probe's command, under this shell, fails exactly while the health mark exists", () => {
      const probe = probeOf('livenessProbe', Reload.exec(['true']));
      expect(probe()).toBe(0);
      fs.writeFileSync(path.join(state, 'unhealthy'), '3 failed reloads in a row\n');
      expect(probe()).toBe(1);
    });

    test("the startup probe's command, under this shell, passes once the script has made its first record", async () => {
      // The kubelet starts the application only once a native sidecar's startup probe passes.
      const probe = probeOf('startupProbe', Reload.exec(['true']));
      expect(probe()).toBe(1);
      const s = await startRecorder();
      expect(s.output).toContain('watching');
      expect(probe()).toBe(0);
      // A new pod: the content the application starts on is the record, not a reload.
      expect(lines(reloads)).toEqual([]);
    });

    test('a new sync sidecar makes the first copies before its first record, so before the application starts', async () => {
      atomicWrite(watch, { 'tls.crt': 'crt1', 'tls.key': 'key1' });
      const s = synthesized(Reload.sync(), ['tls.crt', 'tls.key']);
      const plain = path.join(work, 'plain');
      fs.mkdirSync(plain);
      // The copies, checked from a poll of the record: when the record exists, the copies do too.
      let copiesAtRecord: string[] | undefined;
      const watcher = run(s, { SYNC_DIR: plain });
      expect(
        await waitFor(() => {
          if (!fs.existsSync(path.join(state, 'reloaded'))) return false;
          copiesAtRecord = ['tls.crt', 'tls.key'].map(k => fs.readFileSync(path.join(plain, k), 'utf8'));
          return true;
        }),
      ).toBe(true);
      expect(copiesAtRecord).toEqual(['crt1', 'key1']);
      expect(watcher.output).toContain('initial sync done');
      expect(await waitFor(() => watcher.output.includes('watching'))).toBe(true);
    });

    test('a first sync that fails exits without a record: the startup probe keeps the application waiting', async () => {
      atomicWrite(watch, { 'tls.crt': 'crt1', 'tls.key': 'key1' });
      const s = synthesized(Reload.sync(), ['tls.crt', 'tls.key']);
      const plain = path.join(work, 'plain');
      fs.mkdirSync(plain);
      const options = { replace: { cp: 'exit 1' } };
      const sidecar = run(s, { SYNC_DIR: plain }, options);
      const exited = await sidecar.exited;
      expect([exited.code, sidecar.output]).toEqual([1, expect.stringMatching(/initial sync failed/)]);
      expect(fs.existsSync(path.join(state, 'reloaded'))).toBe(false);
      // The restarted sidecar (restartPolicy Always) tries again, and then records.
      const again = run(s, { SYNC_DIR: plain });
      expect(await waitFor(() => again.output.includes('watching'))).toBe(true);
      expect(fs.readFileSync(path.join(plain, 'tls.key'), 'utf8')).toBe('key1');
    });

    test('sync with a full copy folder keeps the old pair whole, then swaps both keys at once', async () => {
      atomicWrite(watch, { 'tls.crt': 'crt1', 'tls.key': 'key1' });
      const s = synthesized(Reload.sync(), ['tls.crt', 'tls.key']);
      const plain = path.join(work, 'plain');
      fs.mkdirSync(plain);
      const full = path.join(work, 'full');
      // cp fails on the second key while the folder is "full" (ENOSPC), as a tmpfs at its size would.
      const options = { replace: { cp: `case "$2" in */tls.key) [ -f ${full} ] && exit 1 ;; esac; exec $REAL "$@"` } };
      expect((await run(s, { SYNC_DIR: plain, RUN_ONCE: '1' }, options).exited).code).toBe(0);
      const watcher = run(s, { SYNC_DIR: plain }, options);
      expect(await waitFor(() => watcher.output.includes('watching'))).toBe(true);
      fs.writeFileSync(full, '');
      atomicWrite(watch, { 'tls.crt': 'crt2', 'tls.key': 'key2' });
      expect(await waitFor(() => watcher.output.includes('reload failed (2 in a row)'))).toBe(true);
      const pair = () => ['tls.crt', 'tls.key'].map(k => fs.readFileSync(path.join(plain, k), 'utf8'));
      expect(pair()).toEqual(['crt1', 'key1']);
      fs.rmSync(full);
      expect(await waitFor(() => pair()[0] === 'crt2')).toBe(true);
      expect(pair()).toEqual(['crt2', 'key2']);
    });

    test('a timed-out reload leaves none of its children behind', async () => {
      const pids = path.join(work, 'pids');
      // A reload script whose background children hang as well.
      const cmd = `echo $$ >> ${pids}; sleep 300 & echo $! >> ${pids}; sleep 301 & echo $! >> ${pids}; wait`;
      const s = run(synthesized(Reload.exec(['sh', '-c', cmd])), { ACTION_TIMEOUT_SECONDS: SHORT_TIMEOUT[shell] });
      expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      expect(await waitFor(() => s.output.includes('reload failed (2 in a row)'), 10000)).toBe(true);
      // Two whole attempts (a loaded machine can cut one short before it forks both sleeps): the sidecar retries.
      expect(await waitFor(() => lines(pids).length >= 6, 10000)).toBe(true);
      await s.stop();
      const started = lines(pids).map(Number);
      expect(await waitFor(() => started.every(gone), 2000)).toBe(true);
    });

    test('TERM during a reload stops the reload and its children too', async () => {
      const pids = path.join(work, 'pids');
      const cmd = `echo $$ >> ${pids}; sleep 300 & echo $! >> ${pids}; wait`;
      const s = run(synthesized(Reload.exec(['sh', '-c', cmd])), { ACTION_TIMEOUT_SECONDS: '30' });
      expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      expect(await waitFor(() => lines(pids).length === 2)).toBe(true);
      await s.stop();
      expect(s.output).toContain('stopping on SIGTERM');
      expect(await waitFor(() => lines(pids).map(Number).every(gone), 2000)).toBe(true);
    });
  });

  describe('signal mode', () => {
    /** A copy of sleep under a name no other process on this machine has (at most 15 characters). */
    function uniqueProcess(prefix: string): { name: string; proc: Sidecar } {
      const name = `${prefix}${process.pid.toString(36)}${Math.random().toString(36).slice(2, 6)}`.slice(0, 15);
      const binary = path.join(work, name);
      fs.copyFileSync(fs.realpathSync('/bin/sleep'), binary);
      fs.chmodSync(binary, 0o755);
      const proc = new Sidecar(spawn(binary, ['30'], { stdio: ['ignore', 'pipe', 'pipe'] }));
      helpers.push(proc);
      return { name, proc };
    }

    test('signals only the process of the named target, never another', async () => {
      const target = uniqueProcess('rlt');
      const decoy = uniqueProcess('rld');
      const s = synthesized(Reload.signal('SIGHUP', { process: 'trainer', exposeWorkloadToSidecar: true }));
      expect(s.env).toMatchObject({ ACTION: 'signal', SIGNAL: 'HUP', PROCESS_NAME: 'trainer' });
      const once = run(s, { PROCESS_NAME: target.name, RUN_ONCE: '1' });
      expect((await once.exited).code).toBe(0);
      expect(await target.proc.exited).toEqual({ code: null, signal: 'SIGHUP' });
      await pause(50);
      expect(decoy.proc.running).toBe(true);
      expect(once.output).toContain(`sent SIGHUP to 1 process(es) named '${target.name}'`);
    });

    test('fails, and retries, when no process has the name', async () => {
      const s = synthesized(Reload.signal('HUP', { process: 'trainer', exposeWorkloadToSidecar: true }));
      const none = run(s, { PROCESS_NAME: `rln${process.pid}`.slice(0, 15), RUN_ONCE: '1' });
      expect((await none.exited).code).toBe(1);
      expect(none.output).toMatch(/no process named 'rln\d+' to signal/);
    });

    test("takes SIGHUP as well as HUP, in the form dash's kill -s needs", async () => {
      const target = uniqueProcess('rls');
      const once = run(synthesized(Reload.signal('HUP', { process: 'trainer', exposeWorkloadToSidecar: true })), {
        PROCESS_NAME: target.name,
        SIGNAL: 'SIGHUP',
        RUN_ONCE: '1',
      });
      expect((await once.exited).code).toBe(0);
      expect((await target.proc.exited).signal).toBe('SIGHUP');
    });
  });

  describe('fails loudly, never a watcher that does nothing', () => {
    async function fatal(
      s: ReturnType<typeof synthesized>,
      env: Record<string, string>,
      options: ToolboxOptions,
    ): Promise<string> {
      const sidecar = run(s, env, options);
      const { code } = await sidecar.exited;
      expect(code).toBe(1);
      return sidecar.output;
    }

    test('no fingerprint tool at all', async () => {
      const out = await fatal(recorder(), {}, { omit: ['sha256sum', 'md5sum', 'cksum'], replace: {} });
      expect(out).toMatch(/fatal: this image has none of sha256sum, md5sum or cksum/);
    });

    test('no setsid, which bounds a reload with its children', async () => {
      expect(await fatal(recorder(), {}, { omit: ['setsid'] })).toMatch(/fatal: this image has no 'setsid'/);
    });

    test('no wget for http', async () => {
      expect(await fatal(synthesized(Reload.httpPost('http://127.0.0.1:1/x')), {}, { omit: ['wget'] })).toMatch(
        /fatal: this image has no 'wget'/,
      );
    });

    test('the exec command is not in the image', async () => {
      expect(await fatal(synthesized(Reload.exec(['/usr/local/bin/gpu-driver', '--reload'])), {}, {})).toMatch(
        /fatal: this image has no '\/usr\/local\/bin\/gpu-driver'/,
      );
    });

    test('a fingerprint that comes back empty', async () => {
      const out = await fatal(recorder(), {}, { replace: { sha256sum: 'exit 0' } });
      expect(out).toMatch(/fatal: the fingerprint of .* came back empty/);
    });

    test('a backoff of 0, which would retry in a busy loop', async () => {
      expect(await fatal(recorder(), { BACKOFF_SECONDS: '0' }, {})).toMatch(
        /fatal: BACKOFF_SECONDS must be more than 0/,
      );
    });

    test('KEYS with a pattern, which the shell would expand', async () => {
      fs.writeFileSync(path.join(work, 'x'), '');
      for (const keys of ['*', 'credentials.*', '[a]']) {
        expect(await fatal(recorder(), { KEYS: keys }, {})).toMatch(
          /fatal: KEYS holds '.*', which is not a Secret key/,
        );
      }
    });

    test('no state directory', async () => {
      expect(await fatal(recorder(), { STATE_DIR: path.join(work, 'none') }, {})).toMatch(
        /fatal: STATE_DIR .* is not a directory/,
      );
    });

    test('a setting that is not a number', async () => {
      expect(await fatal(recorder(), { POLL_SECONDS: '10s' }, {})).toMatch(
        /fatal: POLL_SECONDS must be a number of seconds \(got '10s'\)/,
      );
    });

    test('md5sum alone is enough (Debian busybox has no cksum)', async () => {
      const s = run(recorder(), {}, { omit: ['sha256sum', 'cksum'], replace: {} });
      expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
      expect(s.output).toContain('with md5sum');
      atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
      expect(await waitFor(() => lines(reloads).length === 1)).toBe(true);
    });
  });

  describe('stops at once on TERM', () => {
    const slow = { POLL_SECONDS: '30' };

    test('as an ordinary process', async () => {
      const s = run(recorder(), slow);
      expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
      const t0 = Date.now();
      s.proc.kill('SIGTERM');
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(s.output).toContain('stopping on SIGTERM');
    });

    // PID 1 of a PID namespace, as in its container: without a trap the kernel drops TERM. As root
    // a PID namespace is enough; otherwise a user namespace maps us to root inside it.
    const unshare = [
      ['unshare', '--pid', '--fork', '--kill-child'],
      ['unshare', '--user', '--map-root-user', '--pid', '--fork', '--kill-child'],
    ].find(cmd => {
      try {
        execFileSync(cmd[0], [...cmd.slice(1), 'true'], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    });

    /** The host PID of the namespace's PID 1: unshare forks it. */
    function namespaceInit(s: Sidecar): number {
      const children = fs.readFileSync(`/proc/${s.proc.pid}/task/${s.proc.pid}/children`, 'utf8').trim().split(/\s+/);
      expect(children).toHaveLength(1);
      return Number(children[0]);
    }

    if (!unshare) {
      test('as PID 1 of its own PID namespace', () => {
        console.warn(
          `!!! The reload sidecar was NOT tested as PID 1 under ${shell}: unshare cannot create a PID namespace here.`,
        );
      });
      return;
    }

    test('as PID 1 of its own PID namespace', async () => {
      // The control: a shell without a trap, as PID 1, outlives TERM, so this setup is the container's.
      const control = startSidecar(shell, 'sleep 5', 'control', [], {}, bin(), unshare);
      started.push(control);
      await waitFor(
        () =>
          fs.existsSync(`/proc/${control.proc.pid}/task/${control.proc.pid}/children`) &&
          fs.readFileSync(`/proc/${control.proc.pid}/task/${control.proc.pid}/children`, 'utf8').trim() !== '',
      );
      process.kill(namespaceInit(control), 'SIGTERM');
      await pause(300);
      expect(control.running).toBe(true);

      const s = run(recorder(), slow, {}, unshare);
      expect(await waitFor(() => s.output.includes('watching'))).toBe(true);
      const t0 = Date.now();
      process.kill(namespaceInit(s), 'SIGTERM');
      expect((await s.exited).code).toBe(0);
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(s.output).toContain('stopping on SIGTERM');
    });
  });

  test("the construct's own settings are what the script reads", () => {
    const s = synthesized(Reload.httpPost('http://localhost:8080/reload', { timeout: Duration.seconds(7) }), [
      'a',
      '.b',
    ]);
    expect(s.env).toMatchObject({
      KEYS: 'a .b',
      POLL_SECONDS: '10',
      ACTION: 'http',
      ACTION_TIMEOUT_SECONDS: '7',
      RELOAD_URL: 'http://localhost:8080/reload',
    });
    for (const name of ['WATCH_DIR', 'KEYS', 'ACTION', 'POLL_SECONDS', 'ACTION_TIMEOUT_SECONDS', 'RELOAD_URL'])
      expect(s.script).toContain(name);
  });
}
