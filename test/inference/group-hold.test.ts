import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { Size, Testing } from 'cdk8s';
import { VllmInferenceService } from '../../src';
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

/** The worker's preStop command from the synthesized LeaderWorkerSet. */
function hookCommand(): string[] {
  const chart = testChart('ml');
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-405B-Instruct',
    gpusPerReplica: 8,
    nodes: 2,
    modelSize: Size.gibibytes(757),
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
