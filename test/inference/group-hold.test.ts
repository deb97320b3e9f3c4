import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { Size, Testing } from 'cdk8s';
import { ExpertParallel, VllmInferenceService } from '../../src';
import { freePort, TORCHRUN } from '../training/launch-harness';
import { findOne, testChart } from '../support/synth';
import { missingTool } from '../support/missing-tool';

/**
 * The preStop hook of a multi-node serving worker (src/inference/group-hold.py), as synthesized, run
 * against a real two-rank torch.distributed group on 127.0.0.1: it holds while the worker's engine is
 * connected to the leader's store, and no longer.
 */
const PYTHON = TORCHRUN && path.join(path.dirname(TORCHRUN), 'python3');
const RANK = path.join(__dirname, 'group-hold', 'rank.py');

/** The worker's preStop command from the synthesized LeaderWorkerSet (pipeline stages, or data-parallel engines). */
function hookCommand(dataParallel = false): string[] {
  const chart = testChart('ml');
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: dataParallel ? 'Qwen/Qwen3-30B-A3B' : 'meta-llama/Llama-3.1-405B-Instruct',
    gpusPerReplica: 8,
    nodes: 2,
    modelSize: Size.gibibytes(dataParallel ? 61 : 757),
    ...(dataParallel ? { expertParallel: ExpertParallel.wide() } : {}),
  });
  const set = findOne(Testing.synth(chart), 'LeaderWorkerSet');
  return set.spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].lifecycle.preStop.exec.command;
}

interface Rank {
  readonly child: ChildProcess;
  readonly up: Promise<void>;
  readonly exited: Promise<number>;
}

function rank(n: number, port: number, staySeconds: number): Rank {
  const child = spawn(PYTHON!, [RANK, String(n), String(port), String(staySeconds)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let [out, err] = ['', ''];
  child.stderr.on('data', d => (err += d));
  const up = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', d => {
      out += d;
      if (out.includes('up')) resolve();
    });
    child.on('exit', code =>
      reject(new Error(`rank ${n} exited (${code}) before the group formed; its stderr:\n${err.slice(-2000)}`)),
    );
  });
  const exited = new Promise<number>(resolve => child.on('exit', () => resolve(Date.now())));
  return { child, up, exited };
}

/** Runs the hook with the test's port and bound; resolves with the time it returned. */
function hook(port: number, boundSeconds: number): Promise<number> {
  const [, flag, script] = hookCommand();
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [flag, script, String(port), String(boundSeconds)], { stdio: 'inherit' });
    child.on('exit', code => (code === 0 ? resolve(Date.now()) : reject(new Error(`hook exited ${code}`))));
  });
}

const ranks: Rank[] = [];
afterEach(() => {
  for (const r of ranks.splice(0)) r.child.kill('SIGKILL');
});

/** A formed two-rank group: the leader stays `leaderSeconds` after joining, the worker 120 s. */
async function group(leaderSeconds: number): Promise<{ port: number; leader: Rank; worker: Rank }> {
  const port = await freePort();
  const leader = rank(0, port, leaderSeconds);
  const worker = rank(1, port, 120);
  ranks.push(leader, worker);
  await Promise.all([leader.up, worker.up]);
  return { port, leader, worker };
}

const torchTest = PYTHON ? test : test.skip;

test('a real torch is here, so the hook is tested against real ranks', () => {
  if (PYTHON === undefined)
    missingTool(
      "The multi-node worker's preStop hook was NOT tested against real torch.distributed ranks: no torchrun " +
        '(set TORCHRUN, or run .ci/run to make .cache/torch-venv).',
    );
});

describe('the worker preStop hook, with two torch.distributed ranks', () => {
  jest.setTimeout(120_000);

  torchTest('holds while the leader runs, and returns once the leader process exits', async () => {
    const { port, leader, worker } = await group(6);
    const returned = await hook(port, 100);
    const leaderGone = await leader.exited;
    // Not before the leader's process ended, and soon after (the hook polls every second).
    expect(returned).toBeGreaterThanOrEqual(leaderGone);
    expect(returned - leaderGone).toBeLessThan(10_000);
    expect(worker.child.exitCode).toBeNull();
  });

  torchTest('returns at once when the leader is already gone', async () => {
    // The leader dies once both ranks are up: a leader that left on its own right after joining could
    // take the store down while the worker's gloo set-up still reads it (a reset connection, not a group).
    const { port, leader, worker } = await group(120);
    leader.child.kill('SIGKILL');
    const leaderGone = await leader.exited;
    const returned = await hook(port, 100);
    // Far from its 100 s bound, while the worker still runs.
    expect(returned - leaderGone).toBeLessThan(20_000);
    expect(worker.child.exitCode).toBeNull();
  });

  torchTest('returns at its bound while the leader still runs', async () => {
    const { port, leader } = await group(120);
    const started = Date.now();
    const returned = await hook(port, 2);
    expect(returned - started).toBeGreaterThanOrEqual(2_000);
    expect(leader.child.exitCode).toBeNull();
  });
});

/**
 * Data-parallel engines keep their sockets to ports the leader picks at run time, so the hook holds on any connection
 * to the leader's address. A "leader" on 127.0.0.7 and a "worker" connected to it, two real processes: the hook runs
 * with the leader's address as LeaderWorkerSet sets it.
 */
describe('the worker preStop hook, on any connection to the leader (data-parallel engines)', () => {
  jest.setTimeout(60_000);
  const LEADER = '127.0.0.7';
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  /** A leader that accepts one connection and exits `staySeconds` later, and a worker that keeps its socket. */
  async function pair(staySeconds: number): Promise<{ leaderGone: Promise<number>; worker: ChildProcess }> {
    const leader = spawn('python3', [
      '-c',
      `import socket,sys,time
s=socket.socket(); s.bind(("${LEADER}",0)); s.listen(); print(s.getsockname()[1],flush=True)
c,_=s.accept(); print("up",flush=True); time.sleep(${staySeconds})`,
    ]);
    children.push(leader);
    const leaderGone = new Promise<number>(resolve => leader.on('exit', () => resolve(Date.now())));
    const port = await new Promise<number>((resolve, reject) => {
      leader.stdout.once('data', d => resolve(Number(String(d).trim().split(/\s+/)[0])));
      leader.once('exit', code => reject(new Error(`the leader exited (${code}) before it listened`)));
    });
    const worker = spawn('python3', [
      '-c',
      `import socket,time
c=socket.create_connection(("${LEADER}",${port})); print("up",flush=True); time.sleep(120)`,
    ]);
    children.push(worker);
    await new Promise<void>((resolve, reject) => {
      worker.stdout.once('data', () => resolve());
      worker.once('exit', code => reject(new Error(`the worker exited (${code}) before it connected`)));
    });
    return { leaderGone, worker };
  }

  function hookOnLeader(address: string, boundSeconds: number): Promise<number> {
    const [python, flag, script, bound] = hookCommand(true);
    // The synthesized bound is the worker's preStop + drain; the test runs the script with its own.
    expect(Number(bound)).toBeGreaterThan(0);
    return new Promise((resolve, reject) => {
      const child = spawn(python, [flag, script, String(boundSeconds)], {
        stdio: 'inherit',
        env: { ...process.env, LWS_LEADER_ADDRESS: address },
      });
      child.on('exit', code => (code === 0 ? resolve(Date.now()) : reject(new Error(`hook exited ${code}`))));
    });
  }

  test('holds while the leader runs, and returns once the leader process exits', async () => {
    const { leaderGone, worker } = await pair(5);
    const returned = await hookOnLeader(LEADER, 50);
    const gone = await leaderGone;
    expect(returned).toBeGreaterThanOrEqual(gone);
    expect(returned - gone).toBeLessThan(10_000);
    expect(worker.exitCode).toBeNull();
  });

  test('returns at its bound while the leader still runs', async () => {
    await pair(60);
    const started = Date.now();
    const returned = await hookOnLeader(LEADER, 2);
    expect(returned - started).toBeGreaterThanOrEqual(2_000);
  });

  test('does not hold on connections to other addresses, or for a leader whose name no longer resolves', async () => {
    await pair(60);
    for (const address of ['127.0.0.8', 'leader-0.gone.invalid']) {
      const started = Date.now();
      const returned = await hookOnLeader(address, 30);
      expect(returned - started).toBeLessThan(10_000);
    }
  });
});
