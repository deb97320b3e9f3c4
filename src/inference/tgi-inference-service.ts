import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { EngineTuning } from './engine';
import { TGI, tgiTuningEnv } from './engines/tgi';
import { InferenceServiceProps, ServingWorkload } from './inference-service';
import { TgiQuantization } from './quantization';

export { TGI_DEFAULT_IMAGE, TGI_DRAIN_SECONDS, TGI_PORT } from './engines/tgi';
export {
  DEFAULT_PRESTOP_SLEEP_SECONDS,
  TERMINATION_MARGIN_SECONDS,
  DEFAULT_MAX_MODEL_LOAD_SECONDS,
} from './inference-service';
export type { SecretKeyRef } from './inference-service';

/** Props of `TgiInferenceService`: the shared serving props and TGI's own. */
export interface TgiInferenceServiceProps extends InferenceServiceProps {
  /**
   * `QUANTIZE`.
   * @default - none
   */
  readonly quantize?: TgiQuantization;
  /**
   * `MAX_CONCURRENT_REQUESTS`.
   * @default - TGI's default (128)
   */
  readonly maxConcurrentRequests?: number;
  /**
   * `MAX_INPUT_TOKENS`: below maxTotalTokens.
   * @default - TGI's default, derived from the model
   */
  readonly maxInputTokens?: number;
  /**
   * `MAX_TOTAL_TOKENS`: input plus generated tokens, at most the model's context length.
   * @default - TGI's default, derived from the model
   */
  readonly maxTotalTokens?: number;
  /**
   * `MAX_BATCH_PREFILL_TOKENS`: at least maxInputTokens.
   * @default - TGI's default
   */
  readonly maxBatchPrefillTokens?: number;
}

const KEYS: ReadonlyArray<keyof TgiInferenceServiceProps> = [
  'quantize',
  'maxConcurrentRequests',
  'maxInputTokens',
  'maxTotalTokens',
  'maxBatchPrefillTokens',
];

/**
 * HuggingFace text-generation-inference as a StatefulSet: upgrades that drain instead of dropping
 * requests, weights downloaded by the launcher's own download command before the server starts, a
 * startup probe for model load, a PDB, metrics and optional autoscaling on `tgi_queue_size`.
 * TGI is in maintenance mode upstream since 2025-12-11: prefer `VllmInferenceService` or
 * `SglangInferenceService` for new services (README "Migrating from TGI").
 */
export class TgiInferenceService extends ServingWorkload {
  constructor(scope: Construct, id: string, props: TgiInferenceServiceProps) {
    super(scope, id, props, {
      engine: TGI,
      keys: KEYS,
      tuning: v => tgiTuning(v, props),
      pool: (poolScope, poolId, poolProps) => new TgiInferenceService(poolScope, poolId, poolProps),
    });
  }
}

function tgiTuning(v: Validator, props: TgiInferenceServiceProps): EngineTuning {
  if (props.quantize !== undefined) v.enumValue('quantize', props.quantize, TgiQuantization, 'TgiQuantization');
  const tokens = (prop: keyof TgiInferenceServiceProps, value: number | undefined) =>
    value === undefined ? undefined : v.wholeNumber(prop, value, 1);
  const maxConcurrent = tokens('maxConcurrentRequests', props.maxConcurrentRequests);
  const maxInput = tokens('maxInputTokens', props.maxInputTokens);
  const maxTotal = tokens('maxTotalTokens', props.maxTotalTokens);
  const maxPrefill = tokens('maxBatchPrefillTokens', props.maxBatchPrefillTokens);
  if (maxInput !== undefined && maxTotal !== undefined && maxInput >= maxTotal) {
    v.fail(
      'maxInputTokens',
      `must be less than maxTotalTokens (${maxTotal}), which counts input and generated tokens`,
      maxInput,
    );
  }
  if (maxInput !== undefined && maxPrefill !== undefined && maxPrefill < maxInput) {
    v.fail(
      'maxBatchPrefillTokens',
      `must be at least maxInputTokens (${maxInput}), or no full-length prompt can be prefilled`,
      maxPrefill,
    );
  }
  return {
    args: [],
    env: [
      ...tgiTuningEnv('QUANTIZE', props.quantize, 'quantize'),
      ...tgiTuningEnv('MAX_CONCURRENT_REQUESTS', maxConcurrent, 'maxConcurrentRequests'),
      ...tgiTuningEnv('MAX_INPUT_TOKENS', maxInput, 'maxInputTokens'),
      ...tgiTuningEnv('MAX_TOTAL_TOKENS', maxTotal, 'maxTotalTokens'),
      ...tgiTuningEnv('MAX_BATCH_PREFILL_TOKENS', maxPrefill, 'maxBatchPrefillTokens'),
    ],
  };
}
