import { ApiObject, App, Chart, Testing } from 'cdk8s';
import { synthValid, testChart, validateApp } from '../support/synth';
import { TestWorkload } from '../support/test-workload';

describe('no two objects share a kind, namespace and name', () => {
  test('two workloads of one name in one chart fail synth, naming both', () => {
    const chart = testChart('ml');
    new TestWorkload(chart, 'a', { name: 'same' });
    new TestWorkload(chart, 'b', { name: 'same' });
    expect(() => validateApp(chart)).toThrow(/TestWorkload 'b': name must make objects unique, but StatefulSet "same" in namespace "ml" is also made by TestWorkload 'a'/);
  });

  test('the same name in two charts of one namespace collides too; in two namespaces it does not', () => {
    const app = Testing.app();
    new TestWorkload(new Chart(app, 'one', { namespace: 'ml' }), 'a', { name: 'same' });
    new TestWorkload(new Chart(app, 'two', { namespace: 'ml' }), 'a', { name: 'same' });
    expect(() => app.synth()).toThrow(/StatefulSet "same" in namespace "ml"/);

    const ok = Testing.app();
    new TestWorkload(new Chart(ok, 'one', { namespace: 'ml' }), 'a', { name: 'same' });
    const other = new Chart(ok, 'two', { namespace: 'research' });
    new TestWorkload(other, 'a', { name: 'same' });
    expect(() => validateApp(other)).not.toThrow();
  });

  test('a user object that collides with a construct\'s is named too', () => {
    const chart = testChart();
    new TestWorkload(chart, 'a', { name: 'w' });
    new ApiObject(chart, 'mine', { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'w' } });
    expect(() => validateApp(chart)).toThrow(/ApiObject 'mine': name must make objects unique/);
  });

  test('different kinds of one name are fine', () => {
    const chart = testChart();
    new TestWorkload(chart, 'a', { name: 'w' });
    new ApiObject(chart, 'svc', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'w' }, spec: { ports: [{ port: 80 }] } });
    expect(() => synthValid(chart)).not.toThrow();
  });

  test('the check runs once per app, however many workloads it has', () => {
    const app = new App();
    const chart = new Chart(app, 'c');
    for (let i = 0; i < 5; i++) new TestWorkload(chart, `w${i}`, { name: `w${i}` });
    expect((app.node as any)._validations).toHaveLength(1);
  });
});
