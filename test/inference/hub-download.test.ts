import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { onPath } from '../support/shells';
import { BASE, ENGINES, synthEngine } from './support';

/**
 * The model-download init container of vLLM and SGLang runs a Python script under the image's
 * python3 with huggingface_hub. It is run here, from the synthesized YAML, against a stand-in
 * huggingface_hub that lists a repository's files and records what snapshot_download was asked.
 */
const PYTHON = onPath('python3');
const FAKE_HUB = `
import json, os
class HfApi:
    def list_repo_files(self, repo_id, revision=None):
        with open(os.environ["FAKE_CALLS"], "a") as f:
            f.write(json.dumps({"list": repo_id, "revision": revision}) + "\\n")
        return json.loads(os.environ["FAKE_FILES"])
def snapshot_download(repo_id, revision=None, ignore_patterns=None, **kwargs):
    with open(os.environ["FAKE_CALLS"], "a") as f:
        f.write(json.dumps({"download": repo_id, "revision": revision, "ignore": ignore_patterns, "other": sorted(kwargs)}) + "\\n")
    return "/cache"
`;

const HUB_ENGINES = ENGINES.filter(e => e.construct !== 'TgiInferenceService');

if (PYTHON === undefined) {
  test('python3 is installed, so that the model download script is tested under it', () => {
    const message =
      '!!! The model download script was NOT run: python3 is not installed. Install it (apt-get install -y python3); .ci/run does this before the tests.';
    console.warn(message);
    if (process.env.CI) throw new Error(message);
  });
} else {
  describe.each(HUB_ENGINES)('$construct model download (python3)', e => {
    let work: string;
    beforeEach(() => {
      work = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-download-'));
      fs.mkdirSync(path.join(work, 'huggingface_hub'));
      fs.writeFileSync(path.join(work, 'huggingface_hub', '__init__.py'), FAKE_HUB);
    });
    afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

    /** Runs the init container's command as synthesized, against a repository of these files. */
    function download(
      files: string[],
      revision?: string,
    ): { ignore: string[]; revision: string | null; output: string; calls: any[] } {
      const { init } = synthEngine(e, revision ? { revision } : {});
      expect(init.command[0]).toBe('python3');
      const calls = path.join(work, 'calls.jsonl');
      fs.rmSync(calls, { force: true });
      const r = spawnSync(PYTHON!, init.command.slice(1), {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, PYTHONPATH: work, FAKE_FILES: JSON.stringify(files), FAKE_CALLS: calls },
      });
      expect(r.status).toBe(0);
      const recorded = fs
        .readFileSync(calls, 'utf8')
        .trim()
        .split('\n')
        .map(l => JSON.parse(l));
      const dl = recorded.find(c => c.download);
      expect(dl.download).toBe(BASE.modelId);
      return { ignore: dl.ignore, revision: dl.revision, output: r.stdout + r.stderr, calls: recorded };
    }

    test('a repository with safetensors and .bin weights: only the safetensors, as the engine loads them', () => {
      const { ignore, output } = download([
        'config.json',
        'tokenizer.json',
        'model-00001-of-00002.safetensors',
        'model.safetensors.index.json',
        'pytorch_model-00001-of-00002.bin',
        'flax_model.msgpack',
        'original/consolidated.00.pth',
      ]);
      expect(ignore).toEqual(
        expect.arrayContaining(['original/*', '*.bin', '*.pt', '*.pth', '*.msgpack', '*.h5', '*.onnx', '*.gguf']),
      );
      expect(ignore).not.toContain('*.safetensors');
      // Config and tokenizer files are never skipped: the server reads them offline.
      for (const p of ignore)
        expect(
          ['config.json', 'tokenizer.json', 'model.safetensors.index.json'].some(f =>
            new RegExp(`^${p.replace(/\./g, '\\.').replace(/\*/g, '.*')}$`).test(f),
          ),
        ).toBe(false);
      expect(output).toMatch(/weights \*\.safetensors/);
    });

    test('a repository with .bin weights only: the .bin files', () => {
      const { ignore } = download(['config.json', 'pytorch_model.bin', 'tf_model.h5']);
      expect(ignore).toContain('*.safetensors');
      expect(ignore).toContain('*.h5');
      expect(ignore).not.toContain('*.bin');
    });

    test('no loaded format at the top level: the engine looks for all three formats, and the download keeps them all', () => {
      const { ignore, output } = download([
        'config.json',
        'weights/model.safetensors',
        'weights/model.bin',
        'model.gguf',
      ]);
      expect(ignore).not.toContain('*.safetensors');
      expect(ignore).not.toContain('*.bin');
      expect(ignore).toContain('*.gguf');
      expect(output).toMatch(/weights none at the top level/);
    });

    test('the format is chosen from the top level, as vLLM lists it (a safetensors file in a subfolder does not count)', () => {
      expect(download(['pytorch_model.bin', 'onnx/model.safetensors']).ignore).toContain('*.safetensors');
    });

    test('the revision reaches both the listing and the download; none means the default branch', () => {
      const pinned = download(['model.safetensors'], 'abc123');
      expect(pinned.revision).toBe('abc123');
      expect(pinned.calls[0]).toEqual({ list: BASE.modelId, revision: 'abc123' });
      expect(download(['model.safetensors']).revision).toBeNull();
    });
  });
}
