import { App } from 'cdk8s';

new App().synth();
