import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { EngineTuning } from './engine';
import { SGLANG, SGLANG_ADAPTER_SEPARATOR } from './engines/sglang';
import { InferenceServiceProps, ServingWorkload } from './inference-service';
import { addAdapterDownloads, LoraAdapter, ResolvedAdapter, resolveAdapters } from './lora';
import { SglangQuantization } from './quantization';
import { MODEL_CACHE_PATH } from './inference-service';

export { SGLANG_DEFAULT_IMAGE } from './engines/sglang';

/** Props of `SglangInferenceService`: the shared serving props and SGLang's own. */
export interface SglangInferenceServiceProps extends InferenceServiceProps {
  /**
   * `--context-length`: prompt plus output, at most the model's.
   * @default - the model's context length (config.json)
   */
  readonly contextLength?: number;
  /**
   * `--quantization`.
   * @default - from the checkpoint's config.json, else none
   */
  readonly quantization?: SglangQuantization;
  /**
   * `--served-model-name`: the name clients put in `model`.
   * @default - the modelId
   */
  readonly servedModelName?: string;
  /**
   * `--max-running-requests`.
   * @default - SGLang's default, from the KV cache size
   */
  readonly maxRunningRequests?: number;
  /**
   * `--mem-fraction-static`: the share of GPU memory for weights and KV cache.
   * @default - SGLang's default for the GPU
   */
  readonly memFractionStatic?: number;
  /**
   * LoRA adapters loaded at start (`--lora-paths name=path`, which enables LoRA): downloaded into the model cache
   * before the server starts, and checked against `maxLoraRank` when it is set.
   * @default - none
   */
  readonly loraAdapters?: LoraAdapter[];
  /**
   * `--max-loras-per-batch`: adapters in one batch; GPU memory is reserved for them.
   * @default - SGLang's default (8)
   */
  readonly maxLorasPerBatch?: number;
  /**
   * `--max-lora-rank`: the largest adapter rank the server accepts.
   * @default - SGLang infers it from the adapters it loads at start
   */
  readonly maxLoraRank?: number;
}

const KEYS: ReadonlyArray<keyof SglangInferenceServiceProps> = [
  'contextLength',
  'quantization',
  'servedModelName',
  'maxRunningRequests',
  'memFractionStatic',
  'loraAdapters',
  'maxLorasPerBatch',
  'maxLoraRank',
];

/**
 * SGLang's server as a StatefulSet with the same practice as every serving construct here: a
 * drain bounded by the grace period (SGLang drains without a timeout of its own, and its /health
 * turns 503 while it drains), weights downloaded in an init container, a startup probe for model
 * load, a PDB, a client Service stable across versions and engines, metrics (`--enable-metrics`),
 * and optional autoscaling on `sglang:num_queue_reqs`. The image runs as root (baseline).
 */
export class SglangInferenceService extends ServingWorkload {
  /** The LoRA adapters' names (`--lora-paths name=path`); clients request one as `<served model name>:<name>`. */
  readonly loraAdapterNames: string[];
  /**
   * The names clients may put in `model`: the served model name, and `<served model name>:<adapter>` for each
   * adapter. SGLang's OpenAI API selects an adapter only by that form; a bare adapter name is served by the base
   * model, without an error (openai/serving_base.py `_resolve_lora_path`, sgl-project/sglang#11570).
   */
  readonly servedModelNames: string[];

  constructor(scope: Construct, id: string, props: SglangInferenceServiceProps) {
    let adapters: ResolvedAdapter[] = [];
    super(scope, id, props, {
      engine: SGLANG,
      keys: KEYS,
      pool: (poolScope, poolId, poolProps) => new SglangInferenceService(poolScope, poolId, poolProps),
      tuning: v => {
        adapters = resolveAdapters(v, props.loraAdapters, {
          cachePath: MODEL_CACHE_PATH,
          name: props.name,
          version: props.version,
          baseModelId: props.modelId,
        });
        return sglangTuning(v, props, adapters);
      },
    });
    // Every rank of a group loads the adapters from its own disk.
    for (const t of this._podTemplates) addAdapterDownloads(t, adapters, props.maxLoraRank);
    this.loraAdapterNames = adapters.map(a => a.name);
    const served = servedNameOf(props);
    this.servedModelNames = [served, ...this.loraAdapterNames.map(a => `${served}${SGLANG_ADAPTER_SEPARATOR}${a}`)];
  }
}

/** The name SGLang serves the base model under: `--served-model-name`, else the model path. */
const servedNameOf = (props: SglangInferenceServiceProps) => props.servedModelName ?? props.modelId;

function sglangTuning(
  v: Validator,
  props: SglangInferenceServiceProps,
  adapters: readonly ResolvedAdapter[],
): EngineTuning {
  const args: string[] = [];
  if (adapters.length === 0) {
    if (props.maxLorasPerBatch !== undefined) v.fail('maxLorasPerBatch', 'needs loraAdapters', props.maxLorasPerBatch);
    if (props.maxLoraRank !== undefined) v.fail('maxLoraRank', 'needs loraAdapters', props.maxLoraRank);
  } else {
    args.push('--lora-paths', ...adapters.map(a => `${a.name}=${a.path}`));
    if (props.maxLorasPerBatch !== undefined)
      args.push('--max-loras-per-batch', String(v.wholeNumber('maxLorasPerBatch', props.maxLorasPerBatch, 1)));
    if (props.maxLoraRank !== undefined)
      args.push('--max-lora-rank', String(v.wholeNumber('maxLoraRank', props.maxLoraRank, 1)));
  }
  if (props.contextLength !== undefined)
    args.push('--context-length', String(v.wholeNumber('contextLength', props.contextLength, 1)));
  if (props.quantization !== undefined) {
    args.push(
      '--quantization',
      v.enumValue('quantization', props.quantization, SglangQuantization, 'SglangQuantization'),
    );
    // SGLang loads GGUF from a .gguf file path; the download fetches no GGUF for a repository id.
    if (props.quantization === SglangQuantization.GGUF && !String(props.modelId).startsWith('/'))
      v.fail(
        'quantization',
        'GGUF needs modelId to be an absolute path to a .gguf file on a volume: SGLang takes no "repo:QUANT" form, and the download fetches safetensors for a repository id',
        props.quantization,
      );
  }
  if (props.servedModelName !== undefined) {
    args.push('--served-model-name', v.word('servedModelName', props.servedModelName));
  }
  // SGLang reads a `model` with a ":" as `<base>:<adapter>` and fails the request when no adapter has
  // that name (sgl-project/sglang#12745): a served name with one could never be requested.
  const servedProp = props.servedModelName !== undefined ? 'servedModelName' : 'modelId';
  const served = servedNameOf(props);
  if (typeof served === 'string' && served.includes(SGLANG_ADAPTER_SEPARATOR))
    v.fail(
      servedProp,
      `must not contain "${SGLANG_ADAPTER_SEPARATOR}" as the served model name: SGLang reads a requested model "<base>:<adapter>" as a LoRA adapter request${props.servedModelName === undefined ? ' (set servedModelName)' : ''}`,
      served,
    );
  if (props.maxRunningRequests !== undefined)
    args.push('--max-running-requests', String(v.wholeNumber('maxRunningRequests', props.maxRunningRequests, 1)));
  if (props.memFractionStatic !== undefined) {
    const f = props.memFractionStatic;
    if (typeof f !== 'number' || !(f > 0 && f < 1))
      v.fail('memFractionStatic', 'must be a fraction above 0 and below 1', f);
    args.push('--mem-fraction-static', String(f));
  }
  return { args, env: [] };
}
