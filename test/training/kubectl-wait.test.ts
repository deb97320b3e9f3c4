import { execFile } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { AddressInfo } from 'net';
import { GpuTrainingStatefulSet } from '../../src';
import { onPath } from './launch-harness';
import { testChart } from '../support/synth';

/**
 * Runs the construct's `waitForCompletionCommand` with the real kubectl against a minimal API
 * server of our own (discovery, a pod list and a watch that never sends an event), to show that
 * the command parses on this kubectl and returns only once every rank's trainer reads Completed.
 */

const KUBECTL = onPath('kubectl');

test('kubectl is installed here, so the completion command is run for real', () => {
  if (!KUBECTL) console.warn('!!! waitForCompletionCommand was NOT run: kubectl is not installed here.');
  expect(KUBECTL === undefined || fs.existsSync(KUBECTL)).toBe(true);
});

type Reason = 'Completed' | 'Error' | undefined;

function pod(name: string, reason: Reason): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ml', resourceVersion: '1', labels: { 'app.kubernetes.io/instance': 'llm-pretrain' } },
    spec: {
      containers: [
        { name: 'logs', image: 'fluent-bit' },
        { name: 'trainer', image: 'pytorch' },
      ],
    },
    status: {
      phase: 'Running',
      containerStatuses: [
        // A sidecar whose own last termination must not count.
        {
          name: 'logs',
          ready: true,
          restartCount: 1,
          image: 'fluent-bit',
          imageID: '',
          state: { running: {} },
          lastState: { terminated: { exitCode: 0, reason: 'Completed' } },
        },
        {
          name: 'trainer',
          ready: true,
          restartCount: 1,
          image: 'pytorch',
          imageID: '',
          state: { running: {} },
          lastState: reason ? { terminated: { exitCode: reason === 'Completed' ? 0 : 1, reason } } : {},
        },
      ],
    },
  };
}

/** A fake API server holding `pods`; resolves to its URL. */
function apiServer(pods: any[]): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    const json = (body: unknown, code = 200) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/api') return json({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (url.pathname === '/apis') return json({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
    if (url.pathname === '/api/v1') {
      return json({
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list', 'watch'] },
        ],
      });
    }
    const m = /^\/api\/v1\/namespaces\/ml\/pods$/.exec(url.pathname);
    if (m) {
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        return undefined;
      }
      const selector = url.searchParams.get('labelSelector');
      const field = url.searchParams.get('fieldSelector');
      if (selector && selector !== 'app.kubernetes.io/instance=llm-pretrain')
        return json({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] });
      const items = pods.filter(p => !field || field === `metadata.name=${p.metadata.name}`);
      return json({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    return json({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404 }, 404);
  });
  return new Promise(resolve =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      });
    }),
  );
}

/** Runs the command as a shell would, with `--timeout` shortened; resolves to its exit code and output. */
async function run(command: string, pods: any[]): Promise<{ code: number; output: string }> {
  const server = await apiServer(pods);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubectl-wait-'));
  try {
    const kubeconfig = path.join(dir, 'config');
    fs.writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: c',
        `clusters: [{name: f, cluster: {server: "${server.url}"}}]`,
        'users: [{name: u, user: {}}]',
        'contexts: [{name: c, context: {cluster: f, user: u}}]',
        '',
      ].join('\n'),
    );
    const shortened = command.replace('--timeout=-1s', '--timeout=2s');
    expect(shortened).not.toBe(command);
    return await new Promise(resolve =>
      execFile(
        'sh',
        ['-c', shortened],
        {
          env: { PATH: path.dirname(KUBECTL!), KUBECONFIG: kubeconfig, HOME: dir },
          timeout: 20000,
        },
        (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, output: stdout + stderr }),
      ),
    );
  } finally {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(KUBECTL ? describe : describe.skip)('waitForCompletionCommand with the real kubectl', () => {
  const chart = testChart('ml');
  const trainer = new GpuTrainingStatefulSet(chart, 'pretrain', {
    name: 'llm-pretrain',
    image: 'nvcr.io/nvidia/pytorch:24.08-py3',
    gpusPerPod: 8,
    replicas: 2,
    args: ['train.py'],
  });

  test("returns once every rank's trainer last terminated Completed", async () => {
    const { code, output } = await run(trainer.waitForCompletionCommand, [
      pod('llm-pretrain-0', 'Completed'),
      pod('llm-pretrain-1', 'Completed'),
    ]);
    expect(output).toContain('pod/llm-pretrain-0 condition met');
    expect(output).toContain('pod/llm-pretrain-1 condition met');
    expect(code).toBe(0);
  }, 30000);

  test.each<[string, Reason]>([
    ['still training', undefined],
    ['failed', 'Error'],
  ])(
    'keeps waiting while one rank is %s (only its sidecar completed)',
    async (_label, reason) => {
      const { code, output } = await run(trainer.waitForCompletionCommand, [
        pod('llm-pretrain-0', 'Completed'),
        pod('llm-pretrain-1', reason),
      ]);
      expect(output).toContain('timed out waiting for the condition on pods/llm-pretrain-1');
      expect(code).not.toBe(0);
    },
    30000,
  );
});
