import { Chart, Testing } from 'cdk8s';
import {
  GpuTrainingJob,
  GpuTrainingStatefulSet,
  InferenceGateway,
  NetworkAccess,
  NetworkPeer,
  RotatingGpuSecret,
  VllmInferenceService,
} from '../../src';
import { findOne, synthValid, testChart } from '../support/synth';

const NS_LABEL = 'kubernetes.io/metadata.name';

function podLabelsOf(objects: any[], kind: string): Record<string, string> {
  const o = findOne(objects, kind);
  return kind === 'JobSet'
    ? o.spec.replicatedJobs[0].template.spec.template.metadata.labels
    : o.spec.template.metadata.labels;
}

/** Whether a policy's podSelector selects pods with these labels. */
function selects(policy: any, labels: Record<string, string>): boolean {
  return Object.entries(policy.spec.podSelector.matchLabels).every(([k, v]) => labels[k] === v);
}

function policies(objects: any[]): any[] {
  return objects.filter(o => o.kind === 'NetworkPolicy');
}

describe('serving NetworkPolicy', () => {
  const serve = (props: Partial<ConstructorParameters<typeof VllmInferenceService>[2]> = {}, chart = testChart()) => {
    new VllmInferenceService(chart, 'llm', { name: 'llm', modelId: 'org/model', ...props });
    return synthValid(chart);
  };

  test('by default admits the namespace on the API port and the monitoring namespace on metrics', () => {
    const objects = serve();
    const [policy] = policies(objects);
    expect(selects(policy, podLabelsOf(objects, 'StatefulSet'))).toBe(true);
    expect(policy.spec.podSelector.matchLabels).not.toHaveProperty('app.kubernetes.io/managed-by');
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([
      { from: [{ podSelector: {} }], ports: [{ port: 'http', protocol: 'TCP' }] },
      {
        from: [{ namespaceSelector: { matchLabels: { [NS_LABEL]: 'monitoring' } } }],
        ports: [{ port: 'http', protocol: 'TCP' }],
      },
    ]);
    // The named port is the container's, so the rule follows a changed `port`.
    const main = findOne(objects, 'StatefulSet').spec.template.spec.containers[0];
    expect(main.ports.map((p: any) => p.name)).toContain('http');
  });

  test('clients replace the namespace default; the monitoring namespace is a prop', () => {
    const objects = serve({
      networkPolicy: NetworkAccess.restricted({
        clients: [
          NetworkPeer.namespace('envoy-gateway-system'),
          NetworkPeer.pods({ app: 'chat-ui' }),
          NetworkPeer.podsInNamespace('apps', { app: 'rag' }),
          NetworkPeer.cidr('10.20.0.0/16'),
        ],
        monitoringNamespace: 'observability',
      }),
    });
    const [policy] = policies(objects);
    expect(policy.spec.ingress[0].from).toEqual([
      { namespaceSelector: { matchLabels: { [NS_LABEL]: 'envoy-gateway-system' } } },
      { podSelector: { matchLabels: { app: 'chat-ui' } } },
      { podSelector: { matchLabels: { app: 'rag' } }, namespaceSelector: { matchLabels: { [NS_LABEL]: 'apps' } } },
      { ipBlock: { cidr: '10.20.0.0/16' } },
    ]);
    expect(policy.spec.ingress[1].from).toEqual([
      { namespaceSelector: { matchLabels: { [NS_LABEL]: 'observability' } } },
    ]);
  });

  test('unrestricted makes no NetworkPolicy', () => {
    expect(policies(serve({ networkPolicy: NetworkAccess.unrestricted() }))).toEqual([]);
  });

  test("an InferenceGateway adds its Endpoint Picker to each member's API rule", () => {
    const chart = testChart();
    const svc = new VllmInferenceService(chart, 'llm', {
      name: 'llm',
      modelId: 'org/model',
      networkPolicy: NetworkAccess.restricted({ clients: [NetworkPeer.namespace('gateway')] }),
    });
    new InferenceGateway(chart, 'gw', { name: 'pool', services: [svc], gateway: { name: 'inference-gateway' } });
    const objects = synthValid(chart);
    const policy = policies(objects).find(p => p.metadata.name === 'llm')!;
    const epp = findOne(objects, 'Deployment').spec.template.metadata.labels;
    const peers = policy.spec.ingress[0].from;
    expect(peers[0]).toEqual({ namespaceSelector: { matchLabels: { [NS_LABEL]: 'gateway' } } });
    expect(Object.entries(peers[1].podSelector.matchLabels).every(([k, v]) => epp[k] === v)).toBe(true);
    // The picker's pods are not the serving pods: the rule names them, not the namespace.
    expect(selects(policy, epp)).toBe(false);
  });

  test("an InferenceGateway admits its Gateway's proxies: the Gateway's namespace by default, or the peers named", () => {
    const withGateway = (props: Partial<ConstructorParameters<typeof InferenceGateway>[2]>) => {
      const chart = testChart('serving');
      const svc = new VllmInferenceService(chart, 'llm', {
        name: 'llm',
        modelId: 'org/model',
        // Clients named: the namespace default is gone, so only what the gateway adds lets its proxies in.
        networkPolicy: NetworkAccess.restricted({ clients: [NetworkPeer.pods({ app: 'chat-ui' })] }),
      });
      new InferenceGateway(chart, 'gw', { name: 'pool', services: [svc], gateway: { name: 'gw' }, ...props });
      return policies(synthValid(chart)).find(p => p.metadata.name === 'llm')!.spec.ingress[0];
    };
    const inNamespace = withGateway({ gateway: { name: 'gw', namespace: 'gateway-system' } });
    expect(inNamespace.from).toContainEqual({ namespaceSelector: { matchLabels: { [NS_LABEL]: 'gateway-system' } } });
    expect(inNamespace.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    // A Gateway without a namespace is in the route's own.
    expect(withGateway({}).from).toContainEqual({ podSelector: {} });
    const named = withGateway({
      gateway: { name: 'gw', namespace: 'gateway-system' },
      gatewayPeers: [NetworkPeer.namespace('envoy-gateway-system'), NetworkPeer.cidr('10.129.0.0/23')],
    });
    expect(named.from).toContainEqual({ namespaceSelector: { matchLabels: { [NS_LABEL]: 'envoy-gateway-system' } } });
    expect(named.from).toContainEqual({ ipBlock: { cidr: '10.129.0.0/23' } });
    expect(named.from).not.toContainEqual({
      namespaceSelector: { matchLabels: { [NS_LABEL]: 'gateway-system' } },
    });
    expect(() => withGateway({ gatewayPeers: [] })).toThrow(
      /InferenceGateway 'gw': gatewayPeers must name at least one peer \(omit it for the default\) \(got \[\]\)/,
    );
    expect(() => withGateway({ gatewayPeers: [{} as NetworkPeer] })).toThrow(
      /InferenceGateway 'gw': gatewayPeers\[0\] must be made with NetworkPeer\.namespace\(\)/,
    );
  });
});

describe('training NetworkPolicy', () => {
  test.each([
    [
      'GpuTrainingStatefulSet',
      'StatefulSet',
      (c: Chart) =>
        new GpuTrainingStatefulSet(c, 't', { name: 'trainer', image: 'img:1', gpusPerPod: 1, args: ['a.py'] }),
    ],
    [
      'GpuTrainingJob',
      'JobSet',
      (c: Chart) => new GpuTrainingJob(c, 't', { name: 'trainer', image: 'img:1', gpusPerPod: 1, args: ['a.py'] }),
    ],
  ])('%s admits every port only from its own job', (_name, kind, make) => {
    const chart = testChart();
    make(chart);
    const objects = Testing.synth(chart);
    const [policy] = policies(objects);
    const labels = podLabelsOf(objects, kind);
    expect(selects(policy, labels)).toBe(true);
    // No ports: torchrun's store and NCCL's ephemeral ports alike; the peer is the same selector.
    expect(policy.spec.ingress).toEqual([{ from: [{ podSelector: policy.spec.podSelector }] }]);
    expect(policy.spec.podSelector.matchLabels['app.kubernetes.io/instance']).toBe(
      labels['app.kubernetes.io/instance'],
    );
  });

  test('two jobs of one name but different versions do not admit each other', () => {
    const chart = testChart();
    const base = { name: 'trainer', image: 'img:1', gpusPerPod: 1, args: ['a.py'] };
    new GpuTrainingStatefulSet(chart, 'v1', { ...base, version: 1 });
    new GpuTrainingStatefulSet(chart, 'v2', { ...base, version: 2 });
    const [a, b] = policies(Testing.synth(chart));
    expect(a.metadata.name).not.toBe(b.metadata.name);
    expect(selects(a, b.spec.podSelector.matchLabels)).toBe(false);
  });
});

describe('NetworkPeer refusals', () => {
  const err = (peer: () => NetworkPeer) => {
    try {
      new VllmInferenceService(testChart(), 'llm', {
        name: 'llm',
        modelId: 'org/model',
        networkPolicy: NetworkAccess.restricted({ clients: [peer()] }),
      });
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };

  test.each([['169.254.169.254/32'], ['169.254.0.0/16'], ['169.254.0.0/24'], ['fe80::/64'], ['fe80::1/128']])(
    'a link-local block %s is refused, naming the prop',
    cidr => {
      expect(err(() => NetworkPeer.cidr(cidr))).toMatch(
        /VllmInferenceService 'llm': networkPolicy\.clients\[0\] must not be a link-local range/,
      );
    },
  );

  test.each([['10.0.0.1/8'], ['10.0.0.0/33'], ['10.0.0/8'], ['256.0.0.0/8'], ['fd00::1/8'], ['nonsense']])(
    'a malformed or non-canonical CIDR %s is refused',
    cidr => {
      expect(err(() => NetworkPeer.cidr(cidr))).toMatch(/networkPolicy\.clients\[0\] must be a CIDR/);
    },
  );

  test('a block wider than link-local keeps the metadata range out', () => {
    const chart = testChart();
    new VllmInferenceService(chart, 'llm', {
      name: 'llm',
      modelId: 'org/model',
      networkPolicy: NetworkAccess.restricted({ clients: [NetworkPeer.cidr('0.0.0.0/0'), NetworkPeer.cidr('::/0')] }),
    });
    const [policy] = policies(synthValid(chart));
    expect(policy.spec.ingress[0].from).toEqual([
      { ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } },
      { ipBlock: { cidr: '::/0', except: ['fe80::/10'] } },
    ]);
  });

  test('boundary: a block next to link-local is accepted as is', () => {
    const chart = testChart();
    new VllmInferenceService(chart, 'llm', {
      name: 'llm',
      modelId: 'org/model',
      networkPolicy: NetworkAccess.restricted({ clients: [NetworkPeer.cidr('169.255.0.0/16')] }),
    });
    expect(policies(synthValid(chart))[0].spec.ingress[0].from).toEqual([{ ipBlock: { cidr: '169.255.0.0/16' } }]);
  });

  test('a namespace that is not a DNS label, bad labels, and a foreign object are refused', () => {
    expect(err(() => NetworkPeer.namespace('Not_A_Label'))).toMatch(/networkPolicy\.clients\[0\] namespace/);
    expect(err(() => NetworkPeer.pods({ 'bad key!': 'x' }))).toMatch(/networkPolicy\.clients\[0\] labels/);
    expect(err(() => ({ podSelector: {} }) as unknown as NetworkPeer)).toMatch(
      /networkPolicy\.clients\[0\] must be made with NetworkPeer/,
    );
    expect(
      () =>
        new VllmInferenceService(testChart(), 'x', {
          name: 'x',
          modelId: 'org/model',
          networkPolicy: NetworkAccess.restricted({ monitoringNamespace: 'Monitoring' }),
        }),
    ).toThrow(/networkPolicy\.monitoringNamespace/);
    expect(
      () => new VllmInferenceService(testChart(), 'x', { name: 'x', modelId: 'org/model', networkPolicy: {} as any }),
    ).toThrow(/networkPolicy must be made with NetworkAccess/);
  });
});

describe('rotator egress NetworkPolicy', () => {
  const rotate = (egress?: NetworkPeer[]) => {
    const chart = testChart();
    const secret = new RotatingGpuSecret(chart, 'creds', {
      name: 'creds',
      rotation: { image: 'rotator:1', ...(egress ? { egress } : {}) },
    });
    return { secret, objects: synthValid(chart) };
  };

  test('none unless destinations are named', () => {
    const { secret, objects } = rotate();
    expect(policies(objects)).toEqual([]);
    expect(secret.rotator!.egressPolicy).toBeUndefined();
  });

  test('the named destinations and DNS, selecting the CronJob and initial Job pods only', () => {
    const { objects } = rotate([NetworkPeer.cidr('10.0.0.1/32'), NetworkPeer.cidr('0.0.0.0/0')]);
    const [policy] = policies(objects);
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    expect(policy.spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.0.0.1/32' } }, { ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } }] },
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ]);
    const cron = findOne(objects, 'CronJob').spec.jobTemplate.spec.template.metadata.labels;
    const initial = findOne(objects, 'Job').spec.template.metadata.labels;
    expect(selects(policy, cron)).toBe(true);
    expect(selects(policy, initial)).toBe(true);
  });

  test('an empty list and a metadata address are refused, naming the prop', () => {
    expect(() => rotate([])).toThrow(/RotatingGpuSecret 'creds': rotation\.egress must name at least one peer/);
    expect(() => rotate([NetworkPeer.cidr('169.254.169.254/32')])).toThrow(
      /rotation\.egress\[0\] must not be a link-local range/,
    );
  });
});
