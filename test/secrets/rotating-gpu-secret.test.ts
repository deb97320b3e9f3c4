import { inlineCommand } from '../support/runtime-scripts';
import { ApiObject, Chart, Duration, JsonPatch, Lazy, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-32';
import { k8s } from 'cdk8s-plus-32';
import {
  ConfigurationError,
  EnvValue,
  GpuTrainingStatefulSet,
  GpuTrainingStatefulSetProps,
  Reload,
  RotatingGpuSecret,
  RotatingGpuSecretProps,
  SecretType,
  SglangInferenceService,
  TgiInferenceService,
  TrainingUpdateStrategy,
} from '../../src';
import { podSecurityLevel, podSpecsOf } from '../support/pod-security';
import { envOf, findOne, outputErrorsOf, synthValid } from '../support/synth';
import { SecretsChart } from '../../apps/secrets';
import { apiServerNameErrors } from './names';
import { applyResult } from '../../src/guard/apply';

const rotation = { image: 'myorg/gpu-cred-rotator:1.4.2', command: ['/rotate'] };
const TRAINER: GpuTrainingStatefulSetProps = { name: 'trainer', image: 'i', gpusPerPod: 1, args: ['train.py'] };

function trainer(chart: Chart, props: Partial<GpuTrainingStatefulSetProps> = {}): GpuTrainingStatefulSet {
  return new GpuTrainingStatefulSet(chart, 'trainer', { ...TRAINER, ...props });
}

function setup(
  props: Partial<RotatingGpuSecretProps> = {},
  onRotation: Reload = Reload.exec(['/reload']),
  workload: Partial<GpuTrainingStatefulSetProps> = {},
) {
  const chart = new Chart(Testing.app(), 'c');
  const t = trainer(chart, workload);
  const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials', rotation, ...props });
  creds.mountInto(t, { path: '/etc/gpu', onRotation });
  const objects = synthValid(chart);
  const sts = findOne(objects, 'StatefulSet');
  const pod = sts.spec.template.spec;
  const main = pod.containers.find((c: any) => c.name === 'trainer');
  // A native sidecar: the last init container, restarting always.
  const sidecar = (pod.initContainers ?? []).find((c: any) => c.name.startsWith('reload-'));
  return { chart, objects, sts, pod, main, sidecar, creds };
}

/** The error of an action, for assertions on its class and text. */
function errorOf(act: () => unknown): Error {
  try {
    act();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('RotatingGpuSecret', () => {
  describe('the mount can see updates', () => {
    test('the whole directory, read-only, restrictive mode, never subPath', () => {
      const { pod, main } = setup();
      const vol = pod.volumes.find((v: any) => v.secret);
      expect(vol.secret).toEqual({
        secretName: 'gpu-credentials',
        defaultMode: 0o440,
        items: [{ key: 'credentials.json', path: 'credentials.json' }],
      });
      const mount = main.volumeMounts.find((m: any) => m.name === vol.name);
      expect(mount).toEqual({ name: vol.name, mountPath: '/etc/gpu', readOnly: true });
      for (const c of pod.containers) for (const m of c.volumeMounts ?? []) expect(m.subPath).toBeUndefined();
    });

    test('the sidecar is told the exact keys, dot-files included', () => {
      const { sidecar, pod } = setup({ keys: ['.dockerconfigjson', 'token'] });
      expect(envOf(sidecar).KEYS).toBe('.dockerconfigjson token');
      expect(pod.volumes.find((v: any) => v.secret).secret.items).toEqual([
        { key: '.dockerconfigjson', path: '.dockerconfigjson' },
        { key: 'token', path: 'token' },
      ]);
    });
  });

  describe('env consumption of the Secret is an error wherever it is', () => {
    const why =
      "remove TOKEN from the container's env (the workload's `env` prop, for a container the library makes): environment variables are read once at container start and never see a rotation; read the files RotatingGpuSecret.mountInto mounts instead";

    test('at mount time, in any container of the pod', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      t._podTemplate.main.env.push({
        name: 'TOKEN',
        valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'token' } },
      });
      expect(() => creds.mountInto(t, { path: '/etc/gpu', onRotation: Reload.exec(['/reload']) })).toThrow(
        `RotatingGpuSecret 'creds': mountInto container 'trainer' reads rotating Secret 'gpu-credentials' through env TOKEN: ${why}`,
      );
    });

    const forms: Array<[string, (spec: any) => void, RegExp]> = [
      [
        'env secretKeyRef in a container',
        s =>
          (s.containers[0].env = [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'k' } } }]),
        /container 'app' reads .* through env T/,
      ],
      [
        'envFrom secretRef in a container',
        s => (s.containers[0].envFrom = [{ secretRef: { name: 'gpu-credentials' } }]),
        /container 'app' reads .* through envFrom/,
      ],
      [
        'env in an init container',
        s =>
          (s.initContainers = [
            {
              name: 'init',
              image: 'i',
              env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'k' } } }],
            },
          ]),
        /container 'init' reads .* through env T/,
      ],
      [
        'envFrom in a second (sidecar) container',
        s =>
          s.containers.push({
            name: 'side',
            image: 'i',
            envFrom: [{ prefix: 'X_', secretRef: { name: 'gpu-credentials' } }],
          }),
        /container 'side' reads .* through envFrom/,
      ],
    ];

    test.each(forms)("in the output: %s of a user's Deployment", (_label, mutate, message) => {
      const chart = new Chart(Testing.app(), 'c');
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      const spec: any = { containers: [{ name: 'app', image: 'i' }] };
      mutate(spec);
      new k8s.KubeDeployment(chart, 'other', {
        metadata: { name: 'other' },
        spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec } },
      });
      expect(outputErrorsOf(chart)).toMatch(message);
      expect(outputErrorsOf(chart)).toMatch(/^rotating Secret\/gpu-credentials: Deployment\/other/);
    });

    test('in the output: in a CronJob, and in a custom resource with a nested pod template, in another chart of the same namespace', () => {
      const app = Testing.app();
      const chart = new Chart(app, 'a', { namespace: 'ml' });
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      const other = new Chart(app, 'b', { namespace: 'ml' });
      const container = {
        name: 'worker',
        image: 'i',
        env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'k' } } }],
      };
      new k8s.KubeCronJob(other, 'cron', {
        metadata: { name: 'cron' },
        spec: {
          schedule: '0 * * * *',
          jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [container] } } } },
        },
      });
      new ApiObject(other, 'jobset', {
        apiVersion: 'jobset.x-k8s.io/v1alpha2',
        kind: 'JobSet',
        metadata: { name: 'js' },
        spec: {
          replicatedJobs: [{ name: 'w', template: { spec: { template: { spec: { containers: [container] } } } } }],
        } as any,
      });
      // A custom resource that reuses a built-in kind's name keeps its pods elsewhere: searched everywhere too.
      new ApiObject(other, 'vcjob', {
        apiVersion: 'batch.volcano.sh/v1alpha1',
        kind: 'Job',
        metadata: { name: 'vc' },
        spec: { tasks: [{ name: 't', template: { spec: { containers: [container] } } }] } as any,
      });
      const message = outputErrorsOf(app);
      expect(message).toMatch(
        /CronJob\/cron: container 'worker' reads rotating Secret 'gpu-credentials' through env T/,
      );
      expect(message).toMatch(/JobSet\/js: container 'worker'/);
      expect(message).toMatch(/Job\/vc: container 'worker'/);
    });

    test('in the output: in a cdk8s-plus L2 workload, and in an object whose pod spec is a Lazy', () => {
      const chart = new Chart(Testing.app(), 'c');
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      const secret = kplus.Secret.fromSecretName(chart, 'ref', 'gpu-credentials');
      new kplus.Deployment(chart, 'l2', {
        containers: [{ image: 'i', envVariables: { T: kplus.EnvValue.fromSecretValue({ secret, key: 'k' }) } }],
      });
      const env = [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'k' } } }];
      new ApiObject(chart, 'lazy', {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'lazy' },
        spec: Lazy.any({
          produce: () => ({ selector: {}, template: { spec: { containers: [{ name: 'app', image: 'i', env }] } } }),
        }),
      });
      const message = outputErrorsOf(chart);
      expect(message).toMatch(
        /Deployment\/c-l2-[0-9a-f]+: container 'main' reads rotating Secret 'gpu-credentials' through env T/,
      );
      expect(message).toMatch(
        /Deployment\/lazy: container 'app' reads rotating Secret 'gpu-credentials' through env T/,
      );
    });

    test('a subPath mount of the Secret (secret or projected volume) is an error too: it never updates', () => {
      const chart = new Chart(Testing.app(), 'c');
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      new k8s.KubeDeployment(chart, 'other', {
        metadata: { name: 'other' },
        spec: {
          selector: { matchLabels: { a: 'b' } },
          template: {
            metadata: { labels: { a: 'b' } },
            spec: {
              volumes: [
                { name: 'plain', secret: { secretName: 'gpu-credentials' } },
                { name: 'proj', projected: { sources: [{ secret: { name: 'gpu-credentials' } }] } },
                { name: 'fine', secret: { secretName: 'gpu-credentials' } },
              ],
              containers: [
                {
                  name: 'app',
                  image: 'i',
                  volumeMounts: [
                    { name: 'plain', mountPath: '/etc/token', subPath: 'token' },
                    { name: 'proj', mountPath: '/etc/p', subPathExpr: '$(POD)' },
                    { name: 'fine', mountPath: '/etc/whole' },
                  ],
                },
              ],
            },
          },
        },
      });
      const message = outputErrorsOf(chart);
      expect(message).toMatch(
        /Deployment\/other: container 'app' mounts rotating Secret 'gpu-credentials' through subPath at \/etc\/token: a subPath mount never sees an update/,
      );
      expect(message).toMatch(/through subPath at \/etc\/p/);
      expect(message).not.toMatch(/\/etc\/whole/);
    });

    test("at synth: one of the library's workloads whose JsonPatch adds an env read, also after a first synth", () => {
      const app = Testing.app();
      const chart = new Chart(app, 'c');
      const t = trainer(chart);
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      expect(() => app.synthYaml()).not.toThrow();
      t.statefulSet.addJsonPatch(
        JsonPatch.add('/spec/template/spec/containers/0/env/-', {
          name: 'T',
          valueFrom: { secretKeyRef: { name: 'gpu-credentials', key: 'k' } },
        }),
      );
      expect(() => app.synthYaml()).toThrow(
        /RotatingGpuSecret 'creds': StatefulSet\/\S+: container 'trainer' reads rotating Secret 'gpu-credentials' through env T/,
      );
      expect(() => Testing.synth(chart)).toThrow(/reads rotating Secret 'gpu-credentials' through env T/);
      // The library's error type and a hint that points at the read to remove, not at mountInto alone.
      expect(() => app.synthYaml()).toThrow(ConfigurationError);
      expect(() => app.synthYaml()).toThrow(/remove T from the container's env/);
    });

    test('synthesizes no other object twice: a Lazy elsewhere in the app produces once per synth', () => {
      const app = Testing.app();
      const chart = new Chart(app, 'c');
      new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
      trainer(chart);
      let produced = 0;
      new ApiObject(chart, 'lazy', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'lazy' },
        data: Lazy.any({ produce: () => ({ n: String(++produced) }) }),
      });
      app.synthYaml();
      expect(produced).toBe(1);
    });

    test('at mount time, a subPath mount of the Secret already in the pod', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      t._podTemplate.addVolume({ name: 'tok', secret: { secretName: 'gpu-credentials' } });
      t._podTemplate.main.volumeMounts.push({ name: 'tok', mountPath: '/etc/tok', subPath: 'token' });
      expect(() =>
        new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' }).mountInto(t, {
          path: '/etc/gpu',
          onRotation: Reload.exec(['/r']),
        }),
      ).toThrow(
        /^RotatingGpuSecret 'creds': mountInto container 'trainer' mounts rotating Secret 'gpu-credentials' through subPath at \/etc\/tok/,
      );
    });

    test('a Secret of the same name in another namespace, or another Secret, is fine', () => {
      const app = Testing.app();
      new RotatingGpuSecret(new Chart(app, 'a', { namespace: 'ml' }), 'creds', { name: 'gpu-credentials' });
      const other = new Chart(app, 'b', { namespace: 'other' });
      new k8s.KubePod(other, 'p', {
        metadata: { name: 'p' },
        spec: {
          containers: [
            {
              name: 'c',
              image: 'i',
              envFrom: [{ secretRef: { name: 'gpu-credentials' } }, { secretRef: { name: 'unrelated' } }],
            },
          ],
        },
      });
      expect(() => app.synth()).not.toThrow();
    });
  });

  describe('reload sidecar', () => {
    test('in a Guaranteed pod (guaranteedQos) it requests what it limits, so the pod stays Guaranteed', () => {
      for (const onRotation of [
        Reload.exec(['/reload']),
        Reload.signal('SIGHUP', { process: 'python', exposeWorkloadToSidecar: true }),
        Reload.sync(),
      ]) {
        const { pod, sidecar } = setup({}, onRotation, { guaranteedQos: true, cpu: 8 });
        for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
          expect([c.name, c.resources.requests.cpu, c.resources.requests.memory]).toEqual([
            c.name,
            c.resources.limits.cpu,
            c.resources.limits.memory,
          ]);
        }
        expect(sidecar.resources.limits.cpu).toBe('10m');
      }
      // Otherwise it requests little and limits only memory.
      expect(setup().sidecar.resources).toEqual({
        requests: { cpu: '10m', memory: '16Mi' },
        limits: { memory: '256Mi' },
      });
    });

    test('a pinned image, a POSIX sh script, settings from env, restricted', () => {
      const { sidecar, pod } = setup({}, Reload.httpPost('http://localhost:8080/reload'));
      expect(sidecar.image).toBe('busybox:1.36.1');
      expect(sidecar.command).toEqual([
        'sh',
        '-c',
        '. /opt/cdk8s-gpu/reload-sidecar/reload-sidecar.sh',
        'reload-sidecar',
      ]);
      expect(inlineCommand(sidecar.command)[2]).toContain('..data');
      expect(sidecar.volumeMounts).toContainEqual({
        name: 'cdk8s-gpu-reload-sidecar',
        mountPath: '/opt/cdk8s-gpu/reload-sidecar',
        readOnly: true,
      });
      expect(envOf(sidecar)).toMatchObject({
        WATCH_DIR: '/etc/gpu',
        KEYS: 'credentials.json',
        POLL_SECONDS: '10',
        ACTION: 'http',
        ACTION_TIMEOUT_SECONDS: '30',
        RELOAD_URL: 'http://localhost:8080/reload',
      });
      expect(sidecar.volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/etc/gpu', readOnly: true }));
      expect(podSecurityLevel(pod)).toBe('restricted');
    });

    test('Reload.exec runs the command in a sidecar whose image the user sets, with a timeout', () => {
      const { sidecar } = setup(
        {},
        Reload.exec(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json'], {
          image: 'myorg/gpu-driver:2.1.0',
          timeout: Duration.minutes(2),
        }),
      );
      expect(sidecar.image).toBe('myorg/gpu-driver:2.1.0');
      expect(sidecar.args).toEqual(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json']);
      expect(envOf(sidecar).ACTION_TIMEOUT_SECONDS).toBe('120');
    });

    test.each(['SIGHUP', 'HUP', 'sighup', 'hup', 'SigHup'])(
      'Reload.signal(%j) sends HUP, shares the process namespace, runs as the workload UID',
      signal => {
        const { pod, sidecar } = setup(
          {},
          Reload.signal(signal, { process: 'trainer', exposeWorkloadToSidecar: true }),
        );
        expect(pod.shareProcessNamespace).toBe(true);
        expect(envOf(sidecar)).toMatchObject({ ACTION: 'signal', SIGNAL: 'HUP', PROCESS_NAME: 'trainer' });
        expect(sidecar.securityContext.runAsUser).toBe(pod.securityContext.runAsUser);
      },
    );

    test('Reload.sync gives the main container plain copies in a shared emptyDir, made by one native sidecar before the application starts', () => {
      const { pod, main, sidecar } = setup({}, Reload.sync());
      const copies = main.volumeMounts.find((m: any) => m.mountPath === '/etc/gpu');
      expect(pod.volumes.find((v: any) => v.name === copies.name).emptyDir).toBeDefined();
      expect(envOf(sidecar)).toMatchObject({ ACTION: 'sync', SYNC_DIR: '/etc/gpu' });
      // One container: the sidecar makes the first copies itself; its startup probe holds the application.
      expect(pod.initContainers.filter((c: any) => c.name.startsWith('reload-'))).toEqual([sidecar]);
      expect(envOf(sidecar).RUN_ONCE).toBeUndefined();
      expect(sidecar.restartPolicy).toBe('Always');
      expect(sidecar.startupProbe.exec.command).toEqual(['sh', '-c', `[ -e ${envOf(sidecar).STATE_DIR}/reloaded ]`]);
      expect(podSecurityLevel(pod)).toBe('restricted');
    });

    test.each<[string, Reload]>([
      ['exec', Reload.exec(['/reload'])],
      ['httpPost', Reload.httpPost('http://localhost:8080/reload')],
      ['signal', Reload.signal('HUP', { process: 'python3', exposeWorkloadToSidecar: true })],
      ['sync', Reload.sync()],
    ])(
      'Reload.%s: the sidecar is a native sidecar, the last init container, started before and stopped after the trainer',
      (_name, reload) => {
        const { pod, sidecar } = setup({}, reload);
        expect(sidecar.restartPolicy).toBe('Always');
        expect(pod.initContainers[pod.initContainers.length - 1]).toBe(sidecar);
        expect(pod.containers.map((c: any) => c.name)).toEqual(['trainer']);
        expect(sidecar.startupProbe).toMatchObject({ periodSeconds: 1, failureThreshold: 120 });
      },
    );

    test('Reload.restart annotates a RollingUpdate StatefulSet for Stakater Reloader, with no sidecar', () => {
      const { sts, sidecar } = setup({}, Reload.restart(), { updateStrategy: TrainingUpdateStrategy.ROLLING_UPDATE });
      expect(sts.metadata.annotations['secret.reloader.stakater.com/reload']).toBe('gpu-credentials');
      expect(sidecar).toBeUndefined();
    });

    test('two restarting Secrets in one workload are both in the Reloader annotation', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart, { updateStrategy: TrainingUpdateStrategy.ROLLING_UPDATE });
      new RotatingGpuSecret(chart, 'a', { name: 'a' }).mountInto(t, { path: '/etc/a', onRotation: Reload.restart() });
      new RotatingGpuSecret(chart, 'b', { name: 'b' }).mountInto(t, { path: '/etc/b', onRotation: Reload.restart() });
      expect(
        findOne(synthValid(chart), 'StatefulSet').metadata.annotations['secret.reloader.stakater.com/reload'],
      ).toBe('a,b');
    });

    test('Reload.restart on an OnDelete workload (the training default) is refused: Reloader would change nothing', () => {
      const e = errorOf(() => setup({}, Reload.restart()));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(
        /^RotatingGpuSecret 'creds': onRotation Reload.restart\(\) needs a workload that rolls pod-template changes out .*stakater\/Reloader#294.* \(got "a workload with updateStrategy OnDelete"\)$/,
      );
    });

    test('a root TGI pod gets an fsGroup with OnRootMismatch, so the non-root sidecar can read the 0440 files without re-owning the cache each start', () => {
      const chart = new Chart(Testing.app(), 'c');
      const tgi = new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm' });
      new RotatingGpuSecret(chart, 'creds', { name: 'creds' }).mountInto(tgi, {
        path: '/etc/creds',
        onRotation: Reload.httpPost('http://localhost:8080/x'),
      });
      const pod = findOne(synthValid(chart), 'StatefulSet').spec.template.spec;
      expect(pod.securityContext).toMatchObject({ fsGroup: 1000, fsGroupChangePolicy: 'OnRootMismatch' });
      expect(pod.initContainers.find((c: any) => c.name.startsWith('reload-')).securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
      });
    });
  });

  describe('rotation CronJob', () => {
    test("the rotator pod gets pull secrets, node selector, tolerations and service-account annotations from props (in the first Job's name hash too)", () => {
      const make = (extra: object) => {
        const chart = new Chart(Testing.app(), 'c');
        new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials', rotation: { ...rotation, ...extra } });
        return synthValid(chart);
      };
      const objects = make({
        imagePullSecrets: ['registry'],
        nodeSelector: { pool: 'system' },
        tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
        serviceAccountAnnotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/rotator' },
      });
      for (const spec of [
        findOne(objects, 'CronJob').spec.jobTemplate.spec.template.spec,
        findOne(objects, 'Job').spec.template.spec,
      ]) {
        expect(spec).toMatchObject({
          imagePullSecrets: [{ name: 'registry' }],
          nodeSelector: { pool: 'system' },
          tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
        });
      }
      expect(findOne(objects, 'ServiceAccount').metadata.annotations).toEqual({
        'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/rotator',
      });
      // A changed pod spec is a new first Job (a Job's template is immutable).
      expect(findOne(objects, 'Job').metadata.name).not.toBe(findOne(make({}), 'Job').metadata.name);
      expect(() => make({ imagePullSecrets: ['Bad_Name'] })).toThrow(/rotation\.imagePullSecrets\[0\] must be/);
      expect(() => make({ tolerations: [{ key: 'a', operator: 'Sometimes' }] })).toThrow(
        /rotation\.tolerations\[0\]\.operator must be one of/,
      );
      expect(() => make({ nodeSelector: { pool: 'has space' } })).toThrow(
        /rotation\.nodeSelector\.pool must be a label value/,
      );
    });

    test('every object is a public handle, and escape hatches on them are checked (pull secrets, workload identity)', () => {
      const chart = new Chart(Testing.app(), 'c');
      const creds = new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials', rotation });
      expect(creds.secret!.name).toBe('gpu-credentials');
      const r = creds.rotator!;
      expect([r.serviceAccount.kind, r.role.kind, r.roleBinding.kind, r.cronJob.kind, r.initialJob.kind]).toEqual([
        'ServiceAccount',
        'Role',
        'RoleBinding',
        'CronJob',
        'Job',
      ]);
      r.serviceAccount.metadata.addAnnotation('iam.gke.io/gcp-service-account', 'rotator@p.iam.gserviceaccount.com');
      r.cronJob.addJsonPatch(
        JsonPatch.add('/spec/jobTemplate/spec/template/spec/imagePullSecrets', [{ name: 'registry' }]),
      );
      const objects = synthValid(chart);
      expect(findOne(objects, 'ServiceAccount').metadata.annotations['iam.gke.io/gcp-service-account']).toBe(
        'rotator@p.iam.gserviceaccount.com',
      );
      expect(findOne(objects, 'CronJob').spec.jobTemplate.spec.template.spec.imagePullSecrets).toEqual([
        { name: 'registry' },
      ]);
      r.cronJob.addJsonPatch(JsonPatch.add('/spec/jobTemplate/spec/template/spec/imagePullSecret', [{ name: 'typo' }]));
      expect(() => Testing.synth(chart)).toThrow(
        /CronJob\/.* is invalid after a JsonPatch escape hatch: .*unknown field "imagePullSecret"/,
      );
      // Without rotation there is no rotator.
      expect(new RotatingGpuSecret(new Chart(Testing.app(), 'd'), 'x', { name: 'x' }).rotator).toBeUndefined();
    });

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
      expect(envOf(c)).toEqual({
        SECRET_NAME: 'gpu-credentials',
        SECRET_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      });
      expect(job.template.spec.serviceAccountName).toBe('gpu-credentials-rotator');
      expect(podSecurityLevel(job.template.spec)).toBe('restricted');
    });

    test('daily by default; whole days up to 31', () => {
      expect(findOne(setup().objects, 'CronJob').spec.schedule).toMatch(/^\d{1,2} \d{1,2} \* \* \*$/);
      expect(
        findOne(setup({ rotation: { ...rotation, every: Duration.days(7) } }).objects, 'CronJob').spec.schedule,
      ).toMatch(/^\d{1,2} \d{1,2} \*\/7 \* \*$/);
    });

    test('RBAC: only get, patch, update on this Secret', () => {
      const { objects } = setup();
      const role = findOne(objects, 'Role');
      expect(role.rules).toEqual([
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['gpu-credentials'],
          verbs: ['get', 'patch', 'update'],
        },
      ]);
      const binding = findOne(objects, 'RoleBinding');
      expect(binding.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: role.metadata.name,
      });
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: findOne(objects, 'ServiceAccount').metadata.name },
      ]);
    });

    test('the first-rotation Job runs once per spec whatever re-applies it: no TTL, named by its spec', () => {
      const { objects } = setup();
      const job = findOne(objects, 'Job');
      expect(job.metadata.name).toMatch(/^gpu-credentials-rotator-initial-[0-9a-f]{8}$/);
      // A TTL would delete the finished Job, and Argo CD, Flux or kubectl apply would create it
      // again, running the rotator again (argo-cd#8586).
      expect(job.spec.ttlSecondsAfterFinished).toBeUndefined();
      expect(job.spec.template.spec.containers[0].image).toBe(rotation.image);
      expect(podSecurityLevel(job.spec.template.spec)).toBe('restricted');
      // The same spec synthesizes the same name (a re-apply is a no-op); a changed rotator is a new Job.
      expect(findOne(setup().objects, 'Job').metadata.name).toBe(job.metadata.name);
      expect(
        findOne(setup({ rotation: { ...rotation, image: 'myorg/gpu-cred-rotator:1.4.3' } }).objects, 'Job').metadata
          .name,
      ).not.toBe(job.metadata.name);
    });

    test('all pod templates are restricted', () => {
      for (const { where, spec } of podSpecsOf(setup().objects))
        expect(`${where}: ${podSecurityLevel(spec)}`).toBe(`${where}: restricted`);
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

  describe('derived names are valid for every accepted name', () => {
    const lengths = Array.from({ length: 63 - 36 }, (_, i) => 37 + i); // 37..63: around every limit
    const nameOf = (n: number, c = 'a') => `g${c.repeat(n - 1)}`;

    test.each(lengths)('a %i-character name, with a rotator and a sync mount', n => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      new RotatingGpuSecret(chart, 'creds', { name: nameOf(n), rotation }).mountInto(t, {
        path: '/etc/gpu',
        onRotation: Reload.sync(),
      });
      const objects = synthValid(chart);
      expect(apiServerNameErrors(objects)).toEqual([]);
      expect(findOne(objects, 'Secret').metadata.name).toBe(nameOf(n));
    });

    test('two long names that share their first 60 characters derive different names', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      const base = nameOf(60);
      new RotatingGpuSecret(chart, 'one', { name: `${base}one`, rotation }).mountInto(t, {
        path: '/etc/one',
        onRotation: Reload.sync(),
      });
      new RotatingGpuSecret(chart, 'two', { name: `${base}two`, rotation }).mountInto(t, {
        path: '/etc/two',
        onRotation: Reload.sync(),
      });
      const objects = synthValid(chart);
      expect(apiServerNameErrors(objects)).toEqual([]);
      expect(
        objects
          .filter(o => o.kind === 'CronJob')
          .map(o => o.metadata.name)
          .sort(),
      ).toEqual(expect.arrayContaining([expect.any(String), expect.any(String)]));
      expect(new Set(objects.filter(o => o.kind === 'CronJob').map(o => o.metadata.name)).size).toBe(2);
      expect(new Set(objects.filter(o => o.kind === 'Job').map(o => o.metadata.name)).size).toBe(2);
    });

    test('names up to 44 characters keep the plain "<name>-rotator" names', () => {
      const { objects } = setup({ name: nameOf(44) });
      expect(findOne(objects, 'CronJob').metadata.name).toBe(`${nameOf(44)}-rotator`);
      expect(findOne(objects, 'Job').metadata.name.length).toBeLessThanOrEqual(63);
    });

    test('a 64-character name is refused', () => {
      expect(() => setup({ name: nameOf(64) })).toThrow(
        /^RotatingGpuSecret 'creds': name must be at most 63 characters \(got 64 characters: /,
      );
    });
  });

  test('two RotatingGpuSecrets of one name in one namespace are refused at synth', () => {
    const chart = new Chart(Testing.app(), 'c');
    new RotatingGpuSecret(chart, 'a', { name: 'creds', rotation });
    new RotatingGpuSecret(chart, 'b', { name: 'creds' });
    expect(() => Testing.synth(chart)).toThrow(
      /RotatingGpuSecret 'b': name must make objects unique, but Secret "creds" is also made by RotatingGpuSecret 'a'/,
    );
  });

  describe('timing model', () => {
    test('two periods plus the worst-case propagation must fit in the credential TTL, showing the sum', () => {
      expect(() =>
        setup({ rotation: { ...rotation, every: Duration.hours(24), credentialTtl: Duration.hours(48) } }),
      ).toThrow(
        "RotatingGpuSecret 'creds': rotation.credentialTtl must cover two rotation periods (a run that misses its start deadline is skipped) plus the worst-case propagation: " +
          '2 x 86400s + (job start deadline 600s + job run deadline 600s + kubelet sync 60s + sync jitter 30s + kubelet secret cache 0s + sidecar poll 10s) = 174100s; ' +
          "rotate more often or lengthen the credential's lifetime (got 48h)",
      );
    });

    test('the boundary: a TTL equal to the sum is accepted, one second less is refused', () => {
      const every = Duration.hours(12);
      const sum = 2 * 43200 + 600 + 600 + 60 + 30 + 0 + 10 + 30;
      expect(
        setup({ rotation: { ...rotation, every, credentialTtl: Duration.seconds(sum) } }).creds
          .worstCasePropagationSeconds,
      ).toBe(sum - 86400);
      expect(() => setup({ rotation: { ...rotation, every, credentialTtl: Duration.seconds(sum - 1) } })).toThrow(
        /= 87730s; .*\(got 87729s\)$/,
      );
    });

    test('the Cache change-detection strategy adds its TTL', () => {
      const every = Duration.hours(12);
      const ttl = Duration.seconds(87730 + 300);
      expect(() =>
        setup({ rotation: { ...rotation, every, credentialTtl: ttl }, kubeletSecretCacheTtl: Duration.minutes(5) }),
      ).not.toThrow();
      expect(() =>
        setup({ rotation: { ...rotation, every, credentialTtl: ttl }, kubeletSecretCacheTtl: Duration.minutes(6) }),
      ).toThrow(/kubelet secret cache 360s/);
    });

    test('a longer reload timeout counts when the Secret is mounted', () => {
      const chart = new Chart(Testing.app(), 'c');
      const creds = new RotatingGpuSecret(chart, 'creds', {
        name: 'x',
        rotation: { ...rotation, every: Duration.hours(12), credentialTtl: Duration.seconds(87730) },
      });
      expect(() =>
        creds.mountInto(trainer(chart), {
          path: '/etc/x',
          onRotation: Reload.exec(['/r'], { timeout: Duration.seconds(31) }),
        }),
      ).toThrow(/reload timeout 31s\) = 87731s/);
    });

    test('without a rotator, propagation is the kubelet and the sidecar only', () => {
      expect(setup({ rotation: undefined }).creds.worstCasePropagationSeconds).toBe(60 + 30 + 0 + 10 + 30);
    });
  });

  describe('mount paths', () => {
    const refused: Array<[string, string, RegExp]> = [
      [
        'the checkpoint claim',
        '/checkpoints',
        /path must not be a path container 'trainer' already mounts \(volume '[^']+' is there\) \(got "\/checkpoints"\)/,
      ],
      ['the writable home', '/home/trainer', /path must not be a path container 'trainer' already mounts/],
      ['/dev/shm', '/dev/shm', /path must not be a system directory/],
      ['/tmp', '/tmp', /path must not be a system directory/],
      ['/etc', '/etc', /path must not be a system directory/],
      [
        'the service-account token',
        '/var/run/secrets/kubernetes.io/serviceaccount',
        /path must not be a system directory/,
      ],
      ['a parent of another mount', '/home', /path must not be a system directory/],
      ['a parent of the checkpoint mount', '/', /path must not be a system directory/],
      ['a trailing slash', '/etc/gpu/', /path must be a normalized absolute path/],
      ['a double slash', '/etc//gpu', /path must be a normalized absolute path/],
      ['a relative path', 'etc/gpu', /path must be an absolute path without ".." segments \(got "etc\/gpu"\)/],
      ['the sidecar directory', '/var/run/cdk8s-gpu/x', /path must not be under \/var\/run\/cdk8s-gpu/],
    ];
    test.each(refused)('refused: %s', (_label, p, message) => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart, { storage: { size: Size.gibibytes(10) } });
      const e = errorOf(() =>
        new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(t, { path: p, onRotation: Reload.sync() }),
      );
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(/^RotatingGpuSecret 'creds': /);
      expect(e.message).toMatch(message);
    });

    test('a workload in another namespace is refused: its pods could never mount the Secret', () => {
      const app = Testing.app();
      const t = trainer(new Chart(app, 'train', { namespace: 'training' }));
      const creds = new RotatingGpuSecret(new Chart(app, 'sec', { namespace: 'secrets' }), 'creds', { name: 'x' });
      expect(() => creds.mountInto(t, { path: '/etc/x', onRotation: Reload.sync() })).toThrow(
        "RotatingGpuSecret 'creds': mountInto needs a workload in the Secret's namespace (secrets), because a pod can only mount a Secret of its own namespace (got a workload in training)",
      );
      const same = new RotatingGpuSecret(new Chart(app, 'sec2', { namespace: 'training' }), 'creds', { name: 'x' });
      expect(() => same.mountInto(t, { path: '/etc/x', onRotation: Reload.sync() })).not.toThrow();
    });

    test('mountInto twice on one path is refused, and leaves the pod as it was', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      new RotatingGpuSecret(chart, 'a', { name: 'a' }).mountInto(t, {
        path: '/etc/creds',
        onRotation: Reload.exec(['/r']),
      });
      const before = JSON.stringify(t._podTemplate.toTemplate());
      expect(() =>
        new RotatingGpuSecret(chart, 'b', { name: 'b' }).mountInto(t, {
          path: '/etc/creds',
          onRotation: Reload.sync(),
        }),
      ).toThrow(
        /^RotatingGpuSecret 'b': path must not be a path container 'trainer' already mounts \(volume 'a-0' is there\) \(got "\/etc\/creds"\)$/,
      );
      expect(JSON.stringify(t._podTemplate.toTemplate())).toBe(before);
    });

    test('inside a read-only mount is refused; inside a writable one (the home) is fine', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      new RotatingGpuSecret(chart, 'a', { name: 'a' }).mountInto(t, {
        path: '/etc/creds',
        onRotation: Reload.exec(['/r']),
      });
      expect(() =>
        new RotatingGpuSecret(chart, 'b', { name: 'b' }).mountInto(t, {
          path: '/etc/creds/more',
          onRotation: Reload.exec(['/r']),
        }),
      ).toThrow(/path must not be inside the read-only mount \/etc\/creds/);
      new RotatingGpuSecret(chart, 'c', { name: 'c' }).mountInto(t, {
        path: '/home/trainer/.config/gcloud',
        onRotation: Reload.exec(['/r']),
      });
      expect(apiServerNameErrors(synthValid(chart))).toEqual([]);
    });

    test('above another mount is refused', () => {
      const chart = new Chart(Testing.app(), 'c');
      const t = trainer(chart);
      new RotatingGpuSecret(chart, 'a', { name: 'a' }).mountInto(t, {
        path: '/etc/creds/gpu',
        onRotation: Reload.exec(['/r']),
      });
      expect(() =>
        new RotatingGpuSecret(chart, 'b', { name: 'b' }).mountInto(t, {
          path: '/etc/creds',
          onRotation: Reload.exec(['/r']),
        }),
      ).toThrow(/path must not contain another mount of container 'trainer' \(volume 'a-0' at \/etc\/creds\/gpu\)/);
    });
  });

  describe('Reload.signal', () => {
    const refused: Array<[string, () => Reload, RegExp]> = [
      [
        'an unknown signal',
        () => Reload.signal('SIGKILL', { process: 'trainer', exposeWorkloadToSidecar: true }),
        /onRotation signal must be one of SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGQUIT .*\(got "SIGKILL"\)/,
      ],
      [
        'a signal number',
        () => Reload.signal('1', { process: 'trainer', exposeWorkloadToSidecar: true }),
        /onRotation signal must be one of/,
      ],
      [
        'no signal',
        () => Reload.signal(undefined as any, { process: 'trainer', exposeWorkloadToSidecar: true }),
        /onRotation signal must be one of .*\(got undefined\)/,
      ],
      [
        'no process',
        () => Reload.signal('SIGHUP', { process: '', exposeWorkloadToSidecar: true }),
        /onRotation process must be the name of the process to signal/,
      ],
      [
        'no options',
        () => Reload.signal('SIGHUP', undefined as any),
        /onRotation process must be the name of the process to signal .*\(got undefined\)/,
      ],
      [
        'a path',
        () => Reload.signal('SIGHUP', { process: '/usr/bin/python', exposeWorkloadToSidecar: true }),
        /onRotation process must be a process name \(the file name\), not a path/,
      ],
      [
        'a name Linux truncates',
        () => Reload.signal('SIGHUP', { process: 'my-training-entrypoint', exposeWorkloadToSidecar: true }),
        /^RotatingGpuSecret 'creds': onRotation process must be at most 15 characters, because Linux truncates process names in \/proc\/<pid>\/comm and the sidecar would never find it; use "my-training-ent" \(got "my-training-entrypoint"\)$/,
      ],
      [
        "the sidecar's own shell",
        () => Reload.signal('SIGHUP', { process: 'sh', exposeWorkloadToSidecar: true }),
        /onRotation process must not be a name the reload sidecar's own processes/,
      ],
      [
        'the pause process',
        () => Reload.signal('SIGHUP', { process: 'pause', exposeWorkloadToSidecar: true }),
        /onRotation process must not be a name the reload sidecar's own processes/,
      ],
      ...['SIGHUP', 'SIGTERM', 'SIGINT', 'SIGUSR1', 'SIGQUIT'].map((s): [string, () => Reload, RegExp] => [
        `torchrun with ${s}`,
        () => Reload.signal(s, { process: 'torchrun', exposeWorkloadToSidecar: true }),
        new RegExp(
          `onRotation must not send ${s} to torchrun: its elastic agent handles TERM, INT, HUP and QUIT by shutting down every worker`,
        ),
      ]),
      [
        "TGI's launcher by its full name",
        () => Reload.signal('SIGHUP', { process: 'text-generation-launcher', exposeWorkloadToSidecar: true }),
        /onRotation must not send SIGHUP to TGI .*ctrlc/,
      ],
      [
        'TGI by its comm',
        () => Reload.signal('SIGUSR1', { process: 'text-generation', exposeWorkloadToSidecar: true }),
        /onRotation must not send SIGUSR1 to TGI/,
      ],
      [
        'vLLM',
        () => Reload.signal('SIGHUP', { process: 'vllm', exposeWorkloadToSidecar: true }),
        /onRotation must not send SIGHUP to vLLM/,
      ],
      [
        'INT to Python',
        () => Reload.signal('SIGINT', { process: 'python3.11', exposeWorkloadToSidecar: true }),
        /onRotation must not send SIGINT to a Python program: CPython turns INT into KeyboardInterrupt/,
      ],
    ];
    test.each(refused)('refused: %s', (_label, reload, message) => {
      const e = errorOf(() => setup({}, reload()));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(message);
    });

    test.each([
      ['python', 'SIGHUP'],
      ['python3', 'SIGUSR1'],
      ['my-trainer', 'SIGTERM'],
      ['exactly15charss', 'SIGHUP'],
      ['nginx', 'SIGHUP'],
    ])('accepted: %s with %s', (process, signal) => {
      expect(
        envOf(setup({}, Reload.signal(signal, { process, exposeWorkloadToSidecar: true })).sidecar).PROCESS_NAME,
      ).toBe(process);
    });

    test('python3 running torchrun, or the SGLang server, is judged as that program', () => {
      // The training job's launcher is python3 -m torch.distributed.run: its comm is python3.
      expect(
        errorOf(() =>
          setup({}, Reload.signal('SIGUSR1', { process: 'python3', exposeWorkloadToSidecar: true }), {
            command: ['python3', '-m', 'torch.distributed.run'],
          }),
        ).message,
      ).toMatch(/onRotation must not send SIGUSR1 to torchrun: its elastic agent/);
      // With torchrun itself as the launcher, python3 is the trainer: HUP may reach its handler.
      expect(
        envOf(setup({}, Reload.signal('SIGHUP', { process: 'python3', exposeWorkloadToSidecar: true })).sidecar)
          .PROCESS_NAME,
      ).toBe('python3');
      const chart = new Chart(Testing.app(), 'c');
      const sgl = new SglangInferenceService(chart, 'sgl', {
        name: 'sgl',
        modelId: 'org/m',
        runAsRoot: false,
        image: 'registry.example.com/ml/sglang-nonroot:v0.5.20',
      });
      expect(() =>
        new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(sgl, {
          path: '/etc/x',
          onRotation: Reload.signal('SIGHUP', { process: 'python3', exposeWorkloadToSidecar: true }),
        }),
      ).toThrow(
        /onRotation must not send SIGHUP to the SGLang server \(python3 -m sglang\.launch_server\): .*launch_phase_sigquit_handler/,
      );
    });

    test('a root workload is refused: the restricted sidecar cannot signal it', () => {
      const chart = new Chart(Testing.app(), 'c');
      const tgi = new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm' });
      expect(() =>
        new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(tgi, {
          path: '/etc/x',
          onRotation: Reload.signal('SIGHUP', { process: 'my-server', exposeWorkloadToSidecar: true }),
        }),
      ).toThrow(/Reload.signal needs a workload that runs as a non-root UID/);
    });
  });

  describe('Reload.exec and Reload.httpPost', () => {
    const refused: Array<[string, () => Reload, RegExp]> = [
      [
        'an empty command',
        () => Reload.exec([]),
        /onRotation command must be a non-empty array: the program, then its arguments \(got \[\]\)/,
      ],
      [
        'a command that is not an array',
        () => Reload.exec('/reload' as any),
        /onRotation command must be an array of strings/,
      ],
      [
        'a whole command line in one element',
        () => Reload.exec(['/usr/bin/driver --reload']),
        /onRotation command\[0\] must be the program alone, without whitespace/,
      ],
      ['an empty program', () => Reload.exec(['']), /onRotation command\[0\] must be the program alone/],
      [
        'a number in the command',
        () => Reload.exec(['/r', 3 as any]),
        /onRotation command\[1\] must be a string \(got 3\)/,
      ],
      [
        'an image with whitespace',
        () => Reload.exec(['/r'], { image: 'my image' }),
        /onRotation image must be an image reference/,
      ],
      [
        'a timeout of 0',
        () => Reload.exec(['/r'], { timeout: Duration.seconds(0) }),
        /onRotation timeout must be a whole number of seconds from 1s to 600s \(got 0s\)/,
      ],
      [
        'a timeout of 1500 ms',
        () => Reload.exec(['/r'], { timeout: Duration.millis(1500) }),
        /onRotation timeout must be a whole number of seconds from 1s to 600s \(got 1500ms\)/,
      ],
      [
        'a timeout that is a number',
        () => Reload.exec(['/r'], { timeout: 30 as any }),
        /onRotation timeout must be a Duration/,
      ],
      [
        'a URL without scheme',
        () => Reload.httpPost('localhost:8080/reload'),
        /onRotation url must be an absolute http:\/\/ or https:\/\/ URL/,
      ],
      ['an ftp URL', () => Reload.httpPost('ftp://localhost/x'), /onRotation url must be an absolute http/],
      [
        'a URL with a space',
        () => Reload.httpPost('http://localhost:8080/re load'),
        /onRotation url must be an absolute http/,
      ],
      [
        'a port out of range',
        () => Reload.httpPost('http://localhost:70000/x'),
        /onRotation url must be an absolute http/,
      ],
      ['no URL', () => Reload.httpPost(undefined as any), /onRotation url must be an absolute http.*\(got undefined\)/],
      [
        'a timeout over 10 min',
        () => Reload.httpPost('http://localhost/x', { timeout: Duration.minutes(11) }),
        /onRotation timeout must be a whole number of seconds from 1s to 600s \(got 11m\)/,
      ],
    ];
    test.each(refused)('refused: %s', (_label, reload, message) => {
      const e = errorOf(() => setup({}, reload()));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(/^RotatingGpuSecret 'creds': onRotation/);
      expect(e.message).toMatch(message);
    });

    test.each(['http://localhost:8080/reload', 'https://127.0.0.1/-/reload?x=1', 'http://[::1]:9000/reload'])(
      'accepted: %s',
      url => {
        expect(envOf(setup({}, Reload.httpPost(url)).sidecar).RELOAD_URL).toBe(url);
      },
    );
  });

  describe("wrong types get the library's error naming the prop, never a TypeError", () => {
    const cases: Array<[string, Partial<RotatingGpuSecretProps> | any, RegExp]> = [
      [
        'credentialTtl null',
        { rotation: { ...rotation, credentialTtl: null } },
        /rotation.credentialTtl must be a Duration.*\(got null\)/,
      ],
      [
        'credentialTtl a number',
        { rotation: { ...rotation, credentialTtl: 172800 } },
        /rotation.credentialTtl must be a Duration/,
      ],
      [
        'every of 1500 ms',
        { rotation: { ...rotation, every: Duration.millis(1500) } },
        /rotation.every must be a whole number of seconds >= 3600s \(got 1500ms\)/,
      ],
      [
        'every NaN',
        { rotation: { ...rotation, every: Duration.seconds(NaN) } },
        /rotation.every must be a whole number of seconds/,
      ],
      ['every a string', { rotation: { ...rotation, every: '24h' } }, /rotation.every must be a Duration/],
      [
        'every of 32 days',
        { rotation: { ...rotation, every: Duration.days(32) } },
        /rotation.every must be at most 31 days/,
      ],
      [
        'every of 5 h',
        { rotation: { ...rotation, every: Duration.hours(5) } },
        /rotation.every must be a whole number of hours that divides 24, or whole days/,
      ],
      [
        'every under an hour',
        { rotation: { ...rotation, every: Duration.minutes(30) } },
        /rotation.every must be a whole number of seconds >= 3600s \(got 30m\)/,
      ],
      ['reloadPollInterval a number', { reloadPollInterval: 10 }, /reloadPollInterval must be a Duration/],
      [
        'reloadPollInterval 0',
        { reloadPollInterval: Duration.seconds(0) },
        /reloadPollInterval must be a whole number of seconds from 1s to 600s/,
      ],
      [
        'kubeletSecretCacheTtl over an hour',
        { kubeletSecretCacheTtl: Duration.hours(2) },
        /kubeletSecretCacheTtl must be a whole number of seconds from 0s to 3600s \(got 2h\)/,
      ],
      ['keys a string', { keys: 'token' }, /keys must be a non-empty array of Secret keys \(got "token"\)/],
      ['keys empty', { keys: [] }, /keys must be a non-empty array/],
      ['a key with a space', { keys: ['my token'] }, /keys\[0\] must be a valid ConfigMap or Secret key/],
      ['a key "."', { keys: ['.'] }, /keys\[0\] must be a valid ConfigMap or Secret key/],
      ['a key ".."', { keys: ['..'] }, /keys\[0\] must not start with "\.\."/],
      ['a key starting with ".."', { keys: ['..data'] }, /keys\[0\] must not start with "\.\."/],
      [
        'a key of 254 characters',
        { keys: ['k'.repeat(254)] },
        /keys\[0\] must be a valid ConfigMap or Secret key.*at most 253/,
      ],
      ['a key that is a number', { keys: [42] }, /keys\[0\] must be a valid ConfigMap or Secret key.*\(got 42\)/],
      ['a repeated key', { keys: ['a', 'a'] }, /keys must not repeat a key \(got "a"\)/],
      ['name a number', { name: 42 }, /name must be a non-empty DNS-1123 label \(got 42\)/],
      ['rotation a string', { rotation: 'daily' }, /rotation must be an object \(got "daily"\)/],
      ['rotation.image missing', { rotation: { command: ['/rotate'] } }, /rotation.image must be an image reference/],
      [
        'rotation.command a string',
        { rotation: { ...rotation, command: '/rotate' } },
        /rotation.command must be an array of strings/,
      ],
      ['rotation.command empty', { rotation: { ...rotation, command: [] } }, /rotation.command must not be empty/],
      [
        'rotation.env value a number',
        { rotation: { ...rotation, env: { PROVIDER: 3 } } },
        /rotation.env.PROVIDER must be a string \(got 3\)/,
      ],
      [
        'rotation.env SECRET_NAME',
        { rotation: { ...rotation, env: { SECRET_NAME: 'x' } } },
        /rotation.env.SECRET_NAME is set by the construct/,
      ],
      [
        'rotation.env bad name',
        { rotation: { ...rotation, env: { '1X': 'x' } } },
        /rotation.env.1X must be a valid environment variable name/,
      ],
      [
        'a typo in a prop',
        { reloadPollIntervall: Duration.seconds(5) },
        /reloadPollIntervall is not a known prop; did you mean 'reloadPollInterval'\?/,
      ],
      [
        'a typo in rotation',
        { rotation: { ...rotation, evry: Duration.hours(1) } },
        /rotation.evry is not a known prop; did you mean 'every'\?/,
      ],
    ];
    test.each(cases)('%s', (_label, props, message) => {
      const e = errorOf(() => setup(props));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(/^RotatingGpuSecret 'creds': /);
      expect(e.message).toMatch(message);
    });

    test('props that are not an object', () => {
      const e = errorOf(() => new RotatingGpuSecret(new Chart(Testing.app(), 'c'), 'creds', null as any));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(/^RotatingGpuSecret 'creds': props must be an object \(got null\)$/);
    });

    test.each<[string, (chart: Chart) => [any, any], RegExp]>([
      [
        'no workload',
        () => [undefined, { path: '/etc/x', onRotation: Reload.sync() }],
        /mountInto needs a workload of this library/,
      ],
      [
        'a construct that is not a workload',
        chart => [new Chart(chart, 'x'), { path: '/etc/x', onRotation: Reload.sync() }],
        /mountInto needs a workload of this library/,
      ],
      ['no options', chart => [trainer(chart), undefined], /mountInto options must be an object \(got undefined\)/],
      [
        'onRotation a string',
        chart => [trainer(chart), { path: '/etc/x', onRotation: 'sighup' }],
        /onRotation must be a Reload.*\(got "sighup"\)/,
      ],
      [
        'path a number',
        chart => [trainer(chart), { path: 1, onRotation: Reload.sync() }],
        /path must be an absolute path.*\(got 1\)/,
      ],
      [
        'an unknown option',
        chart => [trainer(chart), { path: '/etc/x', onRotation: Reload.sync(), readOnly: true }],
        /readOnly is not a known prop/,
      ],
    ])('mountInto: %s', (_label, args, message) => {
      const chart = new Chart(Testing.app(), 'c');
      const [workload, options] = args(chart);
      const e = errorOf(() => new RotatingGpuSecret(chart, 'creds', { name: 'x' }).mountInto(workload, options));
      expect(e).toBeInstanceOf(ConfigurationError);
      expect(e.message).toMatch(/^RotatingGpuSecret 'creds': /);
      expect(e.message).toMatch(message);
    });
  });

  test('the seed-004 app: a 48 h credential rotated every 12 h reaches the trainers in place, one skipped run included', () => {
    const chart = new SecretsChart(Testing.app(), 'gpu-credentials');
    const objects = synthValid(chart);
    expect(apiServerNameErrors(objects)).toEqual([]);
    expect(findOne(objects, 'CronJob').spec.schedule).toMatch(/^\d{1,2} \*\/12 \* \* \*$/);
    expect(findOne(objects, 'Job').spec.ttlSecondsAfterFinished).toBeUndefined();
    const creds = chart.node.findChild('creds') as RotatingGpuSecret;
    expect(2 * 12 * 3600 + creds.worstCasePropagationSeconds).toBeLessThanOrEqual(48 * 3600);
    const pod = findOne(objects, 'StatefulSet').spec.template.spec;
    const sidecar = pod.initContainers.find((c: any) => c.name.startsWith('reload-'));
    expect(sidecar.image).toBe('myorg/gpu-driver:2.1.0');
    expect(envOf(sidecar)).toMatchObject({
      ACTION: 'exec',
      KEYS: 'credentials.json',
      ACTION_TIMEOUT_SECONDS: '30',
      WATCH_DIR: '/etc/gpu',
    });
    for (const { where, spec } of podSpecsOf(objects))
      expect(`${where}: ${podSecurityLevel(spec)}`).toBe(`${where}: restricted`);
  });
});

describe('the env check covers the shared workload props and escape hatches', () => {
  test('a workload reading the rotating Secret through EnvValue.fromSecretKey fails synth', () => {
    const chart = new Chart(Testing.app(), 'c');
    new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
    trainer(chart, { env: { TOKEN: EnvValue.fromSecretKey('gpu-credentials', 'token') } });
    expect(() => Testing.synth(chart)).toThrow(
      /RotatingGpuSecret 'creds': StatefulSet\/\S+: container 'trainer' reads rotating Secret 'gpu-credentials' through env TOKEN/,
    );
  });

  test('an envFrom added by a JsonPatch escape hatch fails synth too', () => {
    const chart = new Chart(Testing.app(), 'c');
    new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
    const t = trainer(chart);
    t.statefulSet.addJsonPatch(
      JsonPatch.add('/spec/template/spec/containers/0/envFrom', [{ secretRef: { name: 'gpu-credentials' } }]),
    );
    expect(() => Testing.synth(chart)).toThrow(
      /container 'trainer' reads rotating Secret 'gpu-credentials' through envFrom/,
    );
  });

  test('another Secret read through env is fine', () => {
    const chart = new Chart(Testing.app(), 'c');
    new RotatingGpuSecret(chart, 'creds', { name: 'gpu-credentials' });
    trainer(chart, { env: { TOKEN: EnvValue.fromSecretKey('wandb', 'key') } });
    expect(() => synthValid(chart)).not.toThrow();
  });
});

describe('RotatingGpuSecret: pinned images, health, isolation and Secret types (#21)', () => {
  const DIGEST = `sha256:${'a'.repeat(64)}`;

  test.each([
    ['exec', (image: string) => Reload.exec(['/reload'], { image })],
    ['httpPost', (image: string) => Reload.httpPost('http://localhost:8080/reload', { image })],
    ['sync', (image: string) => Reload.sync({ image })],
    ['signal', (image: string) => Reload.signal('HUP', { process: 'trainer', exposeWorkloadToSidecar: true, image })],
  ])('Reload.%s runs the image it is given, by digest, in the sidecar and its init container', (_mode, reload) => {
    for (const image of [`registry.internal/mirror/busybox@${DIGEST}`, `registry.internal/busybox:1.36.1@${DIGEST}`]) {
      const { pod } = setup({}, reload(image));
      const ours = [...(pod.initContainers ?? []), ...pod.containers].filter((c: any) => c.name.startsWith('reload-'));
      expect(ours.length).toBeGreaterThan(0);
      for (const c of ours) expect(c.image).toBe(image);
    }
    expect(() => setup({}, reload('Busybox latest'))).toThrow(/onRotation image must be an image reference/);
  });

  test('the default sidecar image is documented and used when no image is given', () => {
    expect(setup({}, Reload.httpPost('http://localhost:1/r')).sidecar.image).toBe('busybox:1.36.1');
  });

  test('the rotator image accepts a digest', () => {
    const { objects } = setup({ rotation: { ...rotation, image: `registry.internal/rotator@${DIGEST}` } });
    expect(findOne(objects, 'CronJob').spec.jobTemplate.spec.template.spec.containers[0].image).toBe(
      `registry.internal/rotator@${DIGEST}`,
    );
  });

  test('every watcher keeps its record in an emptyDir and has a readiness-neutral liveness probe on its health mark', () => {
    for (const reload of [Reload.exec(['/reload']), Reload.sync()]) {
      const { pod, sidecar } = setup({}, reload);
      const state = sidecar.volumeMounts.find((m: any) => m.mountPath === envOf(sidecar).STATE_DIR);
      expect(pod.volumes.find((v: any) => v.name === state.name).emptyDir).toEqual({ sizeLimit: '1Mi' });
      expect(sidecar.livenessProbe.exec.command).toEqual([
        'sh',
        '-c',
        `! [ -e ${envOf(sidecar).STATE_DIR}/unhealthy ]`,
      ]);
      expect(sidecar.readinessProbe).toBeUndefined();
      // Only the native sidecars (restartPolicy Always) may have probes.
      for (const init of pod.initContainers ?? [])
        if (init.restartPolicy !== 'Always') expect(init.livenessProbe).toBeUndefined();
    }
  });

  test('Reload.signal needs exposeWorkloadToSidecar: true, by name', () => {
    for (const value of [undefined, false, 'yes']) {
      expect(() =>
        setup({}, Reload.signal('HUP', { process: 'trainer', exposeWorkloadToSidecar: value as any })),
      ).toThrow(/onRotation exposeWorkloadToSidecar must be true for Reload\.signal: .*\/proc\/<pid>\/environ/);
    }
  });

  test('exec, http and sync sidecars share no process namespace with the workload', () => {
    for (const reload of [Reload.exec(['/reload']), Reload.httpPost('http://localhost:1/r'), Reload.sync()]) {
      expect(setup({}, reload).pod.shareProcessNamespace).toBeUndefined();
    }
  });

  test.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.170.2/v2/credentials',
    'http://2852039166/',
    'http://0xa9fea9fe/',
    'http://[fe80::1]/reload',
    'http://[::ffff:169.254.169.254]/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://metadata/computeMetadata/v1/',
    'http://100.100.100.200/latest/meta-data/',
    'http://[fd00:ec2::254]/latest/',
  ])('an HTTP reload aimed at a metadata endpoint is refused: %s', url => {
    expect(() => setup({}, Reload.httpPost(url))).toThrow(/onRotation url must not target/);
  });

  test('an HTTP reload to the workload itself is fine', () => {
    for (const url of ['http://localhost:8080/reload', 'http://127.0.0.1:9/-/reload', 'https://[::1]:8443/r']) {
      expect(() => setup({}, Reload.httpPost(url))).not.toThrow();
    }
  });

  describe('Secret types', () => {
    test('Opaque (the default) is created empty by the manifests; the rotator cannot create Secrets', () => {
      const { objects } = setup();
      expect(findOne(objects, 'Secret')).toMatchObject({ type: 'Opaque' });
      expect(findOne(objects, 'Secret').data).toBeUndefined();
      const role = findOne(objects, 'Role');
      expect(role.rules.flatMap((r: any) => r.verbs)).not.toContain('create');
    });

    test.each([
      [SecretType.DOCKER_CONFIG_JSON, ['.dockerconfigjson']],
      [SecretType.TLS, ['tls.crt', 'tls.key']],
      [SecretType.BASIC_AUTH, ['username', 'password']],
    ])('%s: no Secret in the manifests, the rotator creates it; keys default to the type', (type, keys) => {
      const { objects, creds, sidecar } = setup({ type });
      expect(objects.filter((o: any) => o.kind === 'Secret')).toEqual([]);
      expect(creds.secret).toBeUndefined();
      expect(creds.keys).toEqual(keys);
      expect(envOf(sidecar).KEYS).toBe(keys.join(' '));
      const role = findOne(objects, 'Role');
      expect(role.rules).toContainEqual({ apiGroups: [''], resources: ['secrets'], verbs: ['create'] });
      const env = envOf(findOne(objects, 'CronJob').spec.jobTemplate.spec.template.spec.containers[0]);
      expect(env.SECRET_TYPE).toBe(type.type);
    });

    test.each([SecretType.OPAQUE, SecretType.DOCKER_CONFIG_JSON, SecretType.TLS, SecretType.BASIC_AUTH])(
      '%s works with every reload mode and synthesizes strictly valid objects',
      type => {
        for (const reload of [Reload.exec(['/reload']), Reload.httpPost('http://localhost:1/r'), Reload.sync()]) {
          expect(() => setup({ type }, reload)).not.toThrow();
          expect(() => setup({ type, rotation: undefined }, reload)).not.toThrow();
        }
      },
    );

    test('the keys must include what the type requires', () => {
      expect(() => setup({ type: SecretType.TLS, keys: ['tls.crt'] })).toThrow(
        /keys must include "tls.key": the API server refuses a kubernetes.io\/tls Secret without it/,
      );
      expect(() => setup({ type: SecretType.DOCKER_CONFIG_JSON, keys: ['config.json'] })).toThrow(
        /keys must include ".dockerconfigjson"/,
      );
      expect(() => setup({ type: SecretType.BASIC_AUTH, keys: ['token'] })).toThrow(
        /keys must include "username" or "password"/,
      );
      expect(() => setup({ type: SecretType.BASIC_AUTH, keys: ['password'] })).not.toThrow();
      expect(() => setup({ type: 'kubernetes.io/tls' as any })).toThrow(/type must be a SecretType/);
    });

    test("why the manifests never hold a typed Secret's data: kubectl apply would undo each rotation", () => {
      const rotated = { '.dockerconfigjson': 'cm90YXRlZA==' };
      const placeholder = { '.dockerconfigjson': 'eyJhdXRocyI6e319' };
      // A placeholder in the manifest: the three-way merge sets the manifest's value again.
      const withPlaceholder = applyResult(
        { type: 'kubernetes.io/dockerconfigjson', data: rotated },
        { type: 'kubernetes.io/dockerconfigjson', data: placeholder },
        { type: 'kubernetes.io/dockerconfigjson', data: placeholder },
        true,
      ) as any;
      expect(withPlaceholder.data).toEqual(placeholder);
      // No data in the manifest (the Opaque Secret): the rotated data stays.
      const withoutData = applyResult(
        { type: 'Opaque', data: rotated },
        { type: 'Opaque' },
        { type: 'Opaque' },
        true,
      ) as any;
      expect(withoutData.data).toEqual(rotated);
    });
  });
});
