import { App } from 'cdk8s';
import { addTraining } from './training';

/** Every example app, one chart (and one snapshot file) per seed scenario. */
export function buildApps(app: App): void {
  addTraining(app);
}
