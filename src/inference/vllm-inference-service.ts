import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { EngineTuning } from './engine';
import { VLLM } from './engines/vllm';
import { InferenceServiceProps, ServingWorkload } from './inference-service';
import { addAdapterDownloads, LoraAdapter, ResolvedAdapter, resolveAdapters } from './lora';
import { VllmQuantization } from './quantization';
import { MODEL_CACHE_PATH } from './inference-service';

export { VLLM_DEFAULT_IMAGE } from './engines/vllm';

/** Props of `VllmInferenceService`: the shared serving props and vLLM's own. */
export interface VllmInferenceServiceProps extends InferenceServiceProps {
  /**
   * `--max-model-len`: the context length (prompt plus output), at most the model's.
   * @default - the model's context length (config.json)
   */
  readonly maxModelLen?: number;
  /**
   * `--quantization`.
   * @default - from the checkpoint's config.json, else none
   */
  readonly quantization?: VllmQuantization;
  /**
   * `--served-model-name`: the names clients put in `model`. vLLM refuses requests naming another
   * model, so add `'tgi'` when migrating clients that sent TGI's placeholder name.
   * @default - the modelId
   */
  readonly servedModelNames?: string[];
  /**
   * `--max-num-seqs`: sequences per batch.
   * @default - vLLM's default for the GPU
   */
  readonly maxNumSeqs?: number;
  /**
   * `--gpu-memory-utilization`: the share of GPU memory vLLM takes (weights, activations, KV cache).
   * @default - vLLM's default (0.9)
   */
  readonly gpuMemoryUtilization?: number;
  /**
   * LoRA adapters loaded at start (`--enable-lora --lora-modules name=path`): downloaded into the model cache before
   * the server starts, each checked against `maxLoraRank`, then requested by `name` in the OpenAI `model` field.
   * @default - none
   */
  readonly loraAdapters?: LoraAdapter[];
  /**
   * `--max-loras`: adapters in one batch.
   * @default - the number of loraAdapters, so every adapter can share a batch (vLLM's own default is 1)
   */
  readonly maxLoras?: number;
  /**
   * `--max-lora-rank`: the largest adapter rank the server accepts, one of vLLM's 1, 8, 16, 32, 64, 128, 256, 320,
   * 512 (vllm/config/lora.py `MaxLoRARanks`); GPU memory for adapters is reserved for it.
   * @default 16 - vLLM's default
   */
  readonly maxLoraRank?: number;
}

const KEYS: ReadonlyArray<keyof VllmInferenceServiceProps> = [
  'maxModelLen',
  'quantization',
  'servedModelNames',
  'maxNumSeqs',
  'gpuMemoryUtilization',
  'loraAdapters',
  'maxLoras',
  'maxLoraRank',
];

/** vllm/config/lora.py: `MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]`, default 16. */
const VLLM_LORA_RANKS = [1, 8, 16, 32, 64, 128, 256, 320, 512];
const VLLM_DEFAULT_LORA_RANK = 16;

/**
 * vLLM's OpenAI-compatible server as a StatefulSet, with the same practice as every serving
 * construct here: `--shutdown-timeout` set from `drainTimeout` inside a grace period that covers
 * it (vLLM's default 0 aborts in-flight requests), weights downloaded in an init container, a
 * startup probe for model load, a PDB, a client Service stable across versions and engines,
 * `vllm:*` metrics, optional autoscaling on `vllm:num_requests_waiting`, and the published
 * image's non-root user (UID 2000), so the pod meets the restricted Pod Security Standard.
 */
export class VllmInferenceService extends ServingWorkload {
  /** The LoRA adapters' names, as clients request them. */
  readonly loraAdapterNames: string[];
  /** The names clients may put in `model`: the served model names and the adapters'. */
  readonly servedModelNames: string[];

  constructor(scope: Construct, id: string, props: VllmInferenceServiceProps) {
    let lora: { adapters: ResolvedAdapter[]; maxRank: number } = { adapters: [], maxRank: VLLM_DEFAULT_LORA_RANK };
    super(scope, id, props, {
      engine: VLLM,
      keys: KEYS,
      pool: (poolScope, poolId, poolProps) => new VllmInferenceService(poolScope, poolId, poolProps),
      tuning: v => {
        lora = vllmLora(v, props);
        return vllmTuning(v, props, lora.adapters, lora.maxRank);
      },
    });
    // Every rank of a group loads the adapters from its own disk.
    for (const t of this._podTemplates) addAdapterDownloads(t, lora.adapters, lora.maxRank);
    this.loraAdapterNames = lora.adapters.map(a => a.name);
    this.servedModelNames = [...(props.servedModelNames ?? [props.modelId]), ...this.loraAdapterNames];
  }
}

function vllmLora(v: Validator, props: VllmInferenceServiceProps): { adapters: ResolvedAdapter[]; maxRank: number } {
  const adapters = resolveAdapters(v, props.loraAdapters, {
    cachePath: MODEL_CACHE_PATH,
    name: props.name,
    version: props.version,
    baseModelId: props.modelId,
    servedNames: Array.isArray(props.servedModelNames) ? props.servedModelNames : [props.modelId],
  });
  if (adapters.length > 0 && props.kvCacheOffload?.lmcacheTiers !== undefined)
    v.fail(
      'kvCacheOffload',
      'must not be KvCacheOffload.lmcache() with loraAdapters: LMCache 0.5.6 keys its chunks by their tokens alone (token_database.py; its vLLM adapter knows no LoRA), so blocks computed under one adapter or the base model would be loaded for another. KvCacheOffload.cpu() keys them per adapter',
      'KvCacheOffload.lmcache()',
    );
  if (adapters.length === 0) {
    if (props.maxLoras !== undefined) v.fail('maxLoras', 'needs loraAdapters', props.maxLoras);
    if (props.maxLoraRank !== undefined) v.fail('maxLoraRank', 'needs loraAdapters', props.maxLoraRank);
  }
  const maxRank = props.maxLoraRank ?? VLLM_DEFAULT_LORA_RANK;
  if (!VLLM_LORA_RANKS.includes(maxRank))
    v.fail('maxLoraRank', `must be one of vLLM's ranks ${VLLM_LORA_RANKS.join(', ')}`, props.maxLoraRank);
  return { adapters, maxRank };
}

function vllmTuning(
  v: Validator,
  props: VllmInferenceServiceProps,
  adapters: readonly ResolvedAdapter[],
  maxRank: number,
): EngineTuning {
  const args: string[] = [];
  if (adapters.length > 0) {
    args.push('--enable-lora', '--lora-modules', ...adapters.map(a => `${a.name}=${a.path}`));
    args.push('--max-loras', String(v.wholeNumber('maxLoras', props.maxLoras ?? adapters.length, 1)));
    args.push('--max-lora-rank', String(maxRank));
  }
  if (props.maxModelLen !== undefined)
    args.push('--max-model-len', String(v.wholeNumber('maxModelLen', props.maxModelLen, 1)));
  if (props.quantization !== undefined) {
    args.push('--quantization', v.enumValue('quantization', props.quantization, VllmQuantization, 'VllmQuantization'));
    // The download fetches a GGUF file only for `org/name:QUANT`; a plain repository id gets safetensors.
    if (props.quantization === VllmQuantization.GGUF && !/:|^\//.test(String(props.modelId)))
      v.fail(
        'quantization',
        'GGUF needs the model as "org/name:QUANT" (the GGUF file of that quantization, which the download fetches) or an absolute path to a .gguf file',
        props.quantization,
      );
  }
  const names = v.stringArray('servedModelNames', props.servedModelNames);
  if (names !== undefined) {
    if (names.length === 0) v.fail('servedModelNames', 'must name at least one model', names);
    names.forEach((n, i) => v.word(`servedModelNames[${i}]`, n));
    if (new Set(names).size !== names.length) v.fail('servedModelNames', 'must not repeat a name', names);
    args.push('--served-model-name', ...names);
  }
  if (props.maxNumSeqs !== undefined)
    args.push('--max-num-seqs', String(v.wholeNumber('maxNumSeqs', props.maxNumSeqs, 1)));
  if (props.gpuMemoryUtilization !== undefined) {
    const u = props.gpuMemoryUtilization;
    if (typeof u !== 'number' || !(u > 0 && u <= 1))
      v.fail('gpuMemoryUtilization', 'must be a fraction above 0 and at most 1', u);
    args.push('--gpu-memory-utilization', String(u));
  }
  return { args, env: [] };
}
