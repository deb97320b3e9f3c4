import { Chart, Duration, Testing } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, RotatingGpuSecretProps, TgiInferenceService } from '../../src';
import { podSecurityLevel, podSpecsOf } from '../support/pod-security';
import { envOf, findOne, synthValid } from '../support/synth';

const rotation = { image: 'myorg/gpu-cred-rotator:1.4.2', command: ['/rotate'] };

function setup(props: Partial<RotatingGpuSecretProps> = {}, onRotation: Reload = Reload.exec(['/reload'])) {
  const chart = new Chart(Testing.app(), 'c');
  const trainer = new GpuTrainingStatefulSet(chart, 'trainer', { name: 'trainer', image: 'i', gpusPerPod: 1 });
  const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials', rotation, ...props });
  creds.mountInto(trainer, { path: '/etc/gpu', onRotation });
  const objects = synthValid(chart);
  const sts = findOne(objects, 'StatefulSet');
  const pod = sts.spec.template.spec;
  const main = pod.containers.find((c: any) => c.name === 'trainer');
  const sidecar = pod.containers.find((c: any) => c.name.startsWith('reload-'));
  return { chart, objects, sts, pod, main, sidecar, creds };
}

describe('RotatingGpuSecret', () => {
  describe('the mount can see updates', () => {
    test('the whole directory, read-only, restrictive mode, never subPath', () => {
      const { pod, main } = setup();
      const vol = pod.volumes.find((v: any) => v.secret);
      expect(vol.secret).toEqual({ secretName: 'gpu-credentials', defaultMode: 0o440, items: [{ key: 'credentials.json', path: 'credentials.json' }] });
      const mount = main.volumeMounts.find((m: any) => m.name === vol.name);
      expect(mount).toEqual({ name: vol.name, mountPath: '/etc/gpu', readOnly: true });
      for (const c of pod.containers) for (const m of c.volumeMounts ?? []) expect(m.subPath).toBeUndefined();
    });

    test('consuming the Secret through env is refused at mount time and at synth', () => {
      const chart = new Chart(Testing.app(), 'c');
      const trainer = new GpuTrainingStatefulSet(chart, 'trainer', { name: 'trainer', image: 'i', gpusPerPod: 1 });
      const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      trainer._podTemplate.main.env.push({ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'token' } } });
      expect(() => creds.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.restart() })).toThrow(
        "RotatingGpuSecret 'creds': mountInto container 'trainer' reads rotating Secret 'gpu-credentials' through env TOKEN: environment variables are read once at container start and never see a rotation; mount the Secret with mountInto instead");

      const chart2 = new Chart(Testing.app(), 'c2');
      new RotatingGpuSecret(chart2, 'creds', { name: 'gpu-credentials' });
      new k8s.KubeDeployment(chart2, 'other', {
        metadata: { name: 'other' },
        spec: {
          selector: { matchLabels: { a: 'b' } },
          template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'app', image: 'i', envFrom: [{ secretRef: { name: 'gpu-credentials' } }] }] } },
        },
      });
      expect(() => Testing.synth(chart2)).toThrow(/Deployment\/other: container 'app' reads rotating Secret 'gpu-credentials' through envFrom: environment variables are read once/);
    });
  });

  describe('reload sidecar', () => {
    test('a pinned image, a POSIX sh script, settings from env, restricted', () => {
      const { sidecar, pod } = setup({}, Reload.httpPost('http://localhost:8080/reload'));
      expect(sidecar.image).toBe('busybox:1.36.1');
      expect(sidecar.command.slice(0, 2)).toEqual(['sh', '-c']);
      expect(sidecar.command[2]).toContain('..data');
      expect(envOf(sidecar)).toMatchObject({ WATCH_DIR: '/etc/gpu', POLL_SECONDS: '10', ACTION: 'http', RELOAD_URL: 'http://localhost:8080/reload' });
      expect(sidecar.volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/etc/gpu', readOnly: true }));
      expect(podSecurityLevel(pod)).toBe('restricted');
    });

    test('Reload.exec runs the command in a sidecar whose image the user sets', () => {
      const { sidecar } = setup({}, Reload.exec(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json'], { image: 'myorg/gpu-driver:2.1.0' }));
      expect(sidecar.image).toBe('myorg/gpu-driver:2.1.0');
      expect(sidecar.args).toEqual(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json']);
    });

    test('Reload.signal shares the process namespace and runs as the workload UID', () => {
      const { pod, sidecar } = setup({}, Reload.signal('SIGHUP', { process: 'trainer' }));
      expect(pod.shareProcessNamespace).toBe(true);
      expect(envOf(sidecar)).toMatchObject({ ACTION: 'signal', SIGNAL: 'HUP', PROCESS_NAME: 'trainer' });
      expect(sidecar.securityContext.runAsUser).toBe(pod.securityContext.runAsUser);
    });

    test('Reload.sync gives the main container plain copies in a shared emptyDir, first copy in an init container', () => {
      const { pod, main, sidecar } = setup({}, Reload.sync());
      const copies = main.volumeMounts.find((m: any) => m.mountPath === '/etc/gpu');
      expect(pod.volumes.find((v: any) => v.name === copies.name).emptyDir).toBeDefined();
      expect(envOf(sidecar)).toMatchObject({ ACTION: 'sync', SYNC_DIR: '/etc/gpu' });
      expect(pod.initContainers).toHaveLength(1);
      expect(envOf(pod.initContainers[0]).RUN_ONCE).toBe('1');
      expect(podSecurityLevel(pod)).toBe('restricted');
    });

    test('Reload.restart annotates the StatefulSet for Stakater Reloader, with no sidecar', () => {
      const { sts, sidecar } = setup({}, Reload.restart());
      expect(sts.metadata.annotations['secret.reloader.stakater.com/reload']).toBe('gpu-credentials');
      expect(sidecar).toBeUndefined();
    });

    test('a root TGI pod gets an fsGroup so the non-root sidecar can read the 0440 files', () => {
      const chart = new Chart(Testing.app(), 'c');
      const tgi = new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm' });
      new RotatingGpuSecret(chart, 'creds', { name: 'creds' }).mountInto(tgi, { path: '/etc/creds', onRotation: Reload.httpPost('http://localhost:8080/x') });
      const pod = findOne(synthValid(chart), 'StatefulSet').spec.template.spec;
      expect(pod.securityContext.fsGroup).toBe(1000);
      expect(pod.containers[1].securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    });
  });

  describe('rotation CronJob', () => {
    test('schedule, Forbid, deadlines, bounded backoff, env, restricted pod', () => {
      const { objects } = setup({ rotation: { ...rotation, every: Duration.hours(6) } });
      const cron = findOne(objects, 'CronJob');
      expect(cron.spec.schedule).toMatch(/^\d{1,2} \*\/6 \* \* \*$/);
      expect(cron.spec.concurrencyPolicy).toBe('Forbid');
      expect(cron.spec.startingDeadlineSeconds).toBe(600);
      const job = cron.spec.jobTemplate.spec;
      expect(job.backoffLimit).toBe(3);
      expect(job.activeDeadlineSeconds).toBe(600);
      const c = job.template.spec.containers[0];
      expect(envOf(c)).toEqual({ SECRET_NAME: 'gpu-credentials', SECRET_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } } });
      expect(job.template.spec.serviceAccountName).toBe('gpu-credentials-rotator');
      expect(podSecurityLevel(job.template.spec)).toBe('restricted');
    });

    test('daily by default', () => {
      expect(findOne(setup().objects, 'CronJob').spec.schedule).toMatch(/^\d{1,2} \d{1,2} \* \* \*$/);
    });

    test('RBAC: only get, patch, update on this Secret', () => {
      const { objects } = setup();
      const role = findOne(objects, 'Role');
      expect(role.rules).toEqual([{ apiGroups: [''], resources: ['secrets'], resourceNames: ['gpu-credentials'], verbs: ['get', 'patch', 'update'] }]);
      const binding = findOne(objects, 'RoleBinding');
      expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: findOne(objects, 'ServiceAccount').metadata.name }]);
    });

    test('a one-off Job performs the first rotation', () => {
      const { objects } = setup();
      const job = findOne(objects, 'Job');
      expect(job.metadata.name).toMatch(/^gpu-credentials-rotator-initial-[0-9a-f]{8}$/);
      expect(job.spec.template.spec.containers[0].image).toBe(rotation.image);
      expect(podSecurityLevel(job.spec.template.spec)).toBe('restricted');
    });

    test('all pod templates are restricted', () => {
      for (const { where, spec } of podSpecsOf(setup().objects)) expect(`${where}: ${podSecurityLevel(spec)}`).toBe(`${where}: restricted`);
    });

    test('no rotator when rotation is omitted', () => {
      const { objects } = setup({ rotation: undefined });
      expect(objects.map(o => o.kind).filter(k => ['CronJob', 'Job', 'Role'].includes(k))).toEqual([]);
    });
  });

  test('the Secret carries no data, so re-applying never undoes a rotation', () => {
    const secret = findOne(setup().objects, 'Secret');
    expect(secret.data).toBeUndefined();
    expect(secret.stringData).toBeUndefined();
    expect(secret.type).toBe('Opaque');
  });

  describe('timing check', () => {
    test('every + worst-case propagation must fit inside the TTL, showing the sum', () => {
      expect(() => setup({ rotation: { ...rotation, every: Duration.hours(24), credentialTtl: Duration.hours(24) } })).toThrow(
        "RotatingGpuSecret 'creds': rotation.credentialTtl must cover rotation.every plus the worst-case propagation: 86400s + (kubelet sync 60s + cache 60s + sidecar poll 10s + job start deadline 600s + job run deadline 600s) = 87730s (got 86400s)");
      expect(setup({ rotation: { ...rotation, every: Duration.hours(24), credentialTtl: Duration.hours(48) } }).creds.worstCasePropagationSeconds).toBe(1330);
    });
  });

  describe('bad input throws clear errors', () => {
    test.each<[string, () => void, string | RegExp]>([
      ['invalid name', () => setup({ name: 'GPU_creds' }), /^RotatingGpuSecret 'creds': name must be a DNS-1123 label.*\(got "GPU_creds"\)$/],
      ['every under 1 hour', () => setup({ rotation: { ...rotation, every: Duration.minutes(30) } }), "RotatingGpuSecret 'creds': rotation.every must be a whole number of seconds >= 3600s (got 1800s)"],
      ['every over the TTL', () => setup({ rotation: { ...rotation, every: Duration.hours(48), credentialTtl: Duration.hours(24) } }), "RotatingGpuSecret 'creds': rotation.every must not exceed credentialTtl (86400s) (got 172800s)"],
      ['every not fitting cron', () => setup({ rotation: { ...rotation, every: Duration.hours(5) } }), /rotation.every must be a whole number of hours that divides 24, or whole days/],
      ['relative mount path', () => {
        const chart = new Chart(Testing.app(), 'c');
        const t = new GpuTrainingStatefulSet(chart, 't', { name: 't', image: 'i', gpusPerPod: 1 });
        new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(t, { path: 'etc/gpu', onRotation: Reload.restart() });
      }, `RotatingGpuSecret 'creds': path must be an absolute path without ".." segments (got "etc/gpu")`],
      ['signal without process', () => setup({}, Reload.signal('SIGHUP', { process: '' })), /RotatingGpuSecret 'creds': onRotation Reload.signal needs the name of the process to signal/],
      ['signal to a root workload', () => {
        const chart = new Chart(Testing.app(), 'c');
        const tgi = new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm' });
        new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(tgi, { path: '/etc/x', onRotation: Reload.signal('SIGHUP', { process: 'text-generation' }) });
      }, /Reload.signal needs a workload that runs as a non-root UID/],
    ])('%s', (_label, act, message) => {
      expect(act).toThrow(message);
    });
  });
});
