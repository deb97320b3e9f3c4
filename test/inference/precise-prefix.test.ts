import { Chart, Size, Testing } from 'cdk8s';
import {
  Disaggregation,
  ExpertParallel,
  InferenceGateway,
  KvCacheOffload,
  PrefixCacheScoring,
  RankEndpoints,
  SglangInferenceService,
  VllmInferenceService,
  VllmInferenceServiceProps,
} from '../../src';
import { expectValidOutput } from '../support/valid-output';

const MODEL = 'Qwen/Qwen2.5-7B-Instruct';

/** A mixture-of-experts service of 4 GPUs with an API port per data-parallel rank. */
const perRankMoe = (c: Chart, extra: Partial<VllmInferenceServiceProps> = {}) =>
  new VllmInferenceService(c, 'moe', {
    name: 'qwen',
    modelId: 'Qwen/Qwen3-30B-A3B',
    gpusPerReplica: 4,
    serviceMonitor: true,
    expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
    ...extra,
  });

function routed(make: (c: Chart) => Array<VllmInferenceService | SglangInferenceService>) {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  new InferenceGateway(chart, 'gw', {
    name: 'qwen',
    services: make(chart),
    gateway: { name: 'edge' },
    prefixCacheScoring: PrefixCacheScoring.PRECISE,
  });
  const objects = Testing.synth(chart);
  const named = (kind: string, name: string) => objects.find(o => o.kind === kind && o.metadata.name === name);
  const epp = named('Deployment', 'qwen-epp').spec.template.spec.containers[0];
  return { objects, named, config: epp.args[epp.args.indexOf('--config-text') + 1] as string };
}

describe('prefixCacheScoring: PRECISE', () => {
  const out = routed(c => [
    new VllmInferenceService(c, 'qwen', { name: 'qwen', modelId: MODEL, servedModelNames: ['qwen-7b'] }),
  ]);
  const main = out.named('StatefulSet', 'qwen').spec.template.spec.containers[0];

  test('the pods publish their KV events where the picker dials, topic kv@<pod>@<model>, and serve the render endpoints', () => {
    const at = main.args.indexOf('--kv-events-config');
    expect(JSON.parse(main.args[at + 1])).toEqual({
      enable_kv_cache_events: true,
      publisher: 'zmq',
      // `*` binds (vLLM distributed/kv_events.py); 0.0.0.0 would connect.
      endpoint: 'tcp://*:5557',
      topic: 'kv@$(POD_IP)@qwen-7b',
    });
    expect(main.args).toContain('--enable-scale-out');
    expect(main.env).toContainEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    expect(main.ports).toContainEqual({ name: 'kv-events', containerPort: 5557, protocol: 'TCP' });
    // Only the picker reaches the events socket.
    const rule = out.named('NetworkPolicy', 'qwen').spec.ingress.find((r: any) => r.ports?.[0]?.port === 'kv-events');
    expect(rule.from).toEqual([
      { podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/name': 'qwen-epp' }) } },
    ]);
  });

  test("the picker's config: the producer subscribes to the pods, the scorer reads it, the tokens come from the pods", () => {
    expect(out.config).toMatch(
      /- type: prefix-cache-scorer\n\s+parameters:\n\s+prefixMatchInfoProducerName: precise-prefix-cache-producer/,
    );
    expect(out.config).toMatch(
      /- type: token-producer\n\s+parameters:\n\s+modelName: qwen-7b\n\s+vllm:\n\s+url: http:\/\/qwen.serving.svc.cluster.local\n\s+timeout: 5s/,
    );
    expect(out.config).toMatch(/discoverPods: true\n\s+podDiscoveryConfig:\n\s+socketPort: 5557/);
    expect(out.config).toMatch(/blockSizeTokens: 16/);
    expect(out.config).toMatch(
      /dataLayer:\n\s+sources:\n\s+- pluginRef: metrics-data-source\n\s+extractors:\n\s+- pluginRef: core-metrics-extractor\n\s+- pluginRef: endpoint-notification-source\n\s+extractors:\n\s+- pluginRef: precise-prefix-cache-producer/,
    );
    expectValidOutput(out.objects);
  });

  test('both pools of a disaggregated service publish; the approximate default changes nothing on the pods', () => {
    const pd = routed(c => [
      new VllmInferenceService(c, 'qwen', { name: 'qwen', modelId: MODEL, disaggregation: Disaggregation.nixl() }),
    ]);
    for (const name of ['qwen', 'qwen-prefill'])
      expect(pd.named('StatefulSet', name).spec.template.spec.containers[0].args).toContain('--enable-scale-out');

    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    const s = new VllmInferenceService(chart, 'qwen', { name: 'qwen', modelId: MODEL });
    new InferenceGateway(chart, 'gw', { name: 'qwen', services: [s], gateway: { name: 'edge' } });
    const plain = Testing.synth(chart).find(o => o.kind === 'StatefulSet').spec.template.spec.containers[0];
    expect(plain.args.join(' ')).not.toMatch(/kv-events|scale-out/);
  });

  test('refused: SGLang, data-parallel ranks in a pod, two client model names, a topic set by hand', () => {
    expect(() => routed(c => [new SglangInferenceService(c, 'qwen', { name: 'qwen', modelId: MODEL })])).toThrow(
      /services\[0\] needs vLLM: the picker's token producer renders prompts through vLLM's \/render endpoints/,
    );
    expect(() =>
      routed(c => [
        new VllmInferenceService(c, 'qwen', {
          name: 'qwen',
          modelId: 'Qwen/Qwen3-30B-A3B',
          gpusPerReplica: 4,
          expertParallel: ExpertParallel.wide(),
        }),
      ]),
    ).toThrow(
      /must have an endpoint per data-parallel rank for precise prefix-cache scoring \(expertParallel.endpoints RankEndpoints.PER_RANK\): each rank publishes its KV-cache events on port 5557 \+ its rank/,
    );
    expect(() =>
      routed(c => [
        new VllmInferenceService(c, 'a', { name: 'qwen', modelId: MODEL }),
        new VllmInferenceService(c, 'b', { name: 'qwen', version: 2, modelId: MODEL, servedModelNames: ['other'] }),
      ]),
    ).toThrow(
      /prefixCacheScoring needs every service of the pool to serve the model under one first name .*\(got Qwen\/Qwen2.5-7B-Instruct and other\)/,
    );
    expect(() =>
      routed(c => [
        new VllmInferenceService(c, 'qwen', { name: 'qwen', modelId: MODEL, servedModelNames: ['qwen-7b', 'qwen'] }),
      ]),
    ).toThrow(/prefixCacheScoring needs services that serve the model under one name/);
    expect(() =>
      routed(c => [
        new VllmInferenceService(c, 'qwen', {
          name: 'qwen',
          modelId: MODEL,
          extraArgs: ['--kv-events-config', '{"enable_kv_cache_events":true}'],
        }),
      ]),
    ).toThrow(/must not set --kv-events-config in extraArgs for precise prefix-cache scoring/);
  });

  test('an endpoint per rank: each rank publishes on 5557 + its rank, where the picker dials for its target port', () => {
    // llm-d-router v0.10.0 preciseprefixcache/extractor.go dials 5557 + the endpoint's index in targetPorts; vLLM
    // 0.31.0 distributed/kv_events.py binds 5557 + the engine's data-parallel rank.
    const ranked = routed(c => [perRankMoe(c)]);
    const pod = ranked.named('StatefulSet', 'qwen').spec.template.spec;
    const main = pod.containers[0];
    expect(main.args.filter((a: string) => a === '--kv-events-config')).toHaveLength(1);
    const endpoint = JSON.parse(main.args[main.args.indexOf('--kv-events-config') + 1]).endpoint;
    expect(endpoint).toBe('tcp://*:5557');
    expect(ranked.named('InferencePool', 'qwen').spec.targetPorts).toEqual(
      [8000, 8001, 8002, 8003].map(number => ({ number })),
    );
    const events = main.ports.filter((p: any) => p.name.startsWith('kv-events'));
    expect(events.map((p: any) => [p.name, p.containerPort])).toEqual([
      ['kv-events', 5557],
      ['kv-events-1', 5558],
      ['kv-events-2', 5559],
      ['kv-events-3', 5560],
    ]);
    // The picker, and only it, reaches every rank's events.
    const policy = ranked.named('NetworkPolicy', 'qwen');
    const rule = policy.spec.ingress.find((r: any) => (r.ports ?? []).some((p: any) => p.port === 'kv-events'));
    expect(rule.ports.map((p: any) => p.port)).toEqual(['kv-events', 'kv-events-1', 'kv-events-2', 'kv-events-3']);
    expect(rule.from).toEqual([
      { podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/name': 'qwen-epp' }) } },
    ]);
    expectValidOutput(ranked.objects);
  });

  test("a pool of a one-port service and a per-rank one: each pod's ports are the pool's first, so both are dialled where they publish", () => {
    const mixed = routed(c => [
      new VllmInferenceService(c, 'a', { name: 'qwen', modelId: 'Qwen/Qwen3-30B-A3B', gpusPerReplica: 1 }),
      new VllmInferenceService(c, 'b', {
        name: 'qwen',
        version: 2,
        modelId: 'Qwen/Qwen3-30B-A3B',
        gpusPerReplica: 2,
        serviceMonitor: true,
        expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
      }),
    ]);
    expect(mixed.named('InferencePool', 'qwen').spec.targetPorts).toEqual([{ number: 8000 }, { number: 8001 }]);
    const eventPorts = (name: string) =>
      mixed
        .named('StatefulSet', name)
        .spec.template.spec.containers[0].ports.filter((p: any) => p.name.startsWith('kv-events'))
        .map((p: any) => p.containerPort);
    expect(eventPorts('qwen')).toEqual([5557]);
    expect(eventPorts('qwen-v2')).toEqual([5557, 5558]);
  });

  test('refused: ranks on a group, event ports the pod already uses', () => {
    expect(() => routed(c => [perRankMoe(c, { nodes: 2 })])).toThrow(
      /must run its per-rank endpoints in one pod for precise prefix-cache scoring: the ranks on a group's workers publish on port 5557 \+ their rank in the whole group/,
    );
    expect(() => routed(c => [new VllmInferenceService(c, 'a', { name: 'qwen', modelId: MODEL, port: 5557 })])).toThrow(
      /must keep port 5557 \(http\) free for precise prefix-cache scoring/,
    );
    expect(() => routed(c => [perRankMoe(c, { port: 5556 })])).toThrow(
      /must keep port 5557 \(rank-1\) free for precise prefix-cache scoring: the engine's ranks publish their KV-cache events on 5557, 5558, 5559, 5560/,
    );
  });

  describe('unset, with a host-memory KV tier', () => {
    /** The picker's config and the vLLM pod's args for a gateway over `make`'s services, scoring left unset. */
    const unset = (
      make: (c: Chart) => Array<VllmInferenceService | SglangInferenceService>,
      scoring?: PrefixCacheScoring,
    ) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
      new InferenceGateway(chart, 'gw', {
        name: 'qwen',
        services: make(chart),
        gateway: { name: 'edge' },
        ...(scoring ? { prefixCacheScoring: scoring } : {}),
      });
      const objects = Testing.synth(chart);
      const epp = objects.find(o => o.kind === 'Deployment' && o.metadata.name === 'qwen-epp').spec.template.spec;
      const config: string = epp.containers[0].args[epp.containers[0].args.indexOf('--config-text') + 1];
      const args = objects
        .filter(o => o.kind === 'StatefulSet' || o.kind === 'Deployment')
        .filter(o => o.metadata.name !== 'qwen-epp')
        .map(o => o.spec.template.spec.containers[0].args.join(' '));
      return { config, args };
    };
    const offloaded = (c: Chart, extra: Partial<VllmInferenceServiceProps> = {}) =>
      new VllmInferenceService(c, 'qwen', {
        name: 'qwen',
        modelId: MODEL,
        kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(16)),
        ...extra,
      });

    test('is precise: the approximate record cannot see the prefixes a pod holds in host memory', () => {
      const r = unset(c => [offloaded(c)]);
      expect(r.config).toContain('type: precise-prefix-cache-producer');
      expect(r.args[0]).toContain('--kv-events-config');
      // Asked for, approximate stays approximate.
      const asked = unset(c => [offloaded(c)], PrefixCacheScoring.APPROXIMATE);
      expect(asked.config).not.toContain('precise-prefix-cache-producer');
      expect(asked.args[0]).not.toContain('--kv-events-config');
    });

    test('stays approximate where a service cannot publish its events or the names disagree', () => {
      const withSglang = unset(c => [
        offloaded(c),
        new SglangInferenceService(c, 'sg', { name: 'qwen', version: 2, modelId: MODEL, port: 8000 }),
      ]);
      expect(withSglang.config).not.toContain('precise-prefix-cache-producer');
      expect(withSglang.args.join(' ')).not.toContain('--kv-events-config');
      const aliased = unset(c => [offloaded(c, { servedModelNames: ['qwen-7b', 'qwen'] })]);
      expect(aliased.config).not.toContain('precise-prefix-cache-producer');
      const ownTopic = unset(c => [
        offloaded(c, { extraArgs: ['--kv-events-config', '{"enable_kv_cache_events":false}'] }),
      ]);
      expect(ownTopic.config).not.toContain('precise-prefix-cache-producer');
      // No tier: nothing the approximate record misses.
      const plain = unset(c => [new VllmInferenceService(c, 'qwen', { name: 'qwen', modelId: MODEL })]);
      expect(plain.config).not.toContain('precise-prefix-cache-producer');
    });
  });
});
