import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ApiObject, App, Chart, Testing } from 'cdk8s';
import { Construct, IConstruct, Node } from 'constructs';
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

  describe('while the app synthesizes', () => {
    /** Counts how often walks of the tree pass through one construct (findAll reads its children). */
    function walkCounter(scope: Construct): { visits: number } {
      const probe = new Construct(scope, 'probe');
      const counter = { visits: 0 };
      const children = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(probe.node), 'children')!.get!;
      Object.defineProperty(probe.node, 'children', { get() { counter.visits++; return children.call(this); } });
      return counter;
    }

    function synthCharts(n: number, app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-')) })) {
      try {
        const charts = Array.from({ length: n }, (_, i) => new Chart(app, `c${i}`));
        charts.forEach((c, i) => configMap(c, 'cm', `cm-${i}`));
        counting(charts[0]);
        const counter = walkCounter(charts[0]);
        app.synth();
        return { visits: counter.visits, files: fs.readdirSync(app.outdir).length };
      } finally {
        fs.rmSync(app.outdir, { recursive: true, force: true });
      }
    }

    test('walks the whole tree once, not once per chart (cdk8s re-walks the app for every chart it writes)', () => {
      const few = synthCharts(3);
      const many = synthCharts(30);
      expect(many.files).toBe(30);
      expect(many.visits).toBe(few.visits);
      // The probe's own chart walks its subtree for its dependency graph (twice); the root once.
      expect(many.visits).toBeLessThanOrEqual(3);
    });

    test('a plain cdk8s app walks once per chart (what the memo saves)', () => {
      const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-')) });
      try {
        const charts = Array.from({ length: 10 }, (_, i) => new Chart(app, `c${i}`));
        const counter = walkCounter(charts[0]);
        app.synth();
        expect(counter.visits).toBeGreaterThan(10);
      } finally {
        fs.rmSync(app.outdir, { recursive: true, force: true });
      }
    });

    test('a construct added during synth is validated by the later passes, as cdk8s does', () => {
      const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-'));
      try {
        const app = new App({ outdir });
        const charts = Array.from({ length: 3 }, (_, i) => new Chart(app, `c${i}`));
        counting(charts[0]);
        let added = false;
        charts[0].node.addValidation({
          validate: () => {
            if (!added) {
              added = true;
              new Construct(charts[1], 'late').node.addValidation({ validate: () => ['the late construct was validated'] });
            }
            return [];
          },
        });
        expect(() => app.synth()).toThrow(/\[c1\/late\] the late construct was validated/);
      } finally {
        fs.rmSync(outdir, { recursive: true, force: true });
      }
    });

    test("a subclass's own synth still runs, and the app's keys are unchanged", () => {
      const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-'));
      try {
        const calls: string[] = [];
        class MyApp extends App {
          public synth(): void {
            calls.push('MyApp.synth');
            super.synth();
          }
        }
        const app = new MyApp({ outdir });
        const keys = Object.keys(app);
        const chart = new Chart(app, 'c');
        configMap(chart, 'cm', 'cm');
        counting(chart);
        expect(Object.keys(app)).toEqual(keys);
        app.synth();
        expect(calls).toEqual(['MyApp.synth']);
        expect(fs.readdirSync(outdir)).toEqual(['c.k8s.yaml']);
        expect(app.synthYaml()).toContain('name: cm');
      } finally {
        fs.rmSync(outdir, { recursive: true, force: true });
      }
    });

    test('the memo ends with the synth: constructs added afterwards are checked by the next one', () => {
      const app = Testing.app();
      const chart = new Chart(app, 'c');
      configMap(chart, 'ok', 'ok');
      counting(chart);
      expect(() => app.synthYaml()).not.toThrow();
      configMap(new Construct(chart, 'x'), 'bad', 'bad');
      expect(() => app.synthYaml()).toThrow(/bad ConfigMap at c\/x\/bad/);
    });

    /** The files an app writes, with a check registered (the memo on) or through App.prototype.synth (no memo). */
    function written(build: (app: App) => void, memo: boolean, AppClass: typeof App = App): string[] {
      const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'app-checks-'));
      try {
        const app = new AppClass({ outdir });
        build(app);
        const keep = new Chart(app, 'keep');
        configMap(keep, 'cm', 'keep');
        counting(keep);
        if (memo) app.synth();
        else App.prototype.synth.call(app);
        return fs.readdirSync(outdir).sort();
      } finally {
        fs.rmSync(outdir, { recursive: true, force: true });
      }
    }

    test('a chart removed during synth (by a validation) is not written, as without the memo', () => {
      const build = (app: App) => {
        const tmp = new Chart(app, 'tmp');
        configMap(tmp, 'cm', 'scratch');
        const first = new Chart(app, 'a');
        configMap(first, 'cm', 'a');
        first.node.addValidation({ validate: () => { app.node.tryRemoveChild('tmp'); return []; } });
      };
      expect(written(build, true)).toEqual(written(build, false));
      expect(written(build, true)).not.toContain('tmp.k8s.yaml');
    });

    test("constructs' tryRemoveChild is counted only during a synth, and is constructs' own again after it", () => {
      const original = Node.prototype.tryRemoveChild;
      let during: unknown;
      const build = (app: App) => {
        new Chart(app, 'x').node.addValidation({ validate: () => { during = Node.prototype.tryRemoveChild; return []; } });
      };
      written(build, true);
      expect(during).not.toBe(original);
      expect(Node.prototype.tryRemoveChild).toBe(original);
      // A synth that fails half-way puts it back too.
      expect(() => written(app => new Chart(app, 'bad').node.addValidation({ validate: () => ['refused'] }), true)).toThrow(/refused/);
      expect(Node.prototype.tryRemoveChild).toBe(original);
    });

    test("a chart an App subclass's synth removes before cdk8s's synth is not written", () => {
      class PruningApp extends App {
        public synth(): void {
          for (const c of this.node.findAll()) if (Chart.isChart(c) && c.node.id === 'dev') this.node.tryRemoveChild('dev');
          super.synth();
        }
      }
      const build = (app: App) => configMap(new Chart(app, 'dev'), 'cm', 'dev-only');
      expect(written(build, true, PruningApp)).toEqual(['keep.k8s.yaml']);
    });

    test("a subclass's synth and synthYaml get their arguments", () => {
      class HeaderApp extends App {
        public synthYaml(header = ''): string {
          return header + super.synthYaml();
        }
      }
      const app = new HeaderApp();
      const chart = new Chart(app, 'c');
      configMap(chart, 'cm', 'cm');
      counting(chart);
      expect((app.synthYaml as (h: string) => string)('# generated\n').split('\n')[0]).toBe('# generated');
    });
  });
});
