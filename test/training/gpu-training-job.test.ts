import { inlineCommand } from '../support/runtime-scripts';
import { execFileSync } from 'child_process';
import { Chart, Duration, Size, Testing } from 'cdk8s';
import {
  DEFAULT_FAILURE_RULES,
  GpuTrainingJob,
  GpuTrainingJobProps,
  GpuTrainingStatefulSet,
  PodSecurityLevel,
  Rdma,
  Reload,
  RotatingGpuSecret,
  TrainingFailureAction,
} from '../../src';
import { checkManifests } from '../../src/checks/manifests';
import { crdErrors } from '../support/crd-schema';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, testChart, validateApp } from '../support/synth';
import { embeddedJobs, expectValidOutput } from '../support/valid-output';

const base: GpuTrainingJobProps = {
  name: 'pretrain',
  image: 'nvcr.io/nvidia/pytorch:24.08-py3',
  gpusPerPod: 8,
  nodes: 4,
  args: ['train.py'],
};

/**
 * Synthesizes a GpuTrainingJob and checks the whole output: built-ins strictly, the JobSet against the
 * vendored v0.12.0 CRD.
 */
function synth(props: Partial<GpuTrainingJobProps> = {}, namespace?: string) {
  const chart = testChart(namespace);
  const job = new GpuTrainingJob(chart, 'job', { ...base, ...props });
  validateApp(chart);
  const objects = Testing.synth(chart);
  expectValidOutput(objects);
  const errors = checkManifests(objects);
  if (errors.length > 0) throw new Error(errors.join('\n'));
  const jobSet = findOne(objects, 'JobSet');
  const jobSpec = jobSet.spec.replicatedJobs[0].template.spec;
  const pod = jobSpec.template.spec;
  return { job, objects, jobSet, jobSpec, pod, main: pod.containers[0] };
}

function construct(props: Partial<GpuTrainingJobProps>): GpuTrainingJob {
  return new GpuTrainingJob(new Chart(Testing.app(), 'c'), 'job', { ...base, ...props });
}

describe('GpuTrainingJob', () => {
  describe('the JobSet', () => {
    test('one Indexed Job of nodes pods that fails on its first failed pod; the JobSet restarts the gang', () => {
      const { jobSet, jobSpec, pod, job } = synth();
      expect(jobSet.apiVersion).toBe('jobset.x-k8s.io/v1alpha2');
      expect(jobSet.metadata.name).toBe('pretrain');
      expect(job.jobSetName).toBe('pretrain');
      expect(jobSet.spec.replicatedJobs).toHaveLength(1);
      expect(jobSet.spec.replicatedJobs[0]).toMatchObject({ name: 'node', replicas: 1 });
      expect(jobSpec).toMatchObject({ parallelism: 4, completions: 4, completionMode: 'Indexed', backoffLimit: 0 });
      expect(pod.restartPolicy).toBe('Never');
      expect(jobSet.spec.successPolicy).toEqual({ operator: 'All', targetReplicatedJobs: ['node'] });
      expect(jobSet.spec.failurePolicy.maxRestarts).toBe(3);
      expect(jobSet.spec.network).toEqual({ enableDNSHostnames: true, publishNotReadyAddresses: true });
    });

    test('maxRestarts is the JobSet failure policy: whole-gang restarts, then Failed', () => {
      expect(synth({ maxRestarts: 0 }).jobSet.spec.failurePolicy.maxRestarts).toBe(0);
      expect(synth({ maxRestarts: 10 }).jobSet.spec.failurePolicy.maxRestarts).toBe(10);
      expect(() => construct({ maxRestarts: -1 })).toThrow(/maxRestarts/);
    });

    test('the Job spec is emitted through the built-in converter: quantities and IntOrString are API JSON', () => {
      const { main } = synth();
      expect(main.resources.limits['nvidia.com/gpu']).toBe(8);
      expect(typeof main.resources.requests.memory).toBe('string');
    });

    test('every synthesized JobSet is valid against the vendored CRD, and its Job strictly as a built-in Job', () => {
      const { objects } = synth({
        queueName: 'gpu',
        priorityClass: 'high',
        topology: { required: 'cloud.provider.com/topology-block', exclusive: 'cloud.google.com/gke-nodepool' },
        checkpoints: { claimName: 'ckpt' },
        activeDeadline: Duration.hours(48),
        ttlAfterFinished: Duration.days(1),
        gpuConfig: { NCCL_DEBUG: 'WARN' },
        rdma: Rdma.efa(32),
        failurePolicy: [{ exitCodes: [3, 2], action: TrainingFailureAction.FAIL }],
      });
      expect(embeddedJobs(objects)).toHaveLength(1);
    });

    test('the CRD check is not vacuous: an unknown field in the JobSet is refused', () => {
      const { jobSet } = synth();
      expect(crdErrors({ ...jobSet, spec: { ...jobSet.spec, maxRestarts: 3 } }).join('\n')).toMatch(/maxRestarts/);
    });

    test('ttlAfterFinished, suspend and the deadline', () => {
      const { jobSet, jobSpec } = synth({
        ttlAfterFinished: Duration.hours(2),
        suspend: true,
        activeDeadline: Duration.hours(24),
      });
      expect(jobSet.spec.ttlSecondsAfterFinished).toBe(7200);
      expect(jobSet.spec.suspend).toBe(true);
      expect(jobSpec.activeDeadlineSeconds).toBe(86400);
      // A deadline fails the JobSet instead of restarting an attempt that is too slow.
      expect(jobSet.spec.failurePolicy.rules).toContainEqual({
        name: 'deadlineExceeded',
        action: 'FailJobSet',
        onJobFailureReasons: ['DeadlineExceeded'],
      });
      const plain = synth().jobSet.spec;
      expect(plain.ttlSecondsAfterFinished).toBeUndefined();
      expect(plain.suspend).toBeUndefined();
    });

    test('suspend is refused with queueName: Kueue owns it, and each apply would write the manifest value back', () => {
      for (const suspend of [true, false])
        expect(() => construct({ queueName: 'gpu', suspend })).toThrow(
          `GpuTrainingJob 'job': suspend must not be set with queueName: Kueue suspends the JobSet on creation and resumes it on admission`,
        );
      expect(synth({ queueName: 'gpu' }).jobSet.spec.suspend).toBeUndefined();
    });
  });

  describe('failure policy', () => {
    test('by default a preemption restarts without counting and an unrunnable launcher fails at once', () => {
      const { jobSet, jobSpec } = synth();
      expect(jobSpec.podFailurePolicy.rules).toEqual([
        { action: 'FailJob', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
        {
          action: 'FailJob',
          onExitCodes: { containerName: 'trainer', operator: 'In', values: [126, 127] },
        },
      ]);
      expect(jobSet.spec.failurePolicy.rules).toEqual([
        {
          name: 'podFailureRule0',
          action: 'RestartJobSetAndIgnoreMaxRestarts',
          onJobFailureReasons: ['PodFailurePolicy'],
          onJobFailureMessagePatterns: ['matching FailJob rule at index 0$'],
        },
        {
          name: 'podFailureRule1',
          action: 'FailJobSet',
          onJobFailureReasons: ['PodFailurePolicy'],
          onJobFailureMessagePatterns: ['matching FailJob rule at index 1$'],
        },
      ]);
      expect(DEFAULT_FAILURE_RULES).toHaveLength(2);
    });

    test("each JobSet rule's message pattern matches the Job controller's message for its own pod rule only", () => {
      // kubernetes pkg/controller/job/pod_failure_policy.go: the message of a FailJob match.
      const message = (i: number) =>
        `Container trainer for pod ml/pretrain-node-0-1-abcde failed with exit code 3 matching FailJob rule at index ${i}`;
      const { jobSet } = synth({
        failurePolicy: Array.from({ length: 12 }, (_, i) => ({
          exitCodes: [i + 1],
          action: TrainingFailureAction.FAIL,
        })),
      });
      const patterns: string[] = jobSet.spec.failurePolicy.rules.map((r: any) => r.onJobFailureMessagePatterns[0]);
      for (let i = 0; i < 12; i++) {
        expect(patterns.filter(p => new RegExp(p).test(message(i)))).toEqual([patterns[i]]);
      }
    });

    test('user rules replace the defaults; exit codes are sorted for the Job API', () => {
      const { jobSpec } = synth({ failurePolicy: [{ exitCodes: [42, 3], action: TrainingFailureAction.FAIL }] });
      expect(jobSpec.podFailurePolicy.rules).toEqual([
        {
          action: 'FailJob',
          onExitCodes: { containerName: 'trainer', operator: 'In', values: [3, 42] },
        },
      ]);
      expect(synth({ failurePolicy: [] }).jobSpec.podFailurePolicy).toBeUndefined();
    });

    test.each<[Partial<GpuTrainingJobProps>, RegExp]>([
      [{ failurePolicy: [{ action: TrainingFailureAction.FAIL }] }, /exactly one of exitCodes and podCondition/],
      [
        { failurePolicy: [{ exitCodes: [1], podCondition: 'X', action: TrainingFailureAction.FAIL }] },
        /exactly one of exitCodes and podCondition/,
      ],
      [{ failurePolicy: [{ exitCodes: [0], action: TrainingFailureAction.FAIL }] }, /exitCodes\[0\]/],
      [{ failurePolicy: [{ exitCodes: [256], action: TrainingFailureAction.FAIL }] }, /exitCodes\[0\]/],
      [{ failurePolicy: [{ exitCodes: [3, 3], action: TrainingFailureAction.FAIL }] }, /must not repeat/],
      [{ failurePolicy: [{ exitCodes: [], action: TrainingFailureAction.FAIL }] }, /1 to 255 exit codes/],
      [{ failurePolicy: [{ exitCodes: [1], action: 'RestartJob' as TrainingFailureAction }] }, /TrainingFailureAction/],
      [
        {
          failurePolicy: Array.from({ length: 21 }, () => ({ podCondition: 'X', action: TrainingFailureAction.FAIL })),
        },
        /at most 20 rules/,
      ],
    ])('refuses %j', (props, message) => {
      expect(() => construct(props)).toThrow(message);
    });
  });

  describe('rank wiring', () => {
    test('MASTER_ADDR is the index-0 pod in the JobSet headless Service; the node rank is the completion index', () => {
      const { main, job } = synth({}, 'ml');
      const env = envOf(main);
      expect(job.masterAddress).toBe('pretrain-node-0-0.pretrain.$(POD_NAMESPACE).svc.cluster.local');
      expect(env).toMatchObject({
        MASTER_ADDR: job.masterAddress,
        MASTER_PORT: '29500',
        PET_MASTER_ADDR: job.masterAddress,
        PET_MASTER_PORT: '29500',
        PET_RDZV_BACKEND: 'static',
        PET_NNODES: '4',
        PET_NPROC_PER_NODE: '8',
        WORLD_SIZE: '32',
        PET_MAX_RESTARTS: '0',
        PET_STANDALONE: '0',
      });
      const index = { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } };
      expect(env.PET_NODE_RANK).toEqual(index);
      expect(env.NODE_RANK).toEqual(index);
      expect(main.env[0].name).toBe('POD_NAMESPACE');
    });

    test('the launcher runs under the shared wrapper in its forward-only mode, as the StatefulSet runs it', () => {
      const { main } = synth({
        command: ['python3', '-m', 'torch.distributed.run'],
        args: ['train.py', '--lr', '1e-4'],
      });
      const chart = testChart();
      const sts = new GpuTrainingStatefulSet(chart, 'sts', { name: 'b', image: 'img:1', gpusPerPod: 1, args: ['x'] });
      // One wrapper, two modes: the Job's pods carry its signal handling and forwarding only, the first
      // lines of the StatefulSet's script and none of the job model, which never runs there.
      const [sh, flag, script, argv0] = main.command;
      const whole: string = inlineCommand(sts._podTemplate.main.command!)[2];
      expect([sh, flag, argv0]).toEqual(['sh', '-c', 'cdk8s-gpu-launch']);
      expect(script.split('\n')[0]).toBe("trap 'exit 143' TERM; trap 'exit 130' INT");
      const shared = script.slice(0, script.lastIndexOf('fail "this wrapper only forwards'));
      const code = (s: string): string[] => s.split('\n').filter((l: string) => !/^\s*#/.test(l));
      expect(code(whole).slice(0, code(shared).length - 1)).toEqual(code(shared).slice(0, -1));
      expect(script.split('\n').filter((l: string) => /^\s*#/.test(l))).toEqual([]);
      // Still a script dash reads.
      execFileSync('dash', ['-n', '-c', script]);
      expect(shared).toMatch(/if \[ "\$\{CDK8S_GPU_MODE:-\}" = forward \]; then\n {2}start_command "\$@"/);
      expect(script).not.toMatch(/write_marker|watch_run|CDK8S_GPU_RUN_ID/);
      expect(script.length).toBeLessThan(4096);
      expect(main.args).toEqual(['python3', '-m', 'torch.distributed.run', 'train.py', '--lr', '1e-4']);
      expect(synth().main.args).toEqual(['torchrun', 'train.py']);
      const env = Object.fromEntries(main.env.map((e: any) => [e.name, e.value]));
      expect(env.CDK8S_GPU_MODE).toBe('forward');
      // None of the StatefulSet's job model: no markers, no run id, no failed-start cap, no scratch volume.
      expect(Object.keys(env).filter(n => /^CDK8S_GPU_(?!MODE$)/.test(n))).toEqual([]);
      expect((main.volumeMounts ?? []).map((m: any) => m.name)).not.toContain('job-state');
    });

    test.each<[Partial<GpuTrainingJobProps>, string]>([
      [{ args: ['--standalone', 'train.py'] }, "args[0] must not pass torchrun's --standalone"],
      [
        { args: ['--nnodes=2', 'train.py'] },
        "args[0] must not pass torchrun's --nnodes: the construct sets it from nodes",
      ],
      [{ args: ['--node_rank', '0', 'train.py'] }, "args[0] must not pass torchrun's --node-rank"],
      [{ args: ['--master-addr=x', 'train.py'] }, 'from name and clusterDomain'],
      [{ args: ['--max-restarts=2', 'train.py'] }, 'maxRestarts (the JobSet restarts the gang)'],
      [
        { command: ['bash', '-c', 'torchrun --standalone --nproc-per-node=8 train.py'], args: [] },
        "command[2] must not pass torchrun's --standalone (in its shell string, at '--standalone')",
      ],
    ])('refuses a rendezvous option %j', (props, message) => {
      expect(() => construct(props)).toThrow(message);
    });

    test('the pods are one gang of JobSet labels the construct owns, with Kueue labels on the JobSet only', () => {
      const { jobSet, jobSpec } = synth({ queueName: 'gpu-queue', priorityClass: 'prod' });
      expect(jobSet.metadata.labels).toMatchObject({
        'kueue.x-k8s.io/queue-name': 'gpu-queue',
        'kueue.x-k8s.io/priority-class': 'prod',
        'app.kubernetes.io/instance': 'pretrain',
      });
      expect(Object.keys(jobSpec.template.metadata.labels).filter(k => k.startsWith('kueue'))).toEqual([]);
      expect(() => construct({ priorityClass: 'prod' })).toThrow(/priorityClass needs queueName/);
      expect(() => construct({ pod: { labels: { 'kueue.x-k8s.io/queue-name': 'q' } } })).toThrow(/is Kueue's/);
    });
  });

  describe('topology placement', () => {
    test('Kueue TAS annotations on the pod template, JobSet exclusive placement on the JobSet', () => {
      const { jobSet, jobSpec } = synth({
        queueName: 'q',
        topology: { preferred: 'cloud.provider.com/topology-rack', exclusive: 'cloud.google.com/gke-nodepool' },
      });
      expect(jobSpec.template.metadata.annotations).toMatchObject({
        'kueue.x-k8s.io/podset-preferred-topology': 'cloud.provider.com/topology-rack',
      });
      expect(jobSet.metadata.annotations).toEqual({
        'alpha.jobset.sigs.k8s.io/exclusive-topology': 'cloud.google.com/gke-nodepool',
      });
      const required = synth({ queueName: 'q', topology: { required: 'cloud.provider.com/topology-block' } });
      expect(required.jobSpec.template.metadata.annotations['kueue.x-k8s.io/podset-required-topology']).toBe(
        'cloud.provider.com/topology-block',
      );
    });

    test.each<[Partial<GpuTrainingJobProps>, RegExp]>([
      [{ topology: { required: 'a/b' } }, /topology.required needs queueName/],
      [{ queueName: 'q', topology: { required: 'a/b', preferred: 'c/d' } }, /must not be set with topology.required/],
      [{ topology: { exclusive: 'not a key' } }, /topology.exclusive/],
      [{ pod: { annotations: { 'kueue.x-k8s.io/podset-required-topology': 'x' } } }, /use topology.required/],
    ])('refuses %j', (props, message) => {
      expect(() => construct(props)).toThrow(message);
    });
  });

  describe('checkpoints', () => {
    test('a ReadWriteMany claim mounted by every pod', () => {
      const { pod, main } = synth({ checkpoints: { claimName: 'ckpt', mountPath: '/ckpt' } });
      expect(pod.volumes).toContainEqual({ name: 'checkpoints', persistentVolumeClaim: { claimName: 'ckpt' } });
      expect(main.volumeMounts).toContainEqual({ name: 'checkpoints', mountPath: '/ckpt' });
      expect(synth({ checkpoints: { claimName: 'ckpt' } }).main.volumeMounts).toContainEqual({
        name: 'checkpoints',
        mountPath: '/checkpoints',
      });
    });

    test('refuses a system directory or a path the pod already mounts', () => {
      expect(() => construct({ checkpoints: { claimName: 'c', mountPath: '/etc' } })).toThrow(/system directory/);
      expect(() => construct({ checkpoints: { claimName: 'c', mountPath: '/dev/shm' } })).toThrow(/already mounts/);
    });
  });

  describe('names', () => {
    test('the JobSet webhook limit: the longest pod name plus a 6-character suffix fits 63', () => {
      // pod: <name>-node-0-<nodes-1>-xxxxx
      const max = 63 - '-node-0-3'.length - 6;
      expect(synth({ name: 'a'.repeat(max) }).job.jobSetName).toHaveLength(max);
      expect(() => construct({ name: 'a'.repeat(max + 1) })).toThrow(
        `name must be at most ${max} characters with 4 nodes`,
      );
      expect(() => construct({ name: '1abc' })).toThrow(/must start with a letter/);
    });
  });

  describe('the shared practice', () => {
    test('restricted Pod Security by default, with a non-root home', () => {
      const { pod, job, main } = synth();
      expect(podSecurityLevel(pod)).toBe('restricted');
      expect(job.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
      expect(envOf(main)).toMatchObject({ HOME: '/home/trainer' });
    });

    test('gpuConfig in a ConfigMap whose hash the pods carry', () => {
      const { objects, jobSpec, job } = synth({ gpuConfig: { NCCL_DEBUG: 'INFO' } });
      expect(findOne(objects, 'ConfigMap', 'pretrain-gpu-config').data).toEqual({ NCCL_DEBUG: 'INFO' });
      expect(job.gpuConfigMapName).toBe('pretrain-gpu-config');
      expect(jobSpec.template.metadata.annotations['cdk8s-gpu.io/gpu-config-hash']).toMatch(/^[0-9a-f]+$/);
      expect(() => construct({ gpuConfig: { PET_NNODES: '2' } })).toThrow(/set nodes instead/);
    });

    test('EFA: 32 interfaces on p5.48xlarge, with NCCL bound to the EFA network', () => {
      const { main } = synth({ rdma: Rdma.efa(32) });
      expect(main.resources.limits['vpc.amazonaws.com/efa']).toBe(32);
      expect(envOf(main)).toMatchObject({ FI_PROVIDER: 'efa', NCCL_NET: 'AWS Libfabric' });
    });

    test('/dev/shm per GPU and the grace period for a checkpoint', () => {
      const { pod } = synth({ terminationGracePeriod: Duration.minutes(10), sharedMemory: Size.gibibytes(64) });
      expect(pod.terminationGracePeriodSeconds).toBe(600);
      expect(pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '64Gi' } });
    });

    test('both backends take the same practice props and build the same trainer container', () => {
      const shared = { image: 'img:1', gpusPerPod: 2, args: ['train.py'], gpuConfig: { NCCL_DEBUG: 'WARN' } };
      const chart = testChart();
      const job = new GpuTrainingJob(chart, 'job', { ...shared, name: 'a', nodes: 2 });
      const sts = new GpuTrainingStatefulSet(chart, 'sts', { ...shared, name: 'b', replicas: 2 });
      const a = job._podTemplate.main;
      const b = sts._podTemplate.main;
      expect(a.resources).toEqual(b.resources);
      expect(a.securityContext).toEqual(b.securityContext);
      const names = (c: typeof a) => (c.env ?? []).map(e => e.name);
      expect(names(a).filter(n => ['HOME', 'HF_HOME', 'USER', 'NPROC_PER_NODE', 'WORLD_SIZE'].includes(n))).toEqual(
        names(b).filter(n => ['HOME', 'HF_HOME', 'USER', 'NPROC_PER_NODE', 'WORLD_SIZE'].includes(n)),
      );
    });

    test('refuses unknown props', () => {
      expect(() => construct({ replicas: 3 } as Partial<GpuTrainingJobProps>)).toThrow(/replicas/);
    });
  });

  test('a RotatingGpuSecret mounts into it (a GpuWorkload): files the kubelet keeps current; a reload is a native sidecar', () => {
    const chart = testChart();
    const job = new GpuTrainingJob(chart, 'job', base);
    new RotatingGpuSecret(chart, 'creds', { name: 'hub-token', keys: ['token'] }).mountInto(job, {
      path: '/var/run/hub',
      onRotation: Reload.filesOnly(),
    });
    const { pod } = (() => {
      const objects = Testing.synth(chart);
      expectValidOutput(objects);
      return { pod: findOne(objects, 'JobSet').spec.replicatedJobs[0].template.spec.template.spec };
    })();
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0].volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/var/run/hub', readOnly: true }),
    );
    new RotatingGpuSecret(chart, 'other', { name: 'other' }).mountInto(job, {
      path: '/var/run/other',
      onRotation: Reload.sync(),
    });
    const after = findOne(Testing.synth(chart), 'JobSet').spec.replicatedJobs[0].template.spec.template.spec;
    // Still one regular container: the sync sidecar runs beside it as a native sidecar.
    expect(after.containers).toHaveLength(1);
    expect(after.initContainers.map((c: any) => [c.name, c.restartPolicy])).toEqual([['reload-other-0', 'Always']]);
  });

  test('pod.sidecars are native sidecars, so the trainer is the only regular container and the pods still complete', () => {
    const chart = testChart();
    new GpuTrainingJob(chart, 'job', {
      ...base,
      pod: { sidecars: [{ name: 'logs', image: 'fluent/fluent-bit:3.1.0' }] },
    });
    const objects = Testing.synth(chart);
    expectValidOutput(objects);
    const job = findOne(objects, 'JobSet').spec.replicatedJobs[0].template.spec;
    expect(job.template.spec.containers.map((c: any) => c.name)).toEqual(['trainer']);
    expect(job.template.spec.initContainers).toEqual([
      expect.objectContaining({ name: 'logs', restartPolicy: 'Always' }),
    ]);
    expect(job.podReplacementPolicy).toBe('Failed');
  });

  test('waitForCompletionCommand waits for the JobSet Completed condition', () => {
    const chart = testChart('ml');
    const job = new GpuTrainingJob(chart, 'job', base);
    expect(job.waitForCompletionCommand).toBe(
      'kubectl wait jobset/pretrain -n ml --for=condition=Completed --timeout=-1s',
    );
  });
});
