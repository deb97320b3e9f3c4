import { Chart, Duration, Testing } from 'cdk8s';
import {
  InferenceServiceProps,
  ModelCache,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
} from '../../src';
import { plan } from '../../src/guard/plan-api';
import { Cluster, describeCluster, PodSecurityLevel, SERVER_VERSIONS } from './kube';
import { applyAll, GpuPool, gpusHeld, isReady, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * Seed 001, failure and remedy side by side: serving rollouts and node drains watched on the real
 * StatefulSet and disruption controllers, with KWOK GPU nodes standing in for the kubelets. Model load
 * is KWOK's `pod-ready` delay and the slow drain its `pod-delete` delay (a pod goes at a random moment
 * between the delay and the end of its grace period), both scaled down to seconds.
 *
 * What the seed says and what happens: its OrderedReady StatefulSet with slow-terminating pods does not
 * stall; it rolls one pod at a time, each waiting for its predecessor to be gone, and so does the same
 * set with `Parallel` (the seed's fix), since podManagementPolicy governs scaling, not updates. What
 * stalls a rollout is a pod that never becomes Ready (the seed's 30 s readiness budget for a model that
 * loads for minutes), which the library's startup probe answers.
 */

const RUN = Date.now().toString(36);
/** The scaled-down timings: a model load of 1 s and a drain of 2 s. */
const SLOW = {
  [`pod-ready.${KWOK_STAGE}/delay`]: '1s',
  [`pod-delete.${KWOK_STAGE}/delay`]: '2s',
};

interface Sample {
  readonly ready: number;
  readonly terminating: number;
  /** GPUs held by the selected pods that are not terminal, terminating ones included. */
  readonly gpus: number;
  readonly uids: string[];
}

/** The selected pods' readiness, sampled until `done`, and how long it took. */
async function watch(
  cluster: Cluster,
  namespace: string,
  selector: string,
  what: string,
  seconds: number,
  done: () => Promise<true | string>,
): Promise<{ samples: Sample[]; seconds: number }> {
  const samples: Sample[] = [];
  const started = Date.now();
  await waitExplained(cluster, namespace, what, seconds, async () => {
    const pods = await podsOf(cluster, namespace, selector);
    samples.push({
      ready: pods.filter(isReady).length,
      terminating: pods.filter(p => p.metadata.deletionTimestamp).length,
      gpus: gpusHeld(pods),
      uids: pods.map(p => p.metadata.uid),
    });
    return done();
  });
  return { samples, seconds: (Date.now() - started) / 1000 };
}

/**
 * A workload rolled out: the controller has seen its latest spec, and every replica is updated and
 * Ready with no old one left (a StatefulSet: on the new revision; a Deployment: no surplus pod).
 */
const rolledOut =
  (cluster: Cluster, ns: string, kind: string, name: string, replicas: number) => async (): Promise<true | string> => {
    const path = kind === 'Deployment' ? 'deployments' : 'statefulsets';
    const o = (await cluster.request('GET', `/apis/apps/v1/namespaces/${ns}/${path}/${name}`)).body;
    const s = o.status ?? {};
    const seen = s.observedGeneration >= o.metadata.generation;
    const done =
      kind === 'Deployment'
        ? s.updatedReplicas === replicas && s.readyReplicas === replicas && s.replicas === replicas
        : s.updatedReplicas === replicas && s.readyReplicas === replicas && s.currentRevision === s.updateRevision;
    return (
      (seen && done) ||
      `generation ${s.observedGeneration}/${o.metadata.generation}, updated ${s.updatedReplicas}, ready ${s.readyReplicas}, replicas ${s.replicas}`
    );
  };

/** The seed's TGI StatefulSet (scaled down): OrderedReady or Parallel, 30 s of grace scaled to 5 s. */
function seedTgi(ns: string, policy: string, image: string, gpus: GpuPool) {
  const labels = { app: `tgi-${policy.toLowerCase()}` };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: labels.app, namespace: ns },
    spec: {
      serviceName: labels.app,
      replicas: 3,
      podManagementPolicy: policy,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, annotations: SLOW },
        spec: {
          nodeSelector: gpus.nodeSelector,
          tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }, ...gpus.tolerations],
          terminationGracePeriodSeconds: 5,
          containers: [{ name: 'tgi', image, resources: { limits: { 'nvidia.com/gpu': '1' } } }],
        },
      },
    },
  };
}

const ENGINES: Array<{ engine: string; make: (c: Chart, p: InferenceServiceProps) => { podSecurityLevel: string } }> = [
  { engine: 'TGI', make: (c, p) => new TgiInferenceService(c, 'svc', p) },
  { engine: 'vLLM', make: (c, p) => new VllmInferenceService(c, 'svc', p) },
  { engine: 'SGLang', make: (c, p) => new SglangInferenceService(c, 'svc', p) },
];

describeCluster(
  'seed 001: serving rollouts and drains watched on the StatefulSet and disruption controllers',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'serve', nodes: 4 });
    const namespace = place.namespace;

    test.each(['OrderedReady', 'Parallel'])(
      "the seed's StatefulSet (%s) with slow-terminating pods does not stall: one pod at a time, each after its predecessor is gone",
      async policy => {
        const ns = await namespace(`seed001-${policy.toLowerCase()}`, 'privileged');
        const v1 = seedTgi(ns, policy, 'ghcr.io/huggingface/text-generation-inference:3.3.6', place.gpus());
        await applyAll(cluster, [v1]);
        const name = v1.metadata.name;
        await waitExplained(cluster, ns, 'three ready replicas', 60, rolledOut(cluster, ns, 'StatefulSet', name, 3));
        const v2 = seedTgi(ns, policy, 'ghcr.io/huggingface/text-generation-inference:3.3.7', place.gpus());
        await applyAll(cluster, [v2]);
        const { samples } = await watch(
          cluster,
          ns,
          `app=${name}`,
          'the rollout',
          90,
          rolledOut(cluster, ns, 'StatefulSet', name, 3),
        );
        // Each pod was replaced after a slow termination, never two replicas out at once, under either
        // policy: an update replaces one pod at a time.
        expect(Math.max(...samples.map(s => s.terminating))).toBe(1);
        expect(Math.min(...samples.map(s => s.ready))).toBe(2);
      },
      180_000,
    );

    describe.each(ENGINES)('$engine', ({ engine, make }) => {
      const output = (ns: string, revision: string) => {
        const chart = new Chart(Testing.app(), 'c', { namespace: ns });
        const service = make(chart, {
          name: 'llm',
          modelId: 'meta-llama/Llama-3.1-8B-Instruct',
          gpusPerReplica: 1,
          replicas: 3,
          modelCache: ModelCache.emptyDir(),
          preStopSleep: Duration.seconds(1),
          drainTimeout: Duration.seconds(2),
          terminationGracePeriod: Duration.seconds(18),
          nodeSelector: place.gpus().nodeSelector,
          pod: { annotations: { ...SLOW, 'example.com/revision': revision }, tolerations: place.gpus().tolerations },
        });
        return { objects: Testing.synth(chart), level: service.podSecurityLevel };
      };
      test('a rollout under slow termination keeps the capacity the PDB promises, and a drain of two nodes goes one pod at a time and completes', async () => {
        // The namespace enforces the level the construct reports (TGI's image runs as root: baseline).
        const ns = `serve-${engine.toLowerCase()}-${RUN}`;
        const { objects: v1, level } = output(ns, '1');
        await namespace(`serve-${engine.toLowerCase()}`, level as PodSecurityLevel);
        const workload = v1.find(o => ['StatefulSet', 'Deployment'].includes(o.kind));
        const pdb = v1.find(o => o.kind === 'PodDisruptionBudget');
        const selector = Object.entries(workload.spec.selector.matchLabels)
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        const floor = 3 - pdb.spec.maxUnavailable;
        await applyAll(cluster, v1);
        await waitExplained(
          cluster,
          ns,
          'three ready replicas',
          60,
          rolledOut(cluster, ns, workload.kind, workload.metadata.name, 3),
        );

        // The rollout: a template change, planned first.
        const v2 = output(ns, '2').objects;
        const predicted = plan(v1, v2).workloads.find(w => w.kind === workload.kind)!;
        const before = new Set((await podsOf(cluster, ns, selector)).map(p => p.metadata.uid));
        await applyAll(cluster, v2);
        const rollout = await watch(
          cluster,
          ns,
          selector,
          'the rollout',
          120,
          rolledOut(cluster, ns, workload.kind, workload.metadata.name, 3),
        );
        expect(Math.min(...rollout.samples.map(s => s.ready))).toBeGreaterThanOrEqual(floor);
        // The plan against what happened: the pods replaced, the GPUs held at the peak, the time bound.
        const replaced = new Set(rollout.samples.flatMap(s => s.uids).filter(u => !before.has(u)));
        const peak = Math.max(...rollout.samples.map(s => s.gpus));
        expect(replaced.size).toBe(predicted.pods.max);
        // A StatefulSet replaces a pod only once it is gone: exactly its replicas' GPUs. A Deployment's old
        // pods hold theirs through the drain beside the new ones: between replicas + maxSurge and twice.
        if (workload.kind === 'StatefulSet') expect(peak).toBe(predicted.gpusDuringRollout.max);
        else {
          expect(peak).toBeGreaterThanOrEqual(predicted.gpusDuringRollout.min);
          expect(peak).toBeLessThanOrEqual(predicted.gpusDuringRollout.max);
          // The drain (2 s) outlasts the startup (1 s) here: more than the surge bound alone.
          expect(peak).toBeGreaterThan(predicted.gpusDuringRollout.min);
        }
        expect(rollout.seconds).toBeLessThanOrEqual(predicted.seconds.max);

        // The old pods are gone, and the disruption controller has counted the three Ready replicas: one may go.
        await waitExplained(cluster, ns, 'three pods, none terminating', 30, async () => {
          const all = await podsOf(cluster, ns, selector);
          return (all.length === 3 && all.every(p => !p.metadata.deletionTimestamp)) || `${all.length} pods`;
        });
        await waitExplained(cluster, ns, 'the PDB to allow one disruption', 30, async () => {
          const b = (
            await cluster.request('GET', `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${pdb.metadata.name}`)
          ).body;
          const st = b.status ?? {};
          return (
            (st.observedGeneration === b.metadata.generation &&
              st.currentHealthy === 3 &&
              st.disruptionsAllowed === 1) ||
            JSON.stringify(st)
          );
        });
        // The drain: cordon the nodes of two replicas, then evict their pods at once, retrying a refusal,
        // as `kubectl drain` does.
        const pods = await podsOf(cluster, ns, selector);
        const nodes = [...new Set(pods.map(p => p.spec.nodeName))].slice(0, 2);
        for (const node of nodes)
          await cluster.request(
            'PATCH',
            `/api/v1/nodes/${node}`,
            { spec: { unschedulable: true } },
            'application/merge-patch+json',
          );
        try {
          const victims = pods.filter(p => nodes.includes(p.spec.nodeName));
          const answers: number[] = [];
          const evict = async (p: any) => {
            for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
              const r = await cluster.request('POST', `/api/v1/namespaces/${ns}/pods/${p.metadata.name}/eviction`, {
                apiVersion: 'policy/v1',
                kind: 'Eviction',
                metadata: { name: p.metadata.name, namespace: ns },
              });
              answers.push(r.status);
              if (r.status === 201) return;
              if (r.status !== 429)
                throw new Error(`eviction of ${p.metadata.name}: ${r.status} ${JSON.stringify(r.body)}`);
              await new Promise(res => setTimeout(res, 250));
            }
            throw new Error(`eviction of ${p.metadata.name}: refused for 90 s`);
          };
          // Both evictions run while the pods are sampled.
          let evicted = false;
          let failure: unknown;
          Promise.all(victims.map(evict)).then(
            () => (evicted = true),
            e => (failure = e),
          );
          const drained = await watch(cluster, ns, selector, 'the drain', 120, async () => {
            if (failure) throw failure instanceof Error ? failure : new Error(String(failure));
            const now = await podsOf(cluster, ns, selector);
            const left = now.filter(p => nodes.includes(p.spec.nodeName));
            const ready = now.filter(isReady);
            return (
              (evicted && left.length === 0 && ready.length === 3) ||
              `evictions ${evicted ? 'done' : 'under way'}, ${left.length} pods left on the drained nodes, ${ready.length} ready`
            );
          });
          // The PDB refused the second eviction until the first pod's replacement was Ready elsewhere.
          expect(answers.filter(s => s === 201)).toHaveLength(victims.length);
          expect(answers).toContain(429);
          expect(Math.min(...drained.samples.map(s => s.ready))).toBeGreaterThanOrEqual(floor);
        } finally {
          for (const node of nodes)
            await cluster.request(
              'PATCH',
              `/api/v1/nodes/${node}`,
              { spec: { unschedulable: false } },
              'application/merge-patch+json',
            );
        }
      }, 300_000);
    });
  },
  version => [SERVER_VERSIONS[0], SERVER_VERSIONS[SERVER_VERSIONS.length - 1]].includes(version),
);
