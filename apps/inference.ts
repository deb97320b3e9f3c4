import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { InferenceServiceMonitoring, ModelCache, TgiInferenceService } from '../src';

/**
 * Seed 001 after the fix: three TGI replicas serving EleutherAI/gpt-neox-20b (20.6 B parameters,
 * about 41 GB of fp16 weights, a 2048-token context; the seed called it a 13 GB-class model), with
 * a preStop that lets endpoints deregister, TGI's own drain inside a 120 s grace period, weights
 * downloaded by an init container before the server starts, a startup probe whose budget follows
 * the declared model size, and a PDB that keeps n-1 replicas serving.
 */
export class InferenceChart extends Chart {
  readonly tgi: TgiInferenceService;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    this.tgi = new TgiInferenceService(this, 'tgi', {
      name: 'tgi',
      modelId: 'EleutherAI/gpt-neox-20b',
      replicas: 3,
      gpusPerReplica: 2,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      // The model's context is 2048 tokens: prompt and output share it.
      maxInputTokens: 1536,
      maxTotalTokens: 2048,
      // ~41 GB (38.4 GiB) of safetensors: 720 s of load and warm-up at the assumed 100 MB/s.
      modelSize: Size.gibibytes(39),
      modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(100) }),
    });
    // Alerts and a dashboard whose thresholds are this service's budgets (a replica still not
    // Ready past its download and startup budget is the stalled rollout of the seed).
    new InferenceServiceMonitoring(this, 'monitoring', this.tgi);
  }
}

export function addInference(app: App): InferenceChart {
  return new InferenceChart(app, 'tgi');
}
