import { Chart, Duration, Size, Testing } from 'cdk8s';
import { parse } from 'yaml';
import {
  EPP_DEFAULT_IMAGE,
  FailureMode,
  InferenceGateway,
  InferenceGatewayProps,
  ModelCache,
  plan,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
} from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { expectCrdValid } from '../support/crd-schema';
import { findOne, synthValid, testChart } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';
import { flagValue } from './support';

const MODEL = 'Qwen/Qwen2.5-7B-Instruct';
const gateway = { name: 'inference-gateway' };

/** One model on vLLM (two versions) and SGLang (on vLLM's port), another model, and a gateway for the first. */
function build(props: Partial<InferenceGatewayProps> = {}, namespace = 'serving') {
  const chart = testChart(namespace);
  const v1 = new VllmInferenceService(chart, 'v1', { name: 'qwen', modelId: MODEL, version: 1 });
  const v2 = new VllmInferenceService(chart, 'v2', { name: 'qwen', modelId: MODEL, version: 2 });
  // A shared cache too, so that whatever fills it (an init container today) is inside the selection test.
  const sgl = new SglangInferenceService(chart, 'sgl', {
    name: 'qwen',
    modelId: MODEL,
    version: 3,
    port: 8000,
    modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
  });
  new VllmInferenceService(chart, 'other', { name: 'qwen-other', modelId: MODEL });
  const gw = new InferenceGateway(chart, 'gw', { name: 'qwen-pool', services: [v1, v2, sgl], gateway, ...props });
  const objects = synthValid(chart);
  expectValidOutput(objects);
  return { chart, gw, objects, epp: findOne(objects, 'Deployment', gw.endpointPickerName) };
}

/** Every pod template in an output, with where it is. */
function podTemplates(objects: any[]): Array<{ where: string; labels: Record<string, string> }> {
  return objects.flatMap(o => {
    const t = o.spec?.template ?? o.spec?.jobTemplate?.spec?.template;
    return t ? [{ where: `${o.kind}/${o.metadata.name}`, labels: t.metadata?.labels ?? {} }] : [];
  });
}

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

function eppConfig(epp: any): any {
  return parse(flagValue(epp.spec.template.spec.containers[0].args, '--config-text')!);
}

describe('InferenceGateway', () => {
  test('the pool selects exactly the serving pods of every version and engine of the model, and nothing else', () => {
    const { objects } = build();
    const pool = findOne(objects, 'InferencePool');
    const selected = podTemplates(objects).filter(p => selects(pool.spec.selector.matchLabels, p.labels));
    expect(selected.map(p => p.where).sort()).toEqual([
      'Deployment/qwen-v3',
      'StatefulSet/qwen-v1',
      'StatefulSet/qwen-v2',
    ]);
    // The picker's pods and the other model's are outside it; so the client Service selects the same pods.
    const client = findOne(objects, 'Service', 'qwen');
    expect(client.spec.selector).toEqual(pool.spec.selector.matchLabels);
  });

  test('the pool: one target port, the picker by its Service and gRPC port, FailOpen by default', () => {
    const { objects } = build();
    const pool = findOne(objects, 'InferencePool');
    expect(pool.apiVersion).toBe('inference.networking.k8s.io/v1');
    expect(pool.spec.targetPorts).toEqual([{ number: 8000 }]);
    expect(pool.spec.endpointPickerRef).toEqual({
      name: 'qwen-pool-epp',
      port: { number: 9002 },
      failureMode: 'FailOpen',
    });
    const svc = findOne(objects, 'Service', 'qwen-pool-epp');
    expect(svc.spec.ports.find((p: any) => p.port === 9002).targetPort).toBe('grpc');
    const eppPod = findOne(objects, 'Deployment', 'qwen-pool-epp').spec.template;
    expect(selects(svc.spec.selector, eppPod.metadata.labels)).toBe(true);
  });

  test('failureMode FailClose reaches the pool', () => {
    const { objects } = build({ failureMode: FailureMode.FAIL_CLOSE });
    expect(findOne(objects, 'InferencePool').spec.endpointPickerRef.failureMode).toBe('FailClose');
  });

  test('the HTTPRoute: under the named Gateway, the pool as its backend', () => {
    const { objects } = build({
      gateway: { name: 'igw', namespace: 'gateways', sectionName: 'https' },
      hostnames: ['llm.example.com'],
      requestTimeout: Duration.minutes(10),
    });
    const route = findOne(objects, 'HTTPRoute');
    expect(route.spec.parentRefs).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'igw', namespace: 'gateways', sectionName: 'https' },
    ]);
    expect(route.spec.hostnames).toEqual(['llm.example.com']);
    expect(route.spec.rules).toEqual([
      {
        matches: [{ path: { type: 'PathPrefix', value: '/' } }],
        backendRefs: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'qwen-pool' }],
        timeouts: { request: '600s' },
      },
    ]);
  });

  test('the picker: pinned image, pool flags, ports, restricted Pod Security, a token to watch the API', () => {
    expect(EPP_DEFAULT_IMAGE).toBe('ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0');
    const { epp } = build();
    const pod = epp.spec.template.spec;
    const c = pod.containers[0];
    expect(c.image).toBe(EPP_DEFAULT_IMAGE);
    expect(flagValue(c.args, '--pool-name')).toBe('qwen-pool');
    expect(flagValue(c.args, '--pool-namespace')).toBe('serving');
    expect(flagValue(c.args, '--pool-group')).toBe('inference.networking.k8s.io');
    expect(flagValue(c.args, '--grpc-port')).toBe('9002');
    expect(c.args).toContain('--metrics-endpoint-auth=false');
    expect(c.args).not.toContain('--ha-enable-leader-election');
    expect(c.ports.map((p: any) => p.containerPort)).toEqual([9002, 9003, 9090]);
    expect(c.readinessProbe.grpc).toEqual({ port: 9003, service: 'inference-extension' });
    expect(podSecurityLevel(pod)).toBe('restricted');
    expect(pod.securityContext.runAsUser).toBe(65532);
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.serviceAccountName).toBe('qwen-pool-epp');
    expect(epp.spec.replicas).toBe(1);
    // Its own 30 s drain (the gateway's connections stay answered), then every open stream, which lasts at most
    // as long as the servers it routes to drain theirs.
    const servers = build().objects.filter(
      o => /^(StatefulSet|Deployment)$/.test(o.kind) && o.metadata.name !== 'qwen-pool-epp',
    );
    const longest = Math.max(...servers.map(o => o.spec.template.spec.terminationGracePeriodSeconds));
    expect(longest).toBe(120);
    expect(pod.terminationGracePeriodSeconds).toBe(30 + longest);
  });

  test('the picker reads each engine by its own metric names, which the engine facts give, and the pods carry their engine', () => {
    const { epp, objects } = build();
    const config = eppConfig(epp);
    // llm-d-router's API group: GIE's inference.networking.x-k8s.io/v1alpha1 still loads, deprecated.
    expect([config.apiVersion, config.kind]).toEqual(['llm-d.ai/v1alpha1', 'EndpointPickerConfig']);
    expect(config.schedulingProfiles[0].plugins.map((p: any) => p.pluginRef)).toEqual([
      'queue-scorer',
      'kv-cache-utilization-scorer',
      'prefix-cache-scorer',
    ]);
    const extractor = config.plugins.find((p: any) => p.type === 'core-metrics-extractor').parameters;
    expect(extractor.defaultEngine).toBe('vllm');
    expect(extractor.engineConfigs).toEqual([
      {
        name: 'vllm',
        queuedRequestsSpec: 'vllm:num_requests_waiting',
        runningRequestsSpec: 'vllm:num_requests_running',
        kvUsageSpec: 'vllm:kv_cache_usage_perc',
        loraSpec: 'vllm:lora_requests_info',
        cacheInfoSpec: 'vllm:cache_config_info',
      },
      {
        name: 'sglang',
        queuedRequestsSpec: 'sglang:num_queue_reqs',
        runningRequestsSpec: 'sglang:num_running_reqs',
        kvUsageSpec: 'sglang:token_usage',
        loraSpec: '',
        cacheInfoSpec: 'sglang:cache_config_info',
        cacheBlockSizeLabelName: 'page_size',
        cacheNumBlocksLabelName: 'num_pages',
      },
    ]);
    // qwen-v3 serves from a shared cache: a Deployment.
    const metaOf = (name: string) =>
      objects.find(o => /^(StatefulSet|Deployment)$/.test(o.kind) && o.metadata.name === name).spec.template.metadata;
    const names = ['qwen-v1', 'qwen-v3', 'qwen-other'];
    // Every vLLM and SGLang pod carries them, in a pool or not: a gateway added later restarts nothing. The
    // picker reads GIE's old label only when this one is absent.
    expect(names.map(n => metaOf(n).labels['llm-d.ai/engine-type'])).toEqual(['vllm', 'sglang', 'vllm']);
    expect(names.map(n => metaOf(n).labels['inference.networking.k8s.io/engine-type'])).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // Its one endpoint: the API port every pod of the pool listens on (the pool's target port).
    expect(names.map(n => metaOf(n).annotations['llm-d.ai/active-ports'])).toEqual(
      names.map(() => String(findOne(objects, 'InferencePool').spec.targetPorts[0].number)),
    );
  });

  test("the picker's size follows the endpoints it watches: 0.5 CPU and 1 GiB per 4, up to the chart's 4 CPU and 8 GiB", () => {
    const size = (replicas: number[], props: Partial<InferenceGatewayProps> = {}) => {
      const chart = testChart('serving');
      const services = replicas.map(
        (n, i) =>
          new VllmInferenceService(chart, `v${i + 1}`, { name: 'qwen', modelId: MODEL, version: i + 1, replicas: n }),
      );
      const gw = new InferenceGateway(chart, 'gw', { name: 'qwen-pool', services, gateway, ...props });
      return findOne(Testing.synth(chart), 'Deployment', gw.endpointPickerName).spec.template.spec.containers[0]
        .resources;
    };
    const sized = (cpu: string, memory: string, limit: string) => ({
      requests: { cpu, memory },
      limits: { memory: limit },
    });
    // One 8B pool of a few pods: what used to ask for 4 CPU and 8 GiB.
    expect(size([1])).toEqual(sized('0.5', '1Gi', '2Gi'));
    expect(size([2, 2])).toEqual(sized('0.5', '1Gi', '2Gi'));
    expect(size([4, 1])).toEqual(sized('1', '2Gi', '4Gi'));
    expect(size([16])).toEqual(sized('2', '4Gi', '8Gi'));
    expect(size([32])).toEqual(sized('4', '8Gi', '16Gi'));
    expect(size([100])).toEqual(sized('4', '8Gi', '16Gi'));
    // Autoscaled: its maximum counts.
    const chart = testChart('serving');
    const svc = new VllmInferenceService(chart, 'a', {
      name: 'qwen',
      modelId: MODEL,
      autoscaling: { maxReplicas: 12 },
    });
    expect(svc.maxReplicas).toBe(12);
    const gw = new InferenceGateway(chart, 'gw', { name: 'qwen-pool', services: [svc], gateway });
    expect(
      findOne(Testing.synth(chart), 'Deployment', gw.endpointPickerName).spec.template.spec.containers[0].resources,
    ).toEqual(sized('1.5', '3Gi', '6Gi'));
    // The prop overrides each.
    expect(size([1], { endpointPickerResources: { cpu: 3 } })).toEqual(sized('3', '1Gi', '2Gi'));
    expect(size([1], { endpointPickerResources: { memory: Size.gibibytes(6) } })).toEqual(sized('0.5', '6Gi', '12Gi'));
    expect(() => size([1], { endpointPickerResources: { cpu: 0 } })).toThrow(
      "InferenceGateway 'gw': endpointPickerResources.cpu must be a positive number (got 0)",
    );
  });

  test('adding or removing the gateway changes no serving pod template', () => {
    const serving = (withGateway: boolean) => {
      const chart = testChart('serving');
      const v1 = new VllmInferenceService(chart, 'v1', { name: 'qwen', modelId: MODEL });
      const sgl = new SglangInferenceService(chart, 'sgl', { name: 'qwen', modelId: MODEL, version: 2, port: 8000 });
      if (withGateway) new InferenceGateway(chart, 'gw', { name: 'qwen-pool', services: [v1, sgl], gateway });
      return Testing.synth(chart);
    };
    for (const [before, after] of [
      [serving(false), serving(true)],
      [serving(true), serving(false)],
    ]) {
      const result = plan(before, after);
      expect(result.workloads.filter(w => w.restarts).map(w => `${w.object}: ${w.changes.join(', ')}`)).toEqual([]);
    }
  });

  test('RBAC is the least the picker needs: read pods and its APIs in its namespace, nothing cluster-wide', () => {
    const { objects } = build();
    expect(objects.filter(o => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')).toEqual([]);
    const role = findOne(objects, 'Role', 'qwen-pool-epp');
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: ['get', 'list', 'watch'] },
      // The picker watches llm-d.ai's objectives, or GIE's where only those CRDs are installed: both, or its
      // cache never syncs on one of the two.
      {
        apiGroups: ['llm-d.ai'],
        resources: ['inferenceobjectives', 'inferencemodelrewrites'],
        verbs: ['get', 'list', 'watch'],
      },
      {
        apiGroups: ['inference.networking.x-k8s.io'],
        resources: ['inferenceobjectives', 'inferencemodelrewrites'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    const binding = findOne(objects, 'RoleBinding', 'qwen-pool-epp');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'qwen-pool-epp' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'qwen-pool-epp' }]);
  });

  test('replicas above 1 elect a leader: the flag, the leader-aware probes, and Lease access', () => {
    const { objects, epp } = build({ endpointPickerReplicas: 2 });
    const c = epp.spec.template.spec.containers[0];
    expect(epp.spec.replicas).toBe(2);
    expect(c.args).toContain('--ha-enable-leader-election');
    expect(c.readinessProbe.grpc.service).toBe('readiness');
    expect(c.livenessProbe.grpc.service).toBe('liveness');
    const rules = findOne(objects, 'Role').rules;
    expect(rules).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'create', 'update'],
    });
  });

  test('objectives and model rewrites are valid against the pinned CRDs and reference the pool', () => {
    const chart = testChart('serving');
    const loraAdapters = [
      { name: 'sql-v1', modelId: 'org/sql-v1' },
      { name: 'sql-v2', modelId: 'org/sql-v2' },
    ];
    // SGLang serves an adapter as `<served name>:<adapter>`: vLLM's adapters take those names, so one request name
    // reaches the same adapter on either engine.
    const v = new VllmInferenceService(chart, 'v', {
      name: 'qwen',
      modelId: MODEL,
      servedModelNames: ['qwen'],
      loraAdapters: loraAdapters.map(a => ({ ...a, name: `qwen:${a.name}` })),
    });
    const s = new SglangInferenceService(chart, 's', {
      name: 'qwen',
      modelId: MODEL,
      servedModelName: 'qwen',
      version: 2,
      port: 8000,
      loraAdapters,
    });
    new InferenceGateway(chart, 'gw', {
      name: 'qwen-pool',
      services: [v, s],
      gateway,
      objectives: [
        { name: 'interactive', priority: 10 },
        { name: 'batch', priority: -1 },
      ],
      modelRewrites: [
        {
          model: 'sql',
          targets: [
            { model: 'qwen:sql-v1', weight: 90 },
            { model: 'qwen:sql-v2', weight: 10 },
          ],
        },
      ],
    });
    const objects = synthValid(chart);
    expectValidOutput(objects);
    const objectives = objects.filter(o => o.kind === 'InferenceObjective');
    // Moved with the picker to llm-d-router: the kinds GIE v1.5.0 served as inference.networking.x-k8s.io.
    expect([
      ...new Set(objects.filter(o => /^Inference(Objective|ModelRewrite)$/.test(o.kind)).map(o => o.apiVersion)),
    ]).toEqual(['llm-d.ai/v1alpha2']);
    expect(objectives.map(o => [o.metadata.name, o.spec.priority])).toEqual([
      ['interactive', 10],
      ['batch', -1],
    ]);
    expect(objectives[0].spec.poolRef).toEqual({
      group: 'inference.networking.k8s.io',
      kind: 'InferencePool',
      name: 'qwen-pool',
    });
    const rewrite = findOne(objects, 'InferenceModelRewrite');
    expect(rewrite.spec.rules).toEqual([
      {
        matches: [{ model: { type: 'Exact', value: 'sql' } }],
        targets: [
          { modelRewrite: 'qwen:sql-v1', weight: 90 },
          { modelRewrite: 'qwen:sql-v2', weight: 10 },
        ],
      },
    ]);
    expectCrdValid(objects.filter(o => /networking|llm-d\.ai/.test(o.apiVersion) && o.kind !== 'NetworkPolicy'));
    expect(s.servedModelNames).toEqual(['qwen', 'qwen:sql-v1', 'qwen:sql-v2']);
    expect(v.servedModelNames).toEqual(s.servedModelNames);
  });

  test("a rewrite to a bare adapter name is refused when SGLang serves the pool: it would get SGLang's base model", () => {
    const chart = testChart('serving');
    const loraAdapters = [{ name: 'sql', modelId: 'org/sql' }];
    const v = new VllmInferenceService(chart, 'v', { name: 'qwen', modelId: MODEL, loraAdapters });
    const s = new SglangInferenceService(chart, 's', {
      name: 'qwen',
      modelId: MODEL,
      version: 2,
      port: 8000,
      loraAdapters,
    });
    expect(
      () =>
        new InferenceGateway(chart, 'gw', {
          name: 'p',
          services: [v, s],
          gateway,
          modelRewrites: [{ model: 'sql-latest', targets: [{ model: 'sql' }] }],
        }),
    ).toThrow(
      /modelRewrites\[0\]\.targets\[0\]\.model must be served by every service .*\(got sql, which qwen-v2 does not serve\)/,
    );
  });

  test('a rewrite to a name some server of the pool does not serve is refused', () => {
    const chart = testChart('serving');
    const v = new VllmInferenceService(chart, 'v', {
      name: 'qwen',
      modelId: MODEL,
      servedModelNames: ['qwen', 'canary'],
    });
    const s = new SglangInferenceService(chart, 's', { name: 'qwen', modelId: MODEL, version: 2, port: 8000 });
    expect(
      () =>
        new InferenceGateway(chart, 'gw', {
          name: 'p',
          services: [v, s],
          gateway,
          modelRewrites: [{ model: 'qwen', targets: [{ model: 'canary' }] }],
        }),
    ).toThrow(
      /modelRewrites\[0\]\.targets\[0\]\.model must be served by every service of the pool .*\(got canary, which qwen-v2 does not serve\)/,
    );
  });

  describe('refusals', () => {
    const chartWith = () => {
      const chart = testChart('serving');
      const v = new VllmInferenceService(chart, 'v', { name: 'qwen', modelId: MODEL });
      return { chart, v };
    };
    test('TGI, with the reason', () => {
      const { chart } = chartWith();
      const tgi = new TgiInferenceService(chart, 'tgi', { name: 'qwen', modelId: MODEL, version: 2 });
      expect(() => new InferenceGateway(chart, 'gw', { name: 'p', services: [tgi], gateway })).toThrow(
        /InferenceGateway 'gw': services\[0\] must be a vLLM or SGLang service: TGI exports no KV-cache utilization gauge/,
      );
    });
    test('engines on different ports', () => {
      const { chart, v } = chartWith();
      const sgl = new SglangInferenceService(chart, 'sgl', { name: 'qwen', modelId: MODEL, version: 2 });
      expect(() => new InferenceGateway(chart, 'gw', { name: 'p', services: [v, sgl], gateway })).toThrow(
        /services must listen on one port \(set `port` on them\).*\(got 8000 and 30000 \(sgl\)\)/,
      );
    });
    test('two models', () => {
      const { chart, v } = chartWith();
      const o = new VllmInferenceService(chart, 'o', { name: 'other', modelId: MODEL });
      expect(() => new InferenceGateway(chart, 'gw', { name: 'p', services: [v, o], gateway })).toThrow(
        /services must all serve one model/,
      );
    });
    test('a service in another namespace', () => {
      const app = Testing.app();
      const a = new Chart(app, 'a', { namespace: 'a' });
      const b = new Chart(app, 'b', { namespace: 'b' });
      const v = new VllmInferenceService(a, 'v', { name: 'qwen', modelId: MODEL });
      expect(() => new InferenceGateway(b, 'gw', { name: 'p', services: [v], gateway })).toThrow(
        /services\[0\] must be in the gateway's namespace/,
      );
    });
    test.each<[Partial<InferenceGatewayProps>, RegExp]>([
      [{ services: [] }, /services must list at least one serving construct/],
      [{ endpointPickerReplicas: 0 }, /endpointPickerReplicas/],
      [{ failureMode: 'Open' as any }, /failureMode must be one of FailOpen, FailClose/],
      [{ gateway: { name: 'Bad Name' } }, /gateway\.name/],
      [{ objectives: [{ name: 'a', priority: 1.5 }] }, /objectives\[0\]\.priority must be a whole number/],
      [{ modelRewrites: [{ model: 'a', targets: [] }] }, /modelRewrites\[0\]\.targets must list at least one target/],
      [{ modelRewrites: [{ model: 'a', targets: [{ model: 'b', weight: 0 }] }] }, /targets\[0\]\.weight/],
      [{ name: 'x'.repeat(60) }, /InferenceGateway 'gw': name/],
      [{ unknown: 1 } as any, /unknown/],
    ])('%j', (props, error) => {
      const { chart, v } = chartWith();
      expect(() => new InferenceGateway(chart, 'gw', { name: 'p', services: [v], gateway, ...props })).toThrow(error);
    });
  });
});

describe('InferenceGateway flowControl', () => {
  test("turns on the picker's flow control gate with its TTL and a queue bounded by the picker's memory", () => {
    const off = eppConfig(build().epp);
    expect(off.featureGates).toBeUndefined();
    expect(off.flowControl).toBeUndefined();
    const { epp } = build({ flowControl: {} });
    const config = eppConfig(epp);
    expect(config.featureGates).toEqual(['flowControl']);
    const memory = epp.spec.template.spec.containers[0].resources.requests.memory;
    expect(config.flowControl).toEqual({ defaultRequestTTL: '60s', maxBytes: memory });
    // A queued request waits up to its TTL, then generates: the route's timeout holds both.
    expect(findOne(build({ flowControl: {} }).objects, 'HTTPRoute').spec.rules[0].timeouts.request).toBe('360s');
    expect(
      eppConfig(build({ flowControl: { requestTtl: Duration.seconds(120) } }).epp).flowControl.defaultRequestTTL,
    ).toBe('120s');
  });

  test('a TTL the gateway would cut short is refused', () => {
    // The default timeout follows the TTL (the TTL plus 300 s); a timeout given must exceed it.
    expect(build({ flowControl: { requestTtl: Duration.seconds(600) } }).gw.node.id).toBe('gw');
    expect(() =>
      build({ flowControl: { requestTtl: Duration.seconds(600) }, requestTimeout: Duration.seconds(300) }),
    ).toThrow(
      "InferenceGateway 'gw': flowControl.requestTtl must be shorter than requestTimeout (300s): a gateway that counts the wait in the picker's queue in its timeout would end a queued request first, and the client would see its timeout instead of the picker's 429 or 503 (got \"600s\")",
    );
    expect(() => build({ flowControl: { ttl: Duration.seconds(5) } as any })).toThrow(
      /flowControl\.ttl is not a known prop/,
    );
  });
});
