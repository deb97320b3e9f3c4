import { Chart, Testing } from 'cdk8s';
import {
  ConfigurationError,
  InferenceService,
  InferenceServiceProps,
  SGLANG_DEFAULT_IMAGE,
  SglangInferenceService,
  TGI_DEFAULT_IMAGE,
  TgiInferenceService,
  VLLM_DEFAULT_IMAGE,
  VllmInferenceService,
} from '../../src';
import { ServingEngine } from '../../src/inference/engine';
import { SGLANG } from '../../src/inference/engines/sglang';
import { TGI } from '../../src/inference/engines/tgi';
import { VLLM } from '../../src/inference/engines/vllm';
import { envOf, findOne, synthValid } from '../support/synth';

/** What the tests need to know about each engine, and how to read its settings from the pod. */
export interface EngineCase {
  readonly construct: string;
  /** The engine's facts, as data. */
  readonly engine: ServingEngine;
  readonly make: (chart: Chart, id: string, props: InferenceServiceProps) => InferenceService;
  readonly container: string;
  readonly port: number;
  readonly image: string;
  readonly rootByDefault: boolean;
  /** Props that run the engine as a non-root UID: its image must allow it. */
  readonly nonRoot: Partial<InferenceServiceProps>;
  readonly defaultUid?: number;
  readonly queueMetric: string;
  /** The gauge of running requests: with the queue, the requests in flight the autoscaler counts. */
  readonly runningMetric: string;
  /** The construct prop that sets the batch limit, and the target derived from the engine's default (80%). */
  readonly batch: { readonly prop: string; readonly defaultTarget?: number };
  readonly shmGibPerGpu: number;
  /** A setting as the engine reads it: from a flag (`--x y`) or a variable. */
  readonly setting: (main: any, key: 'tp' | 'host' | 'port' | 'drain' | 'model') => string | undefined;
}

/** The value after `flag` in args. */
export function flagValue(args: string[] | undefined, flag: string): string | undefined {
  const i = (args ?? []).indexOf(flag);
  return i < 0 ? undefined : args![i + 1];
}

/** The last TGI release that starts as a non-root UID (from 3.1 Python lives under /root, TGI#3082). */
export const TGI_NON_ROOT_IMAGE = 'ghcr.io/huggingface/text-generation-inference:3.0.1';

export const ENGINES: EngineCase[] = [
  {
    construct: 'TgiInferenceService',
    engine: TGI,
    make: (c, id, p) => new TgiInferenceService(c, id, p),
    container: 'tgi',
    port: 8080,
    image: TGI_DEFAULT_IMAGE,
    rootByDefault: true,
    nonRoot: { runAsRoot: false, image: TGI_NON_ROOT_IMAGE },
    queueMetric: 'tgi_queue_size',
    runningMetric: 'tgi_batch_current_size',
    batch: { prop: 'maxConcurrentRequests', defaultTarget: 102 },
    shmGibPerGpu: 1,
    setting: (main, key) =>
      envOf(main)[
        { tp: 'NUM_SHARD', host: 'HOSTNAME', port: 'PORT', drain: 'GRACEFUL_TERMINATION_TIMEOUT', model: 'MODEL_ID' }[
          key
        ]
      ],
  },
  {
    construct: 'VllmInferenceService',
    engine: VLLM,
    make: (c, id, p) => new VllmInferenceService(c, id, p),
    container: 'vllm',
    port: 8000,
    image: VLLM_DEFAULT_IMAGE,
    rootByDefault: false,
    nonRoot: { runAsRoot: false },
    defaultUid: 2000,
    queueMetric: 'vllm:num_requests_waiting',
    runningMetric: 'vllm:num_requests_running',
    batch: { prop: 'maxNumSeqs', defaultTarget: 204 },
    shmGibPerGpu: 2,
    setting: (main, key) =>
      key === 'model'
        ? main.args[0]
        : flagValue(
            main.args,
            { tp: '--tensor-parallel-size', host: '--host', port: '--port', drain: '--shutdown-timeout' }[key],
          ),
  },
  {
    construct: 'SglangInferenceService',
    engine: SGLANG,
    make: (c, id, p) => new SglangInferenceService(c, id, p),
    container: 'sglang',
    port: 30000,
    image: SGLANG_DEFAULT_IMAGE,
    rootByDefault: true,
    // The upstream image runs only as root; a non-root pod needs an image built for it.
    nonRoot: { runAsRoot: false, image: 'registry.example.com/ml/sglang-nonroot:v0.5.20' },
    queueMetric: 'sglang:num_queue_reqs',
    runningMetric: 'sglang:num_running_reqs',
    batch: { prop: 'maxRunningRequests' },
    shmGibPerGpu: 2,
    setting: (main, key) =>
      key === 'drain'
        ? undefined
        : flagValue(main.args, { tp: '--tp-size', host: '--host', port: '--port', model: '--model-path' }[key]),
  },
];

/** Each construct's own props, beyond the shared serving props. */
export const SPECIFIC_KEYS: Record<string, string[]> = {
  TgiInferenceService: [
    'quantize',
    'maxConcurrentRequests',
    'maxInputTokens',
    'maxTotalTokens',
    'maxBatchPrefillTokens',
  ],
  VllmInferenceService: [
    'maxModelLen',
    'quantization',
    'servedModelNames',
    'maxNumSeqs',
    'gpuMemoryUtilization',
    'loraAdapters',
    'maxLoras',
    'maxLoraRank',
  ],
  SglangInferenceService: [
    'contextLength',
    'quantization',
    'servedModelName',
    'maxRunningRequests',
    'memFractionStatic',
    'loraAdapters',
    'maxLorasPerBatch',
    'maxLoraRank',
  ],
};

export const BASE: InferenceServiceProps = { name: 'llm', modelId: 'Qwen/Qwen2.5-7B-Instruct' };

/** Synthesizes one construct of an engine, strictly validated, with the usual handles. */
export function synthEngine(e: EngineCase, props: Partial<InferenceServiceProps> = {}, namespace?: string) {
  const chart = new Chart(Testing.app(), 'test', namespace ? { namespace } : {});
  const svc = e.make(chart, 'svc', { ...BASE, ...props });
  const objects = synthValid(chart);
  // The workload, whichever kind the cache gave it (a StatefulSet for the default per-replica claim).
  const sts = findOne(objects, svc.workloadKind);
  const pod = sts.spec.template.spec;
  const main = pod.containers.find((c: any) => c.name === e.container);
  return {
    svc,
    objects,
    sts,
    pod,
    main,
    env: envOf(main),
    init: (pod.initContainers ?? []).find((c: any) => c.name === 'model-download'),
  };
}

/** The ConfigurationError a construction throws, or fails the test. */
export function configError(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigurationError) return e;
    throw new Error(`expected a ConfigurationError, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
  }
  throw new Error('expected a ConfigurationError, but construction succeeded');
}
