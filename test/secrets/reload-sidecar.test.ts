import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret } from '../../src';
import { atomicWrite } from '../support/atomic-writer';

/** The sidecar exactly as synthesized: its command, args and env, taken from the YAML. */
function synthesizedSidecar(onRotation: Reload): { command: string[]; args: string[]; env: Record<string, string> } {
  const chart = new Chart(Testing.app(), 'c');
  const trainer = new GpuTrainingStatefulSet(chart, 't', { name: 't', image: 'i', gpusPerPod: 1 });
  new RotatingGpuSecret(chart, 's', { name: 'creds' }).mountInto(trainer, { path: '/etc/gpu', onRotation });
  const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
  const sidecar = sts.spec.template.spec.containers.find((c: any) => c.name.startsWith('reload-'));
  return { command: sidecar.command, args: sidecar.args ?? [], env: Object.fromEntries(sidecar.env.map((e: any) => [e.name, e.value])) };
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

async function waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await sleep(50);
  }
  return predicate();
}

describe('reload sidecar script under sh', () => {
  let work: string;
  let watch: string;
  let reloads: string;
  let proc: ChildProcess | undefined;
  let output: string;

  const reloadLines = () => (fs.existsSync(reloads) ? fs.readFileSync(reloads, 'utf8').split('\n').filter(Boolean) : []);

  beforeEach(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'reload-'));
    watch = path.join(work, 'etc-gpu');
    reloads = path.join(work, 'reloads.log');
    output = '';
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}' });
  });

  afterEach(() => {
    proc?.kill('SIGKILL');
    proc = undefined;
    fs.rmSync(work, { recursive: true, force: true });
  });

  /**
   * Starts the synthesized sidecar with `sh`. The exec action is replaced by a command that records
   * each reload with the credential it saw, and fails while a `fail` file says so.
   */
  function start(pollSeconds = 1) {
    const recorder = `if [ -f ${work}/fail ]; then n=$(cat ${work}/fail); [ "$n" -gt 0 ] && { echo $((n-1)) > ${work}/fail; exit 1; }; fi; cat ${watch}/credentials.json >> ${reloads}; echo >> ${reloads}`;
    const sidecar = synthesizedSidecar(Reload.exec(['sh', '-c', recorder]));
    expect(sidecar.command.slice(0, 2)).toEqual(['sh', '-c']);
    const [, , script, argv0] = sidecar.command;
    expect(sidecar.env.ACTION).toBe('exec');
    proc = spawn('sh', ['-c', script, argv0, ...sidecar.args], {
      env: { PATH: process.env.PATH, ...sidecar.env, WATCH_DIR: watch, POLL_SECONDS: String(pollSeconds), BACKOFF_SECONDS: '1', BACKOFF_MAX_SECONDS: '2' },
    });
    proc.stdout!.on('data', d => { output += d; });
    proc.stderr!.on('data', d => { output += d; });
    return waitFor(() => output.includes('watching'), 5000);
  }

  test('exactly one reload per rotation, seeing the new content', async () => {
    await start();
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => reloadLines().length === 1, 5000)).toBe(true);
    await sleep(2500);
    expect(reloadLines()).toEqual(['{"token":"v2"}']);
    atomicWrite(watch, { 'credentials.json': '{"token":"v3"}' });
    expect(await waitFor(() => reloadLines().length === 2, 5000)).toBe(true);
    await sleep(2500);
    expect(reloadLines()).toEqual(['{"token":"v2"}', '{"token":"v3"}']);
    expect(output).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ reload-sidecar: reloaded after a change/m);
  });

  test('no reload on a resync that changed nothing', async () => {
    await start();
    // Same payload through a fresh timestamped directory and ..data swap.
    atomicWrite(watch, { 'credentials.json': '{"token":"v1"}' });
    await sleep(3500);
    expect(reloadLines()).toEqual([]);
  });

  test('a reload lands within the poll interval', async () => {
    const poll = 2;
    await start(poll);
    const rotatedAt = Date.now();
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => reloadLines().length === 1, 10000)).toBe(true);
    // One poll interval, plus scheduling slack for a loaded CI machine.
    expect(Date.now() - rotatedAt).toBeLessThanOrEqual(poll * 1000 + 1500);
  });

  test('recovers after a failing action, with retries', async () => {
    fs.writeFileSync(path.join(work, 'fail'), '2');
    await start();
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => reloadLines().length === 1, 10000)).toBe(true);
    expect(reloadLines()).toEqual(['{"token":"v2"}']);
    expect(output.match(/reload failed; retrying/g)).toHaveLength(2);
  });

  test('quick successive rotations coalesce and end on the latest content', async () => {
    await start(2);
    for (const token of ['v2', 'v3', 'v4']) {
      atomicWrite(watch, { 'credentials.json': `{"token":"${token}"}` });
      await sleep(100);
    }
    expect(await waitFor(() => reloadLines().length >= 1, 6000)).toBe(true);
    await sleep(3000);
    expect(reloadLines()).toEqual(['{"token":"v4"}']);
  });

  test('sync mode copies the files atomically into a plain directory', async () => {
    const sidecar = synthesizedSidecar(Reload.sync());
    const [, , script, argv0] = sidecar.command;
    const plain = path.join(work, 'plain');
    const env = { PATH: process.env.PATH, ...sidecar.env, WATCH_DIR: watch, SYNC_DIR: plain, POLL_SECONDS: '1' };
    const once = spawn('sh', ['-c', script, argv0], { env: { ...env, RUN_ONCE: '1' } });
    const code = await new Promise(r => once.on('exit', r));
    expect(code).toBe(0);
    expect(fs.readFileSync(path.join(plain, 'credentials.json'), 'utf8')).toBe('{"token":"v1"}');
    expect(fs.lstatSync(path.join(plain, 'credentials.json')).isSymbolicLink()).toBe(false);
    proc = spawn('sh', ['-c', script, argv0], { env });
    await sleep(300);
    atomicWrite(watch, { 'credentials.json': '{"token":"v2"}' });
    expect(await waitFor(() => fs.readFileSync(path.join(plain, 'credentials.json'), 'utf8') === '{"token":"v2"}', 5000)).toBe(true);
    expect(fs.readdirSync(plain)).toEqual(['credentials.json']);
  });

  test('signal mode signals the named process and fails when there is none', async () => {
    const sidecar = synthesizedSidecar(Reload.signal('SIGHUP', { process: 'sleep' }));
    const [, , script, argv0] = sidecar.command;
    expect(sidecar.env).toMatchObject({ ACTION: 'signal', SIGNAL: 'HUP', PROCESS_NAME: 'sleep' });
    const target = spawn('sleep', ['30']);
    const signalled = new Promise(r => target.on('exit', (_c, sig) => r(sig)));
    const run = spawn('sh', ['-c', script, argv0], { env: { PATH: process.env.PATH, ...sidecar.env, WATCH_DIR: watch, RUN_ONCE: '1' } });
    expect(await new Promise(r => run.on('exit', r))).toBe(0);
    expect(await signalled).toBe('SIGHUP');
    const none = spawn('sh', ['-c', script, argv0], { env: { PATH: process.env.PATH, ...sidecar.env, PROCESS_NAME: 'no-such-proc', WATCH_DIR: watch, RUN_ONCE: '1' } });
    expect(await new Promise(r => none.on('exit', r))).toBe(1);
  });
});
