import { ENGINES, synthEngine } from './support';

// The server runs with HF_HUB_OFFLINE=1: a flag naming a hub repository (a LoRA adapter, a tokenizer)
// would fail at start, so each such value must be an absolute path.
const cases: Record<string, { flag: string; accepted: string[][]; refused: [string[], number, string][] }> = {
  VllmInferenceService: {
    flag: '--lora-modules',
    accepted: [
      ['--enable-lora', '--lora-modules', 'sql=/adapters/sql', 'chat=/adapters/chat'],
      ['--lora-modules', '{"name": "sql", "path": "/adapters/sql"}'],
      ['--tokenizer=/tokenizers/llama'],
    ],
    refused: [
      [['--enable-lora', '--lora-modules', 'sql=/adapters/sql', 'chat=org/chat-lora'], 3, 'org/chat-lora'],
      [['--lora-modules', '{"name": "sql", "path": "org/sql-lora"}'], 1, 'org/sql-lora'],
      [['--tokenizer=org/tokenizer'], 0, 'org/tokenizer'],
    ],
  },
  SglangInferenceService: {
    flag: '--lora-paths',
    accepted: [
      ['--lora-paths', '/adapters/a', 'b=/adapters/b', '--max-loras-per-batch', '2'],
      ['--lora-paths', '{"lora_name": "a", "lora_path": "/adapters/a", "pinned": true}'],
    ],
    refused: [
      [['--lora-paths', '/adapters/a', 'winddude/wizardLM-LlaMA-LoRA-7B'], 2, 'winddude/wizardLM-LlaMA-LoRA-7B'],
      [['--lora-paths', '{"lora_name": "a", "lora_path": "org/a"}'], 1, 'org/a'],
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
