import { App } from 'cdk8s';
import { addInference } from './inference';
import { addLlm } from './llm';
import { addSecrets } from './secrets';
import { addTraining } from './training';

/** Every example app, one chart (and one snapshot file) per seed scenario. */
export function buildApps(app: App): void {
  addTraining(app);
  addInference(app);
  addLlm(app);
  addSecrets(app);
}
