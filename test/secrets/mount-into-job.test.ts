import { Chart, Testing } from 'cdk8s';
import {
  GpuTrainingJob,
  GpuTrainingJobProps,
  GpuTrainingStatefulSet,
  GpuWorkload,
  PodSecurityLevel,
  Reload,
  RotatingGpuSecret,
} from '../../src';
import { findOne } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

/**
 * RotatingGpuSecret.mountInto a GpuTrainingJob: a running JobSet's pod template never changes, and
 * its pods must be able to finish, so the Secret is a whole-directory mount that the kubelet keeps
 * current in the running pods, read by the program itself (Reload.filesOnly()) or reloaded by a
 * native sidecar that stops when the trainer exits.
 */
const JOB: GpuTrainingJobProps = { name: 'pretrain', image: 'img:1', gpusPerPod: 8, nodes: 2, args: ['train.py'] };

function setup(onRotation: Reload, props: Partial<GpuTrainingJobProps> = {}) {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'ml' });
  const job = new GpuTrainingJob(chart, 'job', { ...JOB, ...props });
  const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
  return { chart, job, creds, mount: () => creds.mountInto(job, { path: '/etc/gpu', onRotation }) };
}

function podOf(chart: Chart) {
  const objects = Testing.synth(chart);
  expectValidOutput(objects);
  return findOne(objects, 'JobSet').spec.replicatedJobs[0].template.spec.template.spec;
}

describe('RotatingGpuSecret.mountInto a GpuTrainingJob', () => {
  test('Reload.filesOnly: the whole directory, read-only, in the JobSet pod template; no sidecar; still restricted', () => {
    const { chart, job, mount } = setup(Reload.filesOnly());
    // A GpuTrainingJob is a GpuWorkload.
    const workload: GpuWorkload = job;
    expect(workload).toBe(job);
    mount();
    const pod = podOf(chart);
    const vol = pod.volumes.find((v: any) => v.secret?.secretName === 'gpu-credentials');
    expect(vol.secret).toEqual({
      secretName: 'gpu-credentials',
      defaultMode: 0o440,
      items: [{ key: 'credentials.json', path: 'credentials.json' }],
    });
    const main = pod.containers[0];
    expect(main.volumeMounts).toContainEqual({ name: vol.name, mountPath: '/etc/gpu', readOnly: true });
    for (const c of pod.containers) for (const m of c.volumeMounts ?? []) expect(m.subPath).toBeUndefined();
    // Nothing that would outlive the trainer: the pods can still finish.
    expect(pod.containers.map((c: any) => c.name)).toEqual([main.name]);
    expect(pod.initContainers ?? []).toEqual([]);
    expect(pod.shareProcessNamespace).toBeUndefined();
    expect(pod.securityContext.fsGroup).toBeDefined();
    expect(job.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
  });

  test.each<[string, Reload, string]>([
    ['exec', Reload.exec(['/reload']), 'exec'],
    ['httpPost', Reload.httpPost('http://localhost:8080/reload'), 'http'],
    ['sync', Reload.sync(), 'sync'],
    ['signal', Reload.signal('HUP', { process: 'python3', exposeWorkloadToSidecar: true }), 'signal'],
  ])(
    'Reload.%s works: its sidecar is a native sidecar, which the kubelet stops when the trainer exits, so the pods still complete',
    (_name, reload, action) => {
      const { chart, job, mount } = setup(reload);
      mount();
      const pod = podOf(chart);
      // The trainer is the only regular container: the pod's phase follows it alone (KEP-753).
      expect(pod.containers.map((c: any) => c.name)).toEqual(['trainer']);
      const sidecar = pod.initContainers[pod.initContainers.length - 1];
      expect(sidecar).toMatchObject({ restartPolicy: 'Always', name: expect.stringMatching(/^reload-/) });
      expect(sidecar.env).toContainEqual({ name: 'ACTION', value: action });
      // The startup probe holds the trainer until the first record (and copies) exist.
      expect(sidecar.startupProbe.exec.command[2]).toMatch(/reloaded/);
      expect(pod.restartPolicy).toBe('Never');
      expect(job.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
    },
  );

  test("the Job's failure rules read only the trainer's exit codes: the sidecar's exit at pod end never matches one", () => {
    const { chart, mount } = setup(Reload.exec(['/reload']));
    mount();
    const objects = Testing.synth(chart);
    const job = findOne(objects, 'JobSet').spec.replicatedJobs[0].template.spec;
    const exitRules = job.podFailurePolicy.rules.filter((r: any) => r.onExitCodes);
    // The default rules: exit 126 or 127 fails at once.
    expect(exitRules.map((r: any) => r.onExitCodes)).toEqual([
      { containerName: 'trainer', operator: 'In', values: [126, 127] },
    ]);
    expect(job.podReplacementPolicy).toBe('Failed');
  });

  test('Reload.restart is refused: a running JobSet refuses pod-template changes, and Reloader does not restart JobSets', () => {
    const { chart, mount } = setup(Reload.restart());
    expect(mount).toThrow(
      /^RotatingGpuSecret 'creds': onRotation Reload\.restart\(\) needs a workload that rolls pod-template changes out: a running JobSet refuses pod-template changes \(the JobSet v0\.12\.0 webhook keeps spec\.replicatedJobs immutable unless the JobSet is suspended\).* \(got "a JobSet"\)$/,
    );
    expect(findOne(Testing.synth(chart), 'JobSet').metadata.annotations).toBeUndefined();
  });

  test("an env read of the rotating Secret in the JobSet's pods is refused: it would never see a rotation", () => {
    const { job, mount } = setup(Reload.filesOnly());
    job._podTemplate.main.env.push({
      name: 'TOKEN',
      valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'token' } },
    });
    expect(mount).toThrow(/mountInto container 'trainer' reads rotating Secret 'gpu-credentials' through env TOKEN/);
  });

  test("a JobSet in another namespace is refused: the JobSet's namespace is its pods'", () => {
    const app = Testing.app();
    const job = new GpuTrainingJob(new Chart(app, 'train', { namespace: 'training' }), 'job', JOB);
    const creds = new RotatingGpuSecret(new Chart(app, 'sec', { namespace: 'secrets' }), 'creds', { name: 'x' });
    expect(() => creds.mountInto(job, { path: '/etc/x', onRotation: Reload.filesOnly() })).toThrow(
      /needs a workload in the Secret's namespace \(secrets\).*\(got a workload in training\)$/,
    );
  });

  test('Reload.filesOnly on a StatefulSet trainer: the same mount, no sidecar, no Reloader annotation', () => {
    const chart = new Chart(Testing.app(), 'c');
    const t = new GpuTrainingStatefulSet(chart, 't', { name: 'trainer', image: 'i', gpusPerPod: 1, args: ['x'] });
    new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' }).mountInto(t, {
      path: '/etc/gpu',
      onRotation: Reload.filesOnly(),
    });
    const objects = Testing.synth(chart);
    expectValidOutput(objects);
    const sts = findOne(objects, 'StatefulSet');
    expect(sts.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['trainer']);
    expect(sts.metadata.annotations?.['secret.reloader.stakater.com/reload']).toBeUndefined();
    expect(sts.spec.template.spec.containers[0].volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/etc/gpu', readOnly: true }),
    );
  });
});
