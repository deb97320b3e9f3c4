import { App } from 'cdk8s';
import { buildApps } from './apps';

const app = new App();
buildApps(app);
app.synth();
