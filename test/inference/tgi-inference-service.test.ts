import { Chart, Duration, Size, Testing } from 'cdk8s';
import {
  IpFamily,
  ModelCache,
  PodSecurityLevel,
  TGI_DEFAULT_IMAGE,
  TgiInferenceService,
  TgiInferenceServiceProps,
  TgiQuantization,
} from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid } from '../support/synth';
import { TGI_NON_ROOT_IMAGE } from './support';

const base: TgiInferenceServiceProps = { name: 'tgi', modelId: 'EleutherAI/gpt-neox-20b' };

function synth(props: Partial<TgiInferenceServiceProps> = {}, namespace?: string) {
  const chart = new Chart(Testing.app(), 'test', { namespace });
  const tgi = new TgiInferenceService(chart, 'tgi', { ...base, ...props });
  const objects = synthValid(chart);
  const sts = findOne(objects, tgi.workloadKind);
  const pod = sts.spec.template.spec;
  return { tgi, objects, sts, pod, main: pod.containers[0], env: envOf(pod.containers[0]) };
}

describe('TgiInferenceService', () => {
  describe('workload shape', () => {
    test('a Parallel StatefulSet with a headless Service', () => {
      const { sts, objects, tgi } = synth({ version: 2 });
      expect(sts.metadata.name).toBe('tgi-v2');
      expect(sts.spec.podManagementPolicy).toBe('Parallel');
      const headless = findOne(objects, 'Service', 'tgi-v2-headless');
      expect(headless.spec.clusterIP).toBe('None');
      expect(sts.spec.serviceName).toBe(headless.metadata.name);
      expect(tgi.statefulSetName).toBe('tgi-v2');
    });

    test('a ClusterIP Service on port 80 targeting the named port http (8080), stable across versions', () => {
      const { objects, main, tgi } = synth({ version: 2 });
      const svc = findOne(objects, 'Service', 'tgi');
      expect(svc.spec.type).toBe('ClusterIP');
      expect(svc.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
      expect(svc.spec.selector).toEqual({
        'app.kubernetes.io/name': 'tgi',
        'app.kubernetes.io/component': 'inference',
      });
      expect(main.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
      expect(tgi.serviceName).toBe('tgi');
    });

    test('url uses the chart namespace when there is one', () => {
      expect(synth({}, 'serving').tgi.url).toBe('http://tgi.serving.svc.cluster.local');
      expect(synth().tgi.url).toBe('http://tgi');
    });

    test('a pinned image by default, overridable, never pulled Always', () => {
      const { main } = synth();
      expect(main.image).toBe(TGI_DEFAULT_IMAGE);
      expect(main.image).toMatch(/:\d+\.\d+\.\d+$/);
      expect(main.imagePullPolicy).toBe('IfNotPresent');
      expect(synth({ image: 'registry/tgi:3.0.1' }).main.image).toBe('registry/tgi:3.0.1');
    });

    test('listens on 0.0.0.0:8080, not the pod hostname or a privileged port; :: on IPv6 clusters', () => {
      const { env } = synth();
      expect(env.PORT).toBe('8080');
      expect(env.HOSTNAME).toBe('0.0.0.0');
      expect(synth({ ipFamily: IpFamily.IPV6 }).env.HOSTNAME).toBe('::');
      expect(() => synth({ env: { HOSTNAME: 'tgi-0' } })).toThrow(
        'TgiInferenceService \'tgi\': env.HOSTNAME is set by the construct; set ipFamily instead (got "tgi-0")',
      );
    });

    test("extraArgs that the entrypoint's unquoted $@ would split or glob are refused", () => {
      expect(() => synth({ extraArgs: ['--otlp-service-name', 'my service'] })).toThrow(
        "TgiInferenceService 'tgi': extraArgs[1] must not contain whitespace or glob characters: the image's entrypoint passes arguments through an unquoted $@, which would split or expand it (use the equivalent environment variable through env) (got \"my service\")",
      );
      expect(() => synth({ extraArgs: ['--lora-adapters=org/*'] })).toThrow(
        /extraArgs\[0\] must not contain whitespace or glob/,
      );
      expect(synth({ extraArgs: ['--otlp-service-name', 'tgi-prod'] }).main.args).toEqual([
        '--otlp-service-name',
        'tgi-prod',
      ]);
    });

    test('usage statistics are off unless usageStats is set', () => {
      expect(synth().env.USAGE_STATS).toBe('off');
      expect(synth({ usageStats: true }).env.USAGE_STATS).toBe('on');
      expect(() => synth({ extraArgs: ['--usage-stats', 'on'] })).toThrow(
        /extraArgs\[0\] must not set --usage-stats: the construct sets it from usageStats/,
      );
    });

    test.each([
      ['--max-total-tokens', '8192'],
      ['--port', '9000'],
      ['--model-id', 'x'],
      ['--num-shard', '2'],
      ['--hostname', '::'],
      ['-p', '9000'],
    ])('extraArgs %s is refused', (flag, value) => {
      expect(() => synth({ extraArgs: [flag, value] })).toThrow(
        new RegExp(`^TgiInferenceService 'tgi': extraArgs\\[0\\] must not set ${flag}`),
      );
      expect(() => synth({ extraArgs: [`${flag}=${value}`] })).toThrow(/extraArgs\[0\] must not set/);
    });
  });

  describe('graceful shutdown whose timings add up', () => {
    test('preStop sleeps in the container lifecycle, the drain timeout is explicit, grace is 120 s', () => {
      const { main, pod, env, tgi } = synth();
      expect(main.lifecycle).toEqual({ preStop: { sleep: { seconds: 15 } } });
      expect(pod.preStop).toBeUndefined();
      expect(env.GRACEFUL_TERMINATION_TIMEOUT).toBe('90');
      expect(pod.terminationGracePeriodSeconds).toBe(120);
      expect(tgi.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(15 + 90 + 15);
    });

    test('a grace period shorter than the sum is an error that shows the sum', () => {
      expect(() => synth({ terminationGracePeriod: Duration.seconds(100) })).toThrow(
        "TgiInferenceService 'tgi': terminationGracePeriod must be at least preStopSleep + drainTimeout + margin = 15s + 90s + 15s = 120s, or SIGKILL cuts the drain short (got 100s)",
      );
      expect(() =>
        synth({ drainTimeout: Duration.seconds(120), terminationGracePeriod: Duration.seconds(120) }),
      ).toThrow(/= 15s \+ 120s \+ 15s = 150s.*\(got 120s\)/);
      expect(
        synth({ drainTimeout: Duration.seconds(120), terminationGracePeriod: Duration.seconds(150) }).pod
          .terminationGracePeriodSeconds,
      ).toBe(150);
      // Without an explicit grace period, it follows the drain.
      expect(synth({ drainTimeout: Duration.seconds(120) }).pod.terminationGracePeriodSeconds).toBe(150);
    });
  });

  describe('probes', () => {
    test('the startup probe budget covers the maximum model load time', () => {
      const { main } = synth();
      expect(main.startupProbe.httpGet).toEqual({ path: '/health', port: 'http' });
      expect(main.startupProbe.failureThreshold * main.startupProbe.periodSeconds).toBeGreaterThanOrEqual(900);
      const long = synth({ maxModelLoadTime: Duration.minutes(45) }).main;
      expect(long.startupProbe.failureThreshold * long.startupProbe.periodSeconds).toBeGreaterThanOrEqual(45 * 60);
    });

    test('readiness on /health without an initialDelaySeconds hack; lenient liveness', () => {
      const { main } = synth();
      expect(main.readinessProbe.httpGet.path).toBe('/health');
      expect(main.readinessProbe.initialDelaySeconds).toBeUndefined();
      expect(main.livenessProbe.httpGet.path).toBe('/health');
      expect(main.livenessProbe.timeoutSeconds).toBeGreaterThanOrEqual(10);
      expect(main.livenessProbe.failureThreshold * main.livenessProbe.periodSeconds).toBeGreaterThanOrEqual(180);
    });
  });

  describe('GPUs and memory', () => {
    test('GPU limits and NUM_SHARD equal gpusPerReplica', () => {
      const { main, env } = synth({ gpusPerReplica: 4 });
      expect(main.resources.limits['nvidia.com/gpu']).toBe(4);
      expect(env.NUM_SHARD).toBe('4');
    });

    test('/dev/shm is a memory emptyDir of 1 GiB per shard', () => {
      expect(synth().pod.volumes).toContainEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } });
      expect(synth({ gpusPerReplica: 4, memory: Size.gibibytes(64) }).pod.volumes).toContainEqual({
        name: 'dshm',
        emptyDir: { medium: 'Memory', sizeLimit: '4Gi' },
      });
    });

    test('the shared hub download (not download-weights, which leaves out the tokenizer) runs in an init container; the launcher then finds the files offline', () => {
      const { pod, env } = synth({ revision: 'abc' });
      const command = pod.initContainers[0].command;
      expect(command).toEqual([
        'python3',
        '/opt/cdk8s-gpu/hub-download/hub-download.py',
        'tgi',
        'EleutherAI/gpt-neox-20b',
        'abc',
      ]);
      expect(env.HF_HUB_OFFLINE).toBe('1');
      // The router reads the tokenizer from HUGGINGFACE_HUB_CACHE in offline mode (router/src/server.rs).
      expect(env.HUGGINGFACE_HUB_CACHE).toBe('/data/hub');
    });

    test('the model cache is a per-replica claim on /data by default, with HF_HOME pointing at it', () => {
      const { sts, main, env } = synth({
        modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(60), storageClassName: 'ssd' }),
      });
      expect(sts.spec.volumeClaimTemplates[0].metadata.name).toBe('model-cache');
      expect(sts.spec.volumeClaimTemplates[0].spec).toEqual({
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '60Gi' } },
        storageClassName: 'ssd',
      });
      expect(main.volumeMounts).toContainEqual({ name: 'model-cache', mountPath: '/data' });
      expect(env.HF_HOME).toBe('/data');
      expect(env.HUGGINGFACE_HUB_CACHE).toBe('/data/hub');
    });

    test('or an emptyDir', () => {
      const { sts, pod } = synth({ modelCache: ModelCache.emptyDir({ sizeLimit: Size.gibibytes(50) }) });
      expect(sts.spec.volumeClaimTemplates).toBeUndefined();
      expect(pod.volumes).toContainEqual({ name: 'model-cache', emptyDir: { sizeLimit: '50Gi' } });
    });
  });

  describe('availability', () => {
    test('a PDB with maxUnavailable 1 and AlwaysAllow, for any replica count', () => {
      for (const replicas of [1, 3]) {
        const { objects, sts } = synth({ replicas });
        const pdb = findOne(objects, 'PodDisruptionBudget');
        expect(pdb.spec).toEqual({
          maxUnavailable: 1,
          selector: sts.spec.selector,
          unhealthyPodEvictionPolicy: 'AlwaysAllow',
        });
      }
    });

    test('with one replica the PDB allows the drain (one eviction), never blocks it', () => {
      const { objects } = synth({ replicas: 1 });
      const pdb = findOne(objects, 'PodDisruptionBudget');
      const allowedEvictions = pdb.spec.maxUnavailable;
      expect(allowedEvictions).toBeGreaterThanOrEqual(1);
      expect(pdb.spec.minAvailable).toBeUndefined();
    });

    test('replicas spread across nodes', () => {
      const { pod, sts } = synth({ replicas: 3 });
      expect(pod.topologySpreadConstraints).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: sts.spec.selector,
        },
      ]);
    });
  });

  describe('TGI options', () => {
    test('typed props become TGI env vars', () => {
      const { env, main } = synth({
        maxConcurrentRequests: 64,
        maxInputTokens: 1024,
        maxTotalTokens: 2048,
        maxBatchPrefillTokens: 4096,
        quantize: TgiQuantization.AWQ,
        revision: 'abc123',
        extraArgs: ['--json-output'],
      });
      expect(env).toMatchObject({
        MAX_CONCURRENT_REQUESTS: '64',
        MAX_INPUT_TOKENS: '1024',
        MAX_TOTAL_TOKENS: '2048',
        MAX_BATCH_PREFILL_TOKENS: '4096',
        QUANTIZE: 'awq',
        REVISION: 'abc123',
        MODEL_ID: 'EleutherAI/gpt-neox-20b',
      });
      expect(main.args).toEqual(['--json-output']);
    });

    test('the token comes from a Secret as HF_TOKEN, in the download only: the server runs offline', () => {
      const { env, pod } = synth({ hfTokenSecret: { name: 'hf-token', key: 'token' } });
      expect(envOf(pod.initContainers[0]).HF_TOKEN).toEqual({ secretKeyRef: { name: 'hf-token', key: 'token' } });
      expect(env.HF_TOKEN).toBeUndefined();
    });

    test('a token with a local model path is refused: nothing would use it', () => {
      expect(() => synth({ modelId: '/models/llama', hfTokenSecret: { name: 'hf-token', key: 'token' } })).toThrow(
        /^TgiInferenceService 'tgi': hfTokenSecret needs a hub model: with a local path nothing is downloaded/,
      );
    });

    test('maxInputTokens must be below maxTotalTokens', () => {
      expect(() => synth({ maxInputTokens: 4096, maxTotalTokens: 4096 })).toThrow(
        "TgiInferenceService 'tgi': maxInputTokens must be less than maxTotalTokens (4096), which counts input and generated tokens (got 4096)",
      );
    });
  });

  describe('metrics', () => {
    test('pods carry scrape annotations for /metrics on the http port', () => {
      expect(synth().sts.spec.template.metadata.annotations).toEqual({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '8080',
        'prometheus.io/path': '/metrics',
      });
    });

    test('an optional ServiceMonitor selects only the headless Service', () => {
      expect(synth().objects.some(o => o.kind === 'ServiceMonitor')).toBe(false);
      const { objects } = synth({ serviceMonitor: true });
      const sm = findOne(objects, 'ServiceMonitor');
      expect(sm.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s' }]);
      const matches = (svc: any) =>
        Object.entries(sm.spec.selector.matchLabels).every(([k, val]) => svc.metadata.labels[k] === val);
      expect(objects.filter(o => o.kind === 'Service' && matches(o)).map(o => o.metadata.name)).toEqual([
        'tgi-headless',
      ]);
    });
  });

  describe('security, honest about the upstream image', () => {
    test('by default: image user, everything else locked down, baseline profile, writable caches', () => {
      const { pod, main, env, tgi } = synth();
      expect(podSecurityLevel(pod)).toBe('baseline');
      expect(tgi.podSecurityLevel).toBe(PodSecurityLevel.BASELINE);
      expect(main.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(main.securityContext.capabilities.add).toBeUndefined();
      expect(pod.securityContext.runAsUser).toBeUndefined();
      expect(main.volumeMounts.map((m: any) => m.mountPath)).toEqual(
        expect.arrayContaining(['/data', '/tmp', '/home/tgi']),
      );
      expect(env.HOME).toBe('/home/tgi');
      expect(env.TRITON_CACHE_DIR).toBe('/home/tgi/.cache/triton');
      expect(env.OUTLINES_CACHE_DIR).toBe('/home/tgi/.cache/outlines');
    });

    test('runAsRoot: false is refused for TGI 3.1 and later, which cannot start as a non-root UID (TGI#3082)', () => {
      expect(() => synth({ runAsRoot: false })).toThrow(
        /^TgiInferenceService 'tgi': runAsRoot asks for a non-root pod, which ghcr\.io\/huggingface\/text-generation-inference:3\.3\.7 \(release 3\.1\.0 or later\) cannot run: .*#3082.* \(got false\)$/,
      );
      expect(() => synth({ runAsUser: 1000 })).toThrow(
        /^TgiInferenceService 'tgi': runAsUser asks for a non-root pod, .* \(got 1000\)$/,
      );
      expect(() => synth({ runAsRoot: false, image: 'ghcr.io/huggingface/text-generation-inference:3.1.0' })).toThrow(
        /runAsRoot asks for a non-root pod/,
      );
      // A build of one's own (another repository) is the user's call.
      expect(() => synth({ runAsRoot: false, image: 'registry.example.com/tgi:3.3.7-nonroot' })).not.toThrow();
    });

    test('runAsRoot: false with a TGI release that can (3.0.1) runs a non-root UID with fsGroup and meets restricted', () => {
      const { pod, tgi } = synth({ runAsRoot: false, image: TGI_NON_ROOT_IMAGE });
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
      expect(podSecurityLevel(pod)).toBe('restricted');
      expect(tgi.podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
    });
  });

  describe('bad input throws clear errors', () => {
    const cases: Array<[string, Partial<TgiInferenceServiceProps>, string | RegExp]> = [
      ['replicas 0', { replicas: 0 }, /^TgiInferenceService 'tgi': replicas must be a whole number .*1.* \(got 0\)$/],
      [
        'gpusPerReplica 0',
        { gpusPerReplica: 0 },
        /^TgiInferenceService 'tgi': gpusPerReplica must be a whole number .*1.* \(got 0\)$/,
      ],
      ['empty modelId', { modelId: '' }, `TgiInferenceService 'tgi': modelId must be a non-empty string (got "")`],
      [
        'startup budget under a minute',
        { maxModelLoadTime: Duration.seconds(30) },
        "TgiInferenceService 'tgi': maxModelLoadTime must be a whole number of seconds from 60s to 21474836470s (got 30s)",
      ],
      [
        'short grace',
        { terminationGracePeriod: Duration.seconds(30) },
        /terminationGracePeriod must be at least .* = 120s/,
      ],
      [
        'prefill below input',
        { maxInputTokens: 2048, maxBatchPrefillTokens: 1024 },
        /maxBatchPrefillTokens must be at least maxInputTokens \(2048\)/,
      ],
    ];
    test.each(cases)('%s', (_label, props, message) => {
      expect(() => new TgiInferenceService(new Chart(Testing.app(), 'c'), 'tgi', { ...base, ...props })).toThrow(
        message,
      );
    });
  });
});
