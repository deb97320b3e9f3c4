import * as path from 'path';
import { App, Chart, IResolver, JsonPatch, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-32';
import { outputErrorsOf } from '../support/synth';
import { GpuTrainingStatefulSet, TgiInferenceService } from '../../src';
import { readBackAsNumber } from '../../src/checks/number-like';
import { parseYamlDocuments } from '../../src/guard/yaml';

// cdk8s's own copy of `yaml`, called as cdk8s calls it.

const YAML: typeof import('yaml') = require(
  require.resolve('yaml', { paths: [path.dirname(require.resolve('cdk8s'))] }),
);

/** What kubectl gets for a string value that cdk8s wrote: the guard's reader resolves scalars as go-yaml v2 does. */
function roundTrip(s: string): unknown {
  const text = YAML.stringify({ v: s }, { keepUndefined: true, lineWidth: 0, version: '1.1' });
  return (parseYamlDocuments(text)[0].value as { v: unknown }).v;
}

describe('readBackAsNumber', () => {
  test.each([
    ['0o17', 15],
    ['0O17', 15],
    ['+0o17', 15],
    ['-0o17', -15],
    ['0o1_7', 15],
  ])('%s is written unquoted and read back by kubectl as %d', (s, n) => {
    expect(readBackAsNumber(s)).toBe(n);
    expect(roundTrip(s)).toBe(n);
  });

  test.each([
    '1e-5',
    '1e3',
    '017',
    '08',
    '0x1f',
    '1_000',
    '30',
    '0.5',
    '.5',
    'yes',
    'on',
    '~',
    '',
    'abc',
    '0.0.0.0',
    '16Gi',
    'v1.2.3',
    '0o',
    '0o8',
  ])('%j arrives as the string it is', s => {
    expect(readBackAsNumber(s)).toBeUndefined();
    expect(roundTrip(s)).toBe(s);
  });

  test('agrees with what cdk8s writes and kubectl reads, on random number-like strings', () => {
    let seed = 7;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = ['0', '1', '7', '8', '9', 'o', 'O', 'x', 'b', 'e', 'E', '_', '.', '+', '-', 'f'];
    let flagged = 0;
    for (let i = 0; i < 3000; i++) {
      const s =
        ['0', '1', '+', '-', '.'][Math.floor(r() * 5)] +
        Array.from({ length: 1 + Math.floor(r() * 5) }, () => alphabet[Math.floor(r() * alphabet.length)]).join('');
      const back = roundTrip(s);
      const n = readBackAsNumber(s);
      expect([s, n === undefined ? s : n]).toEqual([s, typeof back === 'string' ? back : back]);
      if (n !== undefined) flagged++;
    }
    expect(flagged).toBeGreaterThan(10); // the case is exercised, not only the fast path
  });
});

describe('a value kubectl would read back as a number fails synth, naming the construct', () => {
  test('an env value', () => {
    const chart = new Chart(Testing.app(), 'c');
    new GpuTrainingStatefulSet(chart, 'trainer', {
      name: 'trainer',
      image: 'img:1',
      args: ['train.py'],
      gpusPerPod: 1,
      env: { UMASK: '0o022' },
    });
    expect(() => Testing.synth(chart)).toThrow(
      /GpuTrainingStatefulSet 'trainer': StatefulSet\/trainer holds the string "0o022", which cdk8s writes unquoted \(YAML 1\.1\) and kubectl reads back as the number 18: .* \(got "0o022"\)/,
    );
  });

  test('a pod label key and an annotation value', () => {
    const label = new Chart(Testing.app(), 'c');
    new TgiInferenceService(label, 'tgi', { name: 'tgi', modelId: 'org/model', pod: { labels: { '0o17': 'x' } } });
    expect(() => Testing.synth(label)).toThrow(/TgiInferenceService 'tgi': StatefulSet\/tgi holds the string "0o17"/);
    const annotation = new Chart(Testing.app(), 'c');
    new TgiInferenceService(annotation, 'tgi', {
      name: 'tgi',
      modelId: 'org/model',
      pod: { annotations: { 'example.com/mode': '0o644' } },
    });
    expect(() => Testing.synth(annotation)).toThrow(/"0o644".* the number 420/);
  });
});

describe('the rule holds on every path to the output', () => {
  const trainer = (chart: Chart, env: Record<string, string> = {}) =>
    new GpuTrainingStatefulSet(chart, 'trainer', {
      name: 'trainer',
      image: 'img:1',
      args: ['train.py'],
      gpusPerPod: 1,
      env,
    });

  test('in an app with a custom resolver', () => {
    const resolver: IResolver = { resolve: () => undefined };
    const chart = new Chart(new App({ outdir: Testing.app().outdir, resolvers: [resolver] }), 'c');
    trainer(chart, { UMASK: '0o022' });
    expect(() => chart.toJson()).toThrow(/StatefulSet\/trainer holds the string "0o022"/);
  });

  test('in a value a JsonPatch escape hatch adds', () => {
    const chart = new Chart(Testing.app(), 'c');
    trainer(chart).statefulSet.addJsonPatch(JsonPatch.add('/spec/template/metadata/annotations', { mode: '0o644' }));
    expect(() => Testing.synth(chart)).toThrow(
      /GpuTrainingStatefulSet 'trainer': StatefulSet\/trainer holds the string "0o644"/,
    );
  });

  test("in a user's cdk8s-plus Deployment: reported by the whole-output rules", () => {
    const chart = new Chart(Testing.app(), 'c');
    new kplus.Deployment(chart, 'web', {
      containers: [{ image: 'nginx', envVariables: { UMASK: kplus.EnvValue.fromValue('0o022') } }],
    });
    expect(outputErrorsOf(chart)).toMatch(/^Deployment\/c-web-\w+ holds the string "0o022"/);
  });
});
