import { Chart, Size, Testing } from 'cdk8s';
import { GpuTrainingJob, guard, ModelCache, VllmInferenceService } from '../../src';
import { KUEUE_QUEUE_LABEL } from '../../src/common/kueue';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { admitted, quota, workloadsOf } from './kueue';
import { applyAll, GpuPool, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * Kueue v0.17.0 (built from its module, its webhooks served through the API server) admitting the
 * library's queued workloads against a ClusterQueue's GPU quota, with the JobSet and LeaderWorkerSet
 * controllers, kube-scheduler and KWOK GPU nodes: a GpuTrainingJob is admitted whole or not at all, and
 * its quota comes back when it completes; a multi-node serving group is admitted as one.
 */

const RUN = Date.now().toString(36);
const newest = SERVER_VERSIONS[SERVER_VERSIONS.length - 1];
const VERSIONS: { kueue: string } = require('./versions.json');
function training(ns: string, gpus: GpuPool, name: string, nodes = 2, completeAfter: string | undefined = '6s') {
  const chart = new Chart(Testing.app(), 'c', { namespace: ns });
  new GpuTrainingJob(chart, name, {
    name,
    image: 'registry.example/trainer:1.0',
    nodes,
    gpusPerPod: 8,
    args: ['train.py'],
    queueName: 'gpus',
    nodeSelector: gpus.nodeSelector,
    pod: {
      tolerations: gpus.tolerations,
      annotations: completeAfter ? { [`pod-complete.${KWOK_STAGE}/delay`]: completeAfter } : {},
    },
  });
  return Testing.synth(chart);
}

const jobSet = async (cluster: Cluster, ns: string, name: string) =>
  (await cluster.request('GET', `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${ns}/jobsets/${name}`)).body;
describeCluster(
  'Kueue admits the queued workloads whole, against a GPU quota',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'kueue', nodes: 4 });

    test('two 16-GPU training runs under a 16-GPU quota: one is admitted whole, the other waits with no pod, and is admitted when the first completes', async () => {
      const ns = await place.namespace('kueue-train', 'restricted');
      await quota(cluster, ns, 16);
      const gpus = place.gpus();
      // It runs 20 s: both its pods must be seen Running, and then the second applied through Kueue's webhooks and seen
      // waiting, before it completes, on a loaded plane.
      await applyAll(cluster, training(ns, gpus, 'first', 2, '20s'));
      await waitExplained(cluster, ns, 'the first run admitted and its gang running', 90, async () => {
        const pods = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running');
        const js = await jobSet(cluster, ns, 'first');
        return (
          (js.spec?.suspend === false && pods.length === 2) || `suspend ${js.spec?.suspend}, ${pods.length} running`
        );
      });
      await applyAll(cluster, training(ns, gpus, 'second'));
      // The second is admitted only once the first's quota comes back: until then, suspended, no pod.
      let sawWaiting = false;
      await waitExplained(cluster, ns, 'the first run to complete, then the second admitted whole', 180, async () => {
        const [first, second] = [await jobSet(cluster, ns, 'first'), await jobSet(cluster, ns, 'second')];
        const done = (first.status?.conditions ?? []).some((c: any) => c.type === 'Completed' && c.status === 'True');
        const secondPods = (await podsOf(cluster, ns)).filter(
          p => p.metadata.labels?.['jobset.sigs.k8s.io/jobset-name'] === 'second',
        );
        if (!done) {
          // Whole or nothing: while the first holds the quota, the second has no pod and stays suspended.
          expect({ suspend: second.spec?.suspend, pods: secondPods.length }).toEqual({ suspend: true, pods: 0 });
          sawWaiting = true;
          return 'the first still running';
        }
        const running = secondPods.filter(p => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
        return (
          (second.spec?.suspend === false && running.length === 2) ||
          `second: suspend ${second.spec?.suspend}, ${running.length} pods`
        );
      });
      expect(sawWaiting).toBe(true);
      const ws = await workloadsOf(cluster, ns);
      expect(ws.filter(admitted).length).toBeGreaterThanOrEqual(1);
      // Each run is one Workload with one pod set of 2 pods × 8 GPUs.
      for (const w of ws)
        expect(
          w.spec.podSets.map((p: any) => [p.count, p.template.spec.containers[0].resources.requests['nvidia.com/gpu']]),
        ).toEqual([[2, '8']]);
    }, 300_000);

    test("the guard's manifest baseline of a queued JobSet is an admitted one: Kueue's webhook refuses its queue moved once admitted, and allows it while it waits", async () => {
      const ns = await place.namespace('kueue-guard', 'restricted');
      await quota(cluster, ns, 16);
      const gpus = place.gpus();
      // One run that fits the quota and keeps running; one that never fits (32 GPUs), so Kueue keeps it suspended.
      const running = training(ns, gpus, 'running', 2, undefined);
      const waiting = training(ns, gpus, 'waiting', 4, undefined);
      await applyAll(cluster, [...running, ...waiting]);
      await waitExplained(
        cluster,
        ns,
        "one run admitted, the other's Workload created and left waiting",
        90,
        async () => {
          const [r, w] = [await jobSet(cluster, ns, 'running'), await jobSet(cluster, ns, 'waiting')];
          const ws = await workloadsOf(cluster, ns);
          return (
            (r.spec?.suspend === false && w.spec?.suspend === true && ws.length === 2) ||
            `running: suspend ${r.spec?.suspend}; waiting: suspend ${w.spec?.suspend}; ${ws.length} workloads`
          );
        },
      );
      const options = {
        serverVersion: cluster.minor,
        kueueVersion: VERSIONS.kueue.replace(/^v/, ''),
        serverSideApply: true,
      };
      const moved = (objects: any[]) => {
        const o = JSON.parse(JSON.stringify(objects.find(x => x.kind === 'JobSet')));
        o.metadata.labels[KUEUE_QUEUE_LABEL] = 'elsewhere';
        return o;
      };
      const guardPaths = (before: any, after: any) =>
        guard([before], [after], options)
          .findings.filter(f => f.severity === 'error')
          .map(f => f.path);
      const manifestOf = (objects: any[]) => objects.find(x => x.kind === 'JobSet');

      // A GitOps resync of the admitted run's unchanged manifest goes through: Kueue's update on admission
      // owns only what it wrote (an empty onPodConditions the library once sent, dropped by Kueue's Go
      // client, made it own the atomic podFailurePolicy rules, and this apply conflicted).
      const resync = await cluster.apply(manifestOf(running), { dryRun: true });
      expect({ status: resync.status, message: resync.body?.message }).toEqual({ status: 200, message: undefined });

      // Admitted and running: the server refuses, and the guard says so from the manifest alone.
      const refused = await cluster.apply(moved(running), { dryRun: true });
      expect({ status: refused.status, message: refused.body?.message }).toEqual({
        status: 403, // a webhook's denial: Forbidden
        message: expect.stringContaining(
          'admission webhook "vjobset.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]',
        ),
      });
      expect(guardPaths(manifestOf(running), moved(running))).toEqual([`metadata.labels[${KUEUE_QUEUE_LABEL}]`]);

      // Still waiting: the server allows it; the guard agrees given the live object, and from the
      // manifest reports it (its documented assumption: docs/guard.md "Kueue").
      const allowed = await cluster.apply(moved(waiting), { dryRun: true });
      expect({ status: allowed.status, message: allowed.body?.message }).toEqual({ status: 200, message: undefined });
      expect(guardPaths(await jobSet(cluster, ns, 'waiting'), moved(waiting))).toEqual([]);
      expect(guardPaths(manifestOf(waiting), moved(waiting))).toEqual([`metadata.labels[${KUEUE_QUEUE_LABEL}]`]);
    }, 240_000);

    test('a 2-node serving group under a 16-GPU quota: the first group is admitted as one, a second replica waits whole', async () => {
      const ns = await place.namespace('kueue-serve', 'restricted');
      await quota(cluster, ns, 16);
      const gpus = place.gpus();
      const chart = new Chart(Testing.app(), 'c', { namespace: ns });
      new VllmInferenceService(chart, 'big', {
        name: 'big',
        modelId: 'meta-llama/Llama-3.1-405B-Instruct',
        gpusPerReplica: 8,
        nodes: 2,
        replicas: 2,
        modelSize: Size.gibibytes(810),
        modelCache: ModelCache.emptyDir(),
        queueName: 'gpus',
        nodeSelector: gpus.nodeSelector,
        pod: { tolerations: gpus.tolerations, annotations: { [`pod-ready.${KWOK_STAGE}/delay`]: '1s' } },
      });
      await applyAll(cluster, Testing.synth(chart));
      await waitExplained(cluster, ns, 'one group admitted and placed, the other gated whole', 120, async () => {
        const pods = await podsOf(cluster, ns);
        const placed = pods.filter(p => p.spec.nodeName);
        const gated = pods.filter(p => (p.spec.schedulingGates ?? []).length > 0);
        const ws = await workloadsOf(cluster, ns);
        return (
          (placed.length === 2 && ws.filter(admitted).length === 1 && ws.length === 2) ||
          `${placed.length} placed, ${gated.length} gated, ${ws.filter(admitted).length} of ${ws.length} workloads admitted`
        );
      });
      const pods = await podsOf(cluster, ns);
      const groupOf = (p: any) => p.metadata.labels?.['leaderworkerset.sigs.k8s.io/group-index'];
      const placed = pods.filter(p => p.spec.nodeName);
      // The admitted group's leader and worker both placed; no pod of the other group placed.
      expect(new Set(placed.map(groupOf)).size).toBe(1);
      expect(placed).toHaveLength(2);
    }, 240_000);
  },
  v => v === newest,
);
