import { ENGINES, synthEngine } from './support';

// The server runs with HF_HUB_OFFLINE=1: a flag naming a hub repository (a tokenizer, a draft model, TGI's LoRA
// adapters) would fail at start, so each such value must be an absolute path. vLLM's and SGLang's LoRA flags belong to
// the loraAdapters prop, which downloads hub adapters into the cache (test/inference/lora.test.ts).
const cases: Record<string, { flag: string; accepted: string[][]; refused: [string[], number, string][] }> = {
  VllmInferenceService: {
    flag: '--tokenizer',
    accepted: [['--tokenizer=/tokenizers/llama'], ['--tokenizer', '/tokenizers/llama']],
    refused: [
      [['--tokenizer=org/tokenizer'], 0, 'org/tokenizer'],
      [['--tokenizer', 'org/tokenizer'], 1, 'org/tokenizer'],
    ],
  },
  SglangInferenceService: {
    flag: '--speculative-draft-model-path',
    accepted: [
      ['--tokenizer-path', '/tokenizers/llama'],
      ['--speculative-draft-model-path', '/drafts/a'],
    ],
    refused: [
      [['--tokenizer-path', 'org/tokenizer'], 1, 'org/tokenizer'],
      [['--speculative-draft-model-path', 'org/draft'], 1, 'org/draft'],
    ],
  },
  TgiInferenceService: {
    flag: '--lora-adapters',
    accepted: [['--lora-adapters=/adapters/a,/adapters/b']],
    refused: [[['--lora-adapters=/adapters/a,repo/adapter2'], 0, 'repo/adapter2']],
  },
};

describe.each(ENGINES)('$construct: model references in extraArgs work offline', e => {
  const c = cases[e.construct];

  test.each(c.accepted)('absolute paths are accepted: %p', (...extraArgs) => {
    expect(synthEngine(e, { extraArgs }).main.args ?? []).toEqual(expect.arrayContaining(extraArgs));
  });

  test.each(c.refused)('a hub id is refused: %p', (extraArgs, index, id) => {
    expect(() => synthEngine(e, { extraArgs })).toThrow(`${e.construct} 'svc': extraArgs[${index}] must name a`);
    expect(() => synthEngine(e, { extraArgs })).toThrow(`so "${id}" is never fetched from the hub`);
  });
});

describe('TGI reads --lora-adapters from LORA_ADAPTERS too', () => {
  const tgi = ENGINES.find(e => e.construct === 'TgiInferenceService')!;
  test('a hub id in env.LORA_ADAPTERS is refused; absolute paths are accepted', () => {
    expect(() => synthEngine(tgi, { env: { LORA_ADAPTERS: 'repo/adapter1' } })).toThrow(
      `TgiInferenceService 'svc': env.LORA_ADAPTERS must name a LoRA adapter by an absolute path`,
    );
    expect(synthEngine(tgi, { env: { LORA_ADAPTERS: '/adapters/a,/adapters/b' } }).env.LORA_ADAPTERS).toBe(
      '/adapters/a,/adapters/b',
    );
  });
});
