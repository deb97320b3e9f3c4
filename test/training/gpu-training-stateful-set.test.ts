import { inlineCommand } from '../support/runtime-scripts';
import * as fs from 'fs';
import * as path from 'path';
import { Chart, Duration, Size, Testing } from 'cdk8s';
import { k8s } from 'cdk8s-plus-32';
import {
  ConfigurationError,
  DisruptionBudget,
  EnvFrom,
  EnvValue,
  GpuTrainingStatefulSet,
  GpuTrainingStatefulSetProps,
  PodSecurityLevel,
  Rdma,
  TrainingUpdateStrategy,
} from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid, testChart } from '../support/synth';

/** The gpuConfig ConfigMap (beside the launch wrapper's). */
const gpuConfigOf = (objects: any[]) =>
  findOne(
    objects.filter(o => o.metadata.labels?.['app.kubernetes.io/component'] !== 'runtime-script'),
    'ConfigMap',
  );

const base: GpuTrainingStatefulSetProps = {
  name: 'onnx-trainer',
  image: 'onnxruntime/multi-gpu:1.3.0',
  gpusPerPod: 2,
  args: ['train.py'],
};

function synth(props: Partial<GpuTrainingStatefulSetProps> = {}, id = 'trainer', namespace?: string) {
  const chart = testChart(namespace);
  const trainer = new GpuTrainingStatefulSet(chart, id, { ...base, ...props });
  const objects = synthValid(chart);
  const sts = findOne(objects, 'StatefulSet');
  return { trainer, objects, sts, pod: sts.spec.template.spec, main: sts.spec.template.spec.containers[0] };
}

function construct(props: Partial<GpuTrainingStatefulSetProps>): GpuTrainingStatefulSet {
  return new GpuTrainingStatefulSet(new Chart(Testing.app(), 'c'), 'trainer', { ...base, ...props });
}

const LAUNCH_SCRIPT = fs.readFileSync(path.join(__dirname, '..', '..', 'src', 'training', 'launch.sh'), 'utf8');

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

    test('derived names stay valid at the longest accepted name', () => {
      const name = 'a'.repeat(49);
      const { objects, trainer } = synth({
        name,
        version: 2,
        replicas: 12,
        gpuConfig: { NCCL_DEBUG: 'WARN' },
        storage: { claimName: 'c', size: Size.gibibytes(1) },
      });
      expect(trainer.statefulSetName).toHaveLength(52);
      expect(gpuConfigOf(objects).metadata.name).toBe(`${name}-v2-gpu-config`);
      expect(trainer.claimNames[11]).toBe(`c-${name}-v2-11`);
      expect(trainer.claimNames[11].length).toBeLessThanOrEqual(63);
      for (const o of objects)
        for (const value of Object.values(o.metadata.labels ?? {}))
          expect((value as string).length).toBeLessThanOrEqual(63);
    });

    test('an empty gpuConfig makes a ConfigMap without data, as the API server stores it (no drift on resync)', () => {
      const empty = gpuConfigOf(synth({ gpuConfig: {} }).objects);
      expect(empty).not.toHaveProperty('data');
      expect(gpuConfigOf(synth({ gpuConfig: { NCCL_DEBUG: 'WARN' } }).objects).data).toEqual({
        NCCL_DEBUG: 'WARN',
      });
    });

    test('a claim name that would make a per-rank claim name longer than 63 characters is refused at the boundary', () => {
      const name = 'a'.repeat(49);
      // <claim>-<52 characters>-9: the claim template may take 63 - 52 - 3 = 8 characters.
      expect(() =>
        construct({ name, version: 2, replicas: 10, storage: { claimName: 'abcdefghi', size: Size.gibibytes(1) } }),
      ).toThrow(/storage.claimName must be at most 63 characters \(got 64 characters: abcdefghi-a{49}-v2-9\)/);
      expect(
        construct({ name, version: 2, replicas: 10, storage: { claimName: 'abcdefgh', size: Size.gibibytes(1) } })
          .claimNames[9],
      ).toHaveLength(63);
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
      const { sts, trainer } = synth();
      expect(sts.spec.podManagementPolicy).toBe('Parallel');
      expect(sts.spec.updateStrategy).toEqual({ type: 'OnDelete' });
      expect(trainer._templateChangesRollOut).toBe(false);
    });

    test('RollingUpdate is an option', () => {
      const { sts, trainer } = synth({ updateStrategy: TrainingUpdateStrategy.ROLLING_UPDATE });
      expect(sts.spec.updateStrategy.type).toBe('RollingUpdate');
      expect(trainer._templateChangesRollOut).toBe(true);
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
    });
  });

  test('/dev/shm is a memory emptyDir with a size limit', () => {
    const { pod, main } = synth({ sharedMemory: Size.gibibytes(6) });
    expect(pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '6Gi' } });
    expect(main.volumeMounts).toContainEqual({ name: 'dshm', mountPath: '/dev/shm' });
    expect(synth().pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } });
  });

  describe('rank wiring', () => {
    test('torch.distributed variables for launchers other than torchrun', () => {
      const { main, trainer } = synth({ version: 2, replicas: 3, gpusPerPod: 2 });
      const env = envOf(main);
      const address = 'onnx-trainer-v2-0.onnx-trainer-v2.$(POD_NAMESPACE).svc.cluster.local';
      expect(main.env[0]).toEqual({
        name: 'POD_NAMESPACE',
        valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
      });
      expect(env).toMatchObject({
        MASTER_ADDR: address,
        MASTER_PORT: '29500',
        NNODES: '3',
        NPROC_PER_NODE: '2',
        WORLD_SIZE: '6',
      });
      expect(env.NODE_RANK).toEqual({ fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } });
      expect(trainer.masterAddress).toBe(address);
      expect(trainer.worldSize).toBe(6);
    });

    test('the master port is a named container port and configurable', () => {
      const { main } = synth({ masterPort: 23456 });
      expect(main.ports).toEqual([{ name: 'rendezvous', containerPort: 23456, protocol: 'TCP' }]);
      expect(envOf(main)).toMatchObject({ MASTER_PORT: '23456', PET_RDZV_ENDPOINT: expect.stringMatching(/:23456$/) });
    });

    test.each([
      ['WORLD_SIZE', 'replicas and gpusPerPod'],
      ['PET_MAX_RESTARTS', 'maxRestarts'],
      ['PET_RDZV_ID', 'runId'],
      ['TORCH_ELASTIC_SHUTDOWN_TIMEOUT', 'terminationGracePeriod'],
      ['PET_SHUTDOWN_TIMEOUT', 'terminationGracePeriod'],
      ['MASTER_PORT', 'masterPort'],
      ['CDK8S_GPU_STATE_DIR', 'storage or sharedCheckpoints'],
    ])('user env %s is refused, naming the prop to use (%s)', (name, via) => {
      expect(() => construct({ env: { [name]: '8' } })).toThrow(
        `GpuTrainingStatefulSet 'trainer': env.${name} is set by the construct; set ${via} instead (got "8")`,
      );
    });

    test('PET_STANDALONE, which would replace the gang rendezvous with one on localhost, is pinned off and refused in env', () => {
      expect(envOf(synth().main).PET_STANDALONE).toBe('0');
      expect(() => construct({ env: { PET_STANDALONE: '1' } })).toThrow(
        /env.PET_STANDALONE is set by the construct for its own mechanism/,
      );
    });

    test.each([
      [
        'WORLD_SIZE',
        /gpuConfig.WORLD_SIZE is set by the construct, whose value would silently win over the ConfigMap; set replicas and gpusPerPod instead \(got "1"\)/,
      ],
      [
        'PET_SHUTDOWN_TIMEOUT',
        /gpuConfig.PET_SHUTDOWN_TIMEOUT is set by the construct.*set terminationGracePeriod instead/,
      ],
      [
        'PET_STANDALONE',
        /gpuConfig.PET_STANDALONE is set by the construct, whose value would silently win over the ConfigMap \(got "1"\)/,
      ],
    ])(
      'a gpuConfig key the construct sets (%s), which the ConfigMap could never change, is refused',
      (key, message) => {
        expect(() => construct({ gpuConfig: { [key]: '1' } })).toThrow(message);
      },
    );

    test.each<[string, Partial<GpuTrainingStatefulSetProps>, string]>([
      [
        '--nnodes',
        { args: ['--nnodes', '2', 'train.py'] },
        'args[0] must not pass torchrun\'s --nnodes: the construct sets it from replicas; set that instead (got "--nnodes")',
      ],
      [
        '--nnodes=',
        { args: ['--nnodes=1:4', 'train.py'] },
        "args[0] must not pass torchrun's --nnodes: the construct sets it from replicas",
      ],
      [
        '--nproc_per_node',
        { args: ['--nproc_per_node=gpu', 'train.py'] },
        "args[0] must not pass torchrun's --nproc-per-node: the construct sets it from gpusPerPod",
      ],
      [
        'an abbreviation',
        { args: ['--max-rest', '9', 'train.py'] },
        "args[0] must not pass torchrun's --max-restarts: the construct sets it from maxRestarts",
      ],
      [
        '--rdzv-backend',
        { args: ['--rdzv-conf', 'read_timeout=300', '--rdzv-backend', 'static', 'train.py'] },
        "args[2] must not pass torchrun's --rdzv-backend: the construct sets it for its gang rendezvous",
      ],
      [
        '--rdzv-id',
        { args: ['--rdzv_id=x', 'train.py'] },
        "args[0] must not pass torchrun's --rdzv-id: the construct sets it from runId",
      ],
      ['--standalone', { args: ['--standalone', 'train.py'] }, "args[0] must not pass torchrun's --standalone"],
      [
        '--shutdown-timeout',
        { args: ['--shutdown-timeout', '900', 'train.py'] },
        "args[0] must not pass torchrun's --shutdown-timeout: the construct sets it from terminationGracePeriod",
      ],
      [
        '--master-port',
        { args: ['--master-port', '1234', 'train.py'] },
        "args[0] must not pass torchrun's --master-port",
      ],
      [
        'in command',
        { command: ['torchrun', '--node-rank', '0'], args: ['train.py'] },
        "command[1] must not pass torchrun's --node-rank",
      ],
      [
        'python -m torch.distributed.run',
        { command: ['python3', '-m', 'torch.distributed.run'], args: ['--nnodes', '2', 'train.py'] },
        "args[0] must not pass torchrun's --nnodes",
      ],
      [
        'bash -c',
        { command: ['bash', '-c', 'torchrun --standalone --nproc-per-node=2 train.py'], args: [] },
        "command[2] must not pass torchrun's --standalone (in its shell string, at '--standalone')",
      ],
      [
        'sh -c after cd and an assignment, quoted',
        { command: ['/bin/sh', '-ec', 'cd /w && OMP_NUM_THREADS=4 exec "torchrun" \'--nnodes=2\' train.py'], args: [] },
        "command[2] must not pass torchrun's --nnodes (in its shell string, at '--nnodes=2')",
      ],
      [
        'a nested shell in args',
        { command: ['sh'], args: ['-c', "bash -xc 'python3 -m torch.distributed.run --master_addr=$MASTER train.py'"] },
        "args[1] must not pass torchrun's --master-addr (in its shell string, at '--master_addr=$MASTER')",
      ],
    ])('torchrun option %s, which would silently undo a prop, is refused', (_label, props, message) => {
      expect(() => construct(props)).toThrow(`GpuTrainingStatefulSet 'trainer': ${message}`);
    });

    test.each<[string, Partial<GpuTrainingStatefulSetProps>]>([
      ["the script's own options", { args: ['train.py', '--nnodes', '2', '--max-restarts', '1'] }],
      [
        "a shell string's script options",
        { command: ['bash', '-c', 'torchrun train.py --standalone; echo --nnodes=2'] },
      ],
      [
        'options torchrun leaves to the user',
        { args: ['--rdzv-conf', 'read_timeout=300', '--log-dir', '/tmp/logs', '-r', '3', '--tee=3', 'train.py'] },
      ],
      ['a module launch', { args: ['-m', 'mypkg.train', '--nnodes', '2'] }],
      ['another launcher', { command: ['accelerate', 'launch'], args: ['--num_machines', '2', 'train.py'] }],
    ])('%s are accepted', (_label, props) => {
      expect(() => construct(props)).not.toThrow();
    });

    test('a user HF_HOME replaces the default instead of duplicating it', () => {
      const { main } = synth({ env: { HF_HOME: '/datasets/hf', NCCL_DEBUG: 'INFO' } });
      expect(main.env.filter((e: any) => e.name === 'HF_HOME')).toEqual([{ name: 'HF_HOME', value: '/datasets/hf' }]);
      expect(envOf(main).NCCL_DEBUG).toBe('INFO');
      expect(envOf(synth().main).HF_HOME).toBe('/home/trainer/.cache/huggingface');
    });
  });

  describe("gang restart: torchrun's c10d rendezvous on rank 0's stable address", () => {
    test('PET_* variables make torchrun an elastic agent that restarts every rank together', () => {
      const { main, trainer } = synth({ version: 2, replicas: 4, gpusPerPod: 8, maxRestarts: 5 });
      const env = envOf(main);
      expect(env).toMatchObject({
        PET_RDZV_BACKEND: 'c10d',
        PET_RDZV_ENDPOINT: `${trainer.masterAddress}:29500`,
        PET_RDZV_ID: trainer.rendezvousId,
        PET_MAX_RESTARTS: '5',
        PET_NNODES: '4',
        PET_NPROC_PER_NODE: '8',
      });
      // The endpoint host is rank 0's FQDN, the name in its /etc/hosts, so its agent hosts the store.
      expect(env.PET_RDZV_ENDPOINT).toBe('onnx-trainer-v2-0.onnx-trainer-v2.$(POD_NAMESPACE).svc.cluster.local:29500');
      expect(trainer.maxRestarts).toBe(5);
    });

    test('maxRestarts defaults to 3 and may be 0', () => {
      expect(envOf(synth().main).PET_MAX_RESTARTS).toBe('3');
      expect(envOf(synth({ maxRestarts: 0 }).main).PET_MAX_RESTARTS).toBe('0');
    });

    test.each([[-1], [1.5], [1001], ['3' as any], [NaN]])('maxRestarts %p is refused', value => {
      expect(() => construct({ maxRestarts: value })).toThrow(
        /^GpuTrainingStatefulSet 'trainer': maxRestarts must be a whole number from 0 to 1000/,
      );
    });

    test('the cluster domain reaches the rendezvous endpoint', () => {
      expect(envOf(synth({ clusterDomain: 'corp.example' }).main).PET_RDZV_ENDPOINT).toBe(
        'onnx-trainer-0.onnx-trainer.$(POD_NAMESPACE).svc.corp.example:29500',
      );
    });
  });

  describe('finished once: the launch wrapper', () => {
    test('the container runs src/training/launch.sh with sh, and the launcher as its arguments', () => {
      const { main } = synth({
        command: ['python', '-m', 'torch.distributed.run'],
        args: ['train.py', '--epochs', '3'],
      });
      expect(main.command).toEqual(['sh', '-c', '. /opt/cdk8s-gpu/launch/launch.sh', 'cdk8s-gpu-launch']);
      expect(inlineCommand(main.command)[2]).toBe(LAUNCH_SCRIPT);
      expect(main.args).toEqual(['python', '-m', 'torch.distributed.run', 'train.py', '--epochs', '3']);
    });

    test('the launcher defaults to torchrun, which then needs the training script', () => {
      expect(synth().main.args).toEqual(['torchrun', 'train.py']);
      expect(() => construct({ args: undefined })).toThrow(
        /args must name the training script when command is the default torchrun/,
      );
      expect(() => construct({ command: [] })).toThrow(/command must not be empty/);
    });

    test('completion markers live on the checkpoint volume when there is one', () => {
      const perRank = synth({ storage: { size: Size.gibibytes(1), mountPath: '/ckpt' } });
      expect(envOf(perRank.main).CDK8S_GPU_STATE_DIR).toBe('/ckpt/.cdk8s-gpu');
      expect(perRank.trainer.completionIsDurable).toBe(true);
      const shared = synth({ storage: { size: Size.gibibytes(1) }, sharedCheckpoints: { claimName: 'team-ckpt' } });
      expect(envOf(shared.main).CDK8S_GPU_STATE_DIR).toBe('/shared-checkpoints/.cdk8s-gpu');
    });

    test('without storage they live in pod scratch: completion survives container restarts, not pod re-creation', () => {
      const { main, pod, trainer } = synth();
      expect(envOf(main).CDK8S_GPU_STATE_DIR).toBe('/var/lib/cdk8s-gpu/completion');
      expect(trainer.completionIsDurable).toBe(false);
      expect(pod.volumes).toContainEqual({ name: 'job-state', emptyDir: {} });
      expect(main.volumeMounts).toContainEqual({ name: 'job-state', mountPath: '/var/lib/cdk8s-gpu' });
      expect(envOf(main).CDK8S_GPU_POD_STATE_DIR).toBe('/var/lib/cdk8s-gpu');
    });

    test('the run id defaults to the StatefulSet name, so a new version is a new run', () => {
      expect(envOf(synth({ version: 2 }).main).CDK8S_GPU_RUN_ID).toBe('onnx-trainer-v2');
      const { main, trainer } = synth({ runId: 'lr-sweep-3' });
      expect(envOf(main).CDK8S_GPU_RUN_ID).toBe('lr-sweep-3');
      expect(trainer.runId).toBe('lr-sweep-3');
      expect(() => construct({ runId: '../x' })).toThrow(/runId must be a DNS-1123 label/);
    });

    test("completion is visible to kubectl wait through the trainer's last termination, and no readiness probe gates it", () => {
      const { main, trainer } = synth({}, 'trainer', 'ml');
      expect(trainer.waitForCompletionCommand).toBe(
        'kubectl wait pod -n ml -l app.kubernetes.io/instance=onnx-trainer --for=jsonpath=\'{.status.containerStatuses[?(@.name=="trainer")].lastState.terminated.reason}\'=Completed --timeout=-1s',
      );
      expect(trainer.restartCommand).toBe(
        'kubectl delete pod -n ml -l app.kubernetes.io/instance=onnx-trainer --wait=false',
      );
      expect(main.name).toBe('trainer');
      // Ready must keep meaning "running": Kueue's waitForPodsReady and the PDB count Ready pods.
      expect(main.readinessProbe).toBeUndefined();
      expect(main.terminationMessagePath).toBeUndefined();
    });
  });

  test('the README shows the exact wait and restart commands the construct reports', () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8').replace(/ \\\n\s+/g, ' ');
    const { trainer } = synth({ name: 'llm-pretrain' }, 'pretrain', 'ml');
    expect(readme).toContain(trainer.waitForCompletionCommand);
    expect(readme).toContain(trainer.restartCommand);
  });

  describe('an honest checkpoint window', () => {
    test.each([
      [300, 285],
      [900, 885],
      [30, 15],
      [29, 14],
      [10, 5],
      [1, 0],
      [0, 0],
    ])('a grace period of %ds gives torchrun %ds', (grace, timeout) => {
      const { main, pod, trainer } = synth({ terminationGracePeriod: Duration.seconds(grace) });
      expect(pod.terminationGracePeriodSeconds).toBe(grace);
      expect(envOf(main).TORCH_ELASTIC_SHUTDOWN_TIMEOUT).toBe(String(timeout));
      expect(trainer.shutdownTimeoutSeconds).toBe(timeout);
    });

    test('the grace period defaults to five minutes', () => {
      expect(synth().pod.terminationGracePeriodSeconds).toBe(300);
    });
  });

  describe('admitted whole: Kueue', () => {
    test("queueName labels the StatefulSet (not the pods: Kueue's webhook does that)", () => {
      const { sts, trainer } = synth({ queueName: 'gpu-team-a' });
      expect(sts.metadata.labels['kueue.x-k8s.io/queue-name']).toBe('gpu-team-a');
      expect(sts.spec.template.metadata.labels['kueue.x-k8s.io/queue-name']).toBeUndefined();
      expect(sts.spec.selector.matchLabels['kueue.x-k8s.io/queue-name']).toBeUndefined();
      expect(sts.spec.podManagementPolicy).toBe('Parallel');
      expect(trainer.queueName).toBe('gpu-team-a');
      expect(synth().sts.metadata.labels['kueue.x-k8s.io/queue-name']).toBeUndefined();
    });

    test.each(['', 'Team A', 'a'.repeat(64), 'team_a'])('queueName %j is refused', q => {
      expect(() => construct({ queueName: q })).toThrow(/^GpuTrainingStatefulSet 'trainer': queueName must be/);
    });

    test("Kueue's own pod labels are refused, pointing at queueName", () => {
      expect(() => construct({ pod: { labels: { 'kueue.x-k8s.io/queue-name': 'q' } } })).toThrow(
        /pod.labels.kueue.x-k8s.io\/queue-name is Kueue's: set queueName/,
      );
    });

    test('gang scheduling through another scheduler goes through pod.schedulerName and pod.annotations', () => {
      const { pod, sts } = synth({
        pod: { schedulerName: 'volcano', annotations: { 'scheduling.k8s.io/group-name': 'onnx-trainer' } },
      });
      expect(pod.schedulerName).toBe('volcano');
      expect(sts.spec.template.metadata.annotations['scheduling.k8s.io/group-name']).toBe('onnx-trainer');
    });
  });

  describe('no mixed generations: the rendezvous id carries the rank spec', () => {
    const id = (props: Partial<GpuTrainingStatefulSetProps>) => envOf(synth(props).main).PET_RDZV_ID as string;
    const baseline = id({ replicas: 2 });

    test('it starts with the run id', () => {
      expect(baseline).toMatch(/^onnx-trainer-[0-9a-f]{10}$/);
      expect(id({ replicas: 2, runId: 'r7' })).toMatch(/^r7-[0-9a-f]{10}$/);
    });

    test.each<[string, Partial<GpuTrainingStatefulSetProps>]>([
      ['world size', { replicas: 3 }],
      ['GPUs per pod', { replicas: 2, gpusPerPod: 4 }],
      ['image', { replicas: 2, image: 'onnxruntime/multi-gpu:1.3.1' }],
      ['arguments', { replicas: 2, args: ['train.py', '--lr', '1e-4'] }],
      ['env', { replicas: 2, env: { NCCL_DEBUG: 'INFO' } }],
      ['memory', { replicas: 2, memory: Size.gibibytes(64) }],
      ['max restarts', { replicas: 2, maxRestarts: 1 }],
    ])('a change of %s gives a new rendezvous id, so old and new ranks never form one gang', (_what, props) => {
      expect(id(props)).not.toBe(baseline);
    });

    test('pod metadata, scheduling and gpuConfig do not change it', () => {
      expect(
        id({ replicas: 2, pod: { labels: { team: 'nlp' }, annotations: { a: 'b' }, priorityClassName: 'high' } }),
      ).toBe(baseline);
      expect(id({ replicas: 2, gpuConfig: { NCCL_DEBUG: 'INFO' } })).toBe(
        id({ replicas: 2, gpuConfig: { NCCL_DEBUG: 'WARN' } }),
      );
    });
  });

  describe('RDMA', () => {
    test('a shared RDMA device: resource, NCCL_NET=IB so NCCL cannot fall back to sockets, IPC_LOCK, privileged', () => {
      const { main, pod, trainer } = synth({ rdma: Rdma.sharedDevice({ hca: 'mlx5', gidIndex: 3 }) });
      expect(main.resources.limits['rdma/rdma_shared_device_a']).toBe(1);
      expect(main.resources.requests['rdma/rdma_shared_device_a']).toBe(1);
      expect(envOf(main)).toMatchObject({ NCCL_NET: 'IB', NCCL_IB_HCA: 'mlx5', NCCL_IB_GID_INDEX: '3' });
      expect(main.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['IPC_LOCK'] });
      expect(podSecurityLevel(pod)).toBe('privileged');
      expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.PRIVILEGED);
      expect(Rdma.sharedDevice().podSecurityLevel).toBe(PodSecurityLevel.PRIVILEGED);
    });

    test('the InfiniBand choices run the trainer as root, where their IPC_LOCK reaches it (no ambient capabilities for a non-root exec)', () => {
      for (const rdma of [
        Rdma.sharedDevice(),
        Rdma.sriov({ networks: ['ib-a'], resourceName: 'nvidia.com/sriov_rdma_vf' }),
      ]) {
        const { pod, main, trainer } = synth({ rdma });
        expect(pod.securityContext.runAsUser).toBeUndefined();
        expect(main.securityContext.runAsNonRoot).toBeUndefined();
        expect(envOf(main).USER).toBeUndefined();
        expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.PRIVILEGED);
        expect(() => synth({ rdma, runAsRoot: false })).toThrow(
          /^GpuTrainingStatefulSet 'trainer': runAsRoot must be true with Rdma\.sharedDevice\(\) or Rdma\.sriov\(\): their IPC_LOCK reaches only a root process .* \(got false\)$/,
        );
        expect(() => synth({ rdma, runAsUser: 1000 })).toThrow(
          "GpuTrainingStatefulSet 'trainer': runAsUser must be left out when the pod runs as root (runAsRoot: true) (got 1000)",
        );
      }
      // EFA adds no capability: the pod stays non-root.
      expect(synth({ rdma: Rdma.efa(1) }).pod.securityContext.runAsUser).toBe(1000);
    });

    test('SR-IOV through Multus: the networks annotation, one VF per network, bootstrap on eth0', () => {
      const { main, sts } = synth({
        rdma: Rdma.sriov({ networks: ['ib-a', 'ml/ib-b@net2'], resourceName: 'nvidia.com/sriov_rdma_vf' }),
      });
      expect(sts.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']).toBe('ib-a,ml/ib-b@net2');
      expect(main.resources.limits['nvidia.com/sriov_rdma_vf']).toBe(2);
      expect(envOf(main)).toMatchObject({ NCCL_NET: 'IB', NCCL_SOCKET_IFNAME: 'eth0' });
      expect(main.securityContext.capabilities.add).toEqual(['IPC_LOCK']);
    });

    test('AWS EFA: the EFA resource and libfabric settings, and no capability: the pod stays restricted', () => {
      const { main, pod, trainer } = synth({ rdma: Rdma.efa(4) });
      expect(main.resources.limits['vpc.amazonaws.com/efa']).toBe(4);
      expect(envOf(main)).toMatchObject({ FI_PROVIDER: 'efa', FI_EFA_USE_HUGE_PAGE: '0' });
      expect(envOf(main).FI_EFA_USE_DEVICE_RDMA).toBeUndefined();
      expect(main.securityContext.capabilities.add).toBeUndefined();
      expect(podSecurityLevel(pod)).toBe('restricted');
      expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
      expect(Rdma.efa(4).podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
    });

    test('the NCCL defaults give way to env or gpuConfig', () => {
      expect(envOf(synth({ rdma: Rdma.sharedDevice(), env: { NCCL_NET: 'IBext' } }).main).NCCL_NET).toBe('IBext');
      const { main, objects } = synth({ rdma: Rdma.sharedDevice(), gpuConfig: { NCCL_NET: 'IBext' } });
      expect(envOf(main).NCCL_NET).toBeUndefined();
      expect(gpuConfigOf(objects).data.NCCL_NET).toBe('IBext');
    });

    test.each<[string, Partial<GpuTrainingStatefulSetProps>, RegExp]>([
      [
        'a boolean',
        { rdma: true as any },
        /rdma must be made with Rdma.sharedDevice\(\), Rdma.sriov\(\{...\}\) or Rdma.efa\(n\) \(got true\)/,
      ],
      ['EFA count 0', { rdma: Rdma.efa(0) }, /rdma \(Rdma.efa count\) must be a whole number from 1 to 64 \(got 0\)/],
      [
        'no networks',
        { rdma: Rdma.sriov({ networks: [], resourceName: 'nvidia.com/vf' }) },
        /rdma.networks must name at least one/,
      ],
      [
        'a bad network',
        { rdma: Rdma.sriov({ networks: ['Bad Net'], resourceName: 'nvidia.com/vf' }) },
        /rdma.networks\[0\] must be a NetworkAttachmentDefinition/,
      ],
      [
        'a network twice',
        { rdma: Rdma.sriov({ networks: ['a', 'a'], resourceName: 'nvidia.com/vf' }) },
        /rdma.networks must not name an attachment twice/,
      ],
      [
        'a resource without a domain',
        { rdma: Rdma.sharedDevice({ resourceName: 'rdma' }) },
        /rdma.resourceName must be an extended resource name/,
      ],
      [
        'a GID index out of range',
        { rdma: Rdma.sharedDevice({ gidIndex: 256 }) },
        /rdma.gidIndex must be a whole number from 0 to 255/,
      ],
      [
        'an unknown option',
        { rdma: Rdma.sharedDevice({ hcas: 'mlx5' } as any) },
        /rdma.hcas is not a known prop; did you mean 'hca'\?/,
      ],
      [
        'the resource twice',
        { rdma: Rdma.efa(4), extendedResources: { 'vpc.amazonaws.com/efa': 4 } },
        /extendedResources.vpc.amazonaws.com\/efa is requested by rdma already/,
      ],
      [
        'the networks annotation twice',
        {
          rdma: Rdma.sriov({ networks: ['a'], resourceName: 'nvidia.com/vf' }),
          pod: { annotations: { 'k8s.v1.cni.cncf.io/networks': 'b' } },
        },
        /pod.annotations.k8s.v1.cni.cncf.io\/networks is set by rdma/,
      ],
      [
        'the networks annotation beside shared-device networks',
        { rdma: Rdma.sharedDevice({ networks: ['a'] }), pod: { annotations: { 'k8s.v1.cni.cncf.io/networks': 'b' } } },
        /pod.annotations.k8s.v1.cni.cncf.io\/networks is set by rdma/,
      ],
    ])('%s is refused', (_label, props, message) => {
      expect(() => construct(props)).toThrow(message);
    });
  });

  describe('storage', () => {
    test.each(['kueue.x-k8s.io/podset-required-topology', 'kueue.x-k8s.io/podset-preferred-topology'])(
      'per-rank disks with Kueue topology-aware scheduling (%s) are refused: Kueue ignores where a bound volume lives (kueue#14708)',
      annotation => {
        const props = { queueName: 'q', pod: { annotations: { [annotation]: 'cloud.provider.com/topology-block' } } };
        expect(() => construct({ ...props, storage: { size: Size.gibibytes(10) } })).toThrow(
          `pod.annotations.${annotation} must not be set with storage: Kueue's topology-aware scheduling ignores where a rank's bound volume lives (kueue#14708)`,
        );
        // A shared ReadWriteMany claim follows the pod anywhere.
        expect(() => construct({ ...props, sharedCheckpoints: { claimName: 'shared' } })).not.toThrow();
      },
    );

    test('claim templates with retention Retain/Retain', () => {
      const { sts, main, trainer } = synth({
        replicas: 2,
        storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100), storageClassName: 'fast-ssd' },
      });
      expect(sts.spec.volumeClaimTemplates).toHaveLength(1);
      const [vct] = sts.spec.volumeClaimTemplates;
      expect(vct.metadata.name).toBe('gpu-pvc');
      expect(vct.spec).toEqual({
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '100Gi' } },
        storageClassName: 'fast-ssd',
      });
      expect(main.volumeMounts).toContainEqual({ name: 'gpu-pvc', mountPath: '/checkpoints' });
      expect(sts.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Retain', whenScaled: 'Retain' });
      expect(trainer.claimNames).toEqual(['gpu-pvc-onnx-trainer-0', 'gpu-pvc-onnx-trainer-1']);
    });

    test('the claim name defaults to data', () => {
      const { sts, trainer } = synth({ storage: { size: Size.gibibytes(1) } });
      expect(sts.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
      expect(trainer.claimName).toBe('data');
    });

    test.each(['/tmp', '/dev/shm', '/home/trainer', '/var/lib/cdk8s-gpu'])(
      'storage.mountPath %s collides with a mount of the pod and is refused',
      p => {
        expect(() => construct({ storage: { size: Size.gibibytes(1), mountPath: p } })).toThrow(
          /^GpuTrainingStatefulSet 'trainer': storage.mountPath must not be a path container 'trainer' already mounts/,
        );
      },
    );

    test.each(['/', '/etc', '/checkpoints/', '/a//b', 'ckpt'])('storage.mountPath %j is refused', p => {
      expect(() => construct({ storage: { size: Size.gibibytes(1), mountPath: p } })).toThrow(
        /^GpuTrainingStatefulSet 'trainer': storage.mountPath must/,
      );
    });

    test.each(['dshm', 'home', 'tmp', 'job-state', 'shared-checkpoints'])(
      'storage.claimName %s, a volume of the pod, is refused',
      name => {
        expect(() => construct({ storage: { claimName: name, size: Size.gibibytes(1) } })).toThrow(
          /^GpuTrainingStatefulSet 'trainer': storage.claimName must differ from the pod's own volumes/,
        );
      },
    );

    test('a user volume named like the claim template is refused', () => {
      expect(() =>
        construct({
          storage: { claimName: 'ckpt', size: Size.gibibytes(1) },
          volumes: [{ volume: { name: 'ckpt', emptyDir: {} } }],
        }),
      ).toThrow(/volumes\[0\].volume.name must not reuse a volume name the pod already has/);
    });
  });

  describe('shared checkpoints', () => {
    test('an existing ReadWriteMany claim is mounted by every rank, beside the per-rank claims', () => {
      const { pod, main, trainer, objects } = synth({
        storage: { size: Size.gibibytes(1) },
        sharedCheckpoints: { claimName: 'team-ckpt', mountPath: '/dcp' },
      });
      expect(pod.volumes).toContainEqual({
        name: 'shared-checkpoints',
        persistentVolumeClaim: { claimName: 'team-ckpt' },
      });
      expect(main.volumeMounts).toContainEqual({ name: 'shared-checkpoints', mountPath: '/dcp' });
      expect(main.volumeMounts).toContainEqual({ name: 'data', mountPath: '/checkpoints' });
      expect(trainer.sharedClaimName).toBe('team-ckpt');
      // Not owned by the StatefulSet: no claim object, nothing to adopt on a version bump.
      expect(objects.filter(o => o.kind === 'PersistentVolumeClaim')).toEqual([]);
    });

    test('a new version mounts the same shared claim', () => {
      const v1 = synth({ sharedCheckpoints: { claimName: 'team-ckpt' } }).pod.volumes;
      const v2 = synth({ version: 2, sharedCheckpoints: { claimName: 'team-ckpt' } }).pod.volumes;
      expect(v2.find((v: any) => v.name === 'shared-checkpoints')).toEqual(
        v1.find((v: any) => v.name === 'shared-checkpoints'),
      );
    });

    test.each<[Partial<GpuTrainingStatefulSetProps>, RegExp]>([
      [{ sharedCheckpoints: { claimName: 'Team' } }, /sharedCheckpoints.claimName must be a DNS-1123 subdomain/],
      [
        { sharedCheckpoints: { claimName: 'c', mountPath: '/tmp' } },
        /sharedCheckpoints.mountPath must not be a path container 'trainer' already mounts/,
      ],
      [
        { storage: { size: Size.gibibytes(1) }, sharedCheckpoints: { claimName: 'c', mountPath: '/checkpoints' } },
        /storage.mountPath must not be a path container 'trainer' already mounts/,
      ],
      [{ sharedCheckpoints: { claimName: 'c', path: '/x' } as any }, /sharedCheckpoints.path is not a known prop/],
      [{ sharedCheckpoints: 'c' as any }, /sharedCheckpoints must be an object/],
    ])('%j is refused', (props, message) => {
      expect(() => construct(props)).toThrow(message);
    });
  });

  describe('security', () => {
    test('the default pod template meets the restricted profile with a writable home', () => {
      const { pod, main, trainer } = synth({ storage: { size: Size.gibibytes(1) } });
      expect(podSecurityLevel(pod)).toBe('restricted');
      expect(trainer.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.enableServiceLinks).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
      const env = envOf(main);
      expect(env.HOME).toBe('/home/trainer');
      expect(env.XDG_CACHE_HOME).toBe('/home/trainer/.cache');
      // UID 1000 has no passwd entry in root images: getpass.getuser() (torch.compile) needs USER.
      expect(env.USER).toBe('trainer');
      expect(main.volumeMounts).toContainEqual({ name: 'home', mountPath: '/home/trainer' });
    });

    test('runAsRoot is a named opt-in that keeps everything else locked down', () => {
      const { pod, main } = synth({ runAsRoot: true });
      expect(pod.securityContext.runAsUser).toBeUndefined();
      expect(main.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(podSecurityLevel(pod)).toBe('baseline');
      expect(envOf(main).HOME).toBeUndefined();
      expect(envOf(main).USER).toBeUndefined();
    });
  });

  describe('disruption', () => {
    test('blocks voluntary evictions of a running job by default, but never for unhealthy pods', () => {
      const { objects, sts, trainer } = synth();
      const pdb = findOne(objects, 'PodDisruptionBudget');
      expect(pdb.spec).toEqual({
        maxUnavailable: 0,
        selector: sts.spec.selector,
        unhealthyPodEvictionPolicy: 'AlwaysAllow',
      });
      expect(trainer.podDisruptionBudget).toBeDefined();
    });

    test('can be changed or removed', () => {
      expect(
        findOne(synth({ disruptionBudget: DisruptionBudget.maxUnavailable(1) }).objects, 'PodDisruptionBudget').spec
          .maxUnavailable,
      ).toBe(1);
      expect(
        findOne(
          synth({ replicas: 3, disruptionBudget: DisruptionBudget.minAvailable(3) }).objects,
          'PodDisruptionBudget',
        ).spec.minAvailable,
      ).toBe(3);
      const none = synth({ disruptionBudget: DisruptionBudget.none() });
      expect(none.objects.filter(o => o.kind === 'PodDisruptionBudget')).toEqual([]);
      expect(none.trainer.podDisruptionBudget).toBeUndefined();
    });

    test.each<[DisruptionBudget, RegExp]>([
      [DisruptionBudget.minAvailable(4), /disruptionBudget minAvailable must be at most replicas \(3\).*\(got 4\)/],
      [
        DisruptionBudget.maxUnavailable(-1),
        /disruptionBudget \(maxUnavailable\) must be a whole number >= 0 \(got -1\)/,
      ],
      [DisruptionBudget.minAvailable(1.5), /disruptionBudget \(minAvailable\) must be a whole number >= 0 \(got 1.5\)/],
      ['maxUnavailable' as any, /disruptionBudget must be made with DisruptionBudget/],
    ])('%p is refused', (budget, message) => {
      expect(() => construct({ replicas: 3, disruptionBudget: budget })).toThrow(message);
    });
  });

  describe('GPU configuration apart from the StatefulSet', () => {
    test('a ConfigMap consumed with envFrom, and a content hash on the pod template', () => {
      const { objects, main, sts, trainer } = synth({
        version: 2,
        gpuConfig: { NCCL_DEBUG: 'INFO', NCCL_IB_DISABLE: '1' },
      });
      const cm = gpuConfigOf(objects);
      expect(cm.metadata.name).toBe('onnx-trainer-v2-gpu-config');
      expect(cm.data).toEqual({ NCCL_DEBUG: 'INFO', NCCL_IB_DISABLE: '1' });
      expect(main.envFrom).toEqual([{ configMapRef: { name: trainer.gpuConfigMapName } }]);
      expect(trainer.gpuConfigMap).toBeDefined();
      expect(sts.spec.template.metadata.annotations['cdk8s-gpu.io/gpu-config-hash']).toMatch(/^[0-9a-f]{16}$/);
    });

    test('a config change changes only the pod template annotation', () => {
      const a = synth({ gpuConfig: { NCCL_DEBUG: 'INFO' } }).sts;
      const b = synth({ gpuConfig: { NCCL_DEBUG: 'WARN' } }).sts;
      const hash = (s: any) => s.spec.template.metadata.annotations['cdk8s-gpu.io/gpu-config-hash'];
      expect(hash(a)).not.toEqual(hash(b));
      const strip = (s: any) => ({
        ...s.spec,
        template: { ...s.spec.template, metadata: { labels: s.spec.template.metadata.labels } },
      });
      expect(strip(a)).toEqual(strip(b));
    });

    test('a key also set in env, which would silently win, is refused', () => {
      expect(() => construct({ env: { NCCL_DEBUG: 'INFO' }, gpuConfig: { NCCL_DEBUG: 'WARN' } })).toThrow(
        /gpuConfig.NCCL_DEBUG is also set in env/,
      );
    });
  });

  describe('every shared workload prop reaches the pod template', () => {
    const cases: Array<[string, Partial<GpuTrainingStatefulSetProps>, (r: ReturnType<typeof synth>) => void]> = [
      ['env (string)', { env: { NCCL_DEBUG: 'INFO' } }, r => expect(envOf(r.main).NCCL_DEBUG).toBe('INFO')],
      [
        'env (EnvValue)',
        { env: { WANDB_API_KEY: EnvValue.fromSecretKey('wandb', 'key') } },
        r => expect(envOf(r.main).WANDB_API_KEY).toEqual({ secretKeyRef: { name: 'wandb', key: 'key' } }),
      ],
      [
        'envFrom',
        { envFrom: [EnvFrom.secret('s3-creds')] },
        r => expect(r.main.envFrom).toContainEqual({ secretRef: { name: 's3-creds' } }),
      ],
      [
        'volumes',
        {
          volumes: [
            {
              volume: { name: 'datasets', persistentVolumeClaim: { claimName: 'datasets', readOnly: true } },
              mountPath: '/data',
              readOnly: true,
            },
          ],
        },
        r => {
          expect(r.pod.volumes).toContainEqual({
            name: 'datasets',
            persistentVolumeClaim: { claimName: 'datasets', readOnly: true },
          });
          expect(r.main.volumeMounts).toContainEqual({ name: 'datasets', mountPath: '/data', readOnly: true });
        },
      ],
      [
        'gpuResource',
        { gpuResource: 'nvidia.com/mig-1g.10gb' },
        r => {
          expect(r.main.resources.limits['nvidia.com/mig-1g.10gb']).toBe(2);
          expect(r.main.resources.limits['nvidia.com/gpu']).toBeUndefined();
        },
      ],
      [
        'extendedResources',
        { extendedResources: { 'example.com/fpga': 1 } },
        r => expect(r.main.resources.limits['example.com/fpga']).toBe(1),
      ],
      ['cpu', { cpu: 12 }, r => expect(r.main.resources.requests.cpu).toBe('12')],
      [
        'guaranteedQos',
        { guaranteedQos: true },
        r => expect(r.main.resources.limits.cpu).toBe(r.main.resources.requests.cpu),
      ],
      ['memory', { memory: Size.gibibytes(100) }, r => expect(r.main.resources.limits.memory).toBe('100Gi')],
      [
        'nodeSelector',
        { nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' } },
        r => expect(r.pod.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }),
      ],
      [
        'runAsUser',
        { runAsUser: 4242 },
        r => expect(r.pod.securityContext).toMatchObject({ runAsUser: 4242, runAsGroup: 4242, fsGroup: 4242 }),
      ],
      [
        'clusterDomain',
        { clusterDomain: 'corp.example' },
        r => expect(envOf(r.main).MASTER_ADDR).toMatch(/\.svc\.corp\.example$/),
      ],
      [
        'pod.tolerations',
        { pod: { tolerations: [{ key: 'sku', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] } },
        r => {
          expect(r.pod.tolerations).toContainEqual({
            key: 'sku',
            operator: 'Equal',
            value: 'gpu',
            effect: 'NoSchedule',
          });
          expect(r.pod.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
        },
      ],
      [
        'pod.affinity',
        {
          pod: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
                },
              },
            },
          },
        },
        r =>
          expect(
            r.pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]
              .matchExpressions[0].key,
          ).toBe('zone'),
      ],
      [
        'pod.topologySpreadConstraints',
        {
          pod: {
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'DoNotSchedule',
                labelSelector: { matchLabels: { a: 'b' } },
              },
            ],
          },
        },
        r => expect(r.pod.topologySpreadConstraints).toHaveLength(1),
      ],
      [
        'pod.priorityClassName',
        { pod: { priorityClassName: 'training-high' } },
        r => expect(r.pod.priorityClassName).toBe('training-high'),
      ],
      [
        'pod.runtimeClassName',
        { pod: { runtimeClassName: 'nvidia' } },
        r => expect(r.pod.runtimeClassName).toBe('nvidia'),
      ],
      ['pod.schedulerName', { pod: { schedulerName: 'volcano' } }, r => expect(r.pod.schedulerName).toBe('volcano')],
      [
        'pod.imagePullSecrets',
        { pod: { imagePullSecrets: ['ngc-pull'] } },
        r => expect(r.pod.imagePullSecrets).toEqual([{ name: 'ngc-pull' }]),
      ],
      [
        'pod.serviceAccountName',
        { pod: { serviceAccountName: 'trainer' } },
        r => {
          expect(r.pod.serviceAccountName).toBe('trainer');
          expect(r.pod.automountServiceAccountToken).toBe(false);
        },
      ],
      [
        'pod.automountServiceAccountToken',
        { pod: { automountServiceAccountToken: true } },
        r => expect(r.pod.automountServiceAccountToken).toBe(true),
      ],
      [
        'pod.labels',
        { pod: { labels: { team: 'nlp' } } },
        r => {
          expect(r.sts.spec.template.metadata.labels.team).toBe('nlp');
          expect(r.sts.spec.selector.matchLabels.team).toBeUndefined();
        },
      ],
      [
        'pod.annotations',
        { pod: { annotations: { 'example.com/owner': 'nlp' } } },
        r => expect(r.sts.spec.template.metadata.annotations['example.com/owner']).toBe('nlp'),
      ],
      [
        'pod.sidecars',
        { pod: { sidecars: [{ name: 'logs', image: 'fluent/fluent-bit:3.1' }] } },
        r => {
          const sidecar = r.pod.initContainers.find((c: any) => c.name === 'logs');
          expect(sidecar.restartPolicy).toBe('Always');
          expect(sidecar.securityContext).toMatchObject({
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
          });
        },
      ],
      [
        'pod.initContainers',
        { pod: { initContainers: [{ name: 'fetch', image: 'busybox:1.36.1', command: ['true'] }] } },
        r => expect(r.pod.initContainers.map((c: any) => c.name)).toEqual(['fetch']),
      ],
    ];
    test.each(cases)('%s', (_label, props, check) => {
      check(synth(props));
    });
  });

  test('every object is a public handle', () => {
    const { trainer } = synth({
      gpuConfig: { A: 'b' },
      storage: { size: Size.gibibytes(1), storageClassName: 'gp3' },
      replicas: 2,
      adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] },
    });
    expect(trainer.statefulSet).toBeInstanceOf(k8s.KubeStatefulSet);
    expect(trainer.service).toBeInstanceOf(k8s.KubeService);
    expect(trainer.podDisruptionBudget).toBeInstanceOf(k8s.KubePodDisruptionBudget);
    expect(trainer.gpuConfigMap).toBeInstanceOf(k8s.KubeConfigMap);
    expect(trainer.adoptedClaims.map(c => c.name)).toEqual(['data-onnx-trainer-0', 'data-onnx-trainer-1']);
  });

  describe('bad input throws clear errors', () => {
    const cases: Array<[string, Partial<GpuTrainingStatefulSetProps>, string | RegExp]> = [
      [
        'empty name',
        { name: '' },
        `GpuTrainingStatefulSet 'trainer': name must be a non-empty DNS-1123 label (got "")`,
      ],
      [
        'invalid name',
        { name: 'Onnx_Trainer' },
        /^GpuTrainingStatefulSet 'trainer': name must be a DNS-1123 label.* \(got "Onnx_Trainer"\)$/,
      ],
      [
        'name too long with -vN',
        { name: 'a'.repeat(50), version: 2 },
        /name must leave the StatefulSet name at most 52 characters once "-v2" is added/,
      ],
      [
        'gpusPerPod 0',
        { gpusPerPod: 0 },
        `GpuTrainingStatefulSet 'trainer': gpusPerPod must be a whole number >= 1 (got 0)`,
      ],
      [
        'gpusPerPod 1.5',
        { gpusPerPod: 1.5 },
        `GpuTrainingStatefulSet 'trainer': gpusPerPod must be a whole number >= 1 (got 1.5)`,
      ],
      ['replicas 0', { replicas: 0 }, `GpuTrainingStatefulSet 'trainer': replicas must be a whole number >= 1 (got 0)`],
      [
        'replicas NaN',
        { replicas: NaN },
        `GpuTrainingStatefulSet 'trainer': replicas must be a whole number >= 1 (got NaN)`,
      ],
      ['storage size 0', { storage: { size: Size.gibibytes(0) } }, /storage.size must be a positive size \(got 0Gi\)/],
      ['version 0', { version: 0 }, /version must be a whole number >= 1 \(got 0\)/],
      [
        'shm >= memory',
        { memory: Size.gibibytes(8), sharedMemory: Size.gibibytes(8) },
        /sharedMemory must be smaller than memory \(8Gi\)/,
      ],
      ['an image with a space', { image: 'onnx runtime' }, /image must be an image reference/],
      ['a typo in a prop', { replica: 3 } as any, /replica is not a known prop; did you mean 'replicas'\?/],
      [
        'a typo in storage',
        { storage: { size: Size.gibibytes(1), mountpath: '/x' } } as any,
        /storage.mountpath is not a known prop; did you mean 'mountPath'\?/,
      ],
      [
        'an unknown update strategy',
        { updateStrategy: 'Recreate' as any },
        /updateStrategy must be a TrainingUpdateStrategy \(got "Recreate"\)/,
      ],
      [
        'a grace period in millis',
        { terminationGracePeriod: Duration.millis(1500) },
        /terminationGracePeriod must be a whole number of seconds .*\(got 1500ms\)/,
      ],
    ];
    test.each(cases)('%s', (_label, props, message) => {
      expect(() => construct(props)).toThrow(message);
    });

    test('every error is a ConfigurationError', () => {
      expect(() => construct({ replicas: -1 })).toThrow(ConfigurationError);
    });
  });
});

describe('adopting existing volumes across a version bump', () => {
  const storage = { claimName: 'gpu-pvc', size: Size.gibibytes(100), storageClassName: 'fast-ssd' };

  test("adopted claims name the volumes' class: a claim without one takes the cluster's current default class", () => {
    expect(() =>
      construct({ replicas: 1, storage: { size: Size.gibibytes(1) }, adoptVolumes: { persistentVolumes: ['pv-a'] } }),
    ).toThrow("storage.storageClassName must name the adopted volumes' StorageClass with adoptVolumes");
  });

  test('emits one bound claim per ordinal, named as the claim template will look for it', () => {
    const { objects, sts } = synth({
      version: 2,
      replicas: 3,
      storage,
      adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b', 'pv-c'] },
    });
    const claims = objects.filter(o => o.kind === 'PersistentVolumeClaim');
    const template = sts.spec.volumeClaimTemplates[0];
    expect(claims.map(c => c.metadata.name)).toEqual([
      'gpu-pvc-onnx-trainer-v2-0',
      'gpu-pvc-onnx-trainer-v2-1',
      'gpu-pvc-onnx-trainer-v2-2',
    ]);
    claims.forEach((c, i) => {
      expect(c.spec.volumeName).toBe(['pv-a', 'pv-b', 'pv-c'][i]);
      expect(c.spec.accessModes).toEqual(template.spec.accessModes);
      expect(c.spec.resources).toEqual(template.spec.resources);
      expect(c.spec.storageClassName).toBe(template.spec.storageClassName);
    });
  });

  test.each<[string, Partial<GpuTrainingStatefulSetProps>, string | RegExp]>([
    [
      'count differs from replicas',
      { replicas: 3, storage, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] } },
      `GpuTrainingStatefulSet 'trainer': adoptVolumes.persistentVolumes must name exactly one PersistentVolume per replica (3) (got ["pv-a","pv-b"])`,
    ],
    [
      'a volume named twice',
      { replicas: 2, storage, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-a'] } },
      /must not name a volume twice.*\(got "pv-a"\)/,
    ],
    [
      'no storage',
      { adoptVolumes: { persistentVolumes: ['pv-a'] } },
      "GpuTrainingStatefulSet 'trainer': adoptVolumes needs storage: adopted volumes are bound to the checkpoint claims",
    ],
    [
      'not an array',
      { storage, adoptVolumes: { persistentVolumes: 'pv-a' as any } },
      /adoptVolumes.persistentVolumes must be an array of strings/,
    ],
  ])('%s is an error', (_label, props, message) => {
    expect(() => construct(props)).toThrow(message);
  });
});

describe('sidecar ports', () => {
  test('a sidecar on the rendezvous port (or its name) is refused: rank 0 could not bind the c10d store', () => {
    expect(() =>
      synth({
        pod: { sidecars: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.30.1', ports: [{ containerPort: 29500 }] }] },
      }),
    ).toThrow(
      /^GpuTrainingStatefulSet 'trainer': pod\.sidecars\[0\]\.ports\[0\]\.containerPort must differ from the port container 'trainer' listens on/,
    );
    expect(() =>
      synth({
        pod: {
          sidecars: [
            { name: 'proxy', image: 'envoyproxy/envoy:v1.30.1', ports: [{ containerPort: 9901, name: 'rendezvous' }] },
          ],
        },
      }),
    ).toThrow(/ports\[0\]\.name must differ/);
    expect(() =>
      synth({
        pod: {
          sidecars: [
            { name: 'proxy', image: 'envoyproxy/envoy:v1.30.1', ports: [{ containerPort: 9901, name: 'admin' }] },
          ],
        },
      }),
    ).not.toThrow();
  });
});

describe('the launch wrapper is told what the run needs', () => {
  test('run-wide completion on a shared volume, a cap on failed starts, a store per rendezvous round', () => {
    const alone = envOf(synth({ storage: { size: Size.gibibytes(1) } }).main);
    expect(alone.CDK8S_GPU_STATE_SHARED).toBeUndefined();
    expect(alone.CDK8S_GPU_MAX_FAILED_STARTS).toBe('10');
    expect(alone.TORCH_DISABLE_SHARE_RDZV_TCP_STORE).toBe('1');
    const shared = envOf(synth({ sharedCheckpoints: { claimName: 'team-ckpt' }, maxFailedStarts: 3 }).main);
    expect(shared.CDK8S_GPU_STATE_SHARED).toBe('1');
    expect(shared.CDK8S_GPU_MAX_FAILED_STARTS).toBe('3');
  });
});
