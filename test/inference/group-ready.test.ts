import { spawn } from 'child_process';
import * as http from 'http';
import { AddressInfo } from 'net';
import { Testing } from 'cdk8s';
import { ExpertParallel, InferenceGateway, RankEndpoints, VllmInferenceService } from '../../src';
import { findOne, testChart } from '../support/synth';

/**
 * The readiness probe of a group whose every pod serves (src/inference/group-ready.py), as synthesized, run by
 * python3 against stand-in supervisors on 127.0.0.1 and 127.0.0.2: each pod's name, derived from LeaderWorkerSet's
 * variables, resolves to one of them (the test maps the names; the cluster's DNS does in a pod).
 */

const NS = 'serving';
const LEADER = `moe-lws-0.moe-lws.${NS}`;
const WORKER = `moe-lws-0-1.moe-lws.${NS}`;

function synthesized() {
  const chart = testChart(NS);
  const service = new VllmInferenceService(chart, 'moe', {
    name: 'moe',
    modelId: 'Qwen/Qwen3-30B-A3B',
    gpusPerReplica: 4,
    nodes: 2,
    serviceMonitor: true,
    expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
  });
  new InferenceGateway(chart, 'gw', { name: 'moe', services: [service], gateway: { name: 'edge' } });
  const t = findOne(Testing.synth(chart), 'LeaderWorkerSet').spec.leaderWorkerTemplate;
  return [t.leaderTemplate, t.workerTemplate].map((p: any) => p.spec.containers[0]);
}

const [leaderMain, workerMain] = synthesized();
const probe = leaderMain.readinessProbe;
const [python, flag, script, port] = probe.exec.command;

/** Answers not yet sent (a slow stand-in's), cleared when the stand-ins close. */
const pending = new Set<NodeJS.Timeout>();

/** A stand-in supervisor on `host`: answers /health with what `status()` says, after `delayMs()`. */
async function supervisor(host: string, listenPort: number, status: () => number, delayMs = () => 0) {
  const server = http.createServer((req, res) => {
    const timer = setTimeout(() => {
      pending.delete(timer);
      res.statusCode = req.url === '/health' ? status() : 404;
      res.end();
    }, delayMs());
    pending.add(timer);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, host, () => resolve());
  });
  return server;
}

/** Runs the probe's command as the kubelet would, the pods' names mapped to the stand-ins; at most its timeout. */
function runProbe(env: { size: number; hosts: Record<string, string>; port: number; extra?: Record<string, string> }) {
  // Only resolution changes: the probe's own script runs as synthesized.
  const resolve = `import json, os, socket, sys
_real = socket.getaddrinfo
_hosts = json.loads(os.environ["TEST_HOSTS"])
socket.getaddrinfo = lambda host, *a, **k: _real(_hosts.get(host, host), *a, **k)
sys.argv = ["group-ready.py", sys.argv[1]]
`;
  return new Promise<{ code: number | null; killed: boolean; output: string }>(done => {
    const child = spawn(python, [flag, resolve + script, String(env.port)], {
      env: {
        PATH: process.env.PATH,
        LWS_LEADER_ADDRESS: LEADER,
        LWS_GROUP_SIZE: String(env.size),
        TEST_HOSTS: JSON.stringify(env.hosts),
        ...env.extra,
      },
    });
    let output = '';
    child.stdout.on('data', d => (output += d));
    child.stderr.on('data', d => (output += d));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, probe.timeoutSeconds * 1000);
    child.on('exit', code => {
      clearTimeout(timer);
      done({ code, killed, output });
    });
  });
}

describe('group-ready.py, the readiness probe of a group whose every pod serves', () => {
  test('both pods run it on the supervisor port, with the serving timing; startup and liveness stay on the own supervisor', () => {
    expect(workerMain.readinessProbe).toEqual(leaderMain.readinessProbe);
    expect([python, flag, port]).toEqual(['python3', '-c', '9256']);
    expect(probe.httpGet).toBeUndefined();
    expect(probe.timeoutSeconds).toBeGreaterThan(2);
    for (const main of [leaderMain, workerMain]) {
      expect(main.startupProbe.httpGet).toEqual({ path: '/health', port: 'dp-supervisor' });
      expect(main.livenessProbe.httpGet).toEqual({ path: '/health', port: 'dp-supervisor' });
    }
  });

  describe('against stand-in supervisors', () => {
    let leaderStatus = 200;
    let workerStatus = 200;
    let workerDelay = 0;
    let servers: http.Server[] = [];
    let listenPort = 0;
    const hosts = { [LEADER]: '127.0.0.1', [WORKER]: '127.0.0.2' };

    beforeAll(async () => {
      const leader = await supervisor('127.0.0.1', 0, () => leaderStatus);
      listenPort = (leader.address() as AddressInfo).port;
      const worker = await supervisor(
        '127.0.0.2',
        listenPort,
        () => workerStatus,
        () => workerDelay,
      );
      servers = [leader, worker];
    });
    afterAll(() => {
      pending.forEach(clearTimeout);
      for (const s of servers) {
        s.closeAllConnections();
        s.close();
      }
    });
    beforeEach(() => {
      [leaderStatus, workerStatus, workerDelay] = [200, 200, 0];
    });

    test('ready while every pod of the group answers 200', async () => {
      const r = await runProbe({ size: 2, hosts, port: listenPort });
      expect(r).toEqual({ code: 0, killed: false, output: '' });
    });

    test("straight to the pods, whatever proxy the container's environment names", async () => {
      const proxy = 'http://127.0.0.1:9';
      const extra = { http_proxy: proxy, HTTP_PROXY: proxy, no_proxy: '', NO_PROXY: '' };
      const r = await runProbe({ size: 2, hosts, port: listenPort, extra });
      expect(r).toEqual({ code: 0, killed: false, output: '' });
    });

    test("not ready on either pod once a peer's supervisor answers 503 (it drains from SIGTERM on)", async () => {
      workerStatus = 503;
      const r = await runProbe({ size: 2, hosts, port: listenPort });
      expect([r.code, r.killed]).toEqual([1, false]);
      expect(r.output).toContain(`group not serving: ${WORKER} (HTTP Error 503`);
      [leaderStatus, workerStatus] = [503, 200];
      const leaderDown = await runProbe({ size: 2, hosts, port: listenPort });
      expect(leaderDown.code).toBe(1);
      expect(leaderDown.output).toContain(`${LEADER} (HTTP Error 503`);
    });

    test('not ready when a pod of the group is missing (its name does not resolve) or refuses', async () => {
      const r = await runProbe({ size: 3, hosts, port: listenPort });
      expect(r.code).toBe(1);
      expect(r.output).toContain(`moe-lws-0-2.moe-lws.${NS}`);
      expect(r.output).not.toContain(WORKER);
      const refused = await runProbe({ size: 2, hosts: { ...hosts, [WORKER]: '127.0.0.3' }, port: listenPort });
      expect(refused.code).toBe(1);
      expect(refused.output).toMatch(/Connection refused/);
    });

    test('a peer that does not answer fails the probe by itself, within the probe timeout', async () => {
      workerDelay = (probe.timeoutSeconds + 5) * 1000;
      const r = await runProbe({ size: 2, hosts, port: listenPort });
      expect([r.code, r.killed]).toEqual([1, false]);
      expect(r.output).toMatch(/timed out/);
    }, 30_000);
  });
});
