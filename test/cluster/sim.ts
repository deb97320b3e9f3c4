import { Cluster, PodSecurityLevel, pool, waitFor } from './kube';

/**
 * Simulated GPU nodes for the rollout tests: Node objects that KWOK (started with each control plane
 * by cluster.js) manages as their kubelet, with the capacity, taint and labels of a GPU node, so the
 * real kube-scheduler places the library's pods on them and the real controllers act on what KWOK
 * reports. Each test file makes its own pool (a label its pods select, a taint only they tolerate), so
 * files running at once on one control plane never compete for GPUs.
 */
const { KWOK_NODE_LABEL } = require('./cluster');

/** The label a test's pods select (`pod.nodeSelector`) to land on that test's nodes only. */
export const POOL_LABEL = 'cdk8s-gpu.test/pool';

export interface GpuPool {
  readonly name: string;
  readonly nodes: string[];
  readonly gpusPerNode: number;
  /** The node selector that sends a pod to this pool. */
  readonly nodeSelector: Record<string, string>;
  /** The toleration of the pool's own taint, which keeps every other pod (other tests', the apps') off it. */
  readonly tolerations: Array<{ key: string; operator: string; value: string; effect: string }>;
}

/**
 * `count` nodes of `gpusPerNode` GPUs each, tainted `nvidia.com/gpu:NoSchedule` as GPU node pools are,
 * labelled as the GPU operator labels them (product, CUDA driver major) and with a hostname and zone,
 * Ready once KWOK has initialized them.
 */
export async function gpuPool(cluster: Cluster, name: string, count: number, gpusPerNode = 8): Promise<GpuPool> {
  const nodes = Array.from({ length: count }, (_, i) => `${name}-${i}`);
  await pool(nodes, 8, async (node, i) => {
    const labels = {
      [KWOK_NODE_LABEL]: 'true',
      [POOL_LABEL]: name,
      'kubernetes.io/hostname': node,
      'topology.kubernetes.io/zone': `zone-${i % 2}`,
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.count': String(gpusPerNode),
      'nvidia.com/cuda.driver-version.major': '580',
    };
    const r = await cluster.apply(
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: node, labels },
        spec: {
          taints: [
            { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' },
            { key: POOL_LABEL, value: name, effect: 'NoSchedule' },
          ],
        },
      },
      { force: true },
    );
    if (r.status >= 300) throw new Error(`node ${node}: ${r.status} ${JSON.stringify(r.body)}`);
    const capacity = { cpu: '64', memory: '1Ti', pods: '110', 'nvidia.com/gpu': String(gpusPerNode) };
    const s = await cluster.request(
      'PATCH',
      `/api/v1/nodes/${node}/status`,
      { status: { capacity, allocatable: capacity } },
      'application/merge-patch+json',
    );
    if (s.status >= 300) throw new Error(`node ${node} status: ${s.status} ${JSON.stringify(s.body)}`);
  });
  await waitFor(`${count} KWOK GPU nodes of pool ${name} Ready`, 60, async () => {
    const r = await cluster.request(
      'GET',
      `/api/v1/nodes?labelSelector=${encodeURIComponent(`${POOL_LABEL}=${name}`)}`,
    );
    const ready = (r.body.items ?? []).filter(
      (n: any) =>
        n.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') &&
        n.status?.allocatable?.['nvidia.com/gpu'] === String(gpusPerNode),
    );
    return ready.length === count || `${ready.length} of ${count} Ready with ${gpusPerNode} GPUs`;
  });
  return {
    name,
    nodes,
    gpusPerNode,
    nodeSelector: { [POOL_LABEL]: name },
    tolerations: [{ key: POOL_LABEL, operator: 'Equal', value: name, effect: 'NoSchedule' }],
  };
}

/** The suffix of the KWOK Stage annotations and labels a pod sets (`pod-ready.<KWOK_STAGE>/delay: 1s`). */
export const KWOK_STAGE = 'stage.kwok.x-k8s.io';

/** The pod labels and annotations that make KWOK fail a container with an exit code once it runs. */
export function failingContainer(container: string, exitCode: number) {
  return {
    labels: { [`pod-container-running-failed.${KWOK_STAGE}`]: 'true' },
    annotations: {
      [`pod-container-running-failed.${KWOK_STAGE}/exit-code`]: String(exitCode),
      [`pod-container-running-failed.${KWOK_STAGE}/container-name`]: container,
    },
  };
}

/** Whether a pod is Ready and not being deleted. */
export function isReady(pod: any): boolean {
  return (
    !pod.metadata.deletionTimestamp &&
    pod.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') === true
  );
}

/**
 * One test file's place on a control plane: a GPU pool made before its tests, and namespaces (named
 * `<name>-<run>`) made on demand; all deleted after its tests, and the client closed.
 */
export function scenario(cluster: Cluster, run: string, pool: { name: string; nodes: number; gpusPerNode?: number }) {
  let gpus: GpuPool | undefined;
  const namespaces: string[] = [];
  beforeAll(async () => {
    gpus = await gpuPool(cluster, `${pool.name}-${run}`, pool.nodes, pool.gpusPerNode);
  }, 120_000);
  afterAll(async () => {
    for (const ns of namespaces) await cluster.request('DELETE', `/api/v1/namespaces/${ns}`);
    await deletePool(cluster, gpus);
    cluster.close();
  }, 60_000);
  return {
    /** The pool, once beforeAll has made it. */
    gpus: (): GpuPool => {
      if (!gpus) throw new Error(`the GPU pool ${pool.name}-${run} was not made`);
      return gpus;
    },
    /** A namespace that enforces `level`, deleted after the file's tests. */
    namespace: async (name: string, level: PodSecurityLevel): Promise<string> => {
      const ns = `${name}-${run}`;
      namespaces.push(ns);
      await cluster.namespace(ns, level);
      return ns;
    },
  };
}

/** Deletes a pool's nodes (their pods are then garbage for the pod GC; the namespace goes too). */
export async function deletePool(cluster: Cluster, p: GpuPool | undefined): Promise<void> {
  if (!p) return;
  await pool(p.nodes, 8, node => cluster.request('DELETE', `/api/v1/nodes/${node}`));
}

/** The pods of a namespace, optionally by label selector. */
export async function podsOf(cluster: Cluster, namespace: string, selector?: string): Promise<any[]> {
  const q = selector ? `?labelSelector=${encodeURIComponent(selector)}` : '';
  const r = await cluster.request('GET', `/api/v1/namespaces/${namespace}/pods${q}`);
  if (r.status !== 200) throw new Error(`pods of ${namespace}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.items;
}

/** GPUs held by a namespace's pods that are not terminal (what the scheduler still counts as used). */
export function gpusHeld(pods: any[]): number {
  return pods
    .filter(p => p.spec.nodeName && !['Succeeded', 'Failed'].includes(p.status?.phase))
    .flatMap(p => [...(p.spec.initContainers ?? []), ...p.spec.containers])
    .reduce((n, c) => n + Number(c.resources?.requests?.['nvidia.com/gpu'] ?? 0), 0);
}

/**
 * What explains a scenario's state when it fails: each pod's phase, node, conditions and container
 * states, and the namespace's events, oldest first.
 */
export async function explain(cluster: Cluster, namespace: string): Promise<string> {
  const pods = await podsOf(cluster, namespace).catch(e => [{ error: String(e) }]);
  const events = await cluster.request('GET', `/api/v1/namespaces/${namespace}/events`);
  const podLines = pods.map((p: any) =>
    p.error
      ? p.error
      : `${p.metadata.name} ${p.status?.phase} on ${p.spec.nodeName ?? '(unscheduled)'}${p.metadata.deletionTimestamp ? ' deleting' : ''} ` +
        `[${(p.status?.conditions ?? []).map((c: any) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ''}`).join(' ')}] ` +
        (p.status?.containerStatuses ?? [])
          .map(
            (c: any) =>
              `${c.name}:${Object.keys(c.state ?? {})[0] ?? '?'}${c.state?.terminated ? `(${c.state.terminated.exitCode})` : ''}`,
          )
          .join(' '),
  );
  // Jobs (a JobSet's, a fill): their conditions say what the Job controller decided.
  const jobs = await cluster.request('GET', `/apis/batch/v1/namespaces/${namespace}/jobs`);
  const jobLines = (jobs.body?.items ?? []).map(
    (j: any) =>
      `${j.metadata.name}${j.metadata.deletionTimestamp ? ' deleting' : ''} active=${j.status?.active ?? 0} failed=${j.status?.failed ?? 0} succeeded=${j.status?.succeeded ?? 0} terminating=${j.status?.terminating ?? 0} ` +
      `[${(j.status?.conditions ?? []).map((c: any) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ''}`).join(' ')}]`,
  );
  const eventLines = (events.body?.items ?? [])
    .sort((a: any, b: any) =>
      String(a.lastTimestamp ?? a.eventTime).localeCompare(String(b.lastTimestamp ?? b.eventTime)),
    )
    .map((e: any) => `${e.involvedObject?.kind}/${e.involvedObject?.name} ${e.reason}: ${e.message}`);
  // JobSets: whether the controller has seen one (its status) when it has made no Job yet.
  const jobSets = await cluster.request('GET', `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${namespace}/jobsets`);
  const jobSetLines = (jobSets.body?.items ?? []).map(
    (j: any) =>
      `${j.metadata.name}${j.metadata.deletionTimestamp ? ' deleting' : ''} status=${JSON.stringify(j.status ?? {})}`,
  );
  // What the controllers logged about the namespace (errors and retries do not always become events).
  const logs = ['jobset', 'kube-controller-manager', 'kube-scheduler']
    .map(c => `--- ${c} log on ${namespace} ---\n${cluster.logLines(c, namespace, 15).join('\n')}`)
    .join('\n');
  return (
    `--- pods of ${namespace} ---\n${podLines.join('\n')}\n--- jobsets ---\n${jobSetLines.join('\n')}\n` +
    `--- jobs ---\n${jobLines.join('\n')}\n--- events ---\n${eventLines.join('\n')}\n${logs}`
  );
}

/** Waits for `check` with a bounded timeout; on failure the error carries `explain`'s picture. */
export async function waitExplained(
  cluster: Cluster,
  namespace: string,
  what: string,
  seconds: number,
  check: () => Promise<true | string>,
): Promise<void> {
  try {
    await waitFor(what, seconds, check);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${await explain(cluster, namespace)}`);
  }
}

/** Server-side applies every object (a chart's output), failing with the server's message. */
export async function applyAll(cluster: Cluster, objects: any[]): Promise<void> {
  for (const o of objects) {
    const r = await cluster.apply(o, { force: true });
    if (r.status >= 300)
      throw new Error(`${o.kind}/${o.metadata.name}: ${r.status} ${r.body?.message ?? JSON.stringify(r.body)}`);
  }
}
