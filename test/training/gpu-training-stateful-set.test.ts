import { Chart, Duration, Size, Testing } from 'cdk8s';
import { DisruptionBudget, GpuTrainingStatefulSet, GpuTrainingStatefulSetProps, PodSecurityLevel, TrainingUpdateStrategy } from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid, testChart } from '../support/synth';

const base: GpuTrainingStatefulSetProps = { name: 'onnx-trainer', image: 'onnxruntime/multi-gpu:1.3.0', gpusPerPod: 2 };

function synth(props: Partial<GpuTrainingStatefulSetProps> = {}, id = 'trainer') {
  const chart = testChart();
  const trainer = new GpuTrainingStatefulSet(chart, id, { ...base, ...props });
  const objects = synthValid(chart);
  const sts = findOne(objects, 'StatefulSet');
  return { trainer, objects, sts, pod: sts.spec.template.spec, main: sts.spec.template.spec.containers[0] };
}

describe('GpuTrainingStatefulSet', () => {
  describe('names and selectors', () => {
    test('the StatefulSet is named name or name-v<version>', () => {
      expect(synth().sts.metadata.name).toBe('onnx-trainer');
      const { sts, trainer } = synth({ version: 2 });
      expect(sts.metadata.name).toBe('onnx-trainer-v2');
      expect(trainer.statefulSetName).toBe('onnx-trainer-v2');
    });

    test('the selector uses only explicit labels, with the versioned instance', () => {
      const { sts } = synth({ version: 2 });
      expect(sts.spec.selector).toEqual({
        matchLabels: {
          'app.kubernetes.io/name': 'onnx-trainer',
          'app.kubernetes.io/instance': 'onnx-trainer-v2',
          'app.kubernetes.io/component': 'training',
        },
      });
      expect(sts.spec.template.metadata.labels).toMatchObject(sts.spec.selector.matchLabels);
    });

    test('renaming the construct id changes nothing in the output', () => {
      const a = synth({ version: 2, storage: { size: Size.gibibytes(10) } }, 'trainer').objects;
      const b = synth({ version: 2, storage: { size: Size.gibibytes(10) } }, 'renamed-trainer').objects;
      expect(b).toEqual(a);
    });
  });

  test('a headless Service per version that publishes not-ready addresses', () => {
    const { objects, sts, trainer } = synth({ version: 3 });
    const svc = findOne(objects, 'Service');
    expect(svc.metadata.name).toBe('onnx-trainer-v3');
    expect(svc.spec.clusterIP).toBe('None');
    expect(svc.spec.publishNotReadyAddresses).toBe(true);
    expect(svc.spec.selector).toEqual(sts.spec.selector.matchLabels);
    expect(sts.spec.serviceName).toBe(svc.metadata.name);
    expect(trainer.serviceName).toBe(svc.metadata.name);
  });

  describe('pod management and updates', () => {
    test('Parallel and OnDelete by default', () => {
      const { sts } = synth();
      expect(sts.spec.podManagementPolicy).toBe('Parallel');
      expect(sts.spec.updateStrategy).toEqual({ type: 'OnDelete' });
    });

    test('RollingUpdate is an option', () => {
      expect(synth({ updateStrategy: TrainingUpdateStrategy.ROLLING_UPDATE }).sts.spec.updateStrategy.type).toBe('RollingUpdate');
    });
  });

  describe('GPUs', () => {
    test('nvidia.com/gpu limits equal gpusPerPod as numbers, with the GPU toleration', () => {
      const { main, pod } = synth({ gpusPerPod: 4 });
      expect(main.resources.limits['nvidia.com/gpu']).toBe(4);
      expect(main.resources.requests['nvidia.com/gpu']).toBe(4);
      expect(pod.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
    });

    test('CPU and memory scale with GPUs by default, not the cdk8s-plus 1500m/2Gi', () => {
      const { main } = synth({ gpusPerPod: 2 });
      expect(main.resources.requests).toMatchObject({ cpu: '8', memory: '32Gi' });
      expect(main.resources.limits.memory).toBe('32Gi');
      expect(main.resources.limits.cpu).toBeUndefined();
      const custom = synth({ cpu: 12, memory: Size.gibibytes(100) }).main;
      expect(custom.resources.requests).toMatchObject({ cpu: '12', memory: '100Gi' });
    });

    test('an optional node selector', () => {
      expect(synth().pod.nodeSelector).toBeUndefined();
      const selector = { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' };
      expect(synth({ nodeSelector: selector }).pod.nodeSelector).toEqual(selector);
    });
  });

  test('/dev/shm is a memory emptyDir with a size limit', () => {
    const { pod, main } = synth({ sharedMemory: Size.gibibytes(6) });
    expect(pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '6Gi' } });
    expect(main.volumeMounts).toContainEqual({ name: 'dshm', mountPath: '/dev/shm' });
    expect(synth().pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } });
  });

  describe('rank wiring', () => {
    test('torch.distributed and torchrun variables', () => {
      const { main, trainer } = synth({ version: 2, replicas: 3, gpusPerPod: 2 });
      const env = envOf(main);
      const address = 'onnx-trainer-v2-0.onnx-trainer-v2.$(POD_NAMESPACE).svc.cluster.local';
      expect(main.env[0]).toEqual({ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
      expect(env).toMatchObject({
        MASTER_ADDR: address, MASTER_PORT: '29500', NNODES: '3', NPROC_PER_NODE: '2', WORLD_SIZE: '6',
        PET_NNODES: '3', PET_NPROC_PER_NODE: '2', PET_MASTER_ADDR: address, PET_MASTER_PORT: '29500',
      });
      const rank = { fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } };
      expect(env.NODE_RANK).toEqual(rank);
      expect(env.PET_NODE_RANK).toEqual(rank);
      expect(trainer.masterAddress).toBe(address);
      expect(trainer.worldSize).toBe(6);
    });

    test('the master port is a named container port and configurable', () => {
      const { main } = synth({ masterPort: 23456 });
      expect(main.ports).toEqual([{ name: 'rendezvous', containerPort: 23456, protocol: 'TCP' }]);
      expect(envOf(main).MASTER_PORT).toBe('23456');
    });

    test('user env is added, and a colliding name is a clear error', () => {
      expect(envOf(synth({ env: { NCCL_DEBUG: 'INFO' } }).main).NCCL_DEBUG).toBe('INFO');
      expect(() => synth({ env: { WORLD_SIZE: '8' } })).toThrow(
        /^GpuTrainingStatefulSet 'trainer': env.WORLD_SIZE collides with a variable this construct sets for rank wiring .* \(got "8"\)$/);
    });
  });

  describe('storage', () => {
    test('claim templates with retention Retain/Retain', () => {
      const { sts, main } = synth({ storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100), storageClassName: 'fast-ssd' } });
      expect(sts.spec.volumeClaimTemplates).toHaveLength(1);
      const [vct] = sts.spec.volumeClaimTemplates;
      expect(vct.metadata.name).toBe('gpu-pvc');
      expect(vct.spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } }, storageClassName: 'fast-ssd' });
      expect(main.volumeMounts).toContainEqual({ name: 'gpu-pvc', mountPath: '/checkpoints' });
      expect(sts.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Retain', whenScaled: 'Retain' });
    });

    test('the claim name defaults to data', () => {
      const { sts, trainer } = synth({ storage: { size: Size.gibibytes(1) } });
      expect(sts.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
      expect(trainer.claimName).toBe('data');
    });
  });

  test('the grace period defaults to five minutes for a checkpoint, and is configurable', () => {
    expect(synth().pod.terminationGracePeriodSeconds).toBe(300);
    expect(synth({ terminationGracePeriod: Duration.minutes(15) }).pod.terminationGracePeriodSeconds).toBe(900);
  });

  describe('security', () => {
    test('the default pod template meets the restricted profile with a writable home', () => {
      const { pod, main, trainer } = synth({ storage: { size: Size.gibibytes(1) } });
      expect(podSecurityLevel(pod)).toBe('restricted');
      expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
      const env = envOf(main);
      expect(env.HOME).toBe('/home/trainer');
      expect(env.XDG_CACHE_HOME).toBe('/home/trainer/.cache');
      expect(main.volumeMounts).toContainEqual({ name: 'home', mountPath: '/home/trainer' });
      expect(pod.volumes).toContainEqual({ name: 'home', emptyDir: {} });
    });

    test('rdma adds IPC_LOCK and leaves restricted', () => {
      const { pod, main, trainer } = synth({ rdma: true });
      expect(main.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['IPC_LOCK'] });
      expect(podSecurityLevel(pod)).toBe('privileged');
      expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.PRIVILEGED);
    });

    test('runAsRoot is a named opt-in that keeps everything else locked down', () => {
      const { pod, main } = synth({ runAsRoot: true });
      expect(pod.securityContext.runAsUser).toBeUndefined();
      expect(pod.securityContext.runAsNonRoot).toBeUndefined();
      expect(main.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(podSecurityLevel(pod)).toBe('baseline');
      expect(envOf(main).HOME).toBeUndefined();
    });

    test('runAsUser is never 0 by default', () => {
      const { pod } = synth();
      expect(pod.securityContext.runAsUser).not.toBe(0);
    });
  });

  describe('disruption', () => {
    test('blocks voluntary evictions of a running job by default, but never for unhealthy pods', () => {
      const { objects, sts } = synth();
      const pdb = findOne(objects, 'PodDisruptionBudget');
      expect(pdb.spec).toEqual({ maxUnavailable: 0, selector: sts.spec.selector, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
    });

    test('can be changed or removed', () => {
      expect(findOne(synth({ disruptionBudget: DisruptionBudget.maxUnavailable(1) }).objects, 'PodDisruptionBudget').spec.maxUnavailable).toBe(1);
      expect(synth({ disruptionBudget: DisruptionBudget.none() }).objects.filter(o => o.kind === 'PodDisruptionBudget')).toEqual([]);
    });
  });

  describe('GPU configuration apart from the StatefulSet', () => {
    test('a ConfigMap consumed with envFrom, and a content hash on the pod template', () => {
      const { objects, main, sts, trainer } = synth({ version: 2, gpuConfig: { NCCL_DEBUG: 'INFO', NCCL_IB_DISABLE: '1' } });
      const cm = findOne(objects, 'ConfigMap');
      expect(cm.metadata.name).toBe('onnx-trainer-v2-gpu-config');
      expect(cm.data).toEqual({ NCCL_DEBUG: 'INFO', NCCL_IB_DISABLE: '1' });
      expect(main.envFrom).toEqual([{ configMapRef: { name: trainer.gpuConfigMapName } }]);
      expect(sts.spec.template.metadata.annotations['cdk8s-gpu.io/gpu-config-hash']).toMatch(/^[0-9a-f]{16}$/);
    });

    test('a config change changes only the pod template annotation', () => {
      const a = synth({ gpuConfig: { NCCL_DEBUG: 'INFO' } }).sts;
      const b = synth({ gpuConfig: { NCCL_DEBUG: 'WARN' } }).sts;
      const hash = (s: any) => s.spec.template.metadata.annotations['cdk8s-gpu.io/gpu-config-hash'];
      expect(hash(a)).not.toEqual(hash(b));
      const strip = (s: any) => ({ ...s.spec, template: { ...s.spec.template, metadata: { labels: s.spec.template.metadata.labels } } });
      expect(strip(a)).toEqual(strip(b));
    });
  });

  describe('bad input throws clear errors', () => {
    const cases: Array<[string, Partial<GpuTrainingStatefulSetProps>, string | RegExp]> = [
      ['empty name', { name: '' }, `GpuTrainingStatefulSet 'trainer': name must be a non-empty DNS-1123 label (got "")`],
      ['invalid name', { name: 'Onnx_Trainer' }, /^GpuTrainingStatefulSet 'trainer': name must be a DNS-1123 label.* \(got "Onnx_Trainer"\)$/],
      ['name too long with -vN', { name: 'a'.repeat(50), version: 2 }, /name must leave the StatefulSet name at most 52 characters once "-v2" is added/],
      ['gpusPerPod 0', { gpusPerPod: 0 }, `GpuTrainingStatefulSet 'trainer': gpusPerPod must be a whole number >= 1 (got 0)`],
      ['gpusPerPod 1.5', { gpusPerPod: 1.5 }, `GpuTrainingStatefulSet 'trainer': gpusPerPod must be a whole number >= 1 (got 1.5)`],
      ['replicas 0', { replicas: 0 }, `GpuTrainingStatefulSet 'trainer': replicas must be a whole number >= 1 (got 0)`],
      ['storage size 0', { storage: { size: Size.gibibytes(0) } }, `GpuTrainingStatefulSet 'trainer': storage.size must be a positive size (got 0Mi)`],
      ['version 0', { version: 0 }, `GpuTrainingStatefulSet 'trainer': version must be a whole number >= 1 (got 0)`],
      ['version 1.5', { version: 1.5 }, `GpuTrainingStatefulSet 'trainer': version must be a whole number >= 1 (got 1.5)`],
      ['shm >= memory', { memory: Size.gibibytes(8), sharedMemory: Size.gibibytes(8) }, /sharedMemory must be smaller than memory \(8Gi\)/],
      ['relative mount path', { storage: { size: Size.gibibytes(1), mountPath: 'ckpt' } }, /storage.mountPath must be an absolute path/],
    ];
    test.each(cases)('%s', (_label, props, message) => {
      const chart = new Chart(Testing.app(), 'c');
      expect(() => new GpuTrainingStatefulSet(chart, 'trainer', { ...base, ...props })).toThrow(message);
    });
  });
});

describe('adopting existing volumes across a version bump', () => {
  const storage = { claimName: 'gpu-pvc', size: Size.gibibytes(100), storageClassName: 'fast-ssd' };

  test('emits one bound claim per ordinal, named as the claim template will look for it', () => {
    const { objects, sts } = synth({ version: 2, replicas: 3, storage, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b', 'pv-c'] } });
    const claims = objects.filter(o => o.kind === 'PersistentVolumeClaim');
    const template = sts.spec.volumeClaimTemplates[0];
    expect(claims.map(c => c.metadata.name)).toEqual([0, 1, 2].map(i => `${template.metadata.name}-${sts.metadata.name}-${i}`));
    expect(claims.map(c => c.metadata.name)).toEqual(['gpu-pvc-onnx-trainer-v2-0', 'gpu-pvc-onnx-trainer-v2-1', 'gpu-pvc-onnx-trainer-v2-2']);
    claims.forEach((c, i) => {
      expect(c.spec.volumeName).toBe(['pv-a', 'pv-b', 'pv-c'][i]);
      expect(c.spec.accessModes).toEqual(template.spec.accessModes);
      expect(c.spec.resources).toEqual(template.spec.resources);
      expect(c.spec.storageClassName).toBe(template.spec.storageClassName);
      expect(c.metadata.labels).toEqual(sts.metadata.labels);
    });
  });

  test.each<[string, Partial<GpuTrainingStatefulSetProps>, string | RegExp]>([
    ['count differs from replicas', { replicas: 3, storage, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] } },
      `GpuTrainingStatefulSet 'trainer': adoptVolumes.persistentVolumes must name exactly one PersistentVolume per replica (3) (got ["pv-a","pv-b"])`],
    ['a volume named twice', { replicas: 2, storage, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-a'] } }, /must not name a volume twice.*\(got "pv-a"\)/],
    ['no storage', { adoptVolumes: { persistentVolumes: ['pv-a'] } }, "GpuTrainingStatefulSet 'trainer': adoptVolumes needs storage: adopted volumes are bound to the checkpoint claims"],
  ])('%s is an error', (_label, props, message) => {
    expect(() => synth(props)).toThrow(message);
  });
});
