import { Duration, Size } from 'cdk8s';
import { INT32_MAX, show, Validator } from '../validation/validate';

// The timing model of every serving engine: a drain that fits in the grace period, and a startup
// budget the startup probe waits for. One home for these numbers; docs/serving.md explains them.

/** Time for endpoints, kube-proxy and load balancers to stop sending new requests to a terminating pod. */
export const DEFAULT_PRESTOP_SLEEP_SECONDS = 15;
/** Slack after the drain for the engine's workers to exit, and for the kubelet's own delays. */
export const TERMINATION_MARGIN_SECONDS = 15;
/** How long in-flight requests may finish after SIGTERM: TGI's launcher default, long generations included. */
export const DEFAULT_DRAIN_SECONDS = 90;
/** The startup budget when no model size is declared: load and warm-up of a model up to ~60 GB. */
export const DEFAULT_MAX_MODEL_LOAD_SECONDS = 900;
/**
 * Assumed read bandwidth from the cache volume into the engine, MB/s (10^6 bytes): a network disk
 * at its baseline (EBS gp3 125 MiB/s, pd-balanced 140 MB/s per volume) or an NFS share under load.
 */
export const ASSUMED_LOAD_MB_PER_SECOND = 100;
/** Warm-up after the weights are on the GPUs: CUDA graph capture, torch.compile, kernel autotuning. */
export const WARMUP_SECONDS = 300;
/** Assumed download bandwidth from the hub, MB/s, for fill times (the init container has no deadline). */
export const ASSUMED_DOWNLOAD_MB_PER_SECOND = 25;
/** The startup probe's period: the budget is counted in these. */
export const STARTUP_PERIOD_SECONDS = 10;

/** How a serving pod stops: the preStop sleep, then the engine's drain, inside the grace period. */
export interface Termination {
  readonly preStopSeconds: number;
  readonly drainSeconds: number;
  readonly gracePeriodSeconds: number;
}

/** Timings that add up: the engine's drain, inside the grace period, after the preStop. */
export function resolveTermination(
  v: Validator,
  props: { preStopSleep?: Duration; drainTimeout?: Duration; terminationGracePeriod?: Duration },
): Termination {
  const preStop = v.seconds('preStopSleep', props.preStopSleep ?? Duration.seconds(DEFAULT_PRESTOP_SLEEP_SECONDS), 0);
  const drain = v.seconds('drainTimeout', props.drainTimeout ?? Duration.seconds(DEFAULT_DRAIN_SECONDS), 1);
  const needed = preStop + drain + TERMINATION_MARGIN_SECONDS;
  const grace =
    props.terminationGracePeriod === undefined
      ? needed
      : v.seconds('terminationGracePeriod', props.terminationGracePeriod, 1);
  if (grace < needed) {
    v.fail(
      'terminationGracePeriod',
      `must be at least preStopSleep + drainTimeout + margin = ${preStop}s + ${drain}s + ${TERMINATION_MARGIN_SECONDS}s = ${needed}s, or SIGKILL cuts the drain short`,
      props.terminationGracePeriod,
    );
  }
  return { preStopSeconds: preStop, drainSeconds: drain, gracePeriodSeconds: grace };
}

/** GPUs per replica from which a model is large enough that the default budget must not be guessed. */
export const LARGE_MODEL_GPUS = 4;

/**
 * The weights' size a model id states through its parameter count (`Llama-3.1-70B-Instruct`,
 * `Mixtral-8x7B`, `Qwen2.5-0.5B`): 2 bytes per parameter (bf16/fp16), 1 for names saying FP8 or
 * INT8, 0.5 for 4-bit ones (AWQ, GPTQ, INT4, NF4, ...). Undefined when the name states no count.
 */
export function sizeFromModelId(
  modelId: string,
): { size: Size; parameters: number; bytesPerParameter: number } | undefined {
  const name = modelId.split('/').pop() ?? modelId;
  const moe = /(?:^|[-_.])(\d+)x(\d+(?:\.\d+)?)[bB](?=$|[-_.])/.exec(name);
  const dense = /(?:^|[-_.])(\d+(?:\.\d+)?)[bB](?=$|[-_.])/.exec(name);
  const billions = moe ? Number(moe[1]) * Number(moe[2]) : dense ? Number(dense[1]) : undefined;
  if (billions === undefined || !(billions > 0)) return undefined;
  const bytesPerParameter = /awq|gptq|int4|4bit|w4a16|nf4|bnb|exl2|gguf|q4/i.test(name)
    ? 0.5
    : /fp8|int8|8bit|w8a8|w8a16/i.test(name)
      ? 1
      : 2;
  const bytes = billions * 1e9 * bytesPerParameter;
  return { size: Size.kibibytes(Math.ceil(bytes / 1024)), parameters: billions * 1e9, bytesPerParameter };
}

/**
 * The startup probe's budget: the declared model size read at the assumed bandwidth plus warm-up,
 * or maxModelLoadTime, which may not be shorter than that. Without either, the size the model id
 * states (its parameter count) raises the default; a large replica (LARGE_MODEL_GPUS or more)
 * whose model states nothing must declare one, since 900 s does not load a 70B model.
 */
export function startupBudget(
  v: Validator,
  modelSize: Size | undefined,
  maxModelLoadTime: Duration | undefined,
  model: { modelId: string; gpus: number; gpusWhat?: string; shards?: number } = { modelId: '', gpus: 1 },
): number {
  // The startup probe's failureThreshold (budget / period) is an int32.
  const max = INT32_MAX * STARTUP_PERIOD_SECONDS;
  // The pods of a multi-node group load their shares of the weights at once, each from its own node.
  const shards = model.shards ?? 1;
  const share = (size: Size) => (shards === 1 ? size : Size.kibibytes(Math.ceil(size.toKibibytes() / shards)));
  if (modelSize !== undefined) checkStatedSize(v, modelSize, model.modelId);
  const derived = modelSize === undefined ? undefined : derivedLoadSeconds(share(modelSize));
  if (derived !== undefined && derived > max)
    v.fail(
      'modelSize',
      `must load within ${max}s at ${ASSUMED_LOAD_MB_PER_SECOND} MB/s: the startup probe's failureThreshold is an int32`,
      modelSize,
    );
  if (maxModelLoadTime === undefined) {
    if (derived !== undefined) return derived;
    const stated = sizeFromModelId(model.modelId);
    if (stated) return Math.max(DEFAULT_MAX_MODEL_LOAD_SECONDS, derivedLoadSeconds(share(stated.size)));
    if (model.gpus >= LARGE_MODEL_GPUS) {
      v.fail(
        'modelSize',
        `is needed (or maxModelLoadTime) with ${model.gpusWhat ?? 'gpusPerReplica'} ${model.gpus}: the model id states no parameter count, and the default ${DEFAULT_MAX_MODEL_LOAD_SECONDS}s startup budget is too short for a model that needs ${LARGE_MODEL_GPUS} GPUs or more (a 70B model in bf16, 140 GB, takes ${derivedLoadSeconds(Size.gibibytes(131))}s at ${ASSUMED_LOAD_MB_PER_SECOND} MB/s with warm-up)`,
        undefined,
      );
    }
    return DEFAULT_MAX_MODEL_LOAD_SECONDS;
  }
  const explicit = v.seconds('maxModelLoadTime', maxModelLoadTime, 60, max);
  if (derived !== undefined && explicit < derived) {
    v.fail(
      'maxModelLoadTime',
      `must be at least the load budget of modelSize (${show(modelSize)}): ${modelGb(share(modelSize!))} GB${shards > 1 ? ` a pod (1/${shards})` : ''} at ${ASSUMED_LOAD_MB_PER_SECOND} MB/s + ${WARMUP_SECONDS}s warm-up = ${derived}s, or the startup probe restarts a server that is still loading`,
      maxModelLoadTime,
    );
  }
  return explicit;
}

/** The fewest and most bytes a weight takes in a checkpoint: 2-bit quantizations to fp32. */
const MIN_BYTES_PER_PARAMETER = 0.25;
const MAX_BYTES_PER_PARAMETER = 4;
/** Room for what is not weights (tokenizer, configs, vision towers) and the rounded counts names give. */
const STATED_SIZE_SLACK = 0.1;

/**
 * A declared modelSize far from what the model id's parameter count allows at any weight width is a
 * wrong unit or a typo (`Size.mebibytes(15)` for an 8B model), and the startup budget made from it
 * would restart a server that is still loading. Ids that state no count are not checked.
 */
function checkStatedSize(v: Validator, modelSize: Size, modelId: string): void {
  const stated = sizeFromModelId(modelId);
  if (!stated) return;
  const kib = modelSize.toKibibytes();
  const bound = (bytesPerParameter: number, factor: number) => (stated.parameters * bytesPerParameter * factor) / 1024;
  const min = bound(MIN_BYTES_PER_PARAMETER, 1 - STATED_SIZE_SLACK);
  const max = bound(MAX_BYTES_PER_PARAMETER, 1 + STATED_SIZE_SLACK);
  if (kib >= min && kib <= max) return;
  const gib = (k: number) => `${Math.round((k / 1024 ** 2) * 10) / 10}Gi`;
  v.fail(
    'modelSize',
    `must be between ${gib(min)} and ${gib(max)} for the ${stated.parameters / 1e9}B parameters ${modelId} states (2 to 32 bits a weight), or the startup budget is made from a wrong size; for a model whose name misstates its size, give maxModelLoadTime instead`,
    modelSize,
  );
}

function modelGb(size: Size): number {
  return Math.round((size.toKibibytes() * 1024) / 1e8) / 10;
}

/** Seconds to read `size` at the assumed bandwidth plus warm-up, rounded up to the probe period. */
export function derivedLoadSeconds(size: Size): number {
  const seconds = (size.toKibibytes() * 1024) / (ASSUMED_LOAD_MB_PER_SECOND * 1e6) + WARMUP_SECONDS;
  return Math.ceil(seconds / STARTUP_PERIOD_SECONDS) * STARTUP_PERIOD_SECONDS;
}

/**
 * How long until a new replica is capacity: it has loaded the model, and first downloaded it
 * unless the cache is shared (a scaled-up replica fills its own, at the assumed hub bandwidth,
 * when modelSize says how much).
 */
export function capacityDelay(
  startupBudgetSeconds: number,
  modelSize: Size | undefined,
  sharedCache: boolean,
): { seconds: number; what: string } {
  const downloadSeconds =
    !sharedCache && modelSize
      ? Math.ceil((modelSize.toKibibytes() * 1024) / (ASSUMED_DOWNLOAD_MB_PER_SECOND * 1e6))
      : 0;
  return {
    seconds: startupBudgetSeconds + downloadSeconds,
    what:
      downloadSeconds > 0
        ? `download at ${ASSUMED_DOWNLOAD_MB_PER_SECOND} MB/s (${downloadSeconds}s) + startup budget (${startupBudgetSeconds}s)`
        : `startup budget (${startupBudgetSeconds}s)`,
  };
}
