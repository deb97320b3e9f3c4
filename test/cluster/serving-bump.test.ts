import { Chart, Duration, Testing } from 'cdk8s';
import { ModelCache, plan, Reload, RotatingGpuSecret, VllmInferenceService } from '../../src';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, isReady, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * The documented two-step version bump (docs/routing.md), watched on the real Deployment controller with
 * KWOK GPU nodes: step one runs v1 and v2 side by side, step two drops v1 as a pruning sync does (its
 * objects deleted, the rest applied again). v2 must not notice: its Deployment keeps its generation and
 * its pod keeps running, with a per-pod cache and with a shared cache filled by Jobs, and with a rotating
 * Secret mounted into both versions (the names in v2's pod template depend on v2 alone).
 */

const RUN = Date.now().toString(36);
const READY_FAST = { [`pod-ready.${KWOK_STAGE}/delay`]: '1s' };

describeCluster(
  'the two-step serving bump: step two leaves v2 running',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'bump', nodes: 2 });

    const output = (ns: string, cache: 'emptyDir' | 'shared', versions: number[]) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: ns });
      const secret = new RotatingGpuSecret(chart, 'creds', { name: 'creds' });
      for (const version of versions) {
        const svc = new VllmInferenceService(chart, `v${version}`, {
          name: 'llm',
          modelId: 'meta-llama/Llama-3.1-8B-Instruct',
          version,
          // Each version its own image, as a bump has: on a shared cache each fill Job is its own.
          image: `vllm/vllm-openai:v0.${19 + version}.0`,
          gpusPerReplica: 1,
          modelCache: cache === 'shared' ? ModelCache.sharedClaim({ claimName: 'models' }) : ModelCache.emptyDir(),
          preStopSleep: Duration.seconds(1),
          drainTimeout: Duration.seconds(1),
          terminationGracePeriod: Duration.seconds(18),
          nodeSelector: place.gpus().nodeSelector,
          pod: { annotations: READY_FAST, tolerations: place.gpus().tolerations },
        });
        secret.mountInto(svc, { path: '/etc/creds', onRotation: Reload.httpPost('http://localhost:8000/reload') });
      }
      return Testing.synth(chart);
    };

    const deployment = async (ns: string, name: string) =>
      (await cluster.request('GET', `/apis/apps/v1/namespaces/${ns}/deployments/${name}`)).body;

    test.each(['emptyDir', 'shared'] as const)(
      'with a %s model cache: v1 is pruned, and v2 keeps its generation and its running pod',
      async cache => {
        const ns = await place.namespace(`bump-${cache.toLowerCase()}`, 'restricted');
        if (cache === 'shared') {
          // A claim the pods mount: a static ReadWriteMany volume of a class no provisioner serves.
          const storageClassName = `bump-${RUN}`;
          const pv = await cluster.apply({
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { name: `models-${RUN}` },
            spec: {
              capacity: { storage: '100Gi' },
              accessModes: ['ReadWriteMany'],
              persistentVolumeReclaimPolicy: 'Delete',
              storageClassName,
              hostPath: { path: `/tmp/models-${RUN}` },
            },
          });
          expect(pv.status).toBeLessThan(300);
          const pvc = await cluster.apply({
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'models', namespace: ns },
            spec: { accessModes: ['ReadWriteMany'], storageClassName, resources: { requests: { storage: '100Gi' } } },
          });
          expect(pvc.status).toBeLessThan(300);
        }
        const step1 = output(ns, cache, [1, 2]);
        const step2 = output(ns, cache, [2]);
        // The secret's own objects first: the pods mount it.
        await applyAll(cluster, [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'creds', namespace: ns },
            stringData: { 'credentials.json': '{}' },
          },
          ...step1,
        ]);
        await waitExplained(cluster, ns, 'v1 and v2 each with a Ready pod', 90, async () => {
          const pods = await podsOf(cluster, ns, 'app.kubernetes.io/component=inference');
          const ready = pods.filter(isReady).map(p => p.metadata.labels['app.kubernetes.io/instance']);
          return (ready.includes('llm-v1') && ready.includes('llm-v2')) || `ready: ${ready.join(', ') || 'none'}`;
        });
        const before = await deployment(ns, 'llm-v2');
        const v2Pods = (await podsOf(cluster, ns, 'app.kubernetes.io/instance=llm-v2')).map(p => p.metadata.uid);
        expect(v2Pods).toHaveLength(1);

        // Step two as a pruning sync does it: delete what the new output no longer holds, apply the rest.
        const planned = plan(step1, step2);
        expect(planned.workloads.filter(w => w.restarts).map(w => w.object)).toEqual([]);
        for (const p of planned.pruned) {
          const gone = step1.find(o => o.kind === p.kind && o.metadata.name === p.name);
          // Background propagation, as Argo CD and Flux delete: the API's default for a Job orphans its pods.
          const r = await cluster.request('DELETE', `${await cluster.urlOf(gone)}?propagationPolicy=Background`);
          expect(`${p.object}: ${r.status}`).toMatch(/: 20[02]$/);
        }
        await applyAll(cluster, step2);

        // v1's pod goes; v2's Deployment is untouched and its one pod is the same, still Ready.
        await waitExplained(cluster, ns, "v1's pod gone", 60, async () => {
          const left = await podsOf(cluster, ns, 'app.kubernetes.io/instance=llm-v1');
          return left.length === 0 || `${left.length} v1 pod(s) left`;
        });
        const after = await deployment(ns, 'llm-v2');
        expect(after.metadata.generation).toBe(before.metadata.generation);
        const pods = await podsOf(cluster, ns, 'app.kubernetes.io/instance=llm-v2');
        expect(pods.map(p => p.metadata.uid)).toEqual(v2Pods);
        expect(pods.every(isReady)).toBe(true);
        if (cache === 'shared')
          await cluster.request('DELETE', `/api/v1/persistentvolumes/models-${RUN}`).catch(() => undefined);
      },
      240_000,
    );
  },
  v => v === SERVER_VERSIONS[SERVER_VERSIONS.length - 1],
);
