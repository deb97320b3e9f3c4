import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { SglangInferenceService, VllmInferenceService, VllmInferenceServiceProps } from '../../src';
import { kubeletExpand } from '../../src/common/kubelet-expansion';
import { findOne, synthValid, testChart } from '../support/synth';
import {
  HUB_VERSIONS,
  hubInstalled,
  localDownload,
  missingVenvTest,
  repository,
  scratch,
  venvPython,
} from '../support/hub-download';
import { HubFile, StandInHub } from '../support/stand-in-hub';
import { flagValue } from './support';

const MODEL = 'org/model';
const ADAPTER = 'org/adapter';
const adapters = [
  { name: 'sql', modelId: ADAPTER },
  { name: 'chat', modelId: 'org/chat-adapter', revision: 'v2' },
];

function vllm(props: Partial<VllmInferenceServiceProps> = {}) {
  const chart = testChart('serving');
  const svc = new VllmInferenceService(chart, 'llm', { name: 'llm', modelId: MODEL, loraAdapters: adapters, ...props });
  const pod = findOne(synthValid(chart), 'StatefulSet').spec.template.spec;
  return { svc, pod, main: pod.containers[0] };
}

/** The values after a flag, up to the next flag. */
function flagValues(args: string[], flag: string): string[] {
  const i = args.indexOf(flag);
  if (i < 0) return [];
  const end = args.findIndex((a, j) => j > i && a.startsWith('--'));
  return args.slice(i + 1, end < 0 ? undefined : end);
}

describe('LoRA adapters', () => {
  test('vLLM: --enable-lora, each adapter by name at its path in the cache, --max-loras every adapter, rank 16', () => {
    const { main, pod, svc } = vllm();
    expect(main.args).toContain('--enable-lora');
    expect(flagValues(main.args, '--lora-modules')).toEqual(['sql=/data/lora/llm/sql', 'chat=/data/lora/llm/chat']);
    expect(flagValue(main.args, '--max-loras')).toBe('2');
    expect(flagValue(main.args, '--max-lora-rank')).toBe('16');
    expect(svc.loraAdapterNames).toEqual(['sql', 'chat']);
    // Each adapter is fetched by an init container after the base model's: all finish before the server starts.
    const init = pod.initContainers.map((c: any) => [c.name, c.command.slice(2)]);
    expect(init).toEqual([
      ['model-download', ['vllm', MODEL, '']],
      ['model-download-lora-0', ['vllm', ADAPTER, '', '/data/lora/llm/sql', '16']],
      ['model-download-lora-1', ['vllm', 'org/chat-adapter', 'v2', '/data/lora/llm/chat', '16']],
    ]);
    // The same script, env (offline off, credentials) and mounts as the base download.
    expect(pod.initContainers[1].command[1]).toBe(pod.initContainers[0].command[1]);
    expect(pod.initContainers[1].env).toEqual(pod.initContainers[0].env);
    expect(pod.initContainers[1].volumeMounts).toEqual(pod.initContainers[0].volumeMounts);
  });

  test('versions keep their own adapter links, so two versions on a shared cache never flip each other', () => {
    const { main } = vllm({ version: 2 });
    expect(flagValues(main.args, '--lora-modules')).toEqual([
      'sql=/data/lora/llm-v2/sql',
      'chat=/data/lora/llm-v2/chat',
    ]);
  });

  test('an adapter name may hold "/", ":" and dots within segments: its directory nests under the workload\'s', () => {
    const { main } = vllm({
      loraAdapters: [
        { name: 'org/sql.v1', modelId: ADAPTER },
        { name: 'llama:chat..2', modelId: 'org/chat' },
      ],
    });
    expect(flagValues(main.args, '--lora-modules')).toEqual([
      'org/sql.v1=/data/lora/llm/org/sql.v1',
      'llama:chat..2=/data/lora/llm/llama:chat..2',
    ]);
  });

  test('a local adapter path is loaded as is, with nothing downloaded', () => {
    const { main, pod } = vllm({ loraAdapters: [{ name: 'local', modelId: '/models/local-adapter' }] });
    expect(flagValues(main.args, '--lora-modules')).toEqual(['local=/models/local-adapter']);
    expect(pod.initContainers.map((c: any) => c.name)).toEqual(['model-download']);
  });

  test('SGLang: --lora-paths by name, its limits only when asked for', () => {
    const chart = testChart('serving');
    const svc = new SglangInferenceService(chart, 'sgl', {
      name: 'sgl',
      modelId: MODEL,
      loraAdapters: adapters,
      maxLorasPerBatch: 4,
      maxLoraRank: 64,
    });
    const pod = findOne(synthValid(chart), 'StatefulSet').spec.template.spec;
    const args = pod.containers[0].args;
    expect(flagValues(args, '--lora-paths')).toEqual(['sql=/data/lora/sgl/sql', 'chat=/data/lora/sgl/chat']);
    expect(flagValue(args, '--max-loras-per-batch')).toBe('4');
    expect(flagValue(args, '--max-lora-rank')).toBe('64');
    expect(pod.initContainers[1].command.slice(2)).toEqual(['sglang', ADAPTER, '', '/data/lora/sgl/sql', '64']);
    expect(svc.loraAdapterNames).toEqual(['sql', 'chat']);
    // SGLang selects an adapter by `<base>:<adapter>`; a bare adapter name gets the base model.
    expect(svc.servedModelNames).toEqual([MODEL, `${MODEL}:sql`, `${MODEL}:chat`]);
  });

  test('an adapter may share a name the base model no longer answers to', () => {
    // vLLM answers only to servedModelNames once they are set; SGLang serves adapters as `<served>:<name>`.
    expect(
      vllm({ servedModelNames: ['llama'], loraAdapters: [{ name: MODEL, modelId: ADAPTER }] }).svc.loraAdapterNames,
    ).toEqual([MODEL]);
    const sgl = new SglangInferenceService(testChart('serving'), 'sgl', {
      name: 'sgl',
      modelId: MODEL,
      loraAdapters: [{ name: MODEL, modelId: ADAPTER }],
    });
    expect(sgl.servedModelNames).toEqual([MODEL, `${MODEL}:${MODEL}`]);
  });

  test('SGLang: a served model name with ":" is refused, naming the prop that set it', () => {
    const make = (props: object) => () =>
      new SglangInferenceService(testChart('serving'), 'sgl', { name: 'sgl', modelId: MODEL, ...props });
    expect(make({ servedModelName: 'llama:8b' })).toThrow(
      /SglangInferenceService 'sgl': servedModelName must not contain ":" as the served model name: .*\(got "llama:8b"\)/,
    );
    expect(make({ modelId: '/models/llama:8b' })).toThrow(
      /'sgl': modelId must not contain ":" as the served model name: .*\(set servedModelName\) \(got "\/models\/llama:8b"\)/,
    );
    expect(make({ modelId: '/models/llama:8b', servedModelName: 'llama-8b' })).not.toThrow();
    const svc = new SglangInferenceService(testChart('serving'), 'ok', {
      name: 'sgl',
      modelId: MODEL,
      servedModelName: 'llama',
      loraAdapters: adapters,
    });
    expect(svc.servedModelNames).toEqual(['llama', 'llama:sql', 'llama:chat']);
  });

  test.each<[Partial<VllmInferenceServiceProps>, RegExp]>([
    [{ loraAdapters: [] }, /loraAdapters must list at least one adapter/],
    [{ loraAdapters: [adapters[0], adapters[0]] }, /loraAdapters\[1\]\.name must not repeat a name/],
    [{ loraAdapters: [{ name: MODEL, modelId: ADAPTER }] }, /loraAdapters\[0\]\.name must differ from the names/],
    [
      { servedModelNames: ['llama', 'sql'], loraAdapters: [{ name: 'sql', modelId: ADAPTER }] },
      /loraAdapters\[0\]\.name must differ from the names the base model is served by, .*\(got "sql"\)/,
    ],
    ...[
      ['a', 'a/b'],
      ['a/b', 'a'],
    ].map(([first, second]): [Partial<VllmInferenceServiceProps>, RegExp] => [
      {
        loraAdapters: [
          { name: first, modelId: ADAPTER },
          { name: second, modelId: 'org/other' },
        ],
      },
      new RegExp(
        `loraAdapters\\[1\\]\\.name must not be a path prefix of another adapter's name, or have one \\(${first}\\)`,
      ),
    ]),
    ...['a=b', 'a,b'].map((name): [Partial<VllmInferenceServiceProps>, RegExp] => [
      { loraAdapters: [{ name, modelId: ADAPTER }] },
      /loraAdapters\[0\]\.name must not contain "=" or ","/,
    ]),
    ...['.', '..', '../x', 'a/../../b', 'a//b', 'a/', '/a'].map(
      (name): [Partial<VllmInferenceServiceProps>, RegExp] => [
        { loraAdapters: [{ name, modelId: ADAPTER }] },
        /loraAdapters\[0\]\.name must not have an empty, "\." or "\.\." path segment/,
      ],
    ),
    [{ loraAdapters: [{ name: 'a', modelId: 'not a repo' }] }, /loraAdapters\[0\]\.modelId must be a hub id/],
    [{ loraAdapters: [{ name: 'a', modelId: '/x', revision: 'main' }] }, /loraAdapters\[0\]\.revision needs a hub/],
    [{ loraAdapters: [{ name: 'a', modelId: '/x=y' }] }, /loraAdapters\[0\]\.modelId must not contain "=" or ","/],
    [{ maxLoraRank: 24 }, /maxLoraRank must be one of vLLM's ranks 1, 8, 16, 32, 64, 128, 256, 320, 512/],
    [{ maxLoras: 0 }, /maxLoras/],
    [{ loraAdapters: undefined, maxLoras: 2 }, /maxLoras needs loraAdapters/],
    [{ modelId: '/models/base' }, /loraAdapters\[0\]\.modelId must be a local path when the base model is/],
    [{ extraArgs: ['--lora-modules', 'x=/y'] }, /extraArgs\[0\] must not set --lora-modules/],
  ])('vLLM refuses %j', (props, error) => {
    expect(() => vllm(props)).toThrow(error);
  });
});

// The adapter download, run as synthesized under the real huggingface_hub against a stand-in hub.
const adapterRepo = (rank: number): Record<string, HubFile> => ({
  '.gitattributes': { content: Buffer.from('*.safetensors filter=lfs\n'), lfs: false },
  'README.md': { content: Buffer.from('# adapter\n'), lfs: false },
  'adapter_config.json': {
    content: Buffer.from(JSON.stringify({ r: rank, peft_type: 'LORA', base_model_name_or_path: MODEL })),
    lfs: false,
  },
  'adapter_model.safetensors': {
    content: Buffer.from(Array.from({ length: 40_000 }, (_, i) => (i * 7) & 0xff)),
    lfs: true,
  },
});

function run(
  version: string,
  container: any,
  data: string,
  endpoint: string,
): Promise<{ status: number | null; output: string }> {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = kubeletExpand(e.value, env);
  for (const [k, v] of Object.entries(env)) env[k] = v.replace(/^\/data(?=\/|$)/, data);
  const argv = localDownload(
    container.command.map((a: string) => kubeletExpand(a, env).replace(/^\/data(?=\/|$)/, data)),
  );
  const child = spawn(venvPython(version), argv.slice(1), {
    env: {
      PATH: process.env.PATH!,
      ...env,
      HOSTNAME: 'replica-0',
      HF_ENDPOINT: endpoint,
      HF_HUB_DISABLE_TELEMETRY: '1',
      HF_HUB_DISABLE_PROGRESS_BARS: '1',
      DOWNLOAD_ATTEMPTS: '2',
      DOWNLOAD_BACKOFF_SECONDS: '0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', d => (output += d));
  child.stderr.on('data', d => (output += d));
  return new Promise(resolve => child.on('close', status => resolve({ status, output })));
}

const version = HUB_VERSIONS[HUB_VERSIONS.length - 1];
if (!hubInstalled(version)) {
  missingVenvTest(version);
} else {
  describe(`the adapter is in the cache before the server starts, huggingface_hub ${version}`, () => {
    let base: StandInHub;
    let data: string;
    beforeEach(async () => {
      base = new StandInHub(MODEL, repository());
      await base.start();
      data = scratch();
    });
    afterEach(async () => {
      await base.stop();
      fs.rmSync(data, { recursive: true, force: true });
    });

    test('the init containers fill the base model and the adapter; the server finds the adapter, offline, at the path it names', async () => {
      const adapter = new StandInHub(ADAPTER, adapterRepo(16));
      await adapter.start();
      try {
        const { pod, main } = vllm({ loraAdapters: [{ name: 'sql', modelId: ADAPTER }] });
        const [baseInit, adapterInit] = pod.initContainers;
        expect((await run(version, baseInit, data, base.endpoint)).status).toBe(0);
        const cold = await run(version, adapterInit, data, adapter.endpoint);
        expect(cold.output).toMatch(/model-download: done/);
        expect(cold.status).toBe(0);
        // The path the server is started with, on the cache volume.
        const served = flagValues(main.args, '--lora-modules')[0]
          .split('=')[1]
          .replace(/^\/data/, data);
        for (const f of ['adapter_config.json', 'adapter_model.safetensors'])
          expect(fs.readFileSync(path.join(served, f)).equals(adapter.files[f].content)).toBe(true);
        expect(fs.realpathSync(served)).toBe(
          fs.realpathSync(path.join(data, 'hub', 'models--org--adapter', 'snapshots', adapter.sha)),
        );
        // A restart finds it complete and relinks it with no network call.
        const before = adapter.requests.length;
        const warm = await run(version, adapterInit, data, 'http://127.0.0.1:9');
        expect(warm.status).toBe(0);
        expect(adapter.requests.length).toBe(before);
        expect(fs.existsSync(path.join(served, 'adapter_model.safetensors'))).toBe(true);
      } finally {
        await adapter.stop();
      }
    });

    test("an adapter above the server's rank fails its init container with the reason: the server never starts on it", async () => {
      const adapter = new StandInHub(ADAPTER, adapterRepo(64));
      await adapter.start();
      try {
        const { pod } = vllm({ loraAdapters: [{ name: 'sql', modelId: ADAPTER }] });
        const r = await run(version, pod.initContainers[1], data, adapter.endpoint);
        expect(r.status).not.toBe(0);
        expect(r.output).toMatch(/has LoRA rank 64, above the server's maximum 16 \(raise maxLoraRank\)/);
        expect(fs.existsSync(path.join(data, 'lora', 'llm', 'sql'))).toBe(false);
      } finally {
        await adapter.stop();
      }
    });
  });
}
