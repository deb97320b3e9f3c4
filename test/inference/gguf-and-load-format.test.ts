import { SglangQuantization, VllmQuantization } from '../../src';
import { ENGINES, synthEngine } from './support';

const vllm = ENGINES.find(e => e.construct === 'VllmInferenceService')!;
const sglang = ENGINES.find(e => e.construct === 'SglangInferenceService')!;
const tgi = ENGINES.find(e => e.construct === 'TgiInferenceService')!;

describe('GGUF through the construct', () => {
  test("vLLM takes 'org/name:QUANT': the server and the download get it as written", () => {
    const { main, pod } = synthEngine(vllm, {
      modelId: 'Qwen/Qwen2.5-7B-Instruct-GGUF:Q4_K_M',
      quantization: VllmQuantization.GGUF,
    } as any);
    expect(main.args[0]).toBe('Qwen/Qwen2.5-7B-Instruct-GGUF:Q4_K_M');
    const download = pod.initContainers.find((c: any) => c.name === 'model-download');
    expect(download.command.slice(-3)).toEqual(['vllm', 'Qwen/Qwen2.5-7B-Instruct-GGUF:Q4_K_M', '']);
  });

  test.each([
    [vllm, 'org/name:Q4*K', 'must name a GGUF quantization after ":"'],
    [vllm, 'org/name:', 'must name a GGUF quantization after ":"'],
    [vllm, 'org/na--me:Q4_K_M', 'must be a hub repository id'],
    [
      sglang,
      'org/name-GGUF:Q4_K_M',
      `must be a hub repository id or an absolute path: the "repo:QUANT" GGUF form is vLLM's, SglangInferenceService does not take it`,
    ],
    [
      tgi,
      'org/name-GGUF:Q4_K_M',
      `must be a hub repository id or an absolute path: the "repo:QUANT" GGUF form is vLLM's, TgiInferenceService does not take it`,
    ],
  ])('%#: the model id is refused', (e, modelId, message) => {
    expect(() => synthEngine(e, { modelId })).toThrow(`${e.construct} 'svc': modelId ${message}`);
  });

  test('GGUF quantization with a repository the download would fill with safetensors is refused', () => {
    expect(() => synthEngine(vllm, { quantization: VllmQuantization.GGUF } as any)).toThrow(
      `VllmInferenceService 'svc': quantization GGUF needs the model as "org/name:QUANT"`,
    );
    expect(() => synthEngine(sglang, { quantization: SglangQuantization.GGUF } as any)).toThrow(
      `SglangInferenceService 'svc': quantization GGUF needs modelId to be an absolute path to a .gguf file`,
    );
    expect(
      synthEngine(sglang, { modelId: '/models/m.Q4_K_M.gguf', quantization: SglangQuantization.GGUF } as any).main.args,
    ).toContain('gguf');
  });
});

describe.each([vllm, sglang])('$construct: --load-format the download serves', e => {
  test.each([['--load-format', 'auto'], ['--load-format=safetensors'], ['--load-format', 'dummy']])(
    '%p is accepted',
    (...extraArgs) => {
      expect(synthEngine(e, { extraArgs }).main.args).toEqual(expect.arrayContaining(extraArgs));
    },
  );

  test.each([
    [['--load-format', 'pt'], 1, 'pt'],
    [['--load-format=npcache'], 0, 'npcache'],
    [['--load-format', 'runai_streamer'], 1, 'runai_streamer'],
  ])('%p is refused', (extraArgs, index, value) => {
    expect(() => synthEngine(e, { extraArgs })).toThrow(
      `${e.construct} 'svc': extraArgs[${index}] must be a --load-format the download serves`,
    );
    expect(() => synthEngine(e, { extraArgs })).toThrow(`would not find the files ${value} reads`);
  });
});
