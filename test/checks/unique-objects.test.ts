import { ApiObject, App, Chart, Testing } from 'cdk8s';
import { outputErrorsOf, synthValid, testChart } from '../support/synth';
import { TestWorkload } from '../support/test-workload';

const CLASH =
  /TestWorkload 'b': name must make objects unique, but StatefulSet "same" in namespace "ml" is also made by TestWorkload 'a'/;

describe('no two objects share a kind, namespace and name', () => {
  test("two of the library's workloads of one name fail every synth path alike, naming both", () => {
    const app = Testing.app();
    const chart = new Chart(app, 'c', { namespace: 'ml' });
    new TestWorkload(chart, 'a', { name: 'same' });
    new TestWorkload(chart, 'b', { name: 'same' });
    expect(() => Testing.synth(chart)).toThrow(CLASH);
    expect(() => chart.toJson()).toThrow(CLASH);
    expect(() => app.synthYaml()).toThrow(CLASH);
    expect(() => app.synth()).toThrow(CLASH);
  });

  test('the same name in two charts of one namespace collides too; in two namespaces it does not', () => {
    const app = Testing.app();
    new TestWorkload(new Chart(app, 'one', { namespace: 'ml' }), 'a', { name: 'same' });
    new TestWorkload(new Chart(app, 'two', { namespace: 'ml' }), 'a', { name: 'same' });
    expect(() => app.synth()).toThrow(/StatefulSet "same" in namespace "ml"/);

    const ok = Testing.app();
    new TestWorkload(new Chart(ok, 'one', { namespace: 'ml' }), 'a', { name: 'same' });
    new TestWorkload(new Chart(ok, 'two', { namespace: 'research' }), 'a', { name: 'same' });
    expect(() => ok.synthYaml()).not.toThrow();
  });

  test('a chart removed before synth, by a root validation, is no clash: the app is written as cdk8s writes it', () => {
    const app = Testing.app();
    const old = new Chart(app, 'old', { namespace: 'ml' });
    new TestWorkload(old, 'a', { name: 'same' });
    new TestWorkload(new Chart(app, 'new', { namespace: 'ml' }), 'b', { name: 'same' });
    app.node.addValidation({ validate: () => (app.node.tryRemoveChild('old') ? [] : []) });
    const yaml = app.synthYaml();
    expect(yaml.match(/kind: StatefulSet/g)).toHaveLength(1);
  });

  test('a duplicate added by a validation fails Testing.synth, chart.toJson and the real synth alike', () => {
    const make = () => {
      const app = Testing.app();
      const chart = new Chart(app, 'c', { namespace: 'ml' });
      new TestWorkload(chart, 'a', { name: 'same' });
      let added = false;
      chart.node.addValidation({
        validate: () => {
          if (!added) new TestWorkload(chart, 'b', { name: 'same' });
          added = true;
          return [];
        },
      });
      return { app, chart };
    };
    expect(() => Testing.synth(make().chart)).toThrow(CLASH);
    expect(() => make().chart.toJson()).toThrow(CLASH);
    expect(() => make().app.synthYaml()).toThrow(CLASH);
  });

  test("a user's object that collides with a construct's is reported by the whole-output rules", () => {
    const chart = testChart();
    new TestWorkload(chart, 'a', { name: 'w' });
    new ApiObject(chart, 'mine', { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'w' } });
    expect(outputErrorsOf(chart)).toMatch(
      /^StatefulSet\/w: name must make objects unique, but StatefulSet "w" is also made by StatefulSet\/w/,
    );
  });

  test('different kinds of one name are fine', () => {
    const chart = testChart();
    new TestWorkload(chart, 'a', { name: 'w' });
    new ApiObject(chart, 'svc', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'w' },
      spec: { ports: [{ port: 80 }] },
    });
    expect(() => synthValid(chart)).not.toThrow();
  });

  test('adds no validation to the app and wraps none of its methods', () => {
    const app = new App({ outdir: Testing.app().outdir });
    const synthYaml = jest.spyOn(App.prototype, 'synthYaml');
    try {
      const chart = new Chart(app, 'c');
      for (let i = 0; i < 3; i++) new TestWorkload(chart, `w${i}`, { name: `w${i}` });
      expect(app.node.validate()).toEqual([]);
      expect(Object.getOwnPropertyNames(app)).not.toContain('synthYaml');
      app.synthYaml();
      expect(synthYaml).toHaveBeenCalledTimes(1);
    } finally {
      synthYaml.mockRestore();
    }
  });
});
