import { ApiObject, App, Chart, Duration, JsonPatch, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { k8s } from 'cdk8s-plus-28';
import { GpuTrainingStatefulSet, TgiInferenceService } from '../src';

export type Impl = 'cdk8s-gpu' | 'cdk8s-plus';
export type Layout = 'one-chart' | 'chart-per-workload';

/**
 * Workload i: even i is a training StatefulSet (Service, StatefulSet, PDB), odd i an inference
 * service (headless Service, client Service, StatefulSet, PDB). Both implementations produce the
 * same number and kinds of objects.
 */
export function build(app: App, impl: Impl, n: number, layout: Layout): void {
  let shared: Chart | undefined;
  for (let i = 0; i < n; i++) {
    const chart = layout === 'one-chart' ? (shared ??= new Chart(app, 'all')) : new Chart(app, `w${i}`);
    if (impl === 'cdk8s-gpu') withConstructs(chart, i);
    else handWritten(chart, i);
  }
}

function withConstructs(chart: Chart, i: number): void {
  if (i % 2 === 0) {
    new GpuTrainingStatefulSet(chart, `train-${i}`, { name: `train-${i}`, image: 'nvcr.io/nvidia/pytorch:24.08-py3', gpusPerPod: 2, replicas: 2 });
  } else {
    new TgiInferenceService(chart, `tgi-${i}`, { name: `tgi-${i}`, modelId: 'EleutherAI/gpt-neox-20b' });
  }
}

/**
 * What a careful user would write by hand with cdk8s-plus-28 for the same workloads: the same
 * objects, and the same practice inside them (rank wiring, probes, preStop, shm, caches, security),
 * so the comparison measures the construct layer rather than a smaller output.
 */
function handWritten(chart: Chart, i: number): void {
  const training = i % 2 === 0;
  const name = training ? `train-${i}` : `tgi-${i}`;
  const port = training ? 29500 : 8080;
  const env: Record<string, kplus.EnvValue> = {};
  const value = (k: string, v: string) => { env[k] = kplus.EnvValue.fromValue(v); };
  env.POD_NAMESPACE = kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_NAMESPACE);
  if (training) {
    const master = `${name}-0.${name}.$(POD_NAMESPACE).svc.cluster.local`;
    for (const [k, v] of Object.entries({ MASTER_ADDR: master, MASTER_PORT: '29500', NNODES: '2', NPROC_PER_NODE: '2', WORLD_SIZE: '4', PET_NNODES: '2', PET_NPROC_PER_NODE: '2', PET_MASTER_ADDR: master, PET_MASTER_PORT: '29500' })) value(k, v);
    env.NODE_RANK = kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_LABEL, { key: 'apps.kubernetes.io/pod-index' });
    env.PET_NODE_RANK = kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_LABEL, { key: 'apps.kubernetes.io/pod-index' });
  } else {
    for (const [k, v] of Object.entries({ MODEL_ID: 'EleutherAI/gpt-neox-20b', NUM_SHARD: '1', GRACEFUL_TERMINATION_TIMEOUT: '90', PORT: '8080', HOSTNAME: '0.0.0.0', HF_HOME: '/data', HUGGINGFACE_HUB_CACHE: '/data/hub' })) value(k, v);
  }
  const home = training ? '/home/trainer' : '/home/tgi';
  for (const [k, v] of Object.entries({ HOME: home, XDG_CACHE_HOME: `${home}/.cache`, TORCH_HOME: `${home}/.cache/torch`, TRITON_CACHE_DIR: `${home}/.cache/triton` })) value(k, v);
  const emptyDir = (id: string, opts?: kplus.EmptyDirVolumeOptions) => kplus.Volume.fromEmptyDir(chart, `${name}-${id}`, id, opts);
  const mounts: kplus.VolumeMount[] = [
    { path: '/dev/shm', volume: emptyDir('dshm', { medium: kplus.EmptyDirMedium.MEMORY, sizeLimit: Size.gibibytes(training ? 8 : 1) }) },
    { path: home, volume: emptyDir('home') },
    { path: '/tmp', volume: emptyDir('tmp') },
    ...(training ? [] : [{ path: '/data', volume: emptyDir('model-cache') }]),
  ];
  const health = (o: kplus.ProbeOptions) => kplus.Probe.fromHttpGet('/health', { port, ...o });
  const sts = new kplus.StatefulSet(chart, name, {
    metadata: { name, labels: { 'app.kubernetes.io/name': name } },
    replicas: training ? 2 : 1,
    podManagementPolicy: kplus.PodManagementPolicy.PARALLEL,
    terminationGracePeriod: Duration.seconds(training ? 300 : 120),
    automountServiceAccountToken: false,
    securityContext: { ensureNonRoot: training, user: training ? 1000 : undefined, group: training ? 1000 : undefined, fsGroup: training ? 1000 : undefined },
    containers: [{
      name: training ? 'trainer' : 'tgi',
      image: training ? 'nvcr.io/nvidia/pytorch:24.08-py3' : 'ghcr.io/huggingface/text-generation-inference:3.3.7',
      imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
      ports: [{ number: port, name: training ? 'rendezvous' : 'http' }],
      envVariables: env,
      resources: { cpu: { request: kplus.Cpu.units(training ? 8 : 4) }, memory: { request: Size.gibibytes(training ? 32 : 16), limit: Size.gibibytes(training ? 32 : 16) } },
      securityContext: { ensureNonRoot: training, readOnlyRootFilesystem: false, allowPrivilegeEscalation: false },
      volumeMounts: mounts,
      ...(training ? {} : {
        startup: health({ periodSeconds: Duration.seconds(10), failureThreshold: 90, timeoutSeconds: Duration.seconds(5) }),
        readiness: health({ periodSeconds: Duration.seconds(10), failureThreshold: 3, timeoutSeconds: Duration.seconds(5) }),
        liveness: health({ periodSeconds: Duration.seconds(30), failureThreshold: 6, timeoutSeconds: Duration.seconds(10) }),
        lifecycle: { preStop: kplus.Handler.fromCommand(['sleep', '15']) },
      }),
    }],
  });
  sts.scheduling.tolerate(kplus.Node.tainted(kplus.NodeTaintQuery.exists('nvidia.com/gpu', { effect: kplus.TaintEffect.NO_SCHEDULE })));
  // cdk8s-plus has no API for extended resources: a JsonPatch with a typed Quantity (REFERENCE).
  const gpu = k8s.Quantity.fromNumber(training ? 2 : 1);
  ApiObject.of(sts).addJsonPatch(JsonPatch.add('/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu', gpu));
  ApiObject.of(sts).addJsonPatch(JsonPatch.add('/spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu', gpu));
  if (!training) new kplus.Service(chart, `${name}-client`, { metadata: { name: `${name}-client` }, selector: sts, ports: [{ port: 80, targetPort: 8080 }] });
  new k8s.KubePodDisruptionBudget(chart, `${name}-pdb`, {
    metadata: { name },
    spec: {
      maxUnavailable: k8s.IntOrString.fromNumber(training ? 0 : 1),
      selector: { matchLabels: { 'app.kubernetes.io/name': name } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  });
}
