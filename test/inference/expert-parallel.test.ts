import {
  All2AllBackend,
  Autoscaler,
  Disaggregation,
  ExpertParallel,
  InferenceGateway,
  InferenceServiceMonitoring,
  IpFamily,
  RankEndpoints,
  Rdma,
  SglangInferenceService,
  SglangInferenceServiceProps,
  TgiInferenceService,
  VllmInferenceService,
  VllmInferenceServiceProps,
} from '../../src';
import { servingOutput, synthValid, testChart, validateApp } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

const MOE = 'Qwen/Qwen3-30B-A3B';

const synth = servingOutput;
const vllm = (props: Partial<VllmInferenceServiceProps>) =>
  synth(c => new VllmInferenceService(c, 'moe', { name: 'moe', modelId: MOE, ...props }));
const sglang = (props: Partial<SglangInferenceServiceProps>) =>
  synth(c => new SglangInferenceService(c, 'moe', { name: 'moe', modelId: MOE, ...props }));

describe('expertParallel: wide expert parallelism', () => {
  test('vLLM in one pod: a data-parallel rank per tensorParallel GPUs, experts over all of them', () => {
    const o = vllm({ gpusPerReplica: 8, expertParallel: ExpertParallel.wide() });
    expect(o.args).toContain('--tensor-parallel-size 1 ');
    expect(o.args).toContain(
      '--data-parallel-size 8 --enable-expert-parallel --all2all-backend allgather_reducescatter',
    );
    expect(o.main.resources.limits['nvidia.com/gpu']).toBe(8);
    expectValidOutput(o.objects);

    const two = vllm({
      gpusPerReplica: 8,
      expertParallel: ExpertParallel.wide({
        tensorParallel: 2,
        all2all: All2AllBackend.DEEPEP_LOW_LATENCY,
        loadBalancing: true,
        redundantExperts: 16,
      }),
    });
    expect(two.args).toContain('--tensor-parallel-size 2 ');
    expect(two.args).toContain(
      '--data-parallel-size 4 --enable-expert-parallel --all2all-backend deepep_low_latency --enable-eplb --eplb-config {"num_redundant_experts":16}',
    );
  });

  test('SGLang across a group: DP attention over the whole world, DeepEP with RDMA', () => {
    const o = sglang({
      gpusPerReplica: 8,
      nodes: 2,
      rdma: Rdma.sharedDevice(),
      expertParallel: ExpertParallel.wide({ all2all: All2AllBackend.DEEPEP, loadBalancing: true }),
    });
    expect(o.workload.kind).toBe('LeaderWorkerSet');
    expect(o.args).toContain('--tp-size 16 ');
    expect(o.args).toContain(
      '--enable-dp-attention --dp-size 16 --moe-a2a-backend deepep --deepep-mode auto --enable-eplb',
    );
    expectValidOutput(o.objects);
  });

  test("vLLM across a group: data-parallel engines on every pod behind the leader's API servers", () => {
    const o = vllm({
      gpusPerReplica: 8,
      nodes: 2,
      rdma: Rdma.sharedDevice(),
      expertParallel: ExpertParallel.wide({ all2all: All2AllBackend.DEEPEP_LOW_LATENCY }),
    });
    expect(o.workload.kind).toBe('LeaderWorkerSet');
    const t = o.workload.spec.leaderWorkerTemplate;
    const worker = t.workerTemplate.spec.containers[0];
    const workerArgs = [...(worker.command ?? []), ...worker.args].join(' ');
    // 16 ranks of one GPU, 8 a pod; each pod's first rank (node rank x 8) is inferred from --node-rank.
    for (const args of [o.args, workerArgs]) {
      expect(args).toContain('--tensor-parallel-size 1 ');
      expect(args).toContain('--data-parallel-size 16 --enable-expert-parallel --all2all-backend deepep_low_latency');
      // Every GPU worker joins one world group at the leader's store, and stays connected to it.
      expect(args).toContain(
        '--nnodes 2 --node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS) --master-port 29501 --data-parallel-rpc-port 29550',
      );
      // No pipeline stages: every pod holds whole ranks.
      expect(args).not.toContain('--pipeline-parallel-size');
    }
    // The leader binds the handshake on its own IP (a name would need the group's DNS record first); the workers dial
    // its name and serve no API.
    expect(o.args).toContain('--data-parallel-address $(POD_IP)');
    expect(o.args).not.toContain('--headless');
    expect(o.main.env).toContainEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    expect(workerArgs).toContain('--headless --data-parallel-address $(LWS_LEADER_ADDRESS)');
    expect(workerArgs).not.toContain('$(POD_IP)');
    // A worker holds while its GPU workers are connected to the world group's store on the leader.
    expect(worker.lifecycle.preStop.exec.command.slice(3)).toEqual(['29501', '105']);
    expectValidOutput(o.objects);
  });

  test('refused: layouts and combinations the engines or the network refuse, with the source', () => {
    expect(() =>
      vllm({
        gpusPerReplica: 8,
        nodes: 2,
        expertParallel: ExpertParallel.wide(),
        disaggregation: Disaggregation.nixl(),
      }),
    ).toThrow(/nodes must be 1 with expertParallel on a disaggregated vLLM service: .*nixl\/base_scheduler.py/);
    expect(() =>
      vllm({
        gpusPerReplica: 8,
        nodes: 2,
        port: 29550,
        rdma: Rdma.sharedDevice(),
        expertParallel: ExpertParallel.wide(),
      }),
    ).toThrow(/VllmInferenceService 'moe': port must not be 29550 with nodes > 1: the leader's engine binds it/);
    for (const extraArgs of [['-dph'], ['--data-parallel-backend', 'ray'], ['-dpm'], ['--master-port', '1']])
      expect(() =>
        vllm({
          gpusPerReplica: 8,
          nodes: 2,
          rdma: Rdma.sharedDevice(),
          expertParallel: ExpertParallel.wide(),
          extraArgs,
        }),
      ).toThrow(new RegExp(`extraArgs\\[0\\] must not set ${extraArgs[0]}: .*set nodes`));
    expect(() =>
      vllm({ gpusPerReplica: 8, nodes: 2, ipFamily: IpFamily.IPV6, expertParallel: ExpertParallel.wide() }),
    ).toThrow(/ipFamily must be IPV4 for this group: its workers dial the leader's name over ZMQ/);
    expect(() =>
      vllm({ gpusPerReplica: 8, expertParallel: ExpertParallel.wide(), extraArgs: ['--enable-fault-tolerance'] }),
    ).toThrow(/must not set --enable-fault-tolerance: it needs vLLM's external data-parallel load balancing/);
    expect(() =>
      vllm({ gpusPerReplica: 8, nodes: 2, expertParallel: ExpertParallel.wide(), extraArgs: ['-asc', '4'] }),
    ).toThrow(/extraArgs\[0\] must not set -asc: the group's workers run --headless/);
    // The data-parallel group's launch refuses what the group launch owns, as pipeline stages' does.
    expect(() =>
      vllm({
        gpusPerReplica: 8,
        nodes: 2,
        expertParallel: ExpertParallel.wide(),
        extraArgs: ['--distributed-executor-backend', 'ray'],
      }),
    ).toThrow(/extraArgs\[0\] must not set --distributed-executor-backend: the construct sets it from nodes/);
    expect(() =>
      vllm({ gpusPerReplica: 8, nodes: 2, expertParallel: ExpertParallel.wide(), env: { POD_IP: '10.0.0.1' } }),
    ).toThrow(/VllmInferenceService 'moe': env.POD_IP is set by the construct on a group's leader/);
    expect(() =>
      sglang({
        gpusPerReplica: 8,
        nodes: 2,
        expertParallel: ExpertParallel.wide({ all2all: All2AllBackend.DEEPEP_LOW_LATENCY }),
      }),
    ).toThrow(/expertParallel.all2all needs rdma with nodes > 1: DeepEP's internode kernels need all-to-all RDMA/);
    expect(() =>
      sglang({
        gpusPerReplica: 4,
        expertParallel: ExpertParallel.wide({ all2all: All2AllBackend.DEEPEP_LOW_LATENCY }),
      }),
    ).toThrow(/expertParallel must be All2AllBackend.DEEPEP on SGLang rather than DEEPEP_LOW_LATENCY: .*128 tokens/);
    expect(() =>
      vllm({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ all2all: All2AllBackend.DEEPEP }) }),
    ).toThrow(/expertParallel must name DeepEP's kernels on vLLM/);
    // Without an all-to-all backend the experts still spread over every rank, and the balancer works.
    const portable = sglang({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ loadBalancing: true }) });
    expect(portable.args).toContain('--enable-dp-attention --dp-size 4 --ep-size 4 --enable-eplb');
    expect(() => vllm({ gpusPerReplica: 8, expertParallel: ExpertParallel.wide({ tensorParallel: 3 }) })).toThrow(
      /expertParallel.tensorParallel must divide gpusPerReplica \(8\)/,
    );
    expect(() => vllm({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ tensorParallel: 4 }) })).toThrow(
      /expertParallel.tensorParallel must leave at least two data-parallel ranks/,
    );
    expect(() => vllm({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ redundantExperts: 4 }) })).toThrow(
      /expertParallel.redundantExperts needs loadBalancing/,
    );
    expect(() =>
      vllm({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide(), extraArgs: ['--all2all-backend', 'naive'] }),
    ).toThrow(/extraArgs\[0\] must not set --all2all-backend: expertParallel sets it/);
    // argparse takes a unique prefix for the flag: the same refusal.
    expect(() =>
      sglang({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide(), extraArgs: ['--moe-a2a', 'deepep'] }),
    ).toThrow(
      /extraArgs\[0\] must not abbreviate --moe-a2a-backend: argparse expands --moe-a2a to it, which expertParallel sets/,
    );
    expect(() =>
      synth(
        c =>
          new TgiInferenceService(c, 'moe', {
            name: 'moe',
            modelId: MOE,
            gpusPerReplica: 2,
            expertParallel: ExpertParallel.wide(),
          }),
      ),
    ).toThrow(/TgiInferenceService 'moe': expertParallel needs vLLM or SGLang/);
    // The attention heads split over each rank's tensor parallel: Llama 3.1 8B has 8 KV heads.
    expect(() =>
      synth(
        c =>
          new VllmInferenceService(c, 'm', {
            name: 'm',
            modelId: 'meta-llama/Llama-3.1-8B-Instruct',
            gpusPerReplica: 6,
            expertParallel: ExpertParallel.wide({ tensorParallel: 3 }),
          }),
      ),
    ).toThrow(/expertParallel.tensorParallel must divide the 32 attention heads/);
  });
});

describe('expertParallel endpoints: RankEndpoints.PER_RANK, one API server per rank behind the Endpoint Picker', () => {
  const perRank = (props: Partial<VllmInferenceServiceProps> = {}, routed = true) => {
    const chart = testChart('serving');
    const service = new VllmInferenceService(chart, 'moe', {
      name: 'moe',
      modelId: MOE,
      gpusPerReplica: 4,
      serviceMonitor: true,
      expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
      ...props,
    });
    if (routed) new InferenceGateway(chart, 'gw', { name: 'moe', services: [service], gateway: { name: 'edge' } });
    return { chart, service };
  };
  const kind = (objects: any[], k: string, name?: string) =>
    objects.find(o => o.kind === k && (name === undefined || o.metadata.name === name));

  test("vLLM's supervisor: ranks on port, port + 1, ...; probes on the supervisor; every rank an endpoint, scraped and admitted", () => {
    const { chart, service } = perRank();
    const objects = synthValid(chart);
    const sts = kind(objects, 'StatefulSet', 'moe');
    const main = sts.spec.template.spec.containers[0];
    const args = main.args.join(' ');
    // vLLM 0.31.0 dp_supervisor.py: --data-parallel-size-local >= 2 ranks, all of this pod's.
    expect(args).toContain(
      '--data-parallel-size 4 --data-parallel-size-local 4 --data-parallel-multi-port-external-lb --data-parallel-supervisor-port 9256 --enable-expert-parallel',
    );
    expect(args).toContain('--port 8000');
    expect(service.endpointPorts).toEqual([8000, 8001, 8002, 8003]);
    expect(main.ports.map((p: any) => [p.name, p.containerPort])).toEqual([
      ['http', 8000],
      ['rank-1', 8001],
      ['rank-2', 8002],
      ['rank-3', 8003],
      ['dp-supervisor', 9256],
    ]);
    // The supervisor's /health: up once every rank's server is, 503 from SIGTERM on.
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe'])
      expect(main[probe].httpGet).toEqual({ path: '/health', port: 'dp-supervisor' });
    // The picker: one endpoint per target port the pod names.
    expect(sts.spec.template.metadata.annotations['llm-d.ai/active-ports']).toBe('8000,8001,8002,8003');
    const pool = kind(objects, 'InferencePool');
    expect(pool.spec.targetPorts).toEqual([8000, 8001, 8002, 8003].map(number => ({ number })));
    // Prometheus scrapes each rank's /metrics on its own port, through the headless Service.
    const headless = kind(objects, 'Service', 'moe-headless');
    expect(headless.spec.ports.map((p: any) => [p.name, p.port])).toEqual([
      ['http', 8000],
      ['rank-1', 8001],
      ['rank-2', 8002],
      ['rank-3', 8003],
    ]);
    const monitor = kind(objects, 'ServiceMonitor', 'moe');
    expect(monitor.spec.endpoints.map((e: any) => e.port)).toEqual(['http', 'rank-1', 'rank-2', 'rank-3']);
    // The picker (a client) and the monitoring namespace reach every rank's port; nobody reaches the supervisor's.
    const policy = kind(objects, 'NetworkPolicy', 'moe');
    const admitted = policy.spec.ingress.map((rule: any) => (rule.ports ?? []).map((p: any) => p.port));
    expect(admitted).toEqual([
      ['http', 'rank-1', 'rank-2', 'rank-3'],
      ['http', 'rank-1', 'rank-2', 'rank-3'],
    ]);
    expect(JSON.stringify(policy)).not.toContain('dp-supervisor');
  });

  test('across a group: every pod serves its own ranks, selected, probed, scraped and drained as the leader is', () => {
    const { chart, service } = perRank({
      nodes: 2,
      autoscaling: {
        maxReplicas: 3,
        autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring:9090' }),
      },
    });
    new InferenceServiceMonitoring(chart, 'monitoring', service);
    const objects = synthValid(chart);
    const lws = kind(objects, 'LeaderWorkerSet');
    const t = lws.spec.leaderWorkerTemplate;
    const [leader, worker] = [t.leaderTemplate, t.workerTemplate];
    const argsOf = (pod: any) => pod.spec.containers[0].args.join(' ');
    // vLLM 0.31.0 dp_supervisor.py: each pod supervises its 4 ranks of 8, numbered from --node-rank x 4.
    for (const pod of [leader, worker]) {
      expect(argsOf(pod)).toContain(
        '--data-parallel-size 8 --data-parallel-size-local 4 --data-parallel-multi-port-external-lb --data-parallel-supervisor-port 9256',
      );
      expect(argsOf(pod)).toContain(
        '--nnodes 2 --node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS) --master-port 29501 --data-parallel-rpc-port 29550',
      );
      expect(argsOf(pod)).not.toContain('--headless');
      const main = pod.spec.containers[0];
      expect(main.ports.map((p: any) => p.containerPort)).toEqual([8000, 8001, 8002, 8003, 9256]);
      for (const probe of ['startupProbe', 'livenessProbe'])
        expect(main[probe].httpGet).toEqual({ path: '/health', port: 'dp-supervisor' });
      // Ready only while every pod of the group serves (group-ready.py asks each pod's supervisor).
      expect(main.readinessProbe.exec.command.slice(0, 2)).toEqual(['python3', '-c']);
      expect(main.readinessProbe.exec.command[3]).toBe('9256');
      // Its own drain (endpoint removal, then the supervisor's), not the headless workers' hold on the leader.
      expect(main.lifecycle.preStop).toEqual(leader.spec.containers[0].lifecycle.preStop);
      expect(JSON.stringify(main.lifecycle)).not.toContain('python3');
      expect(pod.metadata.annotations['llm-d.ai/active-ports']).toBe('8000,8001,8002,8003');
      expect(pod.metadata.labels['llm-d.ai/engine-type']).toBe('vllm');
    }
    // Rank 0 (the leader's first) binds the handshake on the leader's IP; the workers' ranks dial the leader's name.
    expect(argsOf(leader)).toContain('--data-parallel-address $(POD_IP)');
    expect(argsOf(worker)).toContain('--data-parallel-address $(LWS_LEADER_ADDRESS)');
    // Every selector of a serving pod selects the worker as it does the leader.
    const selects = (selector: Record<string, string>, pod: any) =>
      Object.entries(selector).every(([k, v]) => pod.metadata.labels[k] === v);
    const selectors = [
      kind(objects, 'Service', 'moe').spec.selector,
      kind(objects, 'Service', 'moe-headless').spec.selector,
      kind(objects, 'InferencePool').spec.selector.matchLabels,
      kind(objects, 'PodDisruptionBudget').spec.selector.matchLabels,
      kind(objects, 'NetworkPolicy', 'moe').spec.podSelector.matchLabels,
    ];
    for (const selector of selectors) for (const pod of [leader, worker]) expect(selects(selector, pod)).toBe(true);
    // One policy for both: the group's pods reach each other on every port, clients and monitoring the ranks' ports.
    expect(objects.filter(o => o.kind === 'NetworkPolicy').map(o => o.metadata.name)).not.toContain('moe-workers');
    const policy = kind(objects, 'NetworkPolicy', 'moe');
    expect(policy.spec.ingress[0].ports).toBeUndefined();
    const peers = policy.spec.ingress[0].from.map((f: any) => f.podSelector.matchLabels);
    expect(peers).toHaveLength(1);
    for (const pod of [leader, worker]) expect(selects(peers[0], pod)).toBe(true);
    expect(service.servingPodsPerReplica).toBe(2);
    // KEDA reads every pod of the set (leaders and workers), each as its busiest rank, and halves the sum: one value
    // per group against the per-rank target.
    const sel = '{namespace="serving",pod=~"moe-lws-[0-9]+(-[0-9]+)?"}';
    expect(kind(objects, 'ScaledObject').spec.triggers[0].metadata.query).toBe(
      `sum(max by (pod) (vllm:num_requests_running${sel}) + max by (pod) (vllm:num_requests_waiting${sel})) / 2`,
    );
    // The alert averages the pods' busiest ranks, leaders and workers alike: a per-rank figure, as the target is.
    const rules = kind(objects, 'PrometheusRule').spec.groups.flatMap((g: any) => g.rules);
    const load = rules.find((r: any) => r.alert === 'GpuServingLoadAboveTarget');
    expect(load.expr).toMatch(/^avg by \(namespace\) \(max by \(namespace, pod\) \(vllm:num_requests_running/);
  });

  test('across a group, refused: rank ports over the ports the leader binds for the group, IPv6', () => {
    // The world group's store on the leader (29501) and the ranks' handshake (29550).
    expect(() => perRank({ nodes: 2, port: 29499 })).toThrow(/\(29499-29502, RankEndpoints.PER_RANK\) clear of 29501/);
    expect(() => perRank({ port: 29499 })).not.toThrow();
    expect(() => perRank({ nodes: 2, port: 29547 })).toThrow(/clear of 29550/);
    expect(() => perRank({ nodes: 2, ipFamily: IpFamily.IPV6 })).toThrow(
      /ipFamily must be IPV4 for this group: its workers dial the leader's name over ZMQ/,
    );
    // The headless workers' refusal of an API server count is not the serving workers': the per-rank one says why.
    expect(() => perRank({ nodes: 2, extraArgs: ['--api-server-count', '1'] })).toThrow(
      /extraArgs\[0\] must not set --api-server-count: RankEndpoints.PER_RANK runs one API server per rank/,
    );
  });

  test('a pool of a shared-port service and a per-rank one: the target ports are the union, each pod names its own', () => {
    const chart = testChart('serving');
    const shared = new VllmInferenceService(chart, 'v1', { name: 'moe', modelId: MOE, gpusPerReplica: 2 });
    const ranked = new VllmInferenceService(chart, 'v2', {
      name: 'moe',
      version: 2,
      modelId: MOE,
      gpusPerReplica: 2,
      serviceMonitor: true,
      expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
    });
    new InferenceGateway(chart, 'gw', { name: 'moe', services: [shared, ranked], gateway: { name: 'edge' } });
    const objects = synthValid(chart);
    expect(kind(objects, 'InferencePool').spec.targetPorts).toEqual([{ number: 8000 }, { number: 8001 }]);
    const annotations = objects
      .filter(o => o.kind === 'StatefulSet')
      .map(o => [o.metadata.name, o.spec.template.metadata.annotations['llm-d.ai/active-ports']]);
    expect(annotations).toEqual([
      ['moe', '8000'],
      ['moe-v2', '8000,8001'],
    ]);
  });

  test('refused: without the picker or per-rank metrics, on SGLang, past 8 ranks, over the ports vLLM binds', () => {
    const { chart } = perRank({}, false);
    expect(() => validateApp(chart)).toThrow(
      /VllmInferenceService 'moe': expertParallel.endpoints RankEndpoints.PER_RANK needs an InferenceGateway routing to the service: only the Endpoint Picker spreads requests over the ranks' ports/,
    );
    expect(() => perRank({ serviceMonitor: undefined })).toThrow(
      /VllmInferenceService 'moe': serviceMonitor must be true with RankEndpoints.PER_RANK: each rank's server has its own \/metrics on its own port/,
    );
    expect(() => perRank({ gpusPerReplica: 16, maxGpusPerNode: 16 })).toThrow(
      /expertParallel.endpoints must be RankEndpoints.SHARED with more than 8 data-parallel ranks in a pod \(gpusPerReplica \/ tensorParallel is 16\): an InferencePool's targetPorts holds at most 8/,
    );
    // Two GPUs a rank: 8 ranks on 16 GPUs fit.
    expect(() =>
      perRank({
        gpusPerReplica: 16,
        maxGpusPerNode: 16,
        expertParallel: ExpertParallel.wide({ tensorParallel: 2, endpoints: RankEndpoints.PER_RANK }),
      }),
    ).not.toThrow();
    expect(() => perRank({ port: 9254 })).toThrow(
      /port must leave room for one API port per data-parallel rank \(9254-9257, RankEndpoints.PER_RANK\) clear of 9256, which the engine binds in the pod/,
    );
    expect(() => perRank({ port: 29547 })).toThrow(/clear of 29550/);
    // The children's coordinator and process groups bind ports the kernel picks: a rank's port must not be one.
    expect(() => perRank({ port: 32766 })).toThrow(
      /port must leave room for one API port per data-parallel rank \(32766-32769, RankEndpoints.PER_RANK\) outside Linux's ephemeral ports 32768-60999/,
    );
    expect(() => perRank({ port: 32764 })).not.toThrow();
    // A shared multiprocess registry: every rank's port would report every rank.
    expect(() => perRank({ env: { PROMETHEUS_MULTIPROC_DIR: '/tmp/prom' } })).toThrow(
      /env.PROMETHEUS_MULTIPROC_DIR must not be set with RankEndpoints.PER_RANK: it makes every rank's \/metrics report every rank/,
    );
    expect(() => perRank({ port: 65534 })).toThrow(/\(65534-65537, RankEndpoints.PER_RANK\) below 65536 \(got 65534\)/);
    expect(() => perRank({ extraArgs: ['-asc', '2'] })).toThrow(
      /extraArgs\[0\] must not set -asc: RankEndpoints.PER_RANK runs one API server per rank/,
    );
    expect(() => perRank({ extraArgs: ['--data-parallel-supervisor-port', '9300'] })).toThrow(
      /extraArgs\[0\] must not set --data-parallel-supervisor-port: expertParallel sets it/,
    );
    expect(() =>
      sglang({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }) }),
    ).toThrow(/SglangInferenceService 'moe': expertParallel.endpoints must be RankEndpoints.SHARED on SGLang/);
    expect(() =>
      vllm({ gpusPerReplica: 4, expertParallel: ExpertParallel.wide({ endpoints: 'each' as RankEndpoints }) }),
    ).toThrow(/expertParallel.endpoints must be one of shared, per-rank \(got "each"\)/);
  });
});
