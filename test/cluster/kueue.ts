import { Cluster } from './kube';
import { applyAll, waitExplained } from './sim';

/** Kueue's API version that v0.17.0 stores. */
export const KUEUE = 'kueue.x-k8s.io/v1beta2';

/** A flavor, a ClusterQueue of `gpus` GPUs (CPU and memory ample) and the namespace's LocalQueue. */
export async function quota(cluster: Cluster, ns: string, gpus: number): Promise<void> {
  const flavor = `gpus-${ns}`;
  await applyAll(cluster, [
    { apiVersion: KUEUE, kind: 'ResourceFlavor', metadata: { name: flavor }, spec: {} },
    {
      apiVersion: KUEUE,
      kind: 'ClusterQueue',
      metadata: { name: flavor },
      spec: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        resourceGroups: [
          {
            coveredResources: ['cpu', 'memory', 'nvidia.com/gpu'],
            flavors: [
              {
                name: flavor,
                resources: [
                  { name: 'cpu', nominalQuota: '1000' },
                  { name: 'memory', nominalQuota: '100Ti' },
                  { name: 'nvidia.com/gpu', nominalQuota: String(gpus) },
                ],
              },
            ],
          },
        ],
      },
    },
    {
      apiVersion: KUEUE,
      kind: 'LocalQueue',
      metadata: { name: 'gpus', namespace: ns },
      spec: { clusterQueue: flavor },
    },
  ]);
  await waitExplained(cluster, ns, 'the ClusterQueue active', 60, async () => {
    const r = await cluster.request('GET', `/apis/${KUEUE}/clusterqueues/${flavor}`);
    const active = (r.body?.status?.conditions ?? []).some((c: any) => c.type === 'Active' && c.status === 'True');
    return active || JSON.stringify(r.body?.status?.conditions ?? r.body);
  });
}

/** The namespace's Kueue Workloads. */
export const workloadsOf = async (cluster: Cluster, ns: string) =>
  (await cluster.request('GET', `/apis/${KUEUE}/namespaces/${ns}/workloads`)).body.items as any[];

/** Whether a Workload holds its quota. */
export const admitted = (w: any) =>
  (w.status?.conditions ?? []).some((c: any) => c.type === 'Admitted' && c.status === 'True');
