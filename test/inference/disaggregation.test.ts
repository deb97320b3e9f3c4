import { Chart, Size } from 'cdk8s';
import {
  Autoscaler,
  Disaggregation,
  FailureMode,
  InferenceGateway,
  KvCacheOffload,
  PodSecurityLevel,
  Rdma,
  ROLE_LABEL,
  SglangInferenceService,
  SglangInferenceServiceProps,
  TgiInferenceService,
  VllmInferenceService,
  VllmInferenceServiceProps,
} from '../../src';
import { DISAGG_SIDECAR_IMAGE } from '../../src/inference/disagg-sidecar';
import { servingOutput } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

const synth = servingOutput;
/** A disaggregated service is routed by a gateway (checked at synth); `alone` leaves it out. */
const routedBy = (c: Chart, service: VllmInferenceService | SglangInferenceService, alone: boolean) => {
  if (service.role === 'decode' && !alone)
    new InferenceGateway(c, 'gw', { name: 'llm', services: [service], gateway: { name: 'edge' } });
  return service;
};
const vllm = (props: Partial<VllmInferenceServiceProps>, alone = false) =>
  synth(c => routedBy(c, new VllmInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props }), alone));
const sglang = (props: Partial<SglangInferenceServiceProps>, alone = false) =>
  synth(c => routedBy(c, new SglangInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props }), alone));
const engine = (w: any) => w.spec.template.spec.containers[0];
const argsOf = (w: any) => [...(engine(w).command ?? []), ...(engine(w).args ?? [])].join(' ');
const envOf = (w: any, name: string) => engine(w).env.find((e: any) => e.name === name);
const sidecarOf = (w: any) =>
  (w.spec.template.spec.initContainers ?? []).find((c: any) => c.name === 'routing-sidecar');

describe('disaggregation: vLLM prefill and decode pools over NIXL', () => {
  const out = vllm({ gpusPerReplica: 2, replicas: 2, disaggregation: Disaggregation.nixl({ prefillReplicas: 3 }) });
  const decode = out.named('StatefulSet', 'llm');
  const prefill = out.named('StatefulSet', 'llm-prefill');

  test('the decode pool: the engine as kv_consumer behind the routing sidecar, which takes the API port', () => {
    expect(decode.spec.template.metadata.labels[ROLE_LABEL]).toBe('decode');
    expect(argsOf(decode)).toContain('--port 8200');
    expect(argsOf(decode)).toContain('--kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_consumer"}');
    // The engine's probes ask the engine, on its own port; the sidecar holds the `http` port clients and the pool use.
    expect(engine(decode).ports.map((p: any) => [p.name, p.containerPort])).toEqual([
      ['engine', 8200],
      ['nixl', 5600],
    ]);
    expect(engine(decode).startupProbe.httpGet.port).toBe('engine');
    const sidecar = sidecarOf(decode);
    expect(sidecar.image).toBe(DISAGG_SIDECAR_IMAGE);
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.args).toEqual(expect.arrayContaining(['--port=8000', '--model-server-port=8200']));
    expect(sidecar.args).toEqual(expect.arrayContaining(['--kv-connector=nixlv2', '--secure-proxy=false']));
    expect(sidecar.ports).toEqual([{ name: 'http', containerPort: 8000, protocol: 'TCP' }]);
    expect(decode.spec.replicas).toBe(2);
  });

  test('the prefill pool: the same model and image as kv_producer on the API port, with its own replicas', () => {
    expect(prefill.spec.template.metadata.labels[ROLE_LABEL]).toBe('prefill');
    expect(argsOf(prefill)).toContain('--port 8000');
    expect(argsOf(prefill)).toContain('"kv_role":"kv_producer"');
    expect(argsOf(prefill)).toContain('--tensor-parallel-size 2');
    expect(engine(prefill).image).toBe(engine(decode).image);
    expect(sidecarOf(prefill)).toBeUndefined();
    expect(prefill.spec.replicas).toBe(3);
    // Each pool keeps the practice: its own PDB and drain.
    expect(out.named('PodDisruptionBudget', 'llm-prefill').spec.maxUnavailable).toBe(1);
    expect(prefill.spec.template.spec.terminationGracePeriodSeconds).toBe(
      decode.spec.template.spec.terminationGracePeriodSeconds,
    );
  });

  test('both pools: the side channel on the pod IP, where the decode engine connects (localhost by default)', () => {
    for (const w of [decode, prefill]) {
      expect(envOf(w, 'VLLM_NIXL_SIDE_CHANNEL_HOST').valueFrom.fieldRef.fieldPath).toBe('status.podIP');
      expect(envOf(w, 'VLLM_NIXL_SIDE_CHANNEL_PORT').value).toBe('5600');
      expect(Number(envOf(w, 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE').value)).toBeGreaterThan(90);
    }
  });

  test('the client Service selects the decode pods only; each NetworkPolicy admits the other pool on every port', () => {
    const selector = out.named('Service', 'llm').spec.selector;
    const selects = (w: any) => Object.entries(selector).every(([k, v]) => w.spec.template.metadata.labels[k] === v);
    expect(selects(decode)).toBe(true);
    expect(selects(prefill)).toBe(false);
    const admits = (policy: string, pool: any) =>
      out
        .named('NetworkPolicy', policy)
        .spec.ingress.some(
          (rule: any) =>
            rule.ports === undefined &&
            rule.from.some((p: any) =>
              Object.entries(p.podSelector?.matchLabels ?? { none: 'x' }).every(
                ([k, v]) => pool.spec.template.metadata.labels[k] === v,
              ),
            ),
        );
    expect(admits('llm', prefill)).toBe(true);
    expect(admits('llm-prefill', decode)).toBe(true);
    expect(admits('llm', decode)).toBe(false);
  });

  test('the pods meet the restricted Pod Security Standard, the sidecar included', () => {
    const made = out.made;
    expect(made.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
    expect(made.prefill!.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
    expect(sidecarOf(decode).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
    expectValidOutput(out.objects);
  });

  test("the sidecar sends prefill legs only to the gateway pool's pods: SSRF protection with a token of its own", () => {
    const sidecar = sidecarOf(decode);
    expect(sidecar.args).toEqual(expect.arrayContaining(['--enable-ssrf-protection', '--inference-pool=serving/llm']));
    const spec = decode.spec.template.spec;
    expect(spec.serviceAccountName).toBe('llm-routing');
    expect(spec.automountServiceAccountToken).toBe(false);
    // The token reaches the sidecar alone, never the engine.
    const token = sidecar.volumeMounts.find(
      (m: any) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount',
    );
    expect(spec.volumes.find((v: any) => v.name === token.name).projected.sources[0].serviceAccountToken).toBeDefined();
    expect(engine(decode).volumeMounts.some((m: any) => m.name === token.name)).toBe(false);
    expect(out.named('ServiceAccount', 'llm-routing').automountServiceAccountToken).toBe(false);
    const binding = out.named('RoleBinding', 'llm-routing-sidecar');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'llm-routing' }]);
    expect(out.named('Role', 'llm-routing-sidecar').rules.map((r: any) => r.resources[0])).toEqual([
      'inferencepools',
      'pods',
    ]);
    expect(() => vllm({ disaggregation: Disaggregation.nixl(), pod: { automountServiceAccountToken: true } })).toThrow(
      /pod.automountServiceAccountToken must not be true with disaggregation/,
    );
    expect(() => vllm({ disaggregation: Disaggregation.nixl() }, true)).toThrow(
      /disaggregation needs an InferenceGateway routing to the service: only the Endpoint Picker pairs/,
    );
  });

  test('a prefill pool of its own size and scaling: tensor parallel 1 beside 4, autoscaled on its own requests', () => {
    const o = vllm({
      gpusPerReplica: 4,
      disaggregation: Disaggregation.nixl({
        prefillGpusPerReplica: 1,
        prefillAutoscaling: { autoscaler: Autoscaler.hpa(), minReplicas: 2, maxReplicas: 6, targetRequestsInFlight: 8 },
      }),
    });
    expect(argsOf(o.named('StatefulSet', 'llm-prefill'))).toContain('--tensor-parallel-size 1');
    const hpa = o.named('HorizontalPodAutoscaler', 'llm-prefill');
    expect(hpa.spec.scaleTargetRef.name).toBe('llm-prefill');
    expect(o.objects.filter(x => x.kind === 'HorizontalPodAutoscaler')).toHaveLength(1);
    expectValidOutput(o.objects);
  });

  test("a vLLM decode pool in groups is refused: NIXL's consumer refuses pipeline parallel", () => {
    expect(() => vllm({ nodes: 2, disaggregation: Disaggregation.nixl() })).toThrow(
      /nodes must be 1 for a disaggregated service's decode pool: .*base_worker.py/,
    );
  });

  test('a prefill pool of LeaderWorkerSet groups beside single-node decode pods', () => {
    const o = vllm({ disaggregation: Disaggregation.nixl({ prefillNodes: 2 }) });
    expect(o.named('LeaderWorkerSet', 'llm-prefill-lws').spec.leaderWorkerTemplate.size).toBe(2);
    expect(o.named('StatefulSet', 'llm').kind).toBe('StatefulSet');
    // The workers of the prefill groups hold KV blocks too: they admit the decode pool.
    const workers = o.named('NetworkPolicy', 'llm-prefill-workers');
    expect(JSON.stringify(workers.spec.ingress)).toContain(
      '{"app.kubernetes.io/instance":"llm","app.kubernetes.io/name":"llm"}',
    );
    expectValidOutput(o.objects);
  });
});

describe('disaggregation: SGLang', () => {
  const routed = (props: Partial<SglangInferenceServiceProps>) =>
    synth(c => {
      const s = new SglangInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props });
      return new InferenceGateway(c, 'gw', { name: 'llm', services: [s], gateway: { name: 'edge' } });
    });

  test('Mooncake over RDMA: the mode per pool, the bootstrap port on prefill, the sidecar speaking SGLang', () => {
    const o = routed({ disaggregation: Disaggregation.mooncake({ rdma: Rdma.sharedDevice() }) });
    const decode = o.named('StatefulSet', 'llm');
    const prefill = o.named('StatefulSet', 'llm-prefill');
    expect(argsOf(decode)).toContain('--disaggregation-mode decode --disaggregation-transfer-backend mooncake');
    expect(argsOf(prefill)).toContain('--disaggregation-mode prefill --disaggregation-transfer-backend mooncake');
    expect(engine(prefill).ports.map((p: any) => p.name)).toContain('bootstrap');
    expect(engine(decode).ports.map((p: any) => p.name)).not.toContain('bootstrap');
    const sidecar = sidecarOf(decode);
    expect(sidecar.args).toContain('--kv-connector=sglang');
    expect(sidecar.env).toContainEqual({ name: 'SGLANG_BOOTSTRAP_PORT', value: '8998' });
    for (const w of [decode, prefill]) expect(engine(w).resources.limits['rdma/rdma_shared_device_a']).toBeDefined();
    expectValidOutput(o.objects);
  });

  test('NIXL over TCP needs no RDMA; prefill and decode may differ in tensor parallel', () => {
    const o = routed({ gpusPerReplica: 2, disaggregation: Disaggregation.nixl({ prefillGpusPerReplica: 4 }) });
    expect(argsOf(o.named('StatefulSet', 'llm-prefill'))).toContain('--tp-size 4');
    expectValidOutput(o.objects);
  });

  test('its decode server serves only paired requests: the picker disaggregates every request and fails closed', () => {
    const o = routed({ disaggregation: Disaggregation.nixl() });
    const epp = o.named('Deployment', 'llm-epp').spec.template.spec.containers[0];
    const config = epp.args[epp.args.indexOf('--config-text') + 1];
    expect(config).toContain('prefill: always-disagg-pd-decider');
    expect(config).not.toContain('prefix-based-pd-decider');
    expect(o.named('InferencePool', 'llm').spec.endpointPickerRef.failureMode).toBe('FailClose');
    expect(() => sglang({ disaggregation: Disaggregation.nixl() }, true)).toThrow(
      /disaggregation needs an InferenceGateway routing to the service: SGLang's decode server serves only requests paired/,
    );
    expect(() => sglang({ disaggregation: Disaggregation.nixl({ disaggregateFromTokens: 100 }) })).toThrow(
      /disaggregation.disaggregateFromTokens must be left out: SGLang's decode server/,
    );
    expect(() =>
      synth(c => {
        const s = new SglangInferenceService(c, 'llm', {
          name: 'llm',
          modelId: MODEL,
          disaggregation: Disaggregation.nixl(),
        });
        new InferenceGateway(c, 'gw', {
          name: 'llm',
          services: [s],
          gateway: { name: 'edge' },
          failureMode: FailureMode.FAIL_OPEN,
        });
      }),
    ).toThrow(/failureMode must be FailureMode.FAIL_CLOSE for a disaggregated SGLang service/);
  });
});

describe('disaggregation: refusals', () => {
  const refuse = (make: () => unknown, message: RegExp) => expect(make).toThrow(message);

  test('combinations the engines refuse, with their source', () => {
    refuse(
      () => vllm({ gpusPerReplica: 2, disaggregation: Disaggregation.nixl({ prefillGpusPerReplica: 3 }) }),
      /VllmInferenceService 'llm': disaggregation.prefillGpusPerReplica the larger tensor-parallel size must be a multiple of the smaller.*utils.py tp_ratio.*\(got prefill 3 and decode 2/,
    );
    refuse(
      () => sglang({ disaggregation: Disaggregation.mooncake({}) }),
      /disaggregation.rdma must be given with mooncake: .*MOONCAKE_PROTOCOL/,
    );
    refuse(
      () => vllm({ disaggregation: Disaggregation.mooncake({ rdma: Rdma.sharedDevice() }) }),
      /disaggregation must use a transfer the engine speaks \(nixl; vLLM 0.31.0/,
    );
    refuse(
      () =>
        synth(
          c =>
            new TgiInferenceService(c, 'llm', {
              name: 'llm',
              modelId: MODEL,
              disaggregation: Disaggregation.nixl(),
            }),
        ),
      /TgiInferenceService 'llm': disaggregation needs vLLM or SGLang/,
    );
  });

  test('flags and props the pools own or cannot hold', () => {
    const nixl = Disaggregation.nixl();
    refuse(
      () => vllm({ disaggregation: nixl, extraArgs: ['--kv-transfer-config={"kv_connector":"NixlConnector"}'] }),
      /extraArgs\[0\] must not set --kv-transfer-config: disaggregation \(for each pool\) sets it/,
    );
    refuse(
      () => sglang({ extraArgs: ['--disaggregation-mode', 'prefill'] }),
      /extraArgs\[0\] must not set --disaggregation-mode/,
    );
    refuse(() => vllm({ disaggregation: nixl, port: 8200 }), /port must not be 8200 with disaggregation/);
    refuse(
      () => vllm({ disaggregation: nixl, kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(10)) }),
      /kvCacheOffload must be left out with disaggregation/,
    );
    refuse(
      () =>
        vllm({
          disaggregation: nixl,
          autoscaling: {
            autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus:9090' }),
            minReplicas: 0,
            maxReplicas: 2,
          },
        }),
      /autoscaling.minReplicas must be at least 1 with disaggregation/,
    );
    refuse(
      () =>
        vllm({
          disaggregation: Disaggregation.nixl({
            prefillAutoscaling: {
              autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus:9090' }),
              minReplicas: 0,
              maxReplicas: 2,
              targetRequestsInFlight: 8,
            },
          }),
        }),
      /disaggregation.prefillAutoscaling.minReplicas must be at least 1/,
    );
    refuse(
      () =>
        vllm({
          disaggregation: Disaggregation.nixl({
            prefillReplicas: 2,
            prefillAutoscaling: { autoscaler: Autoscaler.hpa(), maxReplicas: 4, targetRequestsInFlight: 8 },
          }),
        }),
      /disaggregation.prefillReplicas must not be set with prefillAutoscaling/,
    );
    refuse(
      () =>
        vllm({
          disaggregation: Disaggregation.nixl({
            prefillAutoscaling: { autoscaler: Autoscaler.hpa(), maxReplicas: 4 },
          }),
        }),
      /disaggregation.prefillAutoscaling.targetRequestsInFlight must be given/,
    );
    refuse(
      () =>
        synth(c => {
          new VllmInferenceService(c, 'a', { name: 'llm', modelId: MODEL });
          new VllmInferenceService(c, 'b', { name: 'llm', version: 2, modelId: MODEL, disaggregation: nixl });
        }),
      /VllmInferenceService 'b': disaggregation must be set on every service named 'llm' or on none/,
    );
    refuse(
      () => vllm({ disaggregation: Disaggregation.nixl({ disaggregateFromTokens: 0 }) }),
      /disaggregation.disaggregateFromTokens/,
    );
    refuse(
      () => vllm({ disaggregation: Disaggregation.nixl({ prefilReplicas: 2 } as any) }),
      /disaggregation.*prefilReplicas/,
    );
  });
});

describe('disaggregation behind an InferenceGateway', () => {
  const gateway = (services: (c: Chart) => any[]) =>
    synth(c => new InferenceGateway(c, 'gw', { name: 'llm', services: services(c), gateway: { name: 'edge' } }));
  const disaggregated = (c: Chart, id = 'llm', tokens?: number) =>
    new VllmInferenceService(c, id, {
      name: 'llm',
      version: id === 'llm' ? undefined : 2,
      modelId: MODEL,
      disaggregation: Disaggregation.nixl({ disaggregateFromTokens: tokens }),
    });

  test("the picker's profiles route between the pools; both pools admit the picker and sit in the pool", () => {
    const o = gateway(c => [disaggregated(c, 'llm', 1024)]);
    const epp = o.named('Deployment', 'llm-epp').spec.template.spec.containers[0];
    const config = epp.args[epp.args.indexOf('--config-text') + 1];
    expect(config).toContain('type: disagg-profile-handler');
    expect(config).toMatch(/type: prefix-based-pd-decider\n\s+parameters:\n\s+nonCachedTokens: 1024/);
    expect(config).toMatch(/name: decode\n\s+plugins:\n\s+- pluginRef: decode-filter/);
    expect(config).toMatch(/name: prefill\n\s+plugins:\n\s+- pluginRef: prefill-filter/);
    expect(config).not.toContain('&');
    const selector = o.named('InferencePool', 'llm').spec.selector.matchLabels;
    for (const name of ['llm', 'llm-prefill']) {
      const labels = o.named('StatefulSet', name).spec.template.metadata.labels;
      for (const [k, v] of Object.entries(selector)) expect(labels[k]).toBe(v);
      expect(JSON.stringify(o.named('NetworkPolicy', name).spec.ingress)).toContain('"llm-epp"');
    }
    expectValidOutput(o.objects);
  });

  test('a prefill pool listed on its own, and two thresholds in one pool, are refused', () => {
    refuse(() => gateway(c => [disaggregated(c).prefill!]), /services\[0\] must not be a prefill pool/);
    refuse(
      () => gateway(c => [disaggregated(c, 'llm', 256), disaggregated(c, 'v2', 1024)]),
      /services must disaggregate from one prompt length .*\(got 256 and 1024\)/,
    );
  });
  const refuse = (make: () => unknown, message: RegExp) => expect(make).toThrow(message);
});
