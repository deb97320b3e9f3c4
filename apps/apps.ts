import { App } from 'cdk8s';
import { addDisaggregated } from './disaggregated';
import { addInference } from './inference';
import { addLlm } from './llm';
import { addMultiNode } from './multi-node';
import { addPinnedImages } from './pinned-images';
import { addPretraining } from './pretraining';
import { addProduction } from './production';
import { addRouting } from './routing';
import { addScaleFromZero } from './scale-from-zero';
import { addSecrets } from './secrets';
import { addTraining } from './training';
import { addWideEp } from './wide-ep';

/**
 * Every example app, one chart (and one snapshot file) each: the seed scenarios, a vLLM service, a production cluster,
 * models larger than one node, a service that scales to zero, a disaggregated one, a mixture-of-experts model with
 * wide expert parallelism.
 */
export function buildApps(app: App): void {
  addTraining(app);
  addInference(app);
  addLlm(app);
  addSecrets(app);
  addProduction(app);
  addPretraining(app);
  addRouting(app);
  addPinnedImages(app);
  addMultiNode(app);
  addScaleFromZero(app);
  addDisaggregated(app);
  addWideEp(app);
}
