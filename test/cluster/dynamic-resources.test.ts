import { Chart, Duration, Size, Testing } from 'cdk8s';
import { DeviceSelector, GpuTrainingJob, guard, ModelCache, VllmInferenceService } from '../../src';
import { Cluster, describeCluster, minorOf, SERVER_VERSIONS } from './kube';
import { applyAll, GpuPool, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * Dynamic Resource Allocation (`dynamicResourceAllocation`) judged by real servers:
 *
 * - at every release built, what the guard says for that minor is what the API server does: 1.32 serves
 *   no resource.k8s.io/v1 and drops a pod template's claims (the DynamicResourceAllocation gate is off),
 *   1.34+ stores both;
 * - from 1.34, kube-scheduler's DynamicResources plugin allocates the claims made from the library's
 *   ResourceClaimTemplate out of ResourceSlices, and kube-controller-manager's resourceclaim controller
 *   makes one claim per pod and deletes it when the pod is done. The ResourceSlices are what NVIDIA's DRA
 *   driver (k8s-dra-driver-gpu) publishes for a node of 8 GPUs, written here for KWOK nodes, with its
 *   DeviceClass `gpu.nvidia.com`: the driver's kubelet plugin (preparing the devices) is not run.
 */

const RUN = Date.now().toString(36);
const DRIVER = 'gpu.nvidia.com';
const H100 = 'NVIDIA H100 80GB HBM3';
const newest = SERVER_VERSIONS[SERVER_VERSIONS.length - 1];

const dra = (selectors: DeviceSelector[] = [DeviceSelector.nvidiaProduct(H100)]) => ({
  dynamicResourceAllocation: { kubernetesVersion: '1.34', selectors },
});

function serving(
  namespace: string,
  props: { replicas: number; gpus?: GpuPool; product?: string; name?: string; selectors?: DeviceSelector[] },
) {
  const chart = new Chart(Testing.app(), 'c', { namespace });
  new VllmInferenceService(chart, 'llm', {
    name: props.name ?? 'llm',
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    gpusPerReplica: 8,
    replicas: props.replicas,
    modelSize: Size.gibibytes(16),
    modelCache: ModelCache.emptyDir(),
    ...dra(props.selectors ?? (props.product ? [DeviceSelector.nvidiaProduct(props.product)] : undefined)),
    ...(props.gpus
      ? {
          nodeSelector: props.gpus.nodeSelector,
          pod: { tolerations: props.gpus.tolerations, annotations: { [`pod-ready.${KWOK_STAGE}/delay`]: '1s' } },
        }
      : {}),
  });
  return Testing.synth(chart);
}

/** NVIDIA's whole-GPU DeviceClass (deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml). */
const DEVICE_CLASS = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'DeviceClass',
  metadata: { name: DRIVER },
  spec: {
    selectors: [
      { cel: { expression: `device.driver == '${DRIVER}' && device.attributes['${DRIVER}'].type == 'gpu'` } },
    ],
  },
};

/** The ResourceSlice the driver's kubelet plugin publishes for one node: its GPUs as devices `gpu-<i>`. */
const slice = (node: string, gpus: number, product: string) => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceSlice',
  metadata: { name: `${node}-${DRIVER}` },
  spec: {
    driver: DRIVER,
    nodeName: node,
    pool: { name: node, generation: 1, resourceSliceCount: 1 },
    devices: Array.from({ length: gpus }, (_, i) => ({
      name: `gpu-${i}`,
      attributes: {
        type: { string: 'gpu' },
        productName: { string: product },
        uuid: { string: `GPU-${node}-${i}` },
      },
      capacity: { memory: { value: '80Gi' } },
    })),
  },
});

const claimsOf = async (cluster: Cluster, ns: string) =>
  (await cluster.request('GET', `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaims`)).body.items as any[];

describeCluster(
  'Dynamic Resource Allocation: what the guard says for a version is what its API server does',
  (cluster: Cluster) => {
    const minor = Number(minorOf(cluster.version).split('.')[1]);
    const place = scenario(cluster, RUN, { name: 'dra-api', nodes: 1 });

    test('the claim template is served from 1.34 only, and a pod template keeps its claims from 1.34 only', async () => {
      const ns = await place.namespace('dra-api', 'restricted');
      const output = serving(ns, { replicas: 1 });
      const findings = guard([], output, { serverVersion: minorOf(cluster.version) }).findings.map(f => f.code);
      const template = output.find(o => o.kind === 'ResourceClaimTemplate');
      const deployment = output.find(o => o.kind === 'Deployment');

      let templateStored: boolean;
      try {
        const r = await cluster.apply(template, { force: true });
        expect(r.status).toBeLessThan(300);
        templateStored = true;
      } catch (e) {
        // kubectl's "no matches for kind": discovery of the group version fails.
        expect(String(e)).toMatch(/discovery of resource\.k8s\.io\/v1: 404/);
        templateStored = false;
      }
      await applyAll(
        cluster,
        output.filter(o => o !== template && o.kind !== 'PodDisruptionBudget' && o.kind !== 'HorizontalPodAutoscaler'),
      );
      const stored = (await cluster.get(deployment)).body.spec.template.spec;
      const kept = stored.resourceClaims !== undefined && stored.containers[0].resources.claims !== undefined;

      expect({ minor, templateStored, kept }).toEqual({ minor, templateStored: minor >= 34, kept: minor >= 34 });
      expect({ notServed: findings.includes('api-not-served'), dropped: findings.includes('claims-dropped') }).toEqual({
        notServed: !templateStored,
        dropped: !kept,
      });
    }, 120_000);
  },
);

describeCluster(
  'Dynamic Resource Allocation: the scheduler allocates the claims the library makes, on KWOK GPU nodes',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'dra', nodes: 2 });
    const slices: any[] = [];

    beforeAll(async () => {
      const r = await cluster.apply(DEVICE_CLASS, { force: true });
      if (r.status >= 300) throw new Error(`DeviceClass: ${r.status} ${JSON.stringify(r.body)}`);
      for (const node of place.gpus().nodes) slices.push(slice(node, 8, H100));
      await applyAll(cluster, slices);
    }, 60_000);
    afterAll(async () => {
      for (const s of slices) await cluster.request('DELETE', await cluster.urlOf(s));
      await cluster.request('DELETE', `/apis/resource.k8s.io/v1/deviceclasses/${DRIVER}`);
    }, 60_000);

    test('a GpuTrainingJob: each rank gets 8 devices of its own node, and its claim goes when the run completes', async () => {
      const ns = await place.namespace('dra-train', 'restricted');
      const gpus = place.gpus();
      const chart = new Chart(Testing.app(), 'c', { namespace: ns });
      new GpuTrainingJob(chart, 'job', {
        name: 'run',
        image: 'registry.example/trainer:1.0',
        nodes: 2,
        gpusPerPod: 8,
        args: ['train.py'],
        nodeSelector: gpus.nodeSelector,
        ttlAfterFinished: Duration.minutes(10),
        pod: { tolerations: gpus.tolerations, annotations: { [`pod-complete.${KWOK_STAGE}/delay`]: '4s' } },
        ...dra(),
      });
      await applyAll(cluster, Testing.synth(chart));

      await waitExplained(cluster, ns, 'both ranks running with allocated claims', 90, async () => {
        const pods = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running');
        const allocated = (await claimsOf(cluster, ns)).filter(c => c.status?.allocation);
        return (
          (pods.length === 2 && allocated.length === 2) ||
          `${pods.length} running, ${allocated.length} claims allocated`
        );
      });
      const pods = await podsOf(cluster, ns);
      const claims = await claimsOf(cluster, ns);
      for (const pod of pods) {
        // The pod's claim, named in its status by the resourceclaim controller.
        const name = pod.status.resourceClaimStatuses?.find((s: any) => s.name === 'gpus')?.resourceClaimName;
        const claim = claims.find(c => c.metadata.name === name);
        const results = claim?.status?.allocation?.devices?.results ?? [];
        expect({ pod: pod.metadata.name, devices: results.length }).toEqual({ pod: pod.metadata.name, devices: 8 });
        // All from the slice of the node the pod runs on, each once.
        expect(new Set(results.map((d: any) => d.pool))).toEqual(new Set([pod.spec.nodeName]));
        expect(new Set(results.map((d: any) => d.device)).size).toBe(8);
        expect(claim.status.reservedFor.map((r: any) => r.name)).toEqual([pod.metadata.name]);
      }
      expect(new Set(pods.map(p => p.spec.nodeName))).toEqual(new Set(gpus.nodes));

      // Done pods give their devices back: the controller deletes the claims it made for them.
      await waitExplained(cluster, ns, 'the run to complete and its claims to go', 120, async () => {
        const js = (await cluster.request('GET', `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${ns}/jobsets/run`)).body;
        const completed = (js.status?.conditions ?? []).some((c: any) => c.type === 'Completed' && c.status === 'True');
        const left = await claimsOf(cluster, ns);
        return (completed && left.length === 0) || `completed ${completed}, ${left.length} claim(s) left`;
      });
    }, 300_000);

    test('every selector form the library makes compiles on the API server', async () => {
      const ns = await place.namespace('dra-cel', 'restricted');
      const output = serving(ns, {
        replicas: 1,
        selectors: [
          // A CEL keyword as the attribute's name, non-ASCII text, quotes and a backslash, a number, a boolean.
          DeviceSelector.attributeEquals('gpu.nvidia.com/in', 'é€😀'),
          DeviceSelector.nvidiaProduct('NVIDIA "H100" 80GB\\HBM3'),
          DeviceSelector.attributeEquals('gpu.example.com/cores', 132),
          DeviceSelector.attributeEquals('gpu.example.com/nvlink', true),
        ],
      });
      const template = output.find(o => o.kind === 'ResourceClaimTemplate');
      const r = await cluster.create(template, true);
      expect({ status: r.status, message: r.body?.message }).toEqual({ status: 201, message: undefined });
    });

    test('a selector on an attribute no device has matches nothing, where reading it unguarded aborts the allocation', async () => {
      const ns = await place.namespace('dra-absent', 'restricted');
      const gpus = place.gpus();
      const output = serving(ns, {
        replicas: 1,
        gpus,
        selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/missing', 'x')],
      });
      await applyAll(cluster, output);
      // The same pod template with the selector read as a plain field, as the API docs' examples write it.
      const template = output.find(o => o.kind === 'ResourceClaimTemplate');
      const unguarded = JSON.parse(JSON.stringify(template));
      unguarded.metadata.name = 'unguarded';
      unguarded.spec.spec.devices.requests[0].exactly.selectors = [
        { cel: { expression: 'device.attributes["gpu.nvidia.com"].missing == "x"' } },
      ];
      const deployment = JSON.parse(JSON.stringify(output.find(o => o.kind === 'Deployment')));
      deployment.metadata.name = 'unguarded';
      deployment.spec.template.spec.resourceClaims[0].resourceClaimTemplateName = 'unguarded';
      await applyAll(cluster, [unguarded, deployment]);
      const reasons = async () => {
        const events = (await cluster.request('GET', `/api/v1/namespaces/${ns}/events`)).body.items as any[];
        return events.filter(e => e.reason === 'FailedScheduling').map(e => `${e.involvedObject.name}: ${e.message}`);
      };
      await waitExplained(cluster, ns, 'both pods refused by the scheduler', 60, async () => {
        const why = await reasons();
        const guarded = why.some(w => !w.includes('unguarded'));
        const plain = why.some(w => w.includes('unguarded'));
        return (guarded && plain) || why.join('\n') || 'no FailedScheduling event yet';
      });
      const why = await reasons();
      console.log(`DRA selectors on an absent attribute, kube-scheduler ${cluster.version}:\n${why.join('\n')}`);
      expect(why.filter(w => !w.includes('unguarded')).join('\n')).not.toMatch(/no such key|runtime error/i);
      expect(why.filter(w => w.includes('unguarded')).join('\n')).toMatch(/no such key|runtime error/i);
    }, 120_000);

    test('a third 8-GPU replica on two 8-GPU nodes waits for devices, and so does a selector no device matches', async () => {
      const ns = await place.namespace('dra-serve', 'restricted');
      const gpus = place.gpus();
      await applyAll(cluster, [
        ...serving(ns, { replicas: 3, gpus }),
        ...serving(ns, { replicas: 1, gpus, product: 'NVIDIA B200', name: 'b200' }),
      ]);
      await waitExplained(cluster, ns, 'two replicas placed, one per node, and two pods waiting', 90, async () => {
        const pods = await podsOf(cluster, ns);
        const placed = pods.filter(p => p.spec.nodeName);
        const waiting = pods.filter(
          p =>
            !p.spec.nodeName &&
            p.status?.conditions?.some((c: any) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'),
        );
        return (
          (placed.length === 2 && waiting.length === 2) || `${placed.length} placed, ${waiting.length} unschedulable`
        );
      });
      const pods = await podsOf(cluster, ns);
      const placed = pods.filter(p => p.spec.nodeName);
      expect(new Set(placed.map(p => p.spec.nodeName))).toEqual(new Set(gpus.nodes));
      expect(placed.every(p => p.metadata.labels['app.kubernetes.io/instance'] === 'llm')).toBe(true);
      const waiting = pods.filter(p => !p.spec.nodeName).map(p => p.metadata.labels['app.kubernetes.io/instance']);
      expect(waiting.sort()).toEqual(['b200', 'llm']);
      // The scheduler says why: the claims cannot be allocated.
      const events = (await cluster.request('GET', `/api/v1/namespaces/${ns}/events`)).body.items as any[];
      const why = events.filter(e => e.reason === 'FailedScheduling').map(e => e.message);
      expect(why.join('\n')).toMatch(/cannot allocate all claims/);
    }, 180_000);
  },
  v => v === newest,
);
