import { App, Chart, Testing } from 'cdk8s';
import { checkManifests } from '../../src/checks/manifests';
import { expectValidOutput } from './valid-output';

/**
 * Runs the synth-time validations of every construct in the chart's app, as `app.synth()` does
 * (`Testing.synth` alone skips them), and throws their errors.
 */
export function validateApp(chart: Chart): void {
  const errors = chart.node.root.node.findAll().flatMap(c => c.node.validate().map(e => `[${c.node.path}] ${e}`));
  if (errors.length > 0) throw new Error(`Validation failed with the following errors:\n  ${errors.join('\n  ')}`);
}

/**
 * Synthesizes a chart, runs the synth-time validations, and checks every built-in object strictly
 * against the Kubernetes 1.28 and 1.36 schemas and every custom resource against its vendored CRD
 * (with the pod templates inside it as built-in kinds), so no test can pass on an object a strict
 * API server would reject.
 */
export function synthValid(chart: Chart): any[] {
  validateApp(chart);
  const objects = Testing.synth(chart);
  expectValidOutput(objects);
  const errors = checkManifests(objects);
  if (errors.length > 0) throw new Error(`Output rules failed:\n  ${errors.join('\n  ')}`);
  return objects;
}

/** The whole-output rules' errors for a chart's or an app's synthesized objects (what the plugin reports). */
export function outputErrorsOf(scope: Chart | App): string {
  const charts = scope instanceof App ? scope.charts : [scope];
  return checkManifests(charts.flatMap(c => Testing.synth(c))).join('\n');
}

/** A fresh chart in a test app. */
export function testChart(namespace?: string): Chart {
  return new Chart(Testing.app(), 'test', namespace ? { namespace } : {});
}

export function findOne(objects: any[], kind: string, name?: string): any {
  const found = objects.filter(o => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` named ${name}` : ''}, found ${found.length}`);
  return found[0];
}

export function envOf(container: any): Record<string, any> {
  return Object.fromEntries((container.env ?? []).map((e: any) => [e.name, e.value ?? e.valueFrom]));
}

/**
 * A serving test's output: what `make` built in a fresh chart (namespace `serving`), the synthesized objects, one by
 * kind and name, and the serving workload's pod template (a LeaderWorkerSet's leader), main container and command line.
 */
export function servingOutput<T>(make: (chart: Chart) => T) {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  const made = make(chart);
  const objects = Testing.synth(chart);
  const named = (kind: string, name: string): any => {
    const found = objects.find(o => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} in ${objects.map(o => `${o.kind}/${o.metadata.name}`).join(', ')}`);
    return found;
  };
  const workload = objects.find(o => ['StatefulSet', 'Deployment', 'LeaderWorkerSet'].includes(o.kind));
  const template =
    workload?.kind === 'LeaderWorkerSet' ? workload.spec.leaderWorkerTemplate.leaderTemplate : workload?.spec.template;
  const main = template?.spec.containers[0];
  const args: string = main ? [...(main.command ?? []), ...(main.args ?? [])].join(' ') : '';
  return { made, objects, named, workload, template, main, args };
}

/** A Kubernetes quantity in bytes, with the Ki, Mi and Gi suffixes the library writes sizes in. */
export function quantityBytes(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`not a quantity the library writes: ${q}`);
  return Number(m[1]) * { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, '': 1 }[m[2] ?? '']!;
}
