import * as fs from 'fs';
import * as path from 'path';
import {
  cacheOf,
  HUB_VERSIONS,
  hubInstalled,
  missingVenvTest,
  runDownload,
  scratch,
  standInHub,
} from '../support/hub-download';
import { HubFile, StandInHub } from '../support/stand-in-hub';
import { ENGINES } from './support';

/**
 * Hub faults against the download (one engine: the script is the same for all three), under the
 * newest huggingface_hub the mirror holds and the older one. Whatever the hub answers, a cache
 * that looks complete (refs/main and the marker) holds every file with the hub's bytes.
 */
jest.setTimeout(60_000);

const VLLM = ENGINES.find(e => e.construct === 'VllmInferenceService')!;
const text = (s: string): HubFile => ({ content: Buffer.from(s), lfs: false });
const WEIGHTS = 'model.safetensors';
const files = (): Record<string, HubFile> => ({
  'config.json': text('{"architectures":["X"]}'),
  'tokenizer.json': text('{"model":{}}'),
  [WEIGHTS]: { content: Buffer.from(Array.from({ length: 60_000 }, (_, i) => (i * 7) & 0xff)), lfs: true },
});

for (const version of HUB_VERSIONS) {
  if (!hubInstalled(version)) {
    missingVenvTest(version);
    continue;
  }
  // Every fault under the newest release; under the older one the fault whose handling differs
  // between releases (a 200 answer to a Range request: file_download.py http_get restarts the file
  // from 1.x on), which keeps each run within about a minute on a busy machine.
  const newest = version === HUB_VERSIONS[HUB_VERSIONS.length - 1];
  const all = newest ? test : test.skip;
  const allEach = newest ? test.each : test.skip.each;
  describe(`hub faults, huggingface_hub ${version}`, () => {
    let hub: StandInHub;
    let data: string;
    beforeEach(async () => {
      hub = await standInHub(files());
      data = scratch();
    });
    afterEach(async () => {
      await hub.stop();
      fs.rmSync(data, { recursive: true, force: true });
    });

    const completeAndRight = () => {
      const c = cacheOf(data);
      expect(c.ref()).toBe(hub.sha);
      for (const f of Object.keys(hub.files))
        expect([
          f,
          fs.readFileSync(path.join(c.repoDir, 'snapshots', hub.sha, f)).equals(hub.files[f].content),
        ]).toEqual([f, true]);
    };
    const notComplete = () => {
      expect(cacheOf(data).ref()).toBeUndefined();
      expect(fs.existsSync(path.join(data, 'hub', '.cdk8s-gpu', 'complete', 'models--org--model'))).toBe(false);
    };

    allEach([500, 503, 429])('%i from the metadata call, then an answer: retried, complete', async status => {
      hub.fault('info', { kind: 'status', status, times: 2 });
      const r = await runDownload(VLLM, version, data, hub);
      expect(r.status).toBe(0);
      completeAndRight();
    });

    all(
      '429 on every metadata call: fails, nothing looks complete; the next start with a healthy hub completes',
      async () => {
        hub.fault('info', { kind: 'status', status: 429, times: 100 });
        expect((await runDownload(VLLM, version, data, hub)).status).toBe(1);
        notComplete();
        hub.faults.clear();
        expect((await runDownload(VLLM, version, data, hub)).status).toBe(0);
        completeAndRight();
      },
    );

    allEach([500, 503, 429])('%i on the weights mid-download, then the file: retried, complete', async status => {
      hub.fault(WEIGHTS, { kind: 'status', status, times: 1 });
      expect((await runDownload(VLLM, version, data, hub)).status).toBe(0);
      completeAndRight();
    });

    all('401 on the weights: fails at once with the reason, nothing looks complete', async () => {
      hub.fault(WEIGHTS, { kind: 'status', status: 401, times: 100 });
      const r = await runDownload(VLLM, version, data, hub);
      expect(r.status).toBe(1);
      expect(r.output).toMatch(/refused a file/);
      notComplete();
    });

    test('a truncated transfer, then a proxy that ignores Range on the resume: the whole verified file', async () => {
      hub.fault(WEIGHTS, { kind: 'truncate', times: 1 });
      hub.fault(WEIGHTS, { kind: 'ignoreRange', times: 1 });
      expect((await runDownload(VLLM, version, data, hub)).status).toBe(0);
      completeAndRight();
    });

    all(
      'corrupted bytes once: discarded by the checksum and fetched again; corrupted every time: fails, nothing looks complete',
      async () => {
        hub.fault(WEIGHTS, { kind: 'corrupt', times: 1 });
        const once = await runDownload(VLLM, version, data, hub);
        expect(once.output).toMatch(/checksum or size differs/);
        expect(once.status).toBe(0);
        completeAndRight();

        const other = scratch();
        hub.fault(WEIGHTS, { kind: 'corrupt', times: 100 });
        expect((await runDownload(VLLM, version, other, hub)).status).toBe(1);
        expect(cacheOf(other).ref()).toBeUndefined();
        expect(fs.existsSync(path.join(cacheOf(other).repoDir, 'snapshots', hub.sha, WEIGHTS))).toBe(false);
        fs.rmSync(other, { recursive: true, force: true });
      },
    );

    all('a server trickling a byte every 200 ms: the stalled fetch is killed and retried', async () => {
      hub.fault(WEIGHTS, { kind: 'trickle', everyMs: 200, times: 1 });
      const r = await runDownload(VLLM, version, data, hub, { env: { DOWNLOAD_STALL_SECONDS: '6' } });
      expect(r.output).toMatch(/stalled: retrying/);
      expect(r.status).toBe(0);
      completeAndRight();
    });

    all('a download past DOWNLOAD_DEADLINE_SECONDS fails instead of running forever', async () => {
      hub.fault(WEIGHTS, { kind: 'trickle', everyMs: 200, times: 100 });
      const r = await runDownload(VLLM, version, data, hub, {
        env: { DOWNLOAD_DEADLINE_SECONDS: '3', DOWNLOAD_STALL_SECONDS: '100' },
      });
      expect(r.status).toBe(1);
      notComplete();
    });

    all('two fillers of one cache at once (no flock involved): both succeed, the cache is right', async () => {
      hub.fault(WEIGHTS, { kind: 'truncate', times: 1 });
      const [a, b] = await Promise.all([
        runDownload(VLLM, version, data, hub, { filler: 'replica-0' }),
        runDownload(VLLM, version, data, hub, { filler: 'replica-1' }),
      ]);
      expect([a.status, b.status]).toEqual([0, 0]);
      completeAndRight();
    });

    all('a filler killed mid-download: its lock goes stale, the next filler breaks it and completes', async () => {
      hub.fault(WEIGHTS, { kind: 'trickle', everyMs: 200, times: 1 });
      const killed = await runDownload(VLLM, version, data, hub, {
        filler: 'replica-0',
        killAfterMs: 2500,
        env: { DOWNLOAD_STALL_SECONDS: '100' },
      });
      expect(killed.status).toBeNull();
      notComplete();
      const next = await runDownload(VLLM, version, data, hub, { filler: 'replica-1' });
      expect(next.status).toBe(0);
      completeAndRight();
    });
  });
}
