import { ApiObject, App, Chart, ImplicitTokenResolver, IResolver, Lazy, LazyResolver, NumberStringUnionResolver, ResolutionContext, Testing } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import * as kube from '../../src/common/kube';
import { synthesizeFast } from '../../src/common/synth-json';
import { Leaves, randomValue, rng } from '../support/typed-values';

/** JSON text keeps key order, which is the YAML's order; undefined values show (YAML writes them). */
const text = (x: unknown) => JSON.stringify(x, (_k, v) => (v === undefined ? '<undefined>' : v));

/** The result of a synthesis, or the error it threw: both paths must agree on either. */
function outcome(f: () => unknown): string {
  try {
    return text(f());
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

class Opaque { constructor(readonly x = 1) {} }

/** Unresolved props as users and the constructs write them: unions as classes, and now and then a Lazy, a token or an odd object. */
const TYPED_LEAVES: Leaves = {
  leaf: r => {
    const x = r();
    if (x < 0.03) return Lazy.any({ produce: () => 'from-lazy' });
    if (x < 0.05) return { resolve: () => 'from-token' };
    if (x < 0.06) return new Opaque();
    if (x < 0.07) return new Date(0);
    return [undefined, null, 0, 7, '', 's', true, false, '500m', { b: 2, a: [1, null] }][Math.floor(r() * 10)];
  },
  wrapped: r => {
    const x = r();
    if (x < 0.4) return k8s.Quantity.fromString('16Gi');
    if (x < 0.7) return k8s.IntOrString.fromNumber(8080);
    if (x < 0.8) return { value: 'plain' };
    return TYPED_LEAVES.leaf(r);
  },
};

const KINDS: Array<[keyof typeof kube, string, string]> = [
  ['KubeStatefulSet', 'KubeStatefulSetProps', 'StatefulSetSpec'],
  ['KubeService', 'KubeServiceProps', 'ServiceSpec'],
  ['KubeJob', 'KubeJobProps', 'JobSpec'],
  ['KubePodDisruptionBudget', 'KubePodDisruptionBudgetProps', 'PodDisruptionBudgetSpec'],
];

describe('synthesizeFast', () => {
  test.each(KINDS)('writes what cdk8s and cdk8s-plus-28 write for a %s with random typed props, or leaves it to them', (cls, props, spec) => {
    const r = rng(props.length * 104729);
    let fast = 0;
    for (let i = 0; i < 250; i++) {
      const chart = new Chart(Testing.app(), 'c');
      const K = kube[cls] as unknown as new (s: Chart, id: string, p: object) => ApiObject;
      // Random metadata too (labels, annotations, finalizers, owner references, extra keys), with a name.
      const metadata = i % 3 === 0 ? { name: 'n', labels: { b: 'x', a: 'y' } } : { ...(randomValue('ObjectMeta', r, TYPED_LEAVES) as object), name: 'n' };
      const obj = new K(chart, 'o', { metadata, spec: randomValue(spec, r, TYPED_LEAVES) });
      const original = () => Object.getPrototypeOf(K.prototype).toJson.call(obj);
      const expected = outcome(original);
      if (synthesizeFast(obj, props) !== undefined) fast++;
      expect(outcome(() => obj.toJson())).toEqual(expected);
    }
    // Both paths are exercised: mostly fast, and the cdk8s path for what only cdk8s resolves.
    expect(fast).toBeGreaterThan(30);
    expect(fast).toBeLessThan(250);
  });

  test('leaves an app with its own resolvers to cdk8s', () => {
    class Upper implements IResolver {
      resolve(c: ResolutionContext): void {
        if (typeof c.value === 'string' && c.value.startsWith('up:')) c.replaceValue(c.value.slice(3).toUpperCase());
      }
    }
    const chart = new Chart(new App({ resolvers: [new Upper()] }), 'c');
    const svc = new kube.KubeService(chart, 's', { metadata: { name: 's' }, spec: { type: 'up:clusterip' } });
    expect(synthesizeFast(svc, 'KubeServiceProps')).toBeUndefined();
    expect(svc.toJson().spec).toEqual({ type: 'CLUSTERIP' });
    // The default resolvers, but subclassed: also cdk8s's.
    class MyLazy extends LazyResolver {}
    const other = new Chart(new App({ resolvers: [] }), 'c');
    (other.node.root as App).resolvers.splice(0, 3, new MyLazy(), new ImplicitTokenResolver(), new NumberStringUnionResolver());
    expect(synthesizeFast(new kube.KubeService(other, 's', { spec: {} }), 'KubeServiceProps')).toBeUndefined();
  });

  test('keeps keys in insertion order when CDK8S_DISABLE_SORT is set, as cdk8s does', () => {
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 's', { metadata: { name: 's' }, spec: { selector: { z: '1', a: '2' } } });
    const original = () => Object.getPrototypeOf(kube.KubeService.prototype).toJson.call(svc);
    process.env.CDK8S_DISABLE_SORT = '1';
    try {
      expect(Object.keys(svc.toJson().spec.selector)).toEqual(['z', 'a']);
      expect(text(svc.toJson())).toEqual(text(original()));
    } finally {
      delete process.env.CDK8S_DISABLE_SORT;
    }
    expect(Object.keys(svc.toJson().spec.selector)).toEqual(['a', 'z']);
  });

  test('resolves a Lazy in the props or the metadata once per synthesis, through cdk8s', () => {
    let calls = 0;
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 's', {
      metadata: { name: 's', labels: { at: Lazy.any({ produce: () => `call-${++calls}` }) as unknown as string } },
      spec: { type: Lazy.any({ produce: () => 'ClusterIP' }) as unknown as string },
    });
    const json = svc.toJson();
    expect(json.spec).toEqual({ type: 'ClusterIP' });
    expect(json.metadata.labels).toEqual({ at: 'call-1' });
    expect(calls).toBe(1);
  });
  test('takes cdk8s path for props that are a token as a whole, and for errors, which cdk8s then names with the object path', () => {
    const chart = new Chart(Testing.app(), 'c');
    const token = new kube.KubeService(chart, 't', { metadata: { name: 'a' }, spec: {}, resolve: () => ({ spec: { type: 'Foo' } }) } as any);
    const original = (o: ApiObject) => () => Object.getPrototypeOf(kube.KubeService.prototype).toJson.call(o);
    expect(synthesizeFast(token, 'KubeServiceProps')).toBeUndefined();
    expect(text(token.toJson())).toEqual(text(original(token)()));
    const throwing = new kube.KubeService(chart, 'g', { metadata: { name: 'b' }, spec: { selector: { get x(): string { throw new Error('boom'); } } } });
    expect(outcome(() => throwing.toJson())).toEqual(outcome(original(throwing)));
    expect(() => throwing.toJson()).toThrow(/Failed serializing construct at path 'c\/g' with name 'b': Error: boom/);
  });
});

