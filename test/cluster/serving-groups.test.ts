import { Chart, Duration, Testing } from 'cdk8s';
import { ExpertParallel, InferenceGateway, ModelCache, RankEndpoints, VllmInferenceService } from '../../src';
import { plan } from '../../src/guard/plan-api';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, gpusHeld, isReady, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * Multi-node serving groups on the real LeaderWorkerSet controller and webhooks (v0.9.0, built from its
 * module; its CRD has the fields of the v0.10.0 one the library validates against) with the StatefulSet
 * controller and KWOK GPU nodes: a group whose rank restarts is recreated whole, a rolling update goes
 * group by group, and the scale subresource counts groups.
 */

const RUN = Date.now().toString(36);
const LWS_API = '/apis/leaderworkerset.x-k8s.io/v1';
const GROUP_INDEX = 'leaderworkerset.sigs.k8s.io/group-index';

describeCluster(
  'serving groups on the LeaderWorkerSet controller',
  (cluster: Cluster) => {
    // Four nodes for the first service's two groups, six for the surge test's three (two and a surge group), two for
    // the per-rank group.
    const place = scenario(cluster, RUN, { name: 'groups', nodes: 12 });
    // The one namespace of these tests, made by the first with the level the service reports.
    const ns = `groups-${RUN}`;

    const output = (revision: string, o: { namespace?: string; groupSurge?: number } = {}) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: o.namespace ?? ns });
      const service = new VllmInferenceService(chart, 'svc', {
        name: 'llm',
        modelId: 'meta-llama/Llama-3.1-405B-Instruct',
        gpusPerReplica: 8,
        nodes: 2,
        replicas: 2,
        modelCache: ModelCache.emptyDir(),
        ...(o.groupSurge !== undefined ? { groupSurge: o.groupSurge } : {}),
        preStopSleep: Duration.seconds(1),
        drainTimeout: Duration.seconds(2),
        nodeSelector: place.gpus().nodeSelector,
        pod: {
          tolerations: place.gpus().tolerations,
          annotations: {
            [`pod-ready.${KWOK_STAGE}/delay`]: '1s',
            [`pod-delete.${KWOK_STAGE}/delay`]: '1s',
            'example.com/revision': revision,
          },
        },
      });
      return { objects: Testing.synth(chart), level: service.podSecurityLevel };
    };
    const lws = async () => (await cluster.request('GET', `${LWS_API}/namespaces/${ns}/leaderworkersets/llm-lws`)).body;
    const groupPods = async () => podsOf(cluster, ns, 'leaderworkerset.sigs.k8s.io/name=llm-lws');
    const allReady = async (): Promise<true | string> => {
      const set = await lws();
      const pods = await groupPods();
      const ready = pods.filter(isReady);
      return (
        (set.status?.readyReplicas === 2 &&
          set.status?.updatedReplicas === 2 &&
          ready.length === 4 &&
          pods.length === 4) ||
        `ready groups ${set.status?.readyReplicas}, updated ${set.status?.updatedReplicas}, ${ready.length} of ${pods.length} pods ready`
      );
    };

    test('two groups of a leader and a worker come up, one pod per node; the scale subresource counts groups', async () => {
      const { objects, level } = output('1');
      await place.namespace('groups', level);
      await applyAll(cluster, objects);
      await waitExplained(cluster, ns, 'two ready groups', 90, allReady);
      const pods = await groupPods();
      expect(new Set(pods.map(p => p.spec.nodeName)).size).toBe(4);
      // The pod webhook gave each pod its group and the leader's address.
      for (const p of pods) {
        expect(p.metadata.labels[GROUP_INDEX]).toMatch(/^[01]$/);
        expect(p.spec.containers[0].env.map((e: any) => e.name)).toContain('LWS_LEADER_ADDRESS');
      }
      const scale = await cluster.request('GET', `${LWS_API}/namespaces/${ns}/leaderworkersets/llm-lws/scale`);
      expect([scale.body.spec.replicas, scale.body.status.replicas]).toEqual([2, 2]);
      // An autoscaler reads the leaders only: one pod per group.
      const selected = await podsOf(cluster, ns, scale.body.status.selector);
      expect(selected).toHaveLength(2);
    }, 180_000);

    test("a worker whose engine restarts has its whole group recreated; the other group's pods stay", async () => {
      const before = await groupPods();
      const group = (g: string) => before.filter(p => p.metadata.labels[GROUP_INDEX] === g);
      const worker = group('1').find(p => p.metadata.labels['leaderworkerset.sigs.k8s.io/worker-index'] !== '0')!;
      // What the kubelet reports when a rank's container has restarted (KWOK does not restart containers).
      const status = JSON.parse(JSON.stringify(worker.status));
      status.containerStatuses[0].restartCount = 1;
      const r = await cluster.request(
        'PATCH',
        `/api/v1/namespaces/${ns}/pods/${worker.metadata.name}/status`,
        { status: { containerStatuses: status.containerStatuses } },
        'application/strategic-merge-patch+json',
      );
      expect(r.status).toBe(200);
      const kept = new Set(group('0').map(p => p.metadata.uid));
      const replaced = new Set(group('1').map(p => p.metadata.uid));
      await waitExplained(cluster, ns, 'group 1 recreated and both groups ready', 90, async () => {
        const now = await groupPods();
        const fresh = now.filter(p => p.metadata.labels[GROUP_INDEX] === '1' && !replaced.has(p.metadata.uid));
        return (fresh.length === 2 && (await allReady()) === true) || `${fresh.length} new pods in group 1`;
      });
      const after = await groupPods();
      expect(after.filter(p => kept.has(p.metadata.uid))).toHaveLength(2);
      expect(after.filter(p => replaced.has(p.metadata.uid))).toHaveLength(0);
    }, 180_000);

    test('a rolling update replaces the groups one at a time (groupSurge 0), as the plan says, never both at once', async () => {
      const v1 = output('1').objects;
      const v2 = output('2').objects;
      const predicted = plan(v1, v2).workloads.find(w => w.kind === 'LeaderWorkerSet')!;
      expect([predicted.unit, predicted.pods.max, predicted.perStep]).toEqual(['group', 2, 1]);
      const old = new Set((await groupPods()).map(p => p.metadata.uid));
      await applyAll(cluster, v2);
      let minReadyGroups = 2;
      await waitExplained(cluster, ns, 'both groups updated and ready', 120, async () => {
        const set = await lws();
        minReadyGroups = Math.min(minReadyGroups, set.status?.readyReplicas ?? 0);
        const pods = await groupPods();
        const fresh = pods.filter(p => !old.has(p.metadata.uid));
        return (
          (set.metadata.generation === set.status?.observedGeneration &&
            fresh.length === 4 &&
            (await allReady()) === true) ||
          `${fresh.length} new pods, ${set.status?.readyReplicas} ready groups`
        );
      });
      // One group out at a time: the other kept serving.
      expect(minReadyGroups).toBe(1);
    }, 240_000);

    test("with groupSurge 1 a surge group serves first: ready groups never drop below two, and the GPU peak is the plan's", async () => {
      const surgeNs = await place.namespace('groups-surge', output('1').level);
      const v1 = output('1', { namespace: surgeNs, groupSurge: 1 }).objects;
      const v2 = output('2', { namespace: surgeNs, groupSurge: 1 }).objects;
      const pods = () => podsOf(cluster, surgeNs, 'leaderworkerset.sigs.k8s.io/name=llm-lws');
      /** Groups whose every pod is Ready (and none terminating), by group index. */
      const readyGroups = (all: any[]) => {
        const byGroup = new Map<string, any[]>();
        for (const p of all)
          byGroup.set(p.metadata.labels[GROUP_INDEX], [...(byGroup.get(p.metadata.labels[GROUP_INDEX]) ?? []), p]);
        return [...byGroup.values()].filter(g => g.length === 2 && g.every(isReady)).length;
      };
      await applyAll(cluster, v1);
      await waitExplained(cluster, surgeNs, 'two ready groups', 90, async () => {
        const all = await pods();
        return (all.length === 4 && readyGroups(all) === 2) || `${readyGroups(all)} ready groups, ${all.length} pods`;
      });
      const predicted = plan(v1, v2).workloads.find(w => w.kind === 'LeaderWorkerSet')!;
      expect(predicted.gpusDuringRollout.max).toBe(3 * 16);
      const old = new Set((await pods()).map(p => p.metadata.uid));
      await applyAll(cluster, v2);
      let minReady = 2;
      let peak = 0;
      await waitExplained(cluster, surgeNs, 'both groups updated, the surge group gone', 150, async () => {
        const all = await pods();
        minReady = Math.min(minReady, readyGroups(all));
        peak = Math.max(peak, gpusHeld(all));
        const fresh = all.filter(p => !old.has(p.metadata.uid));
        return (
          (all.length === 4 && fresh.length === 4 && readyGroups(all) === 2) ||
          `${fresh.length} new of ${all.length} pods, ${readyGroups(all)} ready groups`
        );
      });
      // maxUnavailable 0 with a surge group: never fewer ready groups than replicas.
      expect(minReady).toBe(2);
      // Two groups and the surge group side by side, as the plan predicted.
      expect(peak).toBe(predicted.gpusDuringRollout.max);
    }, 240_000);

    test("per-rank endpoints across a group: the worker is an endpoint as the leader is, every rank's port resolved on both; the scale selector keeps the leader", async () => {
      const rankNs = await place.namespace('groups-ranks', output('1').level);
      const chart = new Chart(Testing.app(), 'c', { namespace: rankNs });
      const service = new VllmInferenceService(chart, 'svc', {
        name: 'moe',
        modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
        gpusPerReplica: 4,
        nodes: 2,
        replicas: 1,
        serviceMonitor: true,
        expertParallel: ExpertParallel.wide({ endpoints: RankEndpoints.PER_RANK }),
        modelCache: ModelCache.emptyDir(),
        preStopSleep: Duration.seconds(1),
        drainTimeout: Duration.seconds(2),
        nodeSelector: place.gpus().nodeSelector,
        pod: {
          tolerations: place.gpus().tolerations,
          annotations: { [`pod-ready.${KWOK_STAGE}/delay`]: '1s', [`pod-delete.${KWOK_STAGE}/delay`]: '1s' },
        },
      });
      new InferenceGateway(chart, 'gw', { name: 'moe', services: [service], gateway: { name: 'edge' } });
      // The group and its Services: the pool, the picker and the monitor need CRDs and controllers not run here.
      const objects = Testing.synth(chart).filter((o: any) => ['LeaderWorkerSet', 'Service'].includes(o.kind));
      await applyAll(
        cluster,
        objects.filter((o: any) => !o.metadata.name.endsWith('-epp')),
      );
      const slices = async (svc: string) =>
        (
          await cluster.request(
            'GET',
            `/apis/discovery.k8s.io/v1/namespaces/${rankNs}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${svc}`)}`,
          )
        ).body.items as any[];
      const readyEndpoints = async (svc: string) =>
        (await slices(svc)).flatMap(s => (s.endpoints ?? []).filter((e: any) => e.conditions?.ready));
      await waitExplained(
        cluster,
        rankNs,
        'both pods of the group ready endpoints of the client Service',
        90,
        async () => {
          const ready = await readyEndpoints('moe');
          return ready.length === 2 || `${ready.length} ready endpoints of moe`;
        },
      );
      const pods = await podsOf(cluster, rankNs, 'leaderworkerset.sigs.k8s.io/name=moe-lws');
      const byIp = new Map(
        pods.map(p => [p.status.podIP, p.metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']]),
      );
      const served = (await readyEndpoints('moe')).map(e => byIp.get(e.addresses[0]));
      expect(served.sort()).toEqual(['0', '1']);
      // The headless Service (what the ServiceMonitor scrapes): every rank's named port resolved to its number.
      const headless = await slices('moe-headless');
      const ports = headless.flatMap(s => (s.ports ?? []).map((p: any) => [p.name, p.port]));
      expect(ports.sort()).toEqual([
        ['http', 8000],
        ['rank-1', 8001],
        ['rank-2', 8002],
        ['rank-3', 8003],
      ]);
      expect(headless.flatMap(s => s.endpoints ?? [])).toHaveLength(2);
      // The scale subresource's selector (what an HPA averages over) holds the leader alone; KEDA's query divides the
      // sum over both pods by the two that serve.
      // The readiness probe (group-ready.py) names the group's pods from LWS_LEADER_ADDRESS and LWS_GROUP_SIZE: the
      // leader's name, and `<leader>-<i>` under the same subdomain, which must be each pod's own DNS name
      // (hostname.subdomain.namespace, served by the set's headless Service).
      const leaderPod = pods.find(p => p.metadata.labels['leaderworkerset.sigs.k8s.io/worker-index'] === '0')!;
      const env = Object.fromEntries(leaderPod.spec.containers[0].env.map((e: any) => [e.name, e.value]));
      const [first, domain] = [
        env.LWS_LEADER_ADDRESS.split('.')[0],
        env.LWS_LEADER_ADDRESS.split('.').slice(1).join('.'),
      ];
      const derived = [
        env.LWS_LEADER_ADDRESS,
        ...Array.from({ length: Number(env.LWS_GROUP_SIZE) - 1 }, (_, i) => `${first}-${i + 1}.${domain}`),
      ];
      const names = pods.map(p => `${p.spec.hostname}.${p.spec.subdomain}.${rankNs}`);
      expect(names.sort()).toEqual(derived.sort());
      const dns = await cluster.request('GET', `/api/v1/namespaces/${rankNs}/services/${leaderPod.spec.subdomain}`);
      expect([dns.status, dns.body.spec.clusterIP]).toEqual([200, 'None']);
      const scale = await cluster.request('GET', `${LWS_API}/namespaces/${rankNs}/leaderworkersets/moe-lws/scale`);
      expect(await podsOf(cluster, rankNs, scale.body.status.selector)).toHaveLength(1);
      expect(service.servingPodsPerReplica).toBe(2);
    }, 180_000);
  },
  version => version === SERVER_VERSIONS[SERVER_VERSIONS.length - 1],
);
