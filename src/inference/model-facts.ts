import { Validator } from '../validation/validate';
import { ServingEngine } from './engine';

// The attention heads of well-known models, so that a tensor-parallel size the engine cannot shard
// them over is refused at synth, not in a crash loop once the weights have downloaded.

/** A model's attention heads, as its config.json states them. */
export interface ModelArchitecture {
  /** The query heads per attention layer (config.json `num_attention_heads`), a whole number >= 1. */
  readonly attentionHeads: number;
  /**
   * The key/value heads per attention layer (config.json `num_key_value_heads`): fewer than `attentionHeads` for
   * grouped-query attention, and a divisor of it.
   * @default - attentionHeads (multi-head attention, as transformers reads a config without the field)
   */
  readonly kvHeads?: number;
}

/**
 * Heads of well-known Hugging Face models, from each repository's config.json (`num_attention_heads`,
 * `num_key_value_heads`). A row lists every id that shares the config: a base model and its `-Instruct`
 * variant only where both have the same one, and a repository's earlier name (`Meta-Llama-3.1-...`,
 * which the hub redirects). Ids match case-insensitively, as the hub resolves them.
 */
const MODEL_HEADS: ReadonlyArray<{
  readonly ids: readonly string[];
  readonly attentionHeads: number;
  readonly kvHeads: number;
}> = [
  {
    ids: [
      'meta-llama/Llama-3.1-8B',
      'meta-llama/Llama-3.1-8B-Instruct',
      'meta-llama/Meta-Llama-3.1-8B',
      'meta-llama/Meta-Llama-3.1-8B-Instruct',
    ],
    attentionHeads: 32,
    kvHeads: 8,
  },
  {
    ids: [
      'meta-llama/Llama-3.1-70B',
      'meta-llama/Llama-3.1-70B-Instruct',
      'meta-llama/Meta-Llama-3.1-70B',
      'meta-llama/Meta-Llama-3.1-70B-Instruct',
    ],
    attentionHeads: 64,
    kvHeads: 8,
  },
  {
    ids: [
      'meta-llama/Llama-3.1-405B',
      'meta-llama/Llama-3.1-405B-Instruct',
      'meta-llama/Llama-3.1-405B-FP8',
      'meta-llama/Llama-3.1-405B-Instruct-FP8',
      'meta-llama/Meta-Llama-3.1-405B',
      'meta-llama/Meta-Llama-3.1-405B-Instruct',
    ],
    attentionHeads: 128,
    kvHeads: 8,
  },
  { ids: ['meta-llama/Llama-3.3-70B-Instruct'], attentionHeads: 64, kvHeads: 8 },
  { ids: ['Qwen/Qwen2.5-0.5B', 'Qwen/Qwen2.5-0.5B-Instruct'], attentionHeads: 14, kvHeads: 2 },
  { ids: ['Qwen/Qwen2.5-7B', 'Qwen/Qwen2.5-7B-Instruct'], attentionHeads: 28, kvHeads: 4 },
  { ids: ['Qwen/Qwen2.5-72B', 'Qwen/Qwen2.5-72B-Instruct'], attentionHeads: 64, kvHeads: 8 },
  { ids: ['Qwen/Qwen3-8B'], attentionHeads: 32, kvHeads: 8 },
  { ids: ['mistralai/Mistral-7B-v0.3', 'mistralai/Mistral-7B-Instruct-v0.3'], attentionHeads: 32, kvHeads: 8 },
  { ids: ['mistralai/Mixtral-8x7B-v0.1', 'mistralai/Mixtral-8x7B-Instruct-v0.1'], attentionHeads: 32, kvHeads: 8 },
];

const BY_ID = new Map(
  MODEL_HEADS.flatMap(row =>
    row.ids.map(id => [id.toLowerCase(), { attentionHeads: row.attentionHeads, kvHeads: row.kvHeads }] as const),
  ),
);

/** The heads of a model the library knows (case-insensitive hub id), else undefined. */
export function knownModelHeads(modelId: string): Required<ModelArchitecture> | undefined {
  return BY_ID.get(modelId.toLowerCase());
}

/** `modelArchitecture`, checked: whole head counts, KV heads that divide the query heads. */
export function modelArchitectureOf(
  v: Validator,
  value: ModelArchitecture | undefined,
): Required<ModelArchitecture> | undefined {
  if (value === undefined) return undefined;
  v.knownProps('modelArchitecture', value, ['attentionHeads', 'kvHeads']);
  const attentionHeads = v.wholeNumber('modelArchitecture.attentionHeads', value.attentionHeads, 1);
  const kvHeads = v.wholeNumber('modelArchitecture.kvHeads', value.kvHeads ?? attentionHeads, 1);
  if (kvHeads > attentionHeads || attentionHeads % kvHeads !== 0)
    v.fail(
      'modelArchitecture.kvHeads',
      `must divide attentionHeads (${attentionHeads}): each key/value head serves a whole group of query heads`,
      kvHeads,
    );
  return { attentionHeads, kvHeads };
}

/** What the head check needs: the engine, the model, its declared heads, and the tensor-parallel size. */
export interface TensorParallelHeads {
  readonly engine: ServingEngine;
  readonly modelId: string;
  readonly declared?: Required<ModelArchitecture>;
  /** GPUs per pod (gpusPerReplica). */
  readonly gpus: number;
  /** The engine's tensor-parallel size: gpus, or gpus x nodes where tensor parallel spans a group. */
  readonly tensorParallel: number;
  readonly nodes: number;
}

/**
 * Refuses a tensor-parallel size the engine cannot shard the model's heads over: it must divide the
 * attention heads, and (engine by engine) divide the KV heads, or be a multiple of them where the
 * engine replicates KV heads across ranks. The heads are the declared ones, else the table's; a model
 * neither names is not checked. Where tensor parallel spans a group (SGLang), `nodes` is named when
 * gpusPerReplica alone would shard the heads.
 */
export function checkTensorParallelHeads(v: Validator, o: TensorParallelHeads): void {
  const rule = headRule(o, o.tensorParallel);
  if (rule === undefined) return;
  if (o.tensorParallel === o.gpus || headRule(o, o.gpus) !== undefined) v.fail('gpusPerReplica', rule, o.gpus);
  v.fail('nodes', `times gpusPerReplica (${o.gpus}), the tensor-parallel size, ${rule}`, o.nodes);
}

/**
 * Why a tensor-parallel size cannot shard the model's heads as the engine does (the rule, with the engine's
 * reason), or undefined when it can or the heads are unknown.
 */
export function headRule(
  o: Pick<TensorParallelHeads, 'engine' | 'modelId' | 'declared'>,
  tensorParallel: number,
): string | undefined {
  const heads = o.declared ?? knownModelHeads(o.modelId);
  if (heads === undefined) return undefined;
  const { attentionHeads, kvHeads } = heads;
  const { replicatesKvHeads, why } = o.engine.headSharding;
  const tp = tensorParallel;
  if (attentionHeads % tp === 0 && (replicatesKvHeads && tp >= kvHeads ? tp % kvHeads === 0 : kvHeads % tp === 0))
    return undefined;
  const model = o.declared ? `${o.modelId} (modelArchitecture)` : o.modelId;
  const rule =
    kvHeads === attentionHeads
      ? `must divide the ${attentionHeads} attention heads of ${model}`
      : replicatesKvHeads
        ? `must divide the ${attentionHeads} attention heads of ${model}, and divide its ${kvHeads} KV heads or be a multiple of them`
        : `must divide the ${attentionHeads} attention heads and the ${kvHeads} KV heads of ${model}`;
  return `${rule} (${why})`;
}
