import { ApiObject, App, Chart, JsonPatch, Size, Testing } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { buildApps } from '../../apps/apps';
import { Autoscaler, GpuTrainingStatefulSet, VllmInferenceService } from '../../src';
import { toApiJson } from '../../src/common/api-json';
import * as kube from '../../src/common/kube';
import { K8S_JSON_SHAPES, Shape } from '../../src/common/k8s-json-shapes';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../scripts/gen-k8s-json-shapes.js');

/** cdk8s-plus-28's own converter of a struct. */
const original = (struct: string) => (k8s as any)[`toJson_${struct}`] as (x: unknown) => unknown;
/** JSON text keeps key order, which is the YAML's order; undefined values show (YAML writes them). */
const text = (x: unknown) => JSON.stringify(x, (_k, v) => (v === undefined ? '<undefined>' : v));

/** A deterministic pseudo-random source, so a failure reproduces. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** A random typed value of a struct, as resolved props hold it, with keys of every awkward kind. */
function randomValue(struct: string, r: () => number, depth = 0): any {
  const out: any = {};
  const keys = ['a', 'clusterIp', 'hostIPC', '10', '__proto__', 'z-b', 'nvidia.com/gpu'];
  const leaf = () => [undefined, null, 0, 7, '', 's', true, false, '500m'][Math.floor(r() * 9)];
  const wrapped = () => (r() < 0.8 ? { value: r() < 0.5 ? '16Gi' : 8080 } : leaf());
  const value = (shape: Shape): any => {
    if (shape === 0) return r() < 0.2 ? { nested: leaf() } : leaf();
    if (shape === 'v') return wrapped();
    if (shape === 'd') return r() < 0.5 ? undefined : new Date(1_700_000_000_000);
    if (typeof shape === 'string') return depth > 3 || r() < 0.3 ? undefined : randomValue(shape, r, depth + 1);
    if (r() < 0.25) return undefined;
    const inner = shape[1];
    if (shape[0] === 'a') return Array.from({ length: Math.floor(r() * 3) }, () => (inner === undefined ? leaf() : randomValue(inner, r, depth + 1)));
    const map: any = {};
    for (const k of keys.filter(() => r() < 0.4)) {
      const v = inner === undefined ? leaf() : inner === 'v' ? wrapped() : inner === 'a' ? [leaf(), leaf()] : randomValue(inner, r, depth + 1);
      Object.defineProperty(map, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return map;
  };
  for (const [, typed, shape] of K8S_JSON_SHAPES[struct]) {
    if (r() < 0.5) out[typed] = value(shape);
  }
  if (r() < 0.2) out.notAField = 'dropped';
  return out;
}

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

describe('the kinds the library creates', () => {
  test('synthesize every object of the example apps exactly as the cdk8s-plus-28 classes do', () => {
    const app = new App({ outdir: '/nonexistent' });
    buildApps(app);
    // The two kinds the example apps do not make: an HPA and claims adopted on a version bump.
    const extra = new Chart(app, 'extra');
    new VllmInferenceService(extra, 'hpa', { name: 'hpa', modelId: 'Qwen/Qwen2.5-7B-Instruct', autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.hpa({ metricName: 'queue_depth' }) } });
    new GpuTrainingStatefulSet(extra, 'adopt', { name: 'adopt', image: 'i', args: ['t.py'], gpusPerPod: 1, version: 2, replicas: 2, storage: { size: Size.gibibytes(1) }, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] } });
    const objects = app.node.findAll().filter((c): c is ApiObject => c instanceof ApiObject);
    // `instanceof` is true of any ApiObject for every ApiObject class (cdk8s's Symbol.hasInstance): use prototypes.
    const classOf = (o: ApiObject) => Object.values(kube).find(K => K.prototype.isPrototypeOf(o));
    const fast = objects.filter(o => classOf(o) !== undefined);
    expect(new Set(fast.map(o => o.kind))).toEqual(new Set(['ConfigMap', 'CronJob', 'HorizontalPodAutoscaler', 'Job', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'Secret', 'Service', 'ServiceAccount', 'StatefulSet']));
    for (const o of fast) {
      const base = Object.getPrototypeOf(classOf(o)!.prototype); // the cdk8s-plus-28 class's prototype
      expect(Object.values(k8s).some(K => typeof K === 'function' && K.prototype === base)).toBe(true);
      expect([o.kind, text(o.toJson())]).toEqual([o.kind, text(base.toJson.call(o))]);
    }
  });

  test('are the cdk8s-plus-28 classes, by instanceof and by name', () => {
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 's', { spec: { clusterIp: 'None' } });
    expect(k8s.KubeService.prototype.isPrototypeOf(svc)).toBe(true);
    expect(kube.KubeService.name).toBe('KubeService');
    expect(Testing.synth(chart)[0].spec).toEqual({ clusterIP: 'None' });
  });

  test('with a JsonPatch escape hatch, synthesize as cdk8s-plus-28 does (patch first, then convert)', () => {
    const chart = new Chart(Testing.app(), 'c');
    const props = { spec: { clusterIp: 'None', ports: [{ port: 80 }] } };
    const fast = new kube.KubeService(chart, 'fast', { metadata: { name: 'a' }, ...props });
    const plain = new k8s.KubeService(chart, 'plain', { metadata: { name: 'a' }, ...props });
    for (const o of [fast, plain]) o.addJsonPatch(JsonPatch.add('/spec/ports/0/name', 'http'), JsonPatch.add('/spec/unknownField', 1));
    expect(text(fast.toJson())).toEqual(text(plain.toJson()));
    expect(fast.toJson().spec).toEqual({ clusterIP: 'None', ports: [{ name: 'http', port: 80 }] });
  });
});
