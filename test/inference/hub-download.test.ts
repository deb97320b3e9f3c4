import * as fs from 'fs';
import * as path from 'path';
import {
  cacheOf,
  HUB_VERSIONS,
  hubPerTest,
  hubInstalled,
  missingVenvTest,
  openOffline,
  repository,
  runDownload,
  scratch,
  standInHub,
} from '../support/hub-download';
import { HubFile, StandInHub } from '../support/stand-in-hub';
import { ENGINES } from './support';

/**
 * Every engine's model-download init container, as synthesized, run under the real
 * huggingface_hub against a stand-in hub on 127.0.0.1: the cache it leaves must hold every file
 * the engine's server and router open offline, and a warm cache must start with no network call.
 */
jest.setTimeout(60_000);

// What each engine opens at start with HF_HUB_OFFLINE=1, from its source:
// - every engine: config.json (transformers AutoConfig; TGI's server and router), the tokenizer
//   through transformers' AutoTokenizer (tokenizer.json, tokenizer_config.json,
//   special_tokens_map.json) and the chat template (tokenizer_config.json's chat_template, or
//   chat_template.jinja: transformers tokenization_utils_base; TGI's router reads
//   tokenizer.json, tokenizer_config.json and the template from the hub cache, router/src/server.rs),
//   generation_config.json (vLLM try_get_generation_config, SGLang's copy; TGI's router).
// - vLLM and SGLang: model.safetensors.index.json and the files of its weight_map
//   (download_weights_from_hf + filter_duplicate_safetensors_files, vllm/model_executor/
//   model_loader/weight_utils.py).
// - TGI: every *.safetensors of the snapshot (server/text_generation_server/utils/hub.py
//   `_cached_weight_files` globs them offline), so a consolidated copy next to the shards must not be
//   there: it would be loaded too.
const COMMON = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
];
const SHARDS = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
const OPENED: Record<string, string[]> = {
  TgiInferenceService: [...COMMON, ...SHARDS],
  VllmInferenceService: [...COMMON, 'model.safetensors.index.json', ...SHARDS],
  SglangInferenceService: [...COMMON, 'model.safetensors.index.json', ...SHARDS],
};
// Weights no engine reads here: a consolidated copy, another format, Meta's original/.
const NOT_LOADED = ['consolidated.safetensors', 'pytorch_model.bin', 'original/consolidated.00.pth'];

for (const version of HUB_VERSIONS) {
  if (!hubInstalled(version)) {
    missingVenvTest(version);
    continue;
  }
  // Every engine under the newest release; the older one with one engine (the download is the same
  // script for all three), which keeps the file within a minute on a busy machine.
  const engines =
    version === HUB_VERSIONS[HUB_VERSIONS.length - 1]
      ? ENGINES
      : ENGINES.filter(x => x.construct === 'VllmInferenceService');
  describe.each(engines)(`$construct model download, huggingface_hub ${version}`, e => {
    let hub: StandInHub;
    let data: string;
    hubPerTest((h, d) => ((hub = h), (data = d)));

    test('a cold cache: every file the engine opens offline, byte for byte; no weights it does not load; then a warm start with no network call, even with the hub gone', async () => {
      const cold = await runDownload(e, version, data, hub);
      expect(cold.output).toMatch(/model-download: done/);
      expect(cold.status).toBe(0);
      const opened = await openOffline(version, data, [...OPENED[e.construct], ...NOT_LOADED]);
      for (const f of OPENED[e.construct]) expect([f, opened[f]]).toEqual([f, hub.files[f].content.toString('base64')]);
      for (const f of NOT_LOADED) expect([f, opened[f]]).toEqual([f, null]);
      const c = cacheOf(data);
      expect(c.ref()).toBe(hub.sha);
      expect(c.snapshotFiles(hub.sha)).not.toContain('consolidated.safetensors');

      const before = hub.requests.length;
      const warm = await runDownload(e, version, data, hub);
      expect(warm.status).toBe(0);
      expect(hub.requests.length).toBe(before);
      expect(warm.output).toMatch(/complete in the cache/);
      // No hub at all (a closed port): still starts.
      const offline = await runDownload(e, version, data, 'http://127.0.0.1:9');
      expect(offline.status).toBe(0);
    });

    test('a pinned commit is downloaded and a warm start of it needs no ref; an unknown revision fails and leaves nothing that looks complete', async () => {
      const pinned = await runDownload(e, version, data, hub, { revision: hub.sha });
      expect(pinned.status).toBe(0);
      expect(cacheOf(data).snapshotFiles(hub.sha)).toEqual(expect.arrayContaining(OPENED[e.construct]));
      const before = hub.requests.length;
      expect((await runDownload(e, version, data, hub, { revision: hub.sha })).status).toBe(0);
      expect(hub.requests.length).toBe(before);

      const other = scratch();
      const bad = await runDownload(e, version, other, hub, { revision: 'v9' });
      expect(bad.status).not.toBe(0);
      expect(cacheOf(other).ref('v9')).toBeUndefined();
      fs.rmSync(other, { recursive: true, force: true });
    });

    test("a revision written as '$(HF_TOKEN)' reaches the download as written: the kubelet does not expand it, and the token never reaches a request", async () => {
      const r = await runDownload(e, version, data, hub, { revision: '$(HF_TOKEN)' });
      expect(r.status).not.toBe(0);
      expect(r.output).not.toContain('hf_secret_token');
      expect(hub.requests.map(q => q.path).join('\n')).not.toContain('hf_secret_token');
      expect(hub.requests.some(q => q.path.includes('$(HF_TOKEN)'))).toBe(true);
    });
  });

  describe(`what the download refuses or picks, huggingface_hub ${version}`, () => {
    let data: string;
    let hub: StandInHub | undefined;
    beforeEach(() => (data = scratch()));
    afterEach(async () => {
      await hub?.stop();
      hub = undefined;
      fs.rmSync(data, { recursive: true, force: true });
    });
    const [tgi, vllm] = ENGINES;
    const text = (s: string): HubFile => ({ content: Buffer.from(s), lfs: false });
    const weights = (n: number): HubFile => ({ content: Buffer.alloc(n, 7), lfs: true });

    test("vLLM's repo:QUANT GGUF form: the .gguf file of that quantization and the tokenizer files, no other quantization", async () => {
      hub = await standInHub({
        'config.json': text('{}'),
        'tokenizer.json': text('{}'),
        'model-Q4_K_M.gguf': weights(40_000),
        'model-Q8_0.gguf': weights(80_000),
      });
      const r = await runDownload(vllm, version, data, hub, { model: 'org/model:Q4_K_M' });
      expect(r.status).toBe(0);
      expect(cacheOf(data).snapshotFiles(hub.sha)).toEqual(['config.json', 'model-Q4_K_M.gguf', 'tokenizer.json']);
    });

    test('TGI on a repository with .bin weights only: refused with the reason, nothing marked complete', async () => {
      hub = await standInHub({ 'config.json': text('{}'), 'pytorch_model.bin': weights(1000) });
      const r = await runDownload(tgi, version, data, hub);
      expect(r.status).toBe(1);
      expect(r.output).toMatch(/TGI loads only those/);
      expect(cacheOf(data).ref()).toBeUndefined();
    });

    test('without an index, vLLM takes the first loaded format at the top level (safetensors before .bin)', async () => {
      hub = await standInHub({
        'config.json': text('{}'),
        'model.safetensors': weights(1000),
        'pytorch_model.bin': weights(1000),
        'onnx/model.onnx': weights(1000),
      });
      expect((await runDownload(vllm, version, data, hub)).status).toBe(0);
      expect(cacheOf(data).snapshotFiles(hub.sha)).toEqual(['config.json', 'model.safetensors']);
    });
  });
}

test('the stand-in repository has what a real one has', () => {
  expect(Object.keys(repository())).toEqual(expect.arrayContaining([...SHARDS, ...NOT_LOADED]));
  expect(path.basename(__filename)).toBe('hub-download.test.ts');
});
