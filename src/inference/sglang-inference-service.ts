import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { EngineTuning } from './engine';
import { SGLANG } from './engines/sglang';
import { InferenceServiceProps, ServingWorkload } from './inference-service';
import { SglangQuantization } from './quantization';

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
}

const KEYS: ReadonlyArray<keyof SglangInferenceServiceProps> = [
  'contextLength',
  'quantization',
  'servedModelName',
  'maxRunningRequests',
  'memFractionStatic',
];

/**
 * SGLang's server as a StatefulSet with the same practice as every serving construct here: a
 * drain bounded by the grace period (SGLang drains without a timeout of its own, and its /health
 * turns 503 while it drains), weights downloaded in an init container, a startup probe for model
 * load, a PDB, a client Service stable across versions and engines, metrics (`--enable-metrics`),
 * and optional autoscaling on `sglang:num_queue_reqs`. The image runs as root (baseline).
 */
export class SglangInferenceService extends ServingWorkload {
  constructor(scope: Construct, id: string, props: SglangInferenceServiceProps) {
    super(scope, id, props, { engine: SGLANG, keys: KEYS, tuning: v => sglangTuning(v, props) });
  }
}

function sglangTuning(v: Validator, props: SglangInferenceServiceProps): EngineTuning {
  const args: string[] = [];
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
