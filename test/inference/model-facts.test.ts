import { Size } from 'cdk8s';
import { SglangInferenceService, VllmInferenceService } from '../../src';
import { knownModelHeads } from '../../src/inference/model-facts';
import { synthValid, testChart } from '../support/synth';
import { ENGINES, synthEngine } from './support';

const LLAMA_8B = 'meta-llama/Llama-3.1-8B-Instruct';
const QWEN_7B = 'Qwen/Qwen2.5-7B-Instruct';

/** Each engine's rule for the heads, as its message states it. */
const SHARDING: Record<string, { replicates: boolean; why: string }> = {
  TgiInferenceService: {
    replicates: false,
    why: 'TGI splits both across its shards, NUM_SHARD, and replicates no KV head',
  },
  VllmInferenceService: {
    replicates: true,
    why: 'vLLM shards the heads across tensor-parallel ranks, replicating KV heads when the ranks outnumber them',
  },
  SglangInferenceService: {
    replicates: true,
    why: 'SGLang shards the heads across tensor-parallel ranks, replicating KV heads when the ranks outnumber them',
  },
};

/** The refusal of a tensor-parallel size for a model of `heads` attention heads and `kv` KV heads. */
function headsRule(construct: string, model: string, heads: number, kv: number): string {
  const { replicates, why } = SHARDING[construct];
  const rule = replicates
    ? `must divide the ${heads} attention heads of ${model}, and divide its ${kv} KV heads or be a multiple of them`
    : `must divide the ${heads} attention heads and the ${kv} KV heads of ${model}`;
  return `${rule} (${why})`;
}

describe('the heads of well-known models', () => {
  test("each model's config.json figures, base and -Instruct alike where they share a config", () => {
    expect(knownModelHeads('meta-llama/Llama-3.1-8B')).toEqual({ attentionHeads: 32, kvHeads: 8 });
    expect(knownModelHeads(LLAMA_8B)).toEqual({ attentionHeads: 32, kvHeads: 8 });
    expect(knownModelHeads('meta-llama/Llama-3.1-70B-Instruct')).toEqual({ attentionHeads: 64, kvHeads: 8 });
    expect(knownModelHeads('meta-llama/Llama-3.1-405B')).toEqual({ attentionHeads: 128, kvHeads: 8 });
    expect(knownModelHeads('meta-llama/Llama-3.3-70B-Instruct')).toEqual({ attentionHeads: 64, kvHeads: 8 });
    expect(knownModelHeads(QWEN_7B)).toEqual({ attentionHeads: 28, kvHeads: 4 });
    expect(knownModelHeads('Qwen/Qwen2.5-72B-Instruct')).toEqual({ attentionHeads: 64, kvHeads: 8 });
    expect(knownModelHeads('Qwen/Qwen2.5-0.5B-Instruct')).toEqual({ attentionHeads: 14, kvHeads: 2 });
    expect(knownModelHeads('Qwen/Qwen3-8B')).toEqual({ attentionHeads: 32, kvHeads: 8 });
    expect(knownModelHeads('mistralai/Mistral-7B-Instruct-v0.3')).toEqual({ attentionHeads: 32, kvHeads: 8 });
    expect(knownModelHeads('mistralai/Mixtral-8x7B-Instruct-v0.1')).toEqual({ attentionHeads: 32, kvHeads: 8 });
  });

  test('ids match case-insensitively, as the hub resolves them; others are unknown', () => {
    expect(knownModelHeads('qwen/qwen2.5-7b-instruct')).toEqual({ attentionHeads: 28, kvHeads: 4 });
    expect(knownModelHeads('META-LLAMA/LLAMA-3.1-8B-INSTRUCT')).toEqual({ attentionHeads: 32, kvHeads: 8 });
    expect(knownModelHeads('org/house-model')).toBeUndefined();
    expect(knownModelHeads('Qwen/Qwen2.5-7B-Instruct-AWQ')).toBeUndefined();
    expect(knownModelHeads('/models/llama')).toBeUndefined();
  });
});

describe.each(ENGINES)('$construct: the tensor-parallel size splits the heads of a known model', e => {
  test('Llama-3.1-8B (32 heads, 8 KV heads): 3 is refused, 4 and 8 are accepted', () => {
    expect(() => synthEngine(e, { modelId: LLAMA_8B, gpusPerReplica: 3 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, LLAMA_8B, 32, 8)} (got 3)`,
    );
    for (const gpus of [4, 8])
      expect(e.setting(synthEngine(e, { modelId: LLAMA_8B, gpusPerReplica: gpus }).main, 'tp')).toBe(String(gpus));
  });

  test('Qwen2.5-7B (28 heads, 4 KV heads): 8 is refused (28 % 8 = 4), 4 and 2 are accepted', () => {
    expect(() => synthEngine(e, { modelId: QWEN_7B, gpusPerReplica: 8 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, QWEN_7B, 28, 4)} (got 8)`,
    );
    for (const gpus of [2, 4])
      expect(e.setting(synthEngine(e, { modelId: QWEN_7B, gpusPerReplica: gpus }).main, 'tp')).toBe(String(gpus));
  });

  test('the id matches whatever its case', () => {
    expect(() => synthEngine(e, { modelId: 'qwen/qwen2.5-7b-instruct', gpusPerReplica: 8 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, 'qwen/qwen2.5-7b-instruct', 28, 4)} (got 8)`,
    );
  });

  test('Qwen2.5-0.5B (14 heads, 2 KV heads): 7 divides the heads but not the KV heads, and is refused', () => {
    const model = 'Qwen/Qwen2.5-0.5B-Instruct';
    expect(() => synthEngine(e, { modelId: model, gpusPerReplica: 7 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, model, 14, 2)} (got 7)`,
    );
    expect(e.setting(synthEngine(e, { modelId: model, gpusPerReplica: 2 }).main, 'tp')).toBe('2');
  });

  test('more ranks than KV heads: vLLM and SGLang replicate them, TGI refuses', () => {
    const model = 'meta-llama/Llama-3.1-70B-Instruct';
    const props = { modelId: model, gpusPerReplica: 16, maxGpusPerNode: 16 };
    if (SHARDING[e.construct].replicates) expect(e.setting(synthEngine(e, props).main, 'tp')).toBe('16');
    else
      expect(() => synthEngine(e, props)).toThrow(
        `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, model, 64, 8)} (got 16)`,
      );
  });
});

describe.each(ENGINES)('$construct: modelArchitecture declares the heads of a model the library does not know', e => {
  const house = 'org/house-13B';

  test('an unknown model without a declaration is not checked', () => {
    expect(e.setting(synthEngine(e, { modelId: house, gpusPerReplica: 3 }).main, 'tp')).toBe('3');
  });

  test('declared heads are enforced like known ones', () => {
    const modelArchitecture = { attentionHeads: 40, kvHeads: 8 };
    expect(() => synthEngine(e, { modelId: house, modelArchitecture, gpusPerReplica: 3 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, `${house} (modelArchitecture)`, 40, 8)} (got 3)`,
    );
    expect(e.setting(synthEngine(e, { modelId: house, modelArchitecture, gpusPerReplica: 4 }).main, 'tp')).toBe('4');
    // A local path has no hub id to look up; its declaration is checked all the same.
    expect(() => synthEngine(e, { modelId: '/models/house', modelArchitecture, gpusPerReplica: 3 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica ${headsRule(e.construct, '/models/house (modelArchitecture)', 40, 8)} (got 3)`,
    );
  });

  test('without kvHeads the model has as many KV heads as attention heads', () => {
    const modelArchitecture = { attentionHeads: 20 };
    expect(() => synthEngine(e, { modelId: house, modelArchitecture, gpusPerReplica: 8 })).toThrow(
      `${e.construct} 'svc': gpusPerReplica must divide the 20 attention heads of ${house} (modelArchitecture) (${SHARDING[e.construct].why}) (got 8)`,
    );
    expect(e.setting(synthEngine(e, { modelId: house, modelArchitecture, gpusPerReplica: 4 }).main, 'tp')).toBe('4');
  });

  test('a declaration replaces the figures of a known model', () => {
    const modelArchitecture = { attentionHeads: 32, kvHeads: 8 };
    expect(e.setting(synthEngine(e, { modelId: QWEN_7B, modelArchitecture, gpusPerReplica: 8 }).main, 'tp')).toBe('8');
  });

  test('the declaration itself: whole head counts, KV heads dividing the attention heads', () => {
    const refused = (modelArchitecture: unknown, message: string) =>
      expect(() => synthEngine(e, { modelId: house, modelArchitecture: modelArchitecture as any })).toThrow(
        `${e.construct} 'svc': ${message}`,
      );
    refused({ attentionHeads: 0 }, 'modelArchitecture.attentionHeads must be a whole number >= 1 (got 0)');
    refused({ attentionHeads: 1.5 }, 'modelArchitecture.attentionHeads must be a whole number >= 1 (got 1.5)');
    refused({ attentionHeads: 32, kvHeads: 0 }, 'modelArchitecture.kvHeads must be a whole number >= 1 (got 0)');
    refused(
      { attentionHeads: 32, kvHeads: 5 },
      'modelArchitecture.kvHeads must divide attentionHeads (32): each key/value head serves a whole group of query heads (got 5)',
    );
    refused(
      { attentionHeads: 8, kvHeads: 16 },
      'modelArchitecture.kvHeads must divide attentionHeads (8): each key/value head serves a whole group of query heads (got 16)',
    );
    refused(
      { attentionHeads: 32, kvHead: 8 },
      "modelArchitecture.kvHead is not a known prop; did you mean 'kvHeads'? (known: attentionHeads, kvHeads) (got 8)",
    );
    refused(32, 'modelArchitecture must be an object (got 32)');
  });
});

describe('a multi-node group: the tensor-parallel size the engine is given', () => {
  const group = {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-405B-Instruct',
    modelSize: Size.gibibytes(800),
    gpusPerReplica: 8,
  };

  test('vLLM: tensor parallel within a pod, pipeline parallel across 3 nodes; the heads split over 8', () => {
    const chart = testChart('ml');
    new VllmInferenceService(chart, 'llm', { ...group, nodes: 3 });
    expect(synthValid(chart).length).toBeGreaterThan(0);
  });

  test('SGLang: tensor parallel over the group, 8 x 3 = 24 ranks, does not divide 128 heads; 8 x 2 does', () => {
    expect(() => new SglangInferenceService(testChart('ml'), 'llm', { ...group, nodes: 3 })).toThrow(
      `SglangInferenceService 'llm': nodes times gpusPerReplica (8), the tensor-parallel size, ${headsRule('SglangInferenceService', group.modelId, 128, 8)} (got 3)`,
    );
    const chart = testChart('ml');
    new SglangInferenceService(chart, 'llm', { ...group, nodes: 2 });
    expect(synthValid(chart).length).toBeGreaterThan(0);
  });

  test('SGLang: gpusPerReplica is named when no node count could split the heads', () => {
    expect(() => new SglangInferenceService(testChart('ml'), 'llm', { ...group, gpusPerReplica: 3, nodes: 2 })).toThrow(
      `SglangInferenceService 'llm': gpusPerReplica ${headsRule('SglangInferenceService', group.modelId, 128, 8)} (got 3)`,
    );
  });
});
