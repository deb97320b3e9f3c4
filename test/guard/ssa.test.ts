// What server-side apply refuses that a client-side kubectl apply sends through (src/guard/ssa.ts). Each
// case was reproduced on a real API server (Kubernetes 1.32.13 and 1.36.3, kubectl apply --server-side),
// and the differential test (test/cluster/guard-differential.test.ts) holds the rules to one.
import { guard, GuardOptions } from '../../src';
import { liveExport } from './live-export';

const ssa: GuardOptions = { serverSideApply: true };
const errorsOf = (before: any[], after: any[], options: GuardOptions = ssa) =>
  guard(before, after, options).findings.filter(f => f.severity === 'error');
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

const deployment = (container: object) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', namespace: 'ml' },
  spec: {
    selector: { matchLabels: { a: 'b' } },
    template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i', ...container }] } },
  },
});

const lws = (resources: object, env?: object[]) => ({
  apiVersion: 'leaderworkerset.x-k8s.io/v1',
  kind: 'LeaderWorkerSet',
  metadata: { name: 'g', namespace: 'ml' },
  spec: {
    leaderWorkerTemplate: {
      size: 2,
      workerTemplate: { spec: { containers: [{ name: 'c', image: 'i', resources, ...(env ? { env } : {}) }] } },
    },
  },
});

describe('server-side apply: a keyed list whose items repeat a key (structured-merge-diff)', () => {
  test('two ports of one number, one without a protocol (keyed as TCP), are refused with the key', () => {
    const before = deployment({
      ports: [
        { containerPort: 80, name: 'a' },
        { containerPort: 81, name: 'b' },
      ],
    });
    const after = deployment({
      ports: [
        { containerPort: 80, name: 'a' },
        { containerPort: 80, name: 'b', protocol: 'TCP' },
      ],
    });
    const errors = errorsOf([before], [after]);
    expect(errors.map(e => [e.code, e.path, e.message])).toEqual([
      [
        'invalid-field',
        'spec.template.spec.containers[0].ports',
        'spec.template.spec.containers[0].ports: duplicate entries for key [containerPort=80,protocol="TCP"] (server-side apply cannot build the typed object, and applies nothing)',
      ],
    ]);
    // kubectl's client-side apply sends it, and the server stores both ports.
    expect(errorsOf([before], [after], {})).toEqual([]);
  });

  test('one number under two protocols is two keys: accepted', () => {
    const before = deployment({ ports: [{ containerPort: 53, name: 'a' }] });
    const after = deployment({
      ports: [
        { containerPort: 53, name: 'a' },
        { containerPort: 53, name: 'b', protocol: 'UDP' },
      ],
    });
    expect(errorsOf([before], [after])).toEqual([]);
  });

  test('an env variable twice is refused by its name, in a live export too', () => {
    const before = liveExport(deployment({ env: [{ name: 'A', value: '1' }] }));
    const after = deployment({
      env: [
        { name: 'A', value: '1' },
        { name: 'A', value: '2' },
      ],
    });
    expect(errorsOf([before], [after]).map(e => e.message)).toEqual([
      'spec.template.spec.containers[0].env: duplicate entries for key [name="A"] (server-side apply cannot build the typed object, and applies nothing)',
    ]);
  });
});

describe("server-side apply: a custom resource's object emptied by the manager that owned its fields", () => {
  test('limits: {} after limits: {memory} is stored as null, which the CRD schema refuses', () => {
    const before = lws({ limits: { memory: '1Gi' }, requests: { cpu: '1' } });
    const after = lws({ limits: {}, requests: { cpu: '1' } });
    const at = 'spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits';
    expect(errorsOf([before], [after]).map(e => [e.path, e.message])).toEqual([
      [
        at,
        `${at}: Invalid value: "null": ${at} in body must be of type object: "null" (server-side apply stores an object whose owned fields it removed as null)`,
      ],
    ]);
    // Client-side apply stores the empty map.
    expect(errorsOf([before], [after], {})).toEqual([]);
  });

  test('inside an atomic list (HTTPRoute rules) the emptied object is stored as written: accepted', () => {
    const route = (timeouts: object) => ({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'r', namespace: 'ml' },
      spec: { parentRefs: [{ name: 'gw' }], rules: [{ timeouts, backendRefs: [{ name: 's', port: 80 }] }] },
    });
    expect(errorsOf([route({ request: '60s' })], [route({})])).toEqual([]);
  });

  test('an empty object the manager never filled, or a built-in kind emptied, is accepted', () => {
    expect(errorsOf([lws({ requests: { cpu: '1' } })], [lws({ limits: {}, requests: { cpu: '1' } })])).toEqual([]);
    const before = deployment({ resources: { limits: { memory: '1Gi' } } });
    const after: any = clone(before);
    after.spec.template.spec.containers[0].resources.limits = {};
    expect(errorsOf([before], [after])).toEqual([]);
  });
});

describe("server-side apply: a built-in handler's only member emptied (stored as null, read as absent)", () => {
  const at = 'spec.template.spec.containers[0]';
  const sleep = (seconds?: number) => ({ lifecycle: { preStop: { sleep: seconds === undefined ? {} : { seconds } } } });

  test('preStop `sleep: {}` over `sleep: {seconds: 5}` leaves no handler: refused as the server refuses it', () => {
    const [f] = errorsOf([deployment(sleep(5))], [deployment(sleep())]);
    expect(f.path).toBe(`${at}.lifecycle.preStop`);
    expect(f.message).toBe(
      `${at}.lifecycle.preStop: Required value: must specify a handler type (server-side apply stores the emptied sleep as null, which leaves none)`,
    );
  });

  test('a probe whose exec or tcpSocket is emptied has no handler; an emptied httpGet or grpc keeps its default, not its port', () => {
    const probe = (handler: object) => ({ livenessProbe: { ...handler, periodSeconds: 5 } });
    const refused = (a: object, b: object) =>
      errorsOf([deployment(probe(a))], [deployment(probe(b))]).map(e => e.message.replace(/ \(server-side.*$/, ''));
    // As a 1.35.4 API server answered each (kubectl apply --server-side --dry-run=server).
    expect(refused({ exec: { command: ['x'] } }, { exec: {} })).toEqual([
      `${at}.livenessProbe: Required value: must specify a handler type`,
    ]);
    expect(refused({ tcpSocket: { port: 80 } }, { tcpSocket: {} })).toEqual([
      `${at}.livenessProbe: Required value: must specify a handler type`,
    ]);
    expect(refused({ httpGet: { path: '/h', port: 80 } }, { httpGet: {} })).toEqual([
      `${at}.livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
    ]);
    expect(refused({ grpc: { port: 80 } }, { grpc: {} })).toEqual([
      `${at}.livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
    ]);
  });

  test("a StatefulSet's pod template is validated only from 1.34 (kubernetes#131790): before, it is stored and its pods refused", () => {
    const sts = (container: object) => {
      const d = deployment(container) as any;
      return { ...d, kind: 'StatefulSet', spec: { ...d.spec, serviceName: 's' } };
    };
    const found = (serverVersion: string, make: (c: object) => any) =>
      guard([make(sleep(5))], [make(sleep())], { serverSideApply: true, serverVersion })
        .findings.filter(f => /handler type/.test(f.message))
        .map(f => `${f.severity} ${f.code}`);
    // 1.32.13 stored such a StatefulSet (the differential test); the pods it makes go through pod validation.
    expect(found('1.32', sts)).toEqual(['warning pods-refused']);
    expect(found('1.33', sts)).toEqual(['warning pods-refused']);
    expect(found('1.34', sts)).toEqual(['error invalid-field']);
    expect(found('1.35', sts)).toEqual(['error invalid-field']);
    const [w] = guard([sts(sleep(5))], [sts(sleep())], { serverSideApply: true, serverVersion: '1.32' }).findings;
    expect(w.message).toMatch(/Kubernetes 1\.32 stores the StatefulSet .* but refuses every pod made from it/);
    // A Deployment's template is validated on every supported server.
    expect(found('1.32', deployment)).toEqual(['error invalid-field']);
  });

  test('the boundaries: kept fields, an empty member never filled, another member left, or client-side apply', () => {
    expect(errorsOf([deployment(sleep(5))], [deployment(sleep(7))])).toEqual([]);
    expect(errorsOf([deployment({})], [deployment(sleep())])).toEqual([]);
    const both = { lifecycle: { preStop: { sleep: {}, exec: { command: ['true'] } } } };
    expect(
      errorsOf(
        [deployment({ lifecycle: { preStop: { sleep: { seconds: 5 }, exec: { command: ['true'] } } } })],
        [deployment(both)],
      ).filter(e => /handler type/.test(e.message)),
    ).toEqual([]);
    // kubectl apply (client-side) patches `seconds` away and keeps `sleep: {}`: not this rule.
    expect(
      guard([deployment(sleep(5))], [deployment(sleep())], { serverVersion: '1.35' }).findings.filter(f =>
        /handler type/.test(f.message),
      ),
    ).toEqual([]);
  });
});

describe('server-side apply: an item of a keyed list without any of its keys', () => {
  test("in a custom resource it is refused, naming the list; a built-in kind's list merges it", () => {
    const env = (items: object[]) => lws({ limits: { memory: '1Gi' } }, items);
    expect(
      errorsOf([env([{ name: 'A', value: '1' }])], [env([{ name: 'A', value: '1' }, { value: '2' }])]).map(
        e => e.message,
      ),
    ).toContain(
      'spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].env: an element omits all key fields [name] (server-side apply cannot build the typed object, and applies nothing)',
    );
    const before = deployment({ env: [{ name: 'A', value: '1' }] });
    const after = deployment({ env: [{ name: 'A', value: '1' }, { value: '2' }] });
    expect(errorsOf([before], [after])).toEqual([]);
  });
});
