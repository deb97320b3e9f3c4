import { Chart, Size, Testing } from 'cdk8s';
import { guard } from '../../src';
import { GpuTrainingStatefulSet, GpuTrainingStatefulSetProps } from '../../src';
import { Cluster, describeCluster, waitFor } from './kube';
import { applyAll, deletePool, gpuPool, GpuPool, podsOf, waitExplained } from './sim';

/**
 * Seed 000, failure and remedy side by side on a real API server and its controllers (the StatefulSet,
 * PersistentVolume binder and garbage collector of kube-controller-manager, kube-scheduler, KWOK nodes).
 *
 * The failure: the seed's hand-written StatefulSet update renames a `volumeClaimTemplates` entry
 * (data-pvc -> gpu-pvc) and adds a root securityContext. The server refuses the rename, in its own words
 * (not the seed's quote); the securityContext alone is a template change the server accepts.
 *
 * The remedy: the library's `version` bump makes a new StatefulSet beside the old one, and the adoption
 * runbook (docs/runbooks.md) moves the old checkpoint volumes to the new claims, nothing deleted.
 */

const RUN = Date.now().toString(36);

/** The seed's StatefulSet: v1.2.0 with `data-pvc`, and the v1.3.0 update that renames it. */
function seedStatefulSet(namespace: string, update: { claim: string; image: string; root: boolean }) {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'onnx-trainer', namespace },
    spec: {
      serviceName: 'onnx-trainer-svc',
      replicas: 3,
      selector: { matchLabels: { app: 'onnx-trainer' } },
      updateStrategy: { type: 'RollingUpdate' },
      volumeClaimTemplates: [
        {
          metadata: { name: update.claim },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } },
        },
      ],
      template: {
        metadata: { labels: { app: 'onnx-trainer' } },
        spec: {
          ...(update.root ? { securityContext: { runAsUser: 0 } } : {}),
          containers: [
            {
              name: 'onnx',
              image: update.image,
              resources: { limits: { 'nvidia.com/gpu': '2' } },
              ...(update.root ? { securityContext: { capabilities: { add: ['IPC_LOCK'] } } } : {}),
            },
          ],
        },
      },
    },
  };
}

describeCluster(
  'seed 000: a renamed claim template refused, and the versioned remedy that keeps the checkpoints',
  (cluster: Cluster) => {
    let gpus: GpuPool | undefined;
    const namespaces: string[] = [];
    const volumes: string[] = [];

    afterAll(async () => {
      for (const ns of namespaces) await cluster.request('DELETE', `/api/v1/namespaces/${ns}`);
      for (const pv of volumes) await cluster.request('DELETE', `/api/v1/persistentvolumes/${pv}`);
      await deletePool(cluster, gpus);
      cluster.close();
    }, 60_000);

    test('the failure: the server refuses the rename with the message the guard predicts (not the seed quote); the securityContext alone is accepted', async () => {
      const ns = `seed000-${RUN}`;
      namespaces.push(ns);
      await cluster.namespace(ns, 'privileged');
      const before = seedStatefulSet(ns, { claim: 'data-pvc', image: 'onnxruntime/multi-gpu:1.2.0', root: false });
      const after = seedStatefulSet(ns, { claim: 'gpu-pvc', image: 'onnxruntime/multi-gpu:1.3.0', root: true });
      expect((await cluster.apply(before)).status).toBe(201);
      const refused = await cluster.apply(after);
      expect(refused.status).toBe(422);
      // The guard names the same field, with the server's words for this release.
      const predicted = guard([before], [after], { serverVersion: cluster.minor }).findings.filter(
        f => f.severity === 'error',
      );
      expect(predicted.map(f => f.path)).toEqual(['spec.volumeClaimTemplates']);
      expect(refused.body.message).toContain(predicted[0].message.replace(/^spec\.volumeClaimTemplates: /, ''));
      // The seed quotes a message no release prints.
      expect(refused.body.message).not.toContain('updates to fields other than');
      // The securityContext is part of the template: changing it alone is an ordinary rollout.
      const securityOnly = seedStatefulSet(ns, { claim: 'data-pvc', image: 'onnxruntime/multi-gpu:1.3.0', root: true });
      const accepted = await cluster.apply(securityOnly);
      expect([accepted.status, accepted.body?.message]).toEqual([200, undefined]);
    }, 120_000);

    test('the remedy: version 2 is a new StatefulSet beside version 1, and the runbook binds its claims to version 1 volumes', async () => {
      const ns = `seed000-lib-${RUN}`;
      namespaces.push(ns);
      await cluster.namespace(ns, 'restricted');
      gpus = await gpuPool(cluster, `seed000-${RUN}`, 2, 8);
      const storageClassName = `manual-${RUN}`;
      // Two static volumes of a class no provisioner serves: the PV binder matches claims to them.
      for (let i = 0; i < 2; i++) {
        const name = `ckpt-${RUN}-${i}`;
        volumes.push(name);
        const r = await cluster.apply({
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name },
          spec: {
            capacity: { storage: '10Gi' },
            accessModes: ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: 'Delete',
            storageClassName,
            hostPath: { path: `/tmp/${name}` },
          },
        });
        expect(r.status).toBe(201);
      }
      const version = (v: number, adopt?: string[]) => {
        const chart = new Chart(Testing.app(), 'c', { namespace: ns });
        const props: GpuTrainingStatefulSetProps = {
          name: 'onnx-trainer',
          image: 'onnxruntime/multi-gpu:1.3.0',
          replicas: 2,
          gpusPerPod: 8,
          args: ['train.py'],
          version: v,
          storage: { size: Size.gibibytes(10), storageClassName },
          nodeSelector: gpus!.nodeSelector,
          pod: { tolerations: gpus!.tolerations },
          ...(adopt ? { adoptVolumes: { persistentVolumes: adopt } } : {}),
        };
        const trainer = new GpuTrainingStatefulSet(chart, 't', props);
        return { objects: Testing.synth(chart), trainer };
      };
      const claim = (name: string) => cluster.request('GET', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`);

      const v1 = version(1);
      await applyAll(cluster, v1.objects);
      await waitExplained(cluster, ns, 'version 1 claims Bound and its pods Running', 90, async () => {
        const claims = await Promise.all(v1.trainer.claimNames.map(claim));
        const pods = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running');
        return (
          (claims.every(c => c.body?.status?.phase === 'Bound') && pods.length === 2) ||
          `claims ${claims.map(c => c.body?.status?.phase).join(',')}, ${pods.length} running`
        );
      });
      const bound = await Promise.all(v1.trainer.claimNames.map(async n => (await claim(n)).body.spec.volumeName));
      expect([...bound].sort()).toEqual([...volumes].sort());

      // Version 2 is a new name: no immutable field changes, and v1 and its claims stay as they are.
      const v2 = version(2, bound);
      expect(v2.trainer.statefulSetName).not.toBe(v1.trainer.statefulSetName);
      const findings = guard(v1.objects, v2.objects, { serverVersion: cluster.minor }).findings;
      expect(findings.filter(f => f.severity === 'error')).toEqual([]);

      // The runbook. 1: keep the volumes when their claims go away.
      for (const pv of bound) {
        const r = await cluster.request(
          'PATCH',
          `/api/v1/persistentvolumes/${pv}`,
          { spec: { persistentVolumeReclaimPolicy: 'Retain' } },
          'application/merge-patch+json',
        );
        expect(r.status).toBe(200);
      }
      // 2: delete the old StatefulSet and its claims; the pods go first.
      await cluster.request('DELETE', `/apis/apps/v1/namespaces/${ns}/statefulsets/${v1.trainer.statefulSetName}`);
      for (const n of v1.trainer.claimNames)
        await cluster.request('DELETE', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${n}`);
      await waitExplained(cluster, ns, 'version 1 pods and claims gone, its volumes Released', 90, async () => {
        const pods = await podsOf(cluster, ns);
        const claims = await Promise.all(v1.trainer.claimNames.map(claim));
        const pvs = await Promise.all(bound.map(pv => cluster.request('GET', `/api/v1/persistentvolumes/${pv}`)));
        return (
          (pods.length === 0 &&
            claims.every(c => c.status === 404) &&
            pvs.every(p => p.body?.status?.phase === 'Released')) ||
          `${pods.length} pods, claims ${claims.map(c => c.status)}, volumes ${pvs.map(p => p.body?.status?.phase)}`
        );
      });
      // 3: pre-bind each volume to its new claim (the old uid and resourceVersion cleared).
      for (const [i, pv] of bound.entries()) {
        const r = await cluster.request(
          'PATCH',
          `/api/v1/persistentvolumes/${pv}`,
          { spec: { claimRef: { namespace: ns, name: v2.trainer.claimNames[i], uid: null, resourceVersion: null } } },
          'application/merge-patch+json',
        );
        expect(r.status).toBe(200);
      }
      // 4: apply the new version, its claims first: a pod created before its claim is Bound waits for
      // the scheduler's next try (up to 5 minutes on 1.35.4, whose scheduler did not retry on the binding).
      const claims = v2.objects.filter(o => o.kind === 'PersistentVolumeClaim');
      await applyAll(cluster, claims);
      await waitExplained(cluster, ns, 'the pre-bound claims Bound', 60, async () => {
        const now = await Promise.all(v2.trainer.claimNames.map(claim));
        return now.every(c => c.body?.status?.phase === 'Bound') || now.map(c => c.body?.status?.phase).join(',');
      });
      await applyAll(
        cluster,
        v2.objects.filter(o => o.kind !== 'PersistentVolumeClaim'),
      );
      await waitExplained(
        cluster,
        ns,
        'version 2 claims Bound to the version 1 volumes and its pods Running',
        90,
        async () => {
          const claims = await Promise.all(v2.trainer.claimNames.map(claim));
          const pods = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running');
          return (
            (claims.every(c => c.body?.status?.phase === 'Bound') && pods.length === 2) ||
            `claims ${claims.map(c => `${c.body?.status?.phase}:${c.body?.spec?.volumeName}`).join(',')}, ${pods.length} running`
          );
        },
      );
      const adopted = await Promise.all(v2.trainer.claimNames.map(async n => (await claim(n)).body.spec.volumeName));
      expect(adopted).toEqual(bound);
      // Nothing was deleted: both volumes exist, Bound, and keep Retain.
      for (const pv of bound) {
        const r = await cluster.request('GET', `/api/v1/persistentvolumes/${pv}`);
        expect([r.body.status.phase, r.body.spec.persistentVolumeReclaimPolicy]).toEqual(['Bound', 'Retain']);
      }
      await waitFor('the version 2 pods to use the adopted claims', 10, async () => {
        const pods = await podsOf(cluster, ns);
        const claims = pods.flatMap(p =>
          p.spec.volumes.filter((v: any) => v.persistentVolumeClaim).map((v: any) => v.persistentVolumeClaim.claimName),
        );
        return claims.sort().join() === [...v2.trainer.claimNames].sort().join() || claims.join();
      });
    }, 300_000);
  },
);
