import { App } from 'cdk8s';
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

/**
 * Every example app, one chart (and one snapshot file) each: the seed scenarios, a vLLM service, a production cluster,
 * models larger than one node, a service that scales to zero.
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
}
