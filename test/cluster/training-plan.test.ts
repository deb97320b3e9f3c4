import { Chart, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, plan } from '../../src';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, gpusHeld, GpuPool, isReady, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * The rollout plan of the training example's two changes, held against the StatefulSet controller,
 * kube-scheduler and KWOK GPU nodes (issue #35): a template change of `GpuTrainingStatefulSet` (its
 * `OnDelete` strategy: nothing restarts until the pods are deleted, then all restart at once), and a
 * `version` bump under a pruning sync (a new StatefulSet beside the old one, the old one and its
 * per-version objects pruned, its claims kept). The plan's restarts, order and GPU peak must be what the
 * controllers did. Model load and drain are KWOK delays, scaled down.
 */

const RUN = Date.now().toString(36);
const newest = SERVER_VERSIONS[SERVER_VERSIONS.length - 1];
const SLOW = { [`pod-ready.${KWOK_STAGE}/delay`]: '1s', [`pod-delete.${KWOK_STAGE}/delay`]: '2s' };

function trainer(ns: string, gpus: GpuPool, opts: { version?: number; image?: string } = {}) {
  const chart = new Chart(Testing.app(), 'c', { namespace: ns });
  const sts = new GpuTrainingStatefulSet(chart, 't', {
    name: 'onnx-trainer',
    image: opts.image ?? 'onnxruntime/multi-gpu:1.3.0',
    replicas: 2,
    gpusPerPod: 8,
    args: ['train.py'],
    version: opts.version,
    nodeSelector: gpus.nodeSelector,
    pod: { tolerations: gpus.tolerations, annotations: SLOW },
  });
  return { objects: Testing.synth(chart), sts };
}

interface Sample {
  readonly uids: string[];
  readonly terminating: number;
  readonly gpus: number;
}

describeCluster(
  "the rollout plan of the training example's changes against the controllers",
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'train-plan', nodes: 4 });
    const statefulSet = async (ns: string, name: string) =>
      (await cluster.request('GET', `/apis/apps/v1/namespaces/${ns}/statefulsets/${name}`)).body;
    const sample = async (ns: string, samples: Sample[]) => {
      const pods = await podsOf(cluster, ns);
      samples.push({
        uids: pods.map(p => p.metadata.uid),
        terminating: pods.filter(p => p.metadata.deletionTimestamp).length,
        gpus: gpusHeld(pods),
      });
      return pods;
    };

    test('a template change (OnDelete): no pod restarts on apply; deleting the pods restarts both at once, 16 GPUs at the peak, as planned', async () => {
      const ns = await place.namespace('train-template', 'restricted');
      const gpus = place.gpus();
      const v1 = trainer(ns, gpus);
      await applyAll(cluster, v1.objects);
      const name = v1.sts.statefulSetName;
      await waitExplained(cluster, ns, 'both ranks Ready', 60, async () => {
        const pods = await podsOf(cluster, ns);
        return pods.filter(isReady).length === 2 || `${pods.filter(isReady).length} Ready`;
      });
      const first = (await podsOf(cluster, ns)).map(p => p.metadata.uid).sort();

      const changed = trainer(ns, gpus, { image: 'onnxruntime/multi-gpu:1.4.0' });
      const predicted = plan(v1.objects, changed.objects).workloads.find(w => w.kind === 'StatefulSet')!;
      expect([predicted.restarts, predicted.mode, predicted.perStep, predicted.gpusDuringRollout.max]).toEqual([
        true,
        'on-delete',
        2,
        16,
      ]);

      // The apply: the controller takes the new revision and restarts nothing.
      await applyAll(cluster, changed.objects);
      await waitExplained(cluster, ns, 'the controller to see the new revision', 30, async () => {
        const s = await statefulSet(ns, name);
        return (
          (s.status?.observedGeneration >= s.metadata.generation &&
            s.status.updateRevision !== s.status.currentRevision) ||
          `generation ${s.metadata.generation} seen ${s.status?.observedGeneration}, revisions ${s.status?.currentRevision} ${s.status?.updateRevision}`
        );
      });
      expect((await podsOf(cluster, ns)).map(p => p.metadata.uid).sort()).toEqual(first);

      // What the plan's note tells the user to do: delete the pods together.
      const selector = v1.sts.podSelector;
      const del = await cluster.request(
        'DELETE',
        `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`,
      );
      expect(del.status).toBe(200);
      const samples: Sample[] = [];
      await waitExplained(cluster, ns, 'both ranks replaced and Ready on the new revision', 60, async () => {
        const pods = await sample(ns, samples);
        const fresh = pods.filter(p => !first.includes(p.metadata.uid));
        return (
          (fresh.length === 2 && fresh.every(isReady) && pods.length === 2) ||
          `${fresh.length} new (${fresh.filter(isReady).length} Ready), ${pods.length} pods`
        );
      });
      // Both went at once (both terminating together), and the GPUs never passed the plan's peak.
      expect(Math.max(...samples.map(s => s.terminating))).toBe(predicted.perStep);
      expect(Math.max(...samples.map(s => s.gpus))).toBe(predicted.gpusDuringRollout.max);
      const images = (await podsOf(cluster, ns)).map(
        p => p.spec.containers.find((c: any) => c.name === 'trainer').image,
      );
      expect(images).toEqual(['onnxruntime/multi-gpu:1.4.0', 'onnxruntime/multi-gpu:1.4.0']);
      // The nodes are shared with the next scenario, which needs all four.
      await cluster.request('DELETE', `/apis/apps/v1/namespaces/${ns}/statefulsets/${name}`);
      await waitExplained(cluster, ns, 'the GPUs given back', 60, async () => {
        const held = gpusHeld(await podsOf(cluster, ns));
        return held === 0 || `${held} GPUs held`;
      });
    }, 180_000);

    test('a version bump under a pruning sync: the new StatefulSet starts beside the old one (32 GPUs at the peak), the prune deletes exactly what the plan lists', async () => {
      const ns = await place.namespace('train-version', 'restricted');
      const gpus = place.gpus();
      const v1 = trainer(ns, gpus, { version: 1 });
      await applyAll(cluster, v1.objects);
      await waitExplained(cluster, ns, 'version 1 Ready', 60, async () => {
        const pods = await podsOf(cluster, ns);
        return pods.filter(isReady).length === 2 || `${pods.filter(isReady).length} Ready`;
      });
      const old = new Set((await podsOf(cluster, ns)).map(p => p.metadata.uid));

      const v2 = trainer(ns, gpus, { version: 2 });
      const planned = plan(v1.objects, v2.objects);
      const started = planned.workloads.find(w => w.mode === 'new')!;
      const replaced = planned.pruned.find(p => p.replacedBy)!;
      expect([started.name, started.pods.max, started.gpusDuringRollout.max]).toEqual([v2.sts.statefulSetName, 2, 16]);
      expect([replaced.name, replaced.gpus.max]).toEqual([v1.sts.statefulSetName, 16]);
      expect(planned.workloads.filter(w => w.restarts)).toEqual([]);

      // The sync: apply the new output; prune last, once the new version is Ready (Argo CD PruneLast).
      const samples: Sample[] = [];
      await applyAll(cluster, v2.objects);
      await waitExplained(cluster, ns, 'version 2 Ready beside version 1', 60, async () => {
        const pods = await sample(ns, samples);
        const fresh = pods.filter(p => !old.has(p.metadata.uid));
        return fresh.filter(isReady).length === 2 || `${fresh.filter(isReady).length} of version 2 Ready`;
      });
      // The old version's pods were never touched by the apply.
      expect([...old].every(uid => samples[samples.length - 1].uids.includes(uid))).toBe(true);
      const present = async () =>
        Promise.all(
          v1.objects.map(
            async o => `${o.kind}/${o.metadata.name}: ${(await cluster.get(o)).status === 200 ? 'present' : 'gone'}`,
          ),
        );
      for (const p of planned.pruned) {
        const o = v1.objects.find(x => x.kind === p.kind && x.metadata.name === p.name)!;
        const r = await cluster.request('DELETE', await cluster.urlOf(o));
        expect([p.object, r.status]).toEqual([p.object, 200]);
      }
      await waitExplained(cluster, ns, "version 1's pods gone, version 2 running", 60, async () => {
        const pods = await sample(ns, samples);
        const left = pods.filter(p => old.has(p.metadata.uid));
        return (left.length === 0 && pods.filter(isReady).length === 2) || `${left.length} of version 1 left`;
      });
      // The peak: both versions' GPUs held together (the old pods drain while the new ones run), as planned.
      expect(Math.max(...samples.map(s => s.gpus))).toBe(replaced.gpus.max + started.gpusDuringRollout.max);
      // What the prune deleted is what the plan listed, and nothing else of version 1 went.
      const after = await present();
      const listed = new Set(planned.pruned.map(p => `${p.kind}/${p.name}`));
      expect(after.filter(l => l.endsWith('gone')).map(l => l.replace(/: gone$/, ''))).toEqual(
        v1.objects.filter(o => listed.has(`${o.kind}/${o.metadata.name}`)).map(o => `${o.kind}/${o.metadata.name}`),
      );
    }, 180_000);
  },
  v => v === newest,
);
