import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ApiObject, App, Chart, Testing } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { addAppCheck } from '../../src/common/app-checks';

/** A check that counts its runs and refuses any ConfigMap named "bad". */
function counting(scope: IConstruct, key = 'test-check'): { runs: number } {
  const counter = { runs: 0 };
  addAppCheck(scope, key, (_root, nodes) => {
    counter.runs++;
    return nodes.filter(n => n instanceof ApiObject && n.kind === 'ConfigMap' && n.name === 'bad').map(n => `bad ConfigMap at ${n.node.path}`);
  });
  return counter;
}

function configMap(scope: Construct, id: string, name: string): ApiObject {
  return new ApiObject(scope, id, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
}

describe('addAppCheck', () => {
  test('runs once for an app of many charts, though cdk8s validates the whole app per chart', () => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-'));
    try {
      const app = new App({ outdir });
      const charts = Array.from({ length: 20 }, (_, i) => new Chart(app, `c${i}`));
      charts.forEach((c, i) => configMap(c, 'cm', `cm-${i}`));
      const counter = counting(charts[0]);
      counting(charts[5]); // the same key again: still one check
      app.synth();
      expect(counter.runs).toBe(1);
      expect(fs.readdirSync(outdir)).toHaveLength(20);
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
    }
  });

  test('runs again when a construct was added anywhere since, even deep in a construct, in the same tick', () => {
    const app = Testing.app();
    const chart = new Chart(app, 'c');
    const inner = new Construct(new Construct(chart, 'outer'), 'inner');
    configMap(inner, 'ok', 'ok');
    const counter = counting(chart);
    expect(() => Testing.synth(chart)).not.toThrow();
    configMap(inner, 'bad', 'bad');
    expect(() => Testing.synth(chart)).toThrow(/bad ConfigMap at c\/outer\/inner\/bad/);
    expect(counter.runs).toBe(2);
  });

  test('a direct node.validate() walks the tree itself when no walk of this task is left', async () => {
    const app = Testing.app();
    const chart = new Chart(app, 'c');
    counting(chart);
    expect(app.node.validate()).toEqual([]);
    configMap(new Construct(chart, 'late'), 'bad', 'bad');
    expect(app.node.validate()).toEqual(['bad ConfigMap at c/late/bad']); // the first validation used up its walk
    app.node.findAll(); // a walk no validation used, then the task ends and the tree grows
    await Promise.resolve();
    configMap(new Construct(chart, 'later'), 'bad', 'bad');
    expect(app.node.validate()).toEqual(['bad ConfigMap at c/late/bad', 'bad ConfigMap at c/later/bad']);
  });

  test('the root walk it shares returns what constructs returns, in every order', () => {
    const app = Testing.app();
    const chart = new Chart(app, 'c');
    configMap(chart, 'a', 'a');
    const before = { pre: app.node.findAll(), post: app.node.findAll(1) };
    counting(chart);
    expect(app.node.findAll()).toEqual(before.pre);
    expect(app.node.findAll(1)).toEqual(before.post);
    expect(before.post[before.post.length - 1]).toBe(app);
  });

  test('keeps separate checks of separate apps apart', () => {
    const a = new Chart(Testing.app(), 'a');
    const b = new Chart(Testing.app(), 'b');
    configMap(b, 'bad', 'bad');
    const ca = counting(a);
    const cb = counting(b);
    expect(() => Testing.synth(a)).not.toThrow();
    expect(() => Testing.synth(b)).toThrow(/bad ConfigMap at b\/bad/);
    expect([ca.runs, cb.runs]).toEqual([1, 1]);
  });
});
