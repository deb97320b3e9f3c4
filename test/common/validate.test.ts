import { Duration, Size } from 'cdk8s';
import { configKey } from '../../src/common/env';
import { ConfigurationError, INT32_MAX, show, Validator } from '../../src/validation/validate';

const v = new Validator('Thing', 'id');

function message(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigurationError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigurationError');
}

describe('values in messages read as the user wrote them', () => {
  test.each([
    [Size.gibibytes(16), '16Gi'],
    [Size.mebibytes(1500), '1500Mi'],
    [Duration.hours(5), '5h'],
    [Duration.millis(1500), '1500ms'],
    [Duration.minutes(15), '15m'],
    [NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [null, 'null'],
    [undefined, 'undefined'],
    ['x', '"x"'],
  ])('%p shows as %s', (value, shown) => expect(show(value)).toBe(shown));
});

describe('Validator', () => {
  test('whole numbers stop at the int32 limit of Kubernetes integer fields', () => {
    expect(v.wholeNumber('replicas', INT32_MAX, 1)).toBe(INT32_MAX);
    expect(message(() => v.wholeNumber('replicas', INT32_MAX + 1, 1))).toBe(
      `Thing 'id': replicas must be a whole number >= 1 and at most ${INT32_MAX}, the largest Kubernetes integer (got ${INT32_MAX + 1})`,
    );
    expect(message(() => v.wholeNumber('replicas', NaN, 1))).toContain('(got NaN)');
    expect(message(() => v.wholeNumber('replicas', '3' as any, 1))).toContain('(got "3")');
    expect(message(() => v.wholeNumber('replicas', Symbol('x') as any, 1))).toContain(
      'replicas must be a whole number >= 1',
    );
  });

  test('durations: a fraction of a second or a wrong type names the prop', () => {
    expect(message(() => v.seconds('drainTimeout', Duration.millis(1500), 1))).toBe(
      "Thing 'id': drainTimeout must be a whole number of seconds >= 1s (got 1500ms)",
    );
    expect(message(() => v.seconds('drainTimeout', null as any, 1))).toMatch(/drainTimeout must be a Duration/);
    expect(message(() => v.seconds('drainTimeout', 30 as any, 1))).toMatch(
      /drainTimeout must be a Duration.*\(got 30\)/,
    );
  });

  test('sizes: fractions of a KiB, zero and wrong types name the prop', () => {
    expect(message(() => v.positiveSize('memory', Size.gibibytes(1.3)))).toMatch(
      /memory must be a whole number of KiB.*\(got 1\.3Gi\)$/,
    );
    expect(message(() => v.positiveSize('memory', Size.gibibytes(0)))).toMatch(
      /memory must be a positive size \(got 0Gi\)/,
    );
    expect(message(() => v.positiveSize('memory', '16Gi' as any))).toMatch(/memory must be a Size/);
  });

  test.each([
    'busybox',
    'busybox:1.36.1',
    'ghcr.io/huggingface/text-generation-inference:3.3.7',
    'nvcr.io/nvidia/pytorch:24.08-py3',
    'localhost:5000/team/img@sha256:' + 'a'.repeat(64),
    'vllm/vllm-openai:v0.11.0',
  ])('image %s is accepted', image => expect(v.image('image', image)).toBe(image));

  test.each(['', ' busybox', 'busy box', 'Busybox:1', 'img:', 'img:tag with space', 'img@sha256:short', 'img\n'])(
    'image %j is refused',
    image => {
      expect(message(() => v.image('image', image))).toMatch(/^Thing 'id': image must be an image reference/);
    },
  );

  test('qualified names, label values and annotations as the API server checks them', () => {
    expect(v.labels('labels', { 'example.com/team': 'nlp', a: '' })).toBeDefined();
    expect(message(() => v.labels('labels', { team: 'x'.repeat(64) }))).toMatch(/labels\.team must be a label value/);
    expect(message(() => v.labels('labels', { ['x'.repeat(64)]: 'a' }))).toMatch(/labels key must be a qualified name/);
    expect(message(() => v.labels('labels', { 'UPPER.example.com/x': 'a' }))).toMatch(/labels key/);
    expect(message(() => v.annotations('annotations', { a: 'x'.repeat(300 * 1024) }))).toMatch(
      /annotations must total at most 256 KiB/,
    );
  });

  test('an unknown prop suggests the closest known one', () => {
    expect(message(() => v.knownProps('', { gpusPerPods: 1 }, ['gpusPerPod', 'replicas']))).toMatch(
      /^Thing 'id': gpusPerPods is not a known prop; did you mean 'gpusPerPod'\?/,
    );
    expect(message(() => v.knownProps('', { zzz: 1 }, ['gpusPerPod']))).toMatch(
      /zzz is not a known prop \(known: gpusPerPod\)/,
    );
    expect(() => v.knownProps('', { replicas: undefined, gpusPerPod: 1 }, ['gpusPerPod'])).not.toThrow();
    expect(message(() => v.knownProps('', null as any, ['a']))).toMatch(/props must be an object/);
    // A nested prop is named with one dot, whichever way the caller wrote its prefix.
    for (const prefix of ['loraAdapters[0]', 'loraAdapters[0].'])
      expect(message(() => v.knownProps(prefix, { source: 'x' }, ['modelId']))).toMatch(
        /^Thing 'id': loraAdapters\[0\]\.source is not a known prop/,
      );
  });

  test.each(['.', 'a/b', '', 'x'.repeat(254), 'has space'])('ConfigMap/Secret key %j is refused', key => {
    expect(message(() => configKey(v, 'keys', key))).toMatch(/keys must be a valid ConfigMap or Secret key/);
  });

  test.each(['..', '..data', '..x'])('ConfigMap/Secret key %j is refused: the atomic writer owns it', key => {
    expect(message(() => configKey(v, 'keys', key))).toMatch(/keys must not start with "\.\."/);
  });

  test.each(['.hidden', 'credentials.json', 'a-b_c', 'x'.repeat(253)])('ConfigMap/Secret key %j is accepted', key => {
    expect(configKey(v, 'keys', key)).toBe(key);
  });
});
