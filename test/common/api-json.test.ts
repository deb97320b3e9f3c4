import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { toApiJson } from '../../src/common/api-json';
import { K8S_JSON_SHAPES } from '../../src/common/k8s-json-shapes';
import { randomValue, rng } from '../support/typed-values';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../scripts/gen-k8s-json-shapes.js');

/** cdk8s-plus-28's own converter of a struct. */
const original = (struct: string) => (k8s as any)[`toJson_${struct}`] as (x: unknown) => unknown;
/** JSON text keeps key order, which is the YAML's order; undefined values show (YAML writes them). */
const text = (x: unknown) => JSON.stringify(x, (_k, v) => (v === undefined ? '<undefined>' : v));

describe('toApiJson', () => {
  test('its table is the one cdk8s-plus-28\'s converters give today (else run scripts/gen-k8s-json-shapes.js)', () => {
    expect(generator.derive()).toEqual(K8S_JSON_SHAPES);
  });

  test.each(Object.keys(K8S_JSON_SHAPES))('converts %s exactly as cdk8s-plus-28 does, for random typed values', struct => {
    const r = rng(struct.length * 7919 + struct.charCodeAt(0));
    for (let i = 0; i < 40; i++) {
      const value = randomValue(struct, r);
      expect(text(toApiJson(value, struct))).toEqual(text(original(struct)(value)));
    }
  });

  test('renames, unwraps and leaves out as cdk8s-plus-28 does (a worked case)', () => {
    const spec = { clusterIp: 'None', ports: [{ port: 80, targetPort: k8s.IntOrString.fromString('http') }], selector: { clusterIp: 'a label key, not renamed' }, type: undefined };
    expect(toApiJson(spec, 'ServiceSpec')).toEqual({ clusterIP: 'None', ports: [{ port: 80, targetPort: 'http' }], selector: { clusterIp: 'a label key, not renamed' } });
    expect(text(toApiJson(spec, 'ServiceSpec'))).toEqual(text(k8s.toJson_ServiceSpec(spec as any)));
  });

  test('takes odd input the way cdk8s-plus-28 does: a primitive gives {}, null throws', () => {
    expect(toApiJson('x', 'ServiceSpec')).toEqual(k8s.toJson_ServiceSpec('x' as any));
    expect(() => toApiJson(null, 'ServiceSpec')).toThrow(TypeError);
    expect(() => toApiJson({}, 'NoSuchStruct')).toThrow(/no API JSON shape for NoSuchStruct/);
  });
});
