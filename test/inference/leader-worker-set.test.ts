import { Chart, Size, Testing } from 'cdk8s';
import {
  Autoscaler,
  InferenceServiceMonitoring,
  InferenceServiceProps,
  ModelCache,
  NetworkAccess,
  NetworkPeer,
  Rdma,
  Reload,
  RotatingGpuSecret,
  WorkloadKind,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
} from '../../src';
import { LABEL_COMPONENT } from '../../src/common/labels';
import { KUEUE_QUEUE_LABEL } from '../../src/common/kueue';
import { WORKER_COMPONENT } from '../../src/inference/leader-worker-set';
import { KubeObject } from '../../src/guard/normalize';
import { servingBumpWarnings } from '../../src/guard/serving-bump';
import { podNamePattern } from '../../src/common/names';
import { describePromtool, podNotReadyRun, ruleSpec } from '../monitoring/promtool';
import { podSecurityLevel } from '../support/pod-security';
import { findOne, testChart, validateApp } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';
import { flagValue } from './support';

const BASE = {
  modelId: 'meta-llama/Llama-3.1-405B-Instruct',
  gpusPerReplica: 8,
  nodes: 2,
  modelSize: Size.gibibytes(800),
};

type Make = (c: Chart, id: string, p: InferenceServiceProps) => unknown;
const ENGINES: Array<{ engine: string; make: Make; container: string; level: string; rendezvousPort: string }> = [
  {
    engine: 'vLLM',
    make: (c, id, p) => new VllmInferenceService(c, id, p),
    container: 'vllm',
    level: 'restricted',
    rendezvousPort: '29501', // --master-port
  },
  {
    engine: 'SGLang',
    make: (c, id, p) => new SglangInferenceService(c, id, p),
    container: 'sglang',
    level: 'baseline',
    rendezvousPort: '20000', // --dist-init-addr's port
  },
];

function synth(make: Make, props: Partial<InferenceServiceProps> = {}): any[] {
  const chart = testChart('ml');
  make(chart, 'llm', { name: 'llm', ...BASE, ...props });
  validateApp(chart);
  const objects = Testing.synth(chart);
  expectValidOutput(objects);
  return objects;
}

const lwsOf = (objects: any[]) => findOne(objects, 'LeaderWorkerSet', 'llm-lws');
const leaderOf = (set: any) => set.spec.leaderWorkerTemplate.leaderTemplate;
const workerOf = (set: any) => set.spec.leaderWorkerTemplate.workerTemplate;
const mainOf = (template: any, name: string) => template.spec.containers.find((c: any) => c.name === name);

describe.each(ENGINES)('$engine across nodes', ({ make, container, level, rendezvousPort }) => {
  test('one LeaderWorkerSet of groups of `nodes` pods that restart, start and roll out as one', () => {
    const objects = synth(make, { replicas: 3 });
    expect(objects.filter(o => o.kind === 'StatefulSet')).toEqual([]);
    const set = lwsOf(objects);
    expect(set.spec.replicas).toBe(3);
    expect(set.spec.leaderWorkerTemplate.size).toBe(2);
    expect(set.spec.leaderWorkerTemplate.restartPolicy).toBe('RecreateGroupOnPodRestart');
    expect(set.spec.startupPolicy).toBe('LeaderCreated');
    expect(set.spec.rolloutStrategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdateConfiguration: { maxUnavailable: 1, maxSurge: 0 },
    });
    for (const t of [leaderOf(set), workerOf(set)])
      expect(mainOf(t, container).resources.limits['nvidia.com/gpu']).toBe(8);
  });

  test('only leaders are selected by the Services; one PDB covers leaders and workers, so a drain takes one group', () => {
    const objects = synth(make);
    const set = lwsOf(objects);
    const leaderLabels = leaderOf(set).metadata.labels;
    const workerLabels = workerOf(set).metadata.labels;
    expect(leaderLabels[LABEL_COMPONENT]).toBe('inference');
    expect(workerLabels[LABEL_COMPONENT]).toBe(WORKER_COMPONENT);
    const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, val]) => labels[k] === val);
    for (const svc of objects.filter(o => o.kind === 'Service')) {
      expect(selects(svc.spec.selector, leaderLabels)).toBe(true);
      expect(selects(svc.spec.selector, workerLabels)).toBe(false);
    }
    const budgets = objects.filter(o => o.kind === 'PodDisruptionBudget');
    expect(budgets).toHaveLength(1);
    const budget = budgets[0].spec;
    expect(budget.maxUnavailable).toBe(1);
    expect([
      selects(budget.selector.matchLabels, leaderLabels),
      selects(budget.selector.matchLabels, workerLabels),
    ]).toEqual([true, true]);
    // Not another version's pods, nor the fill Job's.
    const other = { ...leaderLabels, 'app.kubernetes.io/instance': 'llm-v2' };
    expect(selects(budget.selector.matchLabels, other)).toBe(false);
  });

  test('probes and the API port on the leader only; workers hold through the leader drain', () => {
    const set = lwsOf(synth(make));
    const leader = mainOf(leaderOf(set), container);
    const worker = mainOf(workerOf(set), container);
    expect(leader.startupProbe).toBeDefined();
    expect(leader.readinessProbe).toBeDefined();
    expect(leader.ports).toHaveLength(1);
    for (const key of ['startupProbe', 'readinessProbe', 'livenessProbe', 'ports']) expect(worker[key]).toBeUndefined();
    // Leader: sleep 15 then drain 90; a worker holds while connected to the leader's rendezvous
    // port, at most 15 + 90 (group-hold.test.ts runs the hook against real torch ranks).
    expect(leader.lifecycle.preStop).toEqual({ sleep: { seconds: 15 } });
    const [python, flag, script, port, hold] = worker.lifecycle.preStop.exec.command;
    expect([python, flag, port, hold]).toEqual(['python3', '-c', rendezvousPort, '105']);
    expect(script).toContain('/proc/net/tcp');
    for (const t of [leaderOf(set), workerOf(set)]) expect(t.spec.terminationGracePeriodSeconds).toBe(120);
    expect(workerOf(set).metadata.annotations?.['prometheus.io/scrape']).toBeUndefined();
  });

  test(`pods meet Pod Security ${level}`, () => {
    const set = lwsOf(synth(make));
    expect(podSecurityLevel(leaderOf(set).spec)).toBe(level);
    expect(podSecurityLevel(workerOf(set).spec)).toBe(level);
  });

  test('autoscaling targets the LeaderWorkerSet: it counts groups', () => {
    const objects = synth(make, {
      // A model small enough for autoscaling's budgets (the base is a 405B one).
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      modelSize: Size.gibibytes(16),
      autoscaling: { minReplicas: 1, maxReplicas: 4, targetRequestsInFlight: 64, autoscaler: Autoscaler.hpa() },
    });
    expect(lwsOf(objects).spec.replicas).toBeUndefined();
    expect(findOne(objects, 'HorizontalPodAutoscaler').spec.scaleTargetRef).toEqual({
      apiVersion: 'leaderworkerset.x-k8s.io/v1',
      kind: 'LeaderWorkerSet',
      name: 'llm-lws',
    });
  });

  test('queueName labels the LeaderWorkerSet for Kueue, and needs nodes > 1', () => {
    expect(lwsOf(synth(make, { queueName: 'serving' })).metadata.labels[KUEUE_QUEUE_LABEL]).toBe('serving');
    expect(() => synth(make, { nodes: 1, queueName: 'serving' })).toThrow(/queueName needs nodes > 1/);
  });

  test('nodes 1 keeps the single-pod StatefulSet', () => {
    const objects = synth(make, { nodes: 1 });
    expect(objects.filter(o => o.kind === 'LeaderWorkerSet')).toEqual([]);
    expect(findOne(objects, 'StatefulSet', 'llm')).toBeDefined();
  });

  test.each([0, 1.5, 65])('nodes %p is refused naming the prop', nodes => {
    expect(() => synth(make, { nodes })).toThrow(/'llm': nodes must be a whole number/);
  });
});

describe('rank and address wiring', () => {
  test('vLLM: tensor parallel per node, pipeline parallel across, mp rendezvous on the leader, headless workers', () => {
    const set = lwsOf(synth(ENGINES[0].make));
    const leader = mainOf(leaderOf(set), 'vllm').args;
    const worker = mainOf(workerOf(set), 'vllm').args;
    for (const args of [leader, worker]) {
      expect(flagValue(args, '--tensor-parallel-size')).toBe('8');
      expect(flagValue(args, '--pipeline-parallel-size')).toBe('2');
      expect(flagValue(args, '--nnodes')).toBe('2');
      expect(flagValue(args, '--node-rank')).toBe('$(LWS_WORKER_INDEX)');
      expect(flagValue(args, '--master-addr')).toBe('$(LWS_LEADER_ADDRESS)');
      expect(flagValue(args, '--master-port')).toBe('29501');
      expect(flagValue(args, '--distributed-executor-backend')).toBe('mp');
    }
    expect(leader).not.toContain('--headless');
    expect(worker).toContain('--headless');
  });

  test('SGLang: tensor parallel across the group, dist-init on the leader', () => {
    const set = lwsOf(synth(ENGINES[1].make));
    for (const t of [leaderOf(set), workerOf(set)]) {
      const args = mainOf(t, 'sglang').args;
      expect(flagValue(args, '--tp-size')).toBe('16');
      expect(flagValue(args, '--nnodes')).toBe('2');
      expect(flagValue(args, '--node-rank')).toBe('$(LWS_WORKER_INDEX)');
      expect(flagValue(args, '--dist-init-addr')).toBe('$(LWS_LEADER_ADDRESS):20000');
    }
  });

  test('user strings stay escaped; only the group references are expanded', () => {
    const set = lwsOf(synth(ENGINES[0].make, { extraArgs: ['--chat-template', '/t/$(X).jinja'] }));
    const args = mainOf(leaderOf(set), 'vllm').args;
    expect(args).toContain('/t/$$(X).jinja');
    expect(args).toContain('$(LWS_LEADER_ADDRESS)');
  });
});

describe('RDMA between the pods of a group', () => {
  test('every pod of the group gets the device, the NCCL settings and the networks, as in training', () => {
    const set = lwsOf(
      synth(ENGINES[1].make, {
        rdma: Rdma.sriov({ networks: ['ib-a', 'ib-b'], resourceName: 'nvidia.com/sriov_rdma_vf' }),
      }),
    );
    for (const t of [leaderOf(set), workerOf(set)]) {
      const main = mainOf(t, 'sglang');
      expect(main.resources.limits['nvidia.com/sriov_rdma_vf']).toBe(2);
      expect(main.env).toEqual(expect.arrayContaining([{ name: 'NCCL_NET', value: 'IB' }]));
      expect(main.securityContext.capabilities.add).toEqual(['IPC_LOCK']);
      expect(t.metadata.annotations['k8s.v1.cni.cncf.io/networks']).toBe('ib-a,ib-b');
      expect(podSecurityLevel(t.spec)).toBe('privileged');
    }
  });

  test('EFA keeps vLLM non-root and restricted', () => {
    const set = lwsOf(synth(ENGINES[0].make, { rdma: Rdma.efa(32) }));
    for (const t of [leaderOf(set), workerOf(set)]) {
      expect(mainOf(t, 'vllm').resources.limits['vpc.amazonaws.com/efa']).toBe(32);
      expect(podSecurityLevel(t.spec)).toBe('restricted');
    }
  });

  test('a shared device runs vLLM as root by default, and refuses runAsRoot false', () => {
    const set = lwsOf(synth(ENGINES[0].make, { rdma: Rdma.sharedDevice() }));
    expect(mainOf(leaderOf(set), 'vllm').securityContext.capabilities.add).toEqual(['IPC_LOCK']);
    expect(() => synth(ENGINES[0].make, { rdma: Rdma.sharedDevice(), runAsRoot: false })).toThrow(
      /'llm': runAsRoot must be true with Rdma.sharedDevice\(\)/,
    );
  });

  test('rdma needs nodes > 1', () => {
    expect(() => synth(ENGINES[0].make, { nodes: 1, rdma: Rdma.efa(4) })).toThrow(/'llm': rdma needs nodes > 1/);
  });
});

describe('refusals', () => {
  test('TGI across nodes is refused with the reason', () => {
    expect(() => synth((c, id, p) => new TgiInferenceService(c, id, p))).toThrow(
      /TgiInferenceService 'llm': nodes must be 1: TGI runs every shard of a replica on one node/,
    );
  });

  test.each([
    [
      ENGINES[0].make,
      ['--pipeline-parallel-size', '4'],
      /extraArgs\[0\] must not set --pipeline-parallel-size: .*set nodes/,
    ],
    [ENGINES[0].make, ['--nnodes=4'], /extraArgs\[0\] must not set --nnodes: .*set nodes/],
    [
      ENGINES[0].make,
      ['--distributed-executor-backend', 'ray'],
      /extraArgs\[0\] must not set --distributed-executor-backend: the construct sets it from nodes/,
    ],
    [
      ENGINES[0].make,
      ['--distributed-executor=ray'],
      /extraArgs\[0\] must not abbreviate --distributed-executor-backend: argparse expands --distributed-executor to it, which the construct sets from nodes for the group launch/,
    ],
    [
      ENGINES[0].make,
      ['--tensor-parallel-size', '16'],
      /extraArgs\[0\] must not set --tensor-parallel-size: the construct sets it from gpusPerReplica/,
    ],
    [
      ENGINES[1].make,
      ['--tp-size', '8'],
      /extraArgs\[0\] must not set --tp-size: the construct sets it from gpusPerReplica/,
    ],
    [ENGINES[1].make, ['--node-rank', '1'], /extraArgs\[0\] must not set --node-rank: .*set nodes/],
  ])('parallelism that would not match nodes x gpusPerReplica: %#', (make, extraArgs, message) => {
    expect(() => synth(make, { extraArgs })).toThrow(message);
  });

  test.each([
    [['--api-server-count', '2'], /extraArgs\[0\] must not set --api-server-count: the group's workers run --headless/],
    [['-asc=2'], /extraArgs\[0\] must not set -asc: the group's workers run --headless/],
    [['--api-server', '2'], /extraArgs\[0\] must not abbreviate --api-server-count: .*cannot be used with --headless/],
  ])("vLLM: what the group's headless workers would exit on: %#", (extraArgs, message) => {
    expect(() => synth(ENGINES[0].make, { extraArgs })).toThrow(message);
    // One pod runs no headless workers: the leader's API server count is the user's.
    expect(() => synth(ENGINES[0].make, { extraArgs, nodes: 1, gpusPerReplica: 8 })).not.toThrow();
  });

  test.each(ENGINES)("$engine: the API port cannot be the leader's rendezvous port; its neighbours can", e => {
    const port = Number(e.rendezvousPort);
    expect(() => synth(e.make, { port })).toThrow(
      new RegExp(`'llm': port must not be ${port} with nodes > 1: the leader's engine binds it .*\\(got ${port}\\)`),
    );
    for (const near of [port - 1, port + 1]) expect(() => synth(e.make, { port: near })).not.toThrow();
    // One pod rendezvouses with nothing: the port is free there.
    expect(() => synth(e.make, { port, nodes: 1, gpusPerReplica: 8 })).not.toThrow();
  });

  test.each(['LWS_LEADER_ADDRESS', 'LWS_GROUP_SIZE', 'LWS_WORKER_INDEX'])(
    "%s in env is refused for a group (LWS's webhook replaces it), and is a plain variable on one node",
    name => {
      expect(() => synth(ENGINES[0].make, { env: { [name]: 'x' } })).toThrow(
        new RegExp(`'llm': env.${name} is set by LeaderWorkerSet's pod webhook .*\\(got "x"\\)`),
      );
      expect(() => synth(ENGINES[0].make, { env: { [name]: 'x' }, nodes: 1 })).not.toThrow();
    },
  );

  test("SGLang's expert-parallel size must divide the group's tensor-parallel ranks, gpusPerReplica x nodes", () => {
    for (const ep of ['8', '16']) expect(() => synth(ENGINES[1].make, { extraArgs: ['--ep-size', ep] })).not.toThrow();
    expect(() => synth(ENGINES[1].make, { extraArgs: ['--ep-size', '32'] })).toThrow(
      /'llm': extraArgs\[1\] must be a whole number dividing the tensor-parallel size 16 \(gpusPerReplica x nodes\) as --ep-size: .*\(got "32"\)/,
    );
  });

  test('a MIG resource across nodes is refused naming nodes', () => {
    expect(() => synth(ENGINES[0].make, { gpusPerReplica: 1, gpuResource: 'nvidia.com/mig-1g.10gb' })).toThrow(
      /'llm': nodes must be 1 with MIG instances/,
    );
  });

  test('a name too long for the group labels is refused', () => {
    expect(() => synth(ENGINES[0].make, { name: 'a'.repeat(44) })).toThrow(/name must leave the LeaderWorkerSet name/);
  });
});

describe('the group in the serving practice', () => {
  const vllm = ENGINES[0].make;
  const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
    Object.entries(selector).every(([k, val]) => labels[k] === val);

  test('the ranks of a group admit each other on every port; clients and Prometheus reach only the leader API', () => {
    const objects = synth(vllm);
    const set = lwsOf(objects);
    const leader = leaderOf(set).metadata.labels;
    const worker = workerOf(set).metadata.labels;
    const leaders = findOne(objects, 'NetworkPolicy', 'llm');
    const workers = findOne(objects, 'NetworkPolicy', 'llm-workers');
    expect(selects(leaders.spec.podSelector.matchLabels, leader)).toBe(true);
    expect(selects(workers.spec.podSelector.matchLabels, worker)).toBe(true);
    expect(selects(workers.spec.podSelector.matchLabels, leader)).toBe(false);
    // The leader: the API and metrics port as a single pod, and every port from its workers (the
    // mp rendezvous on --master-port, NCCL both ways).
    const fromWorkers = leaders.spec.ingress.find((r: any) => r.ports === undefined);
    expect(fromWorkers.from.map((p: any) => selects(p.podSelector.matchLabels, worker))).toEqual([true]);
    expect(leaders.spec.ingress.filter((r: any) => r.ports).map((r: any) => r.ports[0].port)).toEqual(['http', 'http']);
    // The workers: every port from their own kind and the leaders, nothing else.
    expect(workers.spec.ingress).toHaveLength(1);
    const peers = workers.spec.ingress[0].from.map((p: any) => [
      selects(p.podSelector.matchLabels, leader),
      selects(p.podSelector.matchLabels, worker),
    ]);
    expect(peers).toEqual([
      [false, true],
      [true, false],
    ]);
    expect(workers.spec.ingress[0].ports).toBeUndefined();
    const open = synth(vllm, { networkPolicy: NetworkAccess.unrestricted() });
    expect(open.filter(o => o.kind === 'NetworkPolicy')).toEqual([]);
  });

  test('groupSurge starts new groups before old ones leave; it needs nodes > 1 and at most the groups', () => {
    const set = lwsOf(synth(vllm, { replicas: 2, groupSurge: 1 }));
    expect(set.spec.rolloutStrategy.rollingUpdateConfiguration).toEqual({ maxUnavailable: 0, maxSurge: 1 });
    expect(() => synth(vllm, { replicas: 2, groupSurge: 3 })).toThrow(
      /'llm': groupSurge must be at most the groups an update replaces \(2\)/,
    );
    expect(() => synth(vllm, { groupSurge: -1 })).toThrow(/'llm': groupSurge must be a whole number/);
    expect(() => synth(vllm, { nodes: 1, groupSurge: 1 })).toThrow(/'llm': groupSurge needs nodes > 1/);
  });

  test('the workload kind of a group is the LeaderWorkerSet, and only a group is', () => {
    const chart = testChart('ml');
    const svc = new VllmInferenceService(chart, 'llm', { name: 'llm', ...BASE });
    expect(svc.workloadKind).toBe(WorkloadKind.LEADER_WORKER_SET);
    expect(svc.workloadName).toBe('llm-lws');
    expect(svc.leaderWorkerSet).toBe(svc.workload);
    expect([svc.statefulSet, svc.deployment]).toEqual([undefined, undefined]);
    expect(() => synth(vllm, { workloadKind: WorkloadKind.DEPLOYMENT })).toThrow(
      /'llm': workloadKind must be WorkloadKind.LEADER_WORKER_SET \(or unset\) with nodes > 1/,
    );
    expect(() => synth(vllm, { nodes: 1, workloadKind: WorkloadKind.LEADER_WORKER_SET })).toThrow(
      /'llm': workloadKind needs nodes > 1/,
    );
  });

  test('a shared cache: the fill Job fills once, leader and workers wait for it', () => {
    const objects = synth(vllm, { modelCache: ModelCache.sharedClaim({ claimName: 'models' }) });
    expect(objects.filter(o => o.kind === 'Job')).toHaveLength(1);
    const set = lwsOf(objects);
    for (const t of [leaderOf(set), workerOf(set)])
      expect(t.spec.initContainers.map((c: any) => c.name)).toEqual(['model-cache-wait']);
  });

  test('every rank downloads the LoRA adapters it loads', () => {
    const lora = { loraAdapters: [{ name: 'sql', modelId: 'org/sql-lora', revision: 'v1' }] };
    const set = lwsOf(synth(vllm, lora as Partial<InferenceServiceProps>));
    for (const t of [leaderOf(set), workerOf(set)])
      expect(t.spec.initContainers.map((c: any) => c.name)).toEqual(['model-download', 'model-download-lora-0']);
  });

  test('a KEDA query reads the in-flight requests of this set only', () => {
    const objects = synth(vllm, {
      // A model small enough for autoscaling's budgets (the base is a 405B one).
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      modelSize: Size.gibibytes(16),
      autoscaling: {
        minReplicas: 1,
        maxReplicas: 2,
        targetRequestsInFlight: 64,
        autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring:9090' }),
      },
    });
    const scaled = findOne(objects, 'ScaledObject');
    expect(scaled.spec.scaleTargetRef).toEqual({
      apiVersion: 'leaderworkerset.x-k8s.io/v1',
      kind: 'LeaderWorkerSet',
      name: 'llm-lws',
    });
    const query: string = scaled.spec.triggers[0].metadata.query;
    const pattern = new RegExp(`^(?:${/pod=~"([^"]+)"/.exec(query)![1]})$`);
    expect(['llm-lws-0', 'llm-lws-12'].every(p => pattern.test(p))).toBe(true);
    expect(['llm-lws', 'llm-0', 'llm-lws2-0', 'other-lws-0'].some(p => pattern.test(p))).toBe(false);
  });

  test('the startup budget counts the group GPUs: 2 x 2 GPUs need modelSize when the id states none', () => {
    expect(() => synth(vllm, { modelId: 'org/house-model', modelSize: undefined, gpusPerReplica: 2 })).toThrow(
      /'llm': modelSize is needed \(or maxModelLoadTime\) with gpusPerReplica x nodes 4/,
    );
  });

  test.each<[string, Reload, boolean]>([
    ['exec', Reload.exec(['/reload']), true],
    ['sync', Reload.sync(), true],
    ['signal', Reload.signal('HUP', { process: 'worker', exposeWorkloadToSidecar: true }), true],
    ['httpPost', Reload.httpPost('http://localhost:8000/reload'), false],
    ['filesOnly', Reload.filesOnly(), false],
  ])(
    'a rotating Secret with Reload.%s reaches the leader and the workers alike (a worker reloads unless the reload is an HTTP call to the API only the leader serves)',
    (_name, onRotation, workerReloads) => {
      const chart = testChart('ml');
      const svc = new VllmInferenceService(chart, 'llm', { name: 'llm', ...BASE });
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' }).mountInto(svc, {
        path: '/etc/gpu',
        onRotation,
      });
      validateApp(chart);
      const objects = Testing.synth(chart);
      expectValidOutput(objects);
      const set = lwsOf(objects);
      const sidecars = (t: any) =>
        (t.spec.initContainers ?? []).filter((c: any) => c.name.startsWith('reload-') && c.restartPolicy === 'Always');
      for (const t of [leaderOf(set), workerOf(set)]) {
        expect(t.spec.volumes.some((v: any) => v.secret?.secretName === 'gpu-credentials')).toBe(true);
        expect(mainOf(t, 'vllm').volumeMounts.some((m: any) => m.mountPath === '/etc/gpu')).toBe(true);
      }
      const leaderReloads = _name !== 'filesOnly';
      expect([sidecars(leaderOf(set)).length, sidecars(workerOf(set)).length]).toEqual([
        leaderReloads ? 1 : 0,
        workerReloads ? 1 : 0,
      ]);
    },
  );

  test('Reload.restart() is refused: Stakater Reloader does not restart LeaderWorkerSets', () => {
    const chart = testChart('ml');
    const svc = new VllmInferenceService(chart, 'llm', { name: 'llm', ...BASE });
    const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
    expect(() => creds.mountInto(svc, { path: '/etc/gpu', onRotation: Reload.restart() })).toThrow(
      /onRotation Reload.restart\(\) needs a workload that rolls pod-template changes out: Stakater Reloader does not restart LeaderWorkerSets/,
    );
  });
});

describe('the guard knows serving groups', () => {
  test('a one-step version bump of a group is warned about, with the wait LWS supports', () => {
    const output = (version: number) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
      new VllmInferenceService(chart, 'llm', { name: 'llm', ...BASE, version });
      return Testing.synth(chart) as KubeObject[];
    };
    const before = output(1);
    const after = output(2);
    const same = (a: KubeObject, b: KubeObject) => a.kind === b.kind && a.metadata.name === b.metadata.name;
    const matched = new Set(before.filter(o => after.some(a => same(a, o))));
    const created = after.filter(a => !before.some(o => same(a, o)));
    const out: any[] = [];
    servingBumpWarnings(before, matched, created, out);
    expect(out.map(f => [f.code, f.before, f.after])).toEqual([['serving-version-gap', 'llm-v1-lws', 'llm-v2-lws']]);
    expect(out[0].remedy).toContain('kubectl wait --for=condition=Available leaderworkerset/llm-v2-lws -n serving');
  });
});

describe('monitoring a group', () => {
  const app = () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    const svc = new VllmInferenceService(chart, 'llm', { name: 'llm', ...BASE });
    return { svc, monitoring: new InferenceServiceMonitoring(chart, 'monitoring', svc) };
  };

  test("the rules find the set's leaders and workers by name, and label alerts with the LeaderWorkerSet", () => {
    const { monitoring } = app();
    const rules = ruleSpec(monitoring).groups[0].rules;
    expect(rules.every((r: any) => r.labels.leaderworkerset === 'llm-lws')).toBe(true);
    const pattern = new RegExp(`^(?:${podNamePattern('LeaderWorkerSet', 'llm-lws')})$`);
    expect(['llm-lws-0', 'llm-lws-0-1', 'llm-lws-3-1'].every(p => pattern.test(p))).toBe(true);
    expect(['llm-0', 'llm-lws-x', 'llm-lws-0-1-2', 'llm-v2-lws-0'].some(p => pattern.test(p))).toBe(false);
  });

  describePromtool('under promtool', () => {
    test('GpuServingPodNotReady fires for a worker that is not Ready, not for a pod of another version', () => {
      const { monitoring, svc } = app();
      const r = podNotReadyRun(monitoring, svc.capacitySeconds, 'llm-lws-1-1', 'llm-v2-lws-1-1');
      expect(r.output).toMatch(/SUCCESS/);
      expect(r.ok).toBe(true);
    });
  });
});

describe('placement and claims of a group', () => {
  const vllm = ENGINES[0].make;

  test('groupExclusiveTopology: the LeaderWorkerSet carries LWS exclusive placement on that node label', () => {
    const key = 'network.topology.kubernetes.io/block';
    const set = lwsOf(synth(vllm, { groupExclusiveTopology: key }));
    expect(set.metadata.annotations).toEqual({ 'leaderworkerset.sigs.k8s.io/exclusive-topology': key });
    // Without it, no placement annotation: the scheduler decides.
    expect(lwsOf(synth(vllm)).metadata.annotations).toBeUndefined();
  });

  test.each<[Partial<InferenceServiceProps>, RegExp]>([
    [
      { groupExclusiveTopology: 'rack', nodes: 1 },
      /'llm': groupExclusiveTopology needs nodes > 1: it places the pods of a LeaderWorkerSet group \(got "rack"\)/,
    ],
    [{ groupExclusiveTopology: 'not a label/' }, /'llm': groupExclusiveTopology .*\(got "not a label\/"\)/],
    [
      { pod: { annotations: { 'leaderworkerset.sigs.k8s.io/exclusive-topology': 'rack' } } },
      /pod\.annotations\.leaderworkerset\.sigs\.k8s\.io\/exclusive-topology is set by the construct: use groupExclusiveTopology/,
    ],
  ])('groupExclusiveTopology refusals: %j', (props, message) => {
    expect(() => synth(vllm, props)).toThrow(message);
  });

  test('no two pods of the set on one node, beside the pod option terms', () => {
    const zone = { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['a'] };
    const user = { labelSelector: { matchLabels: { team: 'x' } }, topologyKey: 'topology.kubernetes.io/zone' };
    const set = lwsOf(
      synth(vllm, {
        pod: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [zone] }] },
            },
            podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [user] },
          },
        },
      }),
    );
    for (const t of [leaderOf(set), workerOf(set)]) {
      const terms = t.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
      expect(terms).toEqual([
        user,
        {
          labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'llm', 'app.kubernetes.io/instance': 'llm' } },
          topologyKey: 'kubernetes.io/hostname',
        },
      ]);
      expect(JSON.stringify(t.spec.affinity.nodeAffinity)).toContain('topology.kubernetes.io/zone');
      for (const labels of [leaderOf(set).metadata.labels, workerOf(set).metadata.labels])
        expect(Object.entries(terms[1].labelSelector.matchLabels).every(([k, v]) => labels[k] === v)).toBe(true);
    }
  });

  test("per-pod claims are retained when LWS deletes a group's worker StatefulSet, deleted on scale-down", () => {
    const set = lwsOf(synth(vllm));
    const t = set.spec.leaderWorkerTemplate;
    expect(t.volumeClaimTemplates).toHaveLength(1);
    expect(t.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Retain', whenScaled: 'Delete' });
  });

  test('the workers admit no clients, even named ones: only the leaders serve them', () => {
    const objects = synth(vllm, {
      networkPolicy: NetworkAccess.restricted({ clients: [NetworkPeer.namespace('gateway-system')] }),
    });
    const workers = findOne(objects, 'NetworkPolicy', 'llm-workers');
    expect(JSON.stringify(workers.spec)).not.toContain('gateway-system');
    expect(JSON.stringify(findOne(objects, 'NetworkPolicy', 'llm').spec)).toContain('gateway-system');
  });
});
