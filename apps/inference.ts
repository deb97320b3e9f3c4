import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { ModelCache, TgiInferenceService } from '../src';

/**
 * Seed 001 after the fix: three TGI replicas serving a 13 GB-class model, with a preStop that
 * lets endpoints deregister, TGI's own drain inside a 120 s grace period, a startup probe that
 * covers the model load, and a PDB that keeps n-1 replicas serving.
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
      maxInputTokens: 2048,
      maxTotalTokens: 4096,
      maxModelLoadTime: Duration.minutes(15),
      modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(100) }),
    });
  }
}

export function addInference(app: App): InferenceChart {
  return new InferenceChart(app, 'tgi');
}
