import { Chart, Duration, Size, Testing } from 'cdk8s';
import { EnvFrom, EnvValue, guard, IpFamily, ModelCache, PodSecurityLevel } from '../../src';
import { kubeletExpand } from '../../src/common/kubelet-expansion';
import { GPU_WORKLOAD_PROP_KEYS } from '../../src/common/workload-pod';
import { SERVING_PROP_KEYS } from '../../src/inference/inference-service';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid } from '../support/synth';
import { BASE, configError, ENGINES, SPECIFIC_KEYS, synthEngine } from './support';

describe.each(ENGINES)('$construct: the shared serving practice', e => {
  const make = (props: any = {}) => e.make(new Chart(Testing.app(), 'c'), 'svc', { ...BASE, ...props });

  describe('workload shape', () => {
    test('a Parallel RollingUpdate StatefulSet, a headless Service and a client Service on port 80 to the named port', () => {
      const { sts, objects, svc, main } = synthEngine(e, { version: 2 });
      expect(sts.metadata.name).toBe('llm-v2');
      expect(sts.spec.podManagementPolicy).toBe('Parallel');
      expect(sts.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { partition: 0 } });
      const headless = findOne(objects, 'Service', 'llm-v2-headless');
      expect(headless.spec.clusterIP).toBe('None');
      expect(sts.spec.serviceName).toBe('llm-v2-headless');
      const client = findOne(objects, 'Service', 'llm');
      expect(client.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
      expect(client.spec.selector).toEqual({
        'app.kubernetes.io/name': 'llm',
        'app.kubernetes.io/component': 'inference',
      });
      expect(main.ports).toEqual([{ name: 'http', containerPort: e.port, protocol: 'TCP' }]);
      expect(svc.serviceName).toBe('llm');
      expect(svc.port).toBe(e.port);
    });

    test('every object is a public member', () => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'ns' });
      const svc = e.make(chart, 'svc', {
        ...BASE,
        [e.batch.prop]: 64,
        serviceMonitor: true,
        autoscaling: { maxReplicas: 3 },
      });
      const objects = synthValid(chart);
      const byHandle = [
        svc.workload,
        svc.service,
        svc.headlessService,
        svc.podDisruptionBudget,
        svc.serviceMonitor!,
        svc.horizontalPodAutoscaler!,
        svc.networkPolicy!,
        svc.downloadScript!,
      ]
        .map(o => `${o.kind}/${o.name}`)
        .sort();
      expect(byHandle).toEqual(objects.map(o => `${o.kind}/${o.metadata.name}`).sort());
      expect(svc.scaledObject).toBeUndefined();
    });

    test('url uses the chart namespace and clusterDomain', () => {
      expect(synthEngine(e, {}, 'serving').svc.url).toBe('http://llm.serving.svc.cluster.local');
      expect(synthEngine(e, { clusterDomain: 'corp.internal' }, 'serving').svc.url).toBe(
        'http://llm.serving.svc.corp.internal',
      );
      expect(synthEngine(e).svc.url).toBe('http://llm');
    });

    test('a pinned default image, never pulled Always; the model and tensor parallelism reach the engine', () => {
      const { main } = synthEngine(e, { gpusPerReplica: 4 });
      expect(main.image).toBe(e.image);
      expect(main.image).toMatch(/:v?\d+\.\d+\.\d+$/);
      expect(main.imagePullPolicy).toBe('IfNotPresent');
      expect(main.resources.limits['nvidia.com/gpu']).toBe(4);
      expect(e.setting(main, 'tp')).toBe('4');
      expect(e.setting(main, 'model')).toBe(BASE.modelId);
      expect(e.setting(main, 'port')).toBe(String(e.port));
    });
  });

  describe('listen address (IPv4, IPv6-only clusters)', () => {
    test('0.0.0.0 by default, :: with ipFamily IPV6', () => {
      expect(e.setting(synthEngine(e).main, 'host')).toBe('0.0.0.0');
      expect(e.setting(synthEngine(e, { ipFamily: IpFamily.IPV6 }).main, 'host')).toBe('::');
    });
  });

  describe('drain timings that add up', () => {
    test('preStop sleep, the engine drain set from drainTimeout, grace = preStop + drain + margin', () => {
      const { main, pod, svc } = synthEngine(e);
      // The kubelet's sleep action: no sleep binary needed in the engine image.
      expect(main.lifecycle).toEqual({ preStop: { sleep: { seconds: 15 } } });
      expect(pod.terminationGracePeriodSeconds).toBe(120);
      expect(svc.terminationGracePeriodSeconds).toBe(120);
      if (e.construct !== 'SglangInferenceService') expect(e.setting(main, 'drain')).toBe('90');
      const longer = synthEngine(e, { drainTimeout: Duration.minutes(5), preStopSleep: Duration.seconds(20) });
      expect(longer.main.lifecycle).toEqual({ preStop: { sleep: { seconds: 20 } } });
      expect(longer.pod.terminationGracePeriodSeconds).toBe(20 + 300 + 15);
      // No sleep is no hook: the 1.32 API server refuses a sleep of 0 s.
      const none = synthEngine(e, { preStopSleep: Duration.seconds(0) });
      expect(none.main.lifecycle).toBeUndefined();
      expect(none.pod.terminationGracePeriodSeconds).toBe(0 + 90 + 15);
      if (e.construct !== 'SglangInferenceService') expect(e.setting(longer.main, 'drain')).toBe('300');
    });

    test('a grace period shorter than the sum is refused with the numbers', () => {
      expect(() => make({ terminationGracePeriod: Duration.seconds(100) })).toThrow(
        `${e.construct} 'svc': terminationGracePeriod must be at least preStopSleep + drainTimeout + margin = 15s + 90s + 15s = 120s, or SIGKILL cuts the drain short (got 100s)`,
      );
      expect(() => make({ drainTimeout: Duration.minutes(2), terminationGracePeriod: Duration.seconds(120) })).toThrow(
        /= 15s \+ 120s \+ 15s = 150s.*\(got 120s\)/,
      );
    });
  });

  describe('probes and the startup budget', () => {
    test('startup, readiness and liveness on the health path of the named port; no initialDelaySeconds', () => {
      const { main } = synthEngine(e);
      for (const p of [main.startupProbe, main.readinessProbe, main.livenessProbe])
        expect(p.httpGet).toEqual({ path: '/health', port: 'http' });
      expect(main.readinessProbe.initialDelaySeconds).toBeUndefined();
      expect(main.livenessProbe.failureThreshold * main.livenessProbe.periodSeconds).toBeGreaterThanOrEqual(180);
      expect(main.startupProbe.failureThreshold * main.startupProbe.periodSeconds).toBe(900);
    });

    test('the budget follows modelSize: size at 100 MB/s plus 300 s warm-up', () => {
      // 140 GiB = 150.3 GB: 1503 s + 300 s = 1803 s, rounded up to the 10 s period.
      const { main, svc } = synthEngine(e, {
        modelId: 'meta-llama/Llama-3.1-70B-Instruct',
        modelSize: Size.gibibytes(140),
        modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(200) }),
      });
      expect(svc.startupBudgetSeconds).toBe(1810);
      expect(main.startupProbe.failureThreshold * main.startupProbe.periodSeconds).toBe(1810);
    });

    test('maxModelLoadTime shorter than the modelSize budget is refused with the numbers', () => {
      expect(() => make({ modelSize: Size.gibibytes(15), maxModelLoadTime: Duration.minutes(5) })).toThrow(
        `${e.construct} 'svc': maxModelLoadTime must be at least the load budget of modelSize (15Gi): 16.1 GB at 100 MB/s + 300s warm-up = 470s, or the startup probe restarts a server that is still loading (got 5m)`,
      );
      expect(
        synthEngine(e, { modelSize: Size.gibibytes(15), maxModelLoadTime: Duration.minutes(10) }).svc
          .startupBudgetSeconds,
      ).toBe(600);
    });
  });

  describe('model cache: downloaded where no probe can kill it, read offline', () => {
    test('an init container runs the engine download into the cache; the server runs with HF_HUB_OFFLINE=1', () => {
      const { main, init, env, pod } = synthEngine(e, {
        hfTokenSecret: { name: 'hf', key: 'token' },
        env: { HF_ENDPOINT: 'https://mirror.example' },
      });
      expect(pod.initContainers[0].name).toBe('model-download');
      expect(init.image).toBe(main.image);
      expect(init.command.join(' ')).toContain(BASE.modelId);
      expect(env.HF_HUB_OFFLINE).toBe('1');
      const initEnv = envOf(init);
      expect(initEnv.HF_HUB_OFFLINE).toBeUndefined();
      expect(initEnv.HF_HOME).toBe('/data');
      expect(initEnv.HF_TOKEN).toEqual({ secretKeyRef: { name: 'hf', key: 'token' } });
      // Credentials only where used: the server runs offline and never reads the token.
      expect(env.HF_TOKEN).toBeUndefined();
      expect(JSON.stringify(main)).not.toContain('"hf"');
      expect(initEnv.HF_ENDPOINT).toBe('https://mirror.example');
      expect(init.volumeMounts).toContainEqual({ name: 'model-cache', mountPath: '/data' });
      expect(init.volumeMounts.map((m: any) => m.mountPath)).not.toContain('/dev/shm');
      expect(init.resources.limits['nvidia.com/gpu']).toBeUndefined();
      expect(init.securityContext).toEqual(main.securityContext);
      expect(init.startupProbe).toBeUndefined();
      expect(main.volumeMounts).toContainEqual({ name: 'model-cache', mountPath: '/data' });
      expect(env.HF_HOME).toBe('/data');
    });

    test('a model on a volume (absolute path) downloads nothing', () => {
      const { init } = synthEngine(e, {
        modelId: '/models/llama',
        volumes: [
          {
            volume: { name: 'models', persistentVolumeClaim: { claimName: 'models', readOnly: true } },
            mountPath: '/models',
            readOnly: true,
          },
        ],
      });
      expect(init).toBeUndefined();
    });

    test('the revision reaches the download and the server', () => {
      const { init } = synthEngine(e, { revision: 'abc123' });
      // TGI's downloader takes a flag; the hub script takes it as its second argument (and is run
      // with it in hub-download.test.ts).
      expect(init.command.slice(-2).includes('abc123') || init.command.join(' ').includes('--revision abc123')).toBe(
        true,
      );
    });

    test('user strings reach the server as written: the kubelet expands no $(VAR) in them', () => {
      const vars = { HF_TOKEN: 'secret-token', POD_NAME: 'p-0' };
      const { main } = synthEngine(e, {
        revision: '$(HF_TOKEN)',
        extraArgs: e.construct === 'TgiInferenceService' ? [] : ['--chat-template=$(POD_NAME)'],
      });
      const seen = [
        ...(main.command ?? []),
        ...(main.args ?? []),
        ...(main.env ?? []).flatMap((x: any) => (x.value === undefined ? [] : [x.value])),
      ].map(x => kubeletExpand(x, vars));
      expect(seen.join(' ')).not.toContain('secret-token');
      expect(seen.join(' ')).not.toContain('p-0');
      expect(seen.some(x => x.includes('$(HF_TOKEN)'))).toBe(true);
    });

    test('default: a per-replica 100Gi claim deleted with the StatefulSet, grown to modelSize + 20%', () => {
      const { sts } = synthEngine(e);
      expect(sts.spec.volumeClaimTemplates[0].spec).toEqual({
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '100Gi' } },
      });
      expect(
        synthEngine(e, { modelId: 'meta-llama/Llama-3.1-70B-Instruct', modelSize: Size.gibibytes(132) }).sts.spec
          .volumeClaimTemplates[0].spec.resources.requests.storage,
      ).toBe('159Gi');
      expect(sts.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Delete', whenScaled: 'Delete' });
    });

    test('the cache claim is a public member', () => {
      expect(synthEngine(e).svc.modelCacheClaimName).toBe('model-cache');
      expect(synthEngine(e, { modelCache: ModelCache.sharedClaim({ claimName: 'rwx' }) }).svc.modelCacheClaimName).toBe(
        'rwx',
      );
      expect(synthEngine(e, { modelCache: ModelCache.emptyDir() }).svc.modelCacheClaimName).toBeUndefined();
      expect(synthEngine(e).svc.queueMetric).toBe(e.queueMetric);
    });

    test('a shared ReadWriteMany claim is mounted by every replica, with no claim template', () => {
      const { sts, pod, main } = synthEngine(e, { modelCache: ModelCache.sharedClaim({ claimName: 'models-rwx' }) });
      expect(sts.spec.volumeClaimTemplates).toBeUndefined();
      expect(pod.volumes).toContainEqual({ name: 'model-cache', persistentVolumeClaim: { claimName: 'models-rwx' } });
      expect(main.volumeMounts).toContainEqual({ name: 'model-cache', mountPath: '/data' });
    });

    test('a cache smaller than the declared model (with 20% headroom) is refused', () => {
      expect(() =>
        make({
          modelId: 'meta-llama/Llama-3.1-70B-Instruct',
          modelSize: Size.gibibytes(140),
          modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(150) }),
        }),
      ).toThrow(
        `${e.construct} 'svc': modelCache.size must hold modelSize (140Gi) with 20% headroom for partial downloads and tokenizer files, at least 168Gi (got 150Gi)`,
      );
      expect(() =>
        make({ modelSize: Size.gibibytes(28), modelCache: ModelCache.emptyDir({ sizeLimit: Size.gibibytes(28) }) }),
      ).toThrow(/modelCache.sizeLimit must hold modelSize/);
    });

    test('/dev/shm scales with gpusPerReplica', () => {
      for (const gpus of [1, 4]) {
        expect(synthEngine(e, { gpusPerReplica: gpus, memory: Size.gibibytes(128) }).pod.volumes).toContainEqual({
          name: 'dshm',
          emptyDir: { medium: 'Memory', sizeLimit: `${e.shmGibPerGpu * gpus}Gi` },
        });
      }
    });
  });

  describe('availability and metrics', () => {
    test('PDB maxUnavailable 1 with AlwaysAllow; spread over nodes', () => {
      const { objects, sts, pod } = synthEngine(e, { replicas: 3 });
      expect(findOne(objects, 'PodDisruptionBudget').spec).toEqual({
        maxUnavailable: 1,
        selector: sts.spec.selector,
        unhealthyPodEvictionPolicy: 'AlwaysAllow',
      });
      expect(pod.topologySpreadConstraints).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: sts.spec.selector,
        },
      ]);
      expect(sts.spec.replicas).toBe(3);
    });

    test('scrape annotations; a ServiceMonitor with labels and interval on the headless Service only', () => {
      expect(synthEngine(e).sts.spec.template.metadata.annotations).toEqual({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(e.port),
        'prometheus.io/path': '/metrics',
        // The Endpoint Picker's endpoint port, on the engines it routes to (not TGI).
        ...(e.engine.pickerEngine ? { 'llm-d.ai/active-ports': String(e.port) } : {}),
      });
      const { objects } = synthEngine(e, {
        serviceMonitor: true,
        serviceMonitorLabels: { release: 'kube-prometheus-stack' },
        serviceMonitorInterval: Duration.seconds(15),
      });
      const sm = findOne(objects, 'ServiceMonitor');
      expect(sm.metadata.labels.release).toBe('kube-prometheus-stack');
      expect(sm.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '15s' }]);
      const matches = (svc: any) =>
        Object.entries(sm.spec.selector.matchLabels).every(([k, val]) => svc.metadata.labels[k] === val);
      expect(objects.filter(o => o.kind === 'Service' && matches(o)).map(o => o.metadata.name)).toEqual([
        'llm-headless',
      ]);
      expect(() => make({ serviceMonitorLabels: { release: 'x' } })).toThrow(
        `${e.construct} 'svc': serviceMonitorLabels needs serviceMonitor: true (got {"release":"x"})`,
      );
    });

    test('one scrape path per pod: with a ServiceMonitor the pods carry no scrape annotations', () => {
      const { sts } = synthEngine(e, { serviceMonitor: true });
      expect(
        Object.keys(sts.spec.template.metadata.annotations ?? {}).filter(k => k.startsWith('prometheus.io/')),
      ).toEqual([]);
    });

    test("the ServiceMonitor selects by labels the library owns, still matching after Argo CD's label tracking", () => {
      const { objects } = synthEngine(e, { serviceMonitor: true, version: 2 });
      const sm = findOne(objects, 'ServiceMonitor');
      expect(sm.spec.selector.matchLabels).toEqual({
        'cdk8s-gpu.io/per-pod-endpoints': 'true',
        'cdk8s-gpu.io/workload': 'llm-v2',
      });
      // Argo CD's label tracking rewrites app.kubernetes.io/instance on every object it syncs.
      const tracked = objects
        .filter(o => o.kind === 'Service')
        .map(o => ({
          ...o,
          metadata: { ...o.metadata, labels: { ...o.metadata.labels, 'app.kubernetes.io/instance': 'argo-app' } },
        }));
      const matches = (svc: any) =>
        Object.entries(sm.spec.selector.matchLabels).every(([k, val]) => svc.metadata.labels[k] === val);
      expect(tracked.filter(matches).map(o => o.metadata.name)).toEqual(['llm-v2-headless']);
    });
  });

  describe('the GPU contract', () => {
    test('tensor parallel across MIG instances is refused; one MIG instance per replica is fine', () => {
      expect(() => make({ gpuResource: 'nvidia.com/mig-3g.40gb', gpusPerReplica: 2 })).toThrow(
        new RegExp(`^${e.construct} 'svc': gpusPerReplica must be 1 with MIG instances \\(nvidia.com/mig-3g.40gb\\)`),
      );
      const { main } = synthEngine(e, { gpuResource: 'nvidia.com/mig-3g.40gb' });
      expect(main.resources.limits['nvidia.com/mig-3g.40gb']).toBe(1);
    });
  });

  describe('security', () => {
    test(`${e.rootByDefault ? 'baseline (the image runs as root)' : 'restricted (the image has a non-root user)'} by default; restricted when non-root`, () => {
      const { pod, svc, init } = synthEngine(e);
      const expected = e.rootByDefault ? PodSecurityLevel.BASELINE : PodSecurityLevel.RESTRICTED;
      expect(podSecurityLevel(pod)).toBe(expected);
      expect(svc.podSecurityLevel).toBe(expected);
      if (!e.rootByDefault)
        expect(pod.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: e.defaultUid,
          fsGroup: e.defaultUid,
        });
      expect(init.securityContext.allowPrivilegeEscalation).toBe(false);
      const nonRoot = synthEngine(e, { ...e.nonRoot, runAsUser: 1234 });
      expect(podSecurityLevel(nonRoot.pod)).toBe('restricted');
      expect(nonRoot.pod.securityContext.runAsUser).toBe(1234);
    });

    test('a non-root pod names its user in USER, so a UID without a passwd entry does not stop torch (getpass.getuser)', () => {
      const nonRoot = synthEngine(e, { ...e.nonRoot, runAsUser: 4321 });
      expect(nonRoot.env.USER).toBe(e.container);
      for (const c of [nonRoot.main, nonRoot.init]) expect(envOf(c).USER).toBe(e.container);
      const root = synthEngine(e, { runAsRoot: true });
      expect(root.env.USER).toBeUndefined();
      // A user's value replaces it, like any default the construct sets.
      expect(synthEngine(e, { ...e.nonRoot, env: { USER: 'svc' } }).env.USER).toBe('svc');
    });

    test('usage statistics off by default, on when asked', () => {
      const off = synthEngine(e).env;
      const on = synthEngine(e, { usageStats: true }).env;
      if (e.construct === 'TgiInferenceService') {
        expect(off.USAGE_STATS).toBe('off');
        expect(on.USAGE_STATS).toBe('on');
      } else {
        expect(off.DO_NOT_TRACK).toBe('1');
        expect(on.DO_NOT_TRACK).toBeUndefined();
      }
      if (e.construct === 'VllmInferenceService') {
        expect(off.VLLM_NO_USAGE_STATS).toBe('1');
        expect(on.VLLM_NO_USAGE_STATS).toBeUndefined();
      }
    });
  });

  describe('extraArgs that contradict modelled props are refused', () => {
    // The issue's examples, per engine; the engine's ownedFlags table must contain at least these.
    const REQUIRED: Record<string, string[]> = {
      TgiInferenceService: [
        '--port',
        '--hostname',
        '--model-id',
        '--num-shard',
        '--max-total-tokens',
        '--max-input-tokens',
        '--graceful-termination-timeout',
      ],
      VllmInferenceService: [
        '--port',
        '--host',
        '--model',
        '--tensor-parallel-size',
        '--shutdown-timeout',
        '--max-model-len',
        '--served-model-name',
      ],
      SglangInferenceService: [
        '--port',
        '--host',
        '--model-path',
        '--tp-size',
        '--tensor-parallel-size',
        '--context-length',
        '--enable-metrics',
      ],
    };
    const owned = Object.keys(e.engine.ownedFlags);
    test('the owned-flag table covers the modelled flags, and names real props', () => {
      expect(owned).toEqual(expect.arrayContaining(REQUIRED[e.construct]));
      const known = [...GPU_WORKLOAD_PROP_KEYS, ...SERVING_PROP_KEYS, ...SPECIFIC_KEYS[e.construct]] as string[];
      for (const via of Object.values(e.engine.ownedFlags).filter(Boolean)) expect(known).toContain(via);
    });
    test.each(owned)('%s is refused as `--x y` and `--x=y`', flag => {
      const via = e.engine.ownedFlags[flag];
      for (const args of [[flag, '9000'], [`${flag}=9000`]]) {
        expect(() => make({ extraArgs: ['--foo', ...args] })).toThrow(
          `${e.construct} 'svc': extraArgs[1] must not set ${flag}: the construct sets it${via ? ` from ${via}` : ''}, and probes, Services and validation depend on it (got ${JSON.stringify(args[0])})`,
        );
      }
    });

    test('the port and address flags are refused by every engine; unrelated flags pass', () => {
      const portFlag = '--port';
      expect(() => make({ extraArgs: [portFlag, '9000'] })).toThrow(
        `${e.construct} 'svc': extraArgs[0] must not set --port: the construct sets it, and probes, Services and validation depend on it (got "--port")`,
      );
      expect(() => make({ extraArgs: ['--port=9000'] })).toThrow(/extraArgs\[0\] must not set --port/);
      const hostFlag = e.construct === 'TgiInferenceService' ? '--hostname' : '--host';
      expect(() => make({ extraArgs: [`${hostFlag}=::`] })).toThrow(/from ipFamily/);
      const ok = synthEngine(e, { extraArgs: ['--enable-prefix-caching'] }).main;
      expect(ok.args).toContain('--enable-prefix-caching');
    });
  });

  describe('every GpuWorkloadProps field reaches the pod', () => {
    const pod = (props: any) => synthEngine(e, props).pod;
    const main = (props: any) => synthEngine(e, props).main;
    test('env (string and EnvValue), replacing defaults, refusing owned variables', () => {
      const env = envOf(
        main({
          env: {
            HF_HUB_ENABLE_HF_TRANSFER: '1',
            XDG_CACHE_HOME: '/cache',
            POD_IP: EnvValue.fromFieldRef('status.podIP'),
          },
        }),
      );
      expect(env.HF_HUB_ENABLE_HF_TRANSFER).toBe('1');
      expect(env.XDG_CACHE_HOME).toBe('/cache');
      // Where the hub cache lives is the model cache volume: the download and the server must agree on it.
      for (const variable of ['HF_HOME', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_CACHE']) {
        expect(() => make({ env: { [variable]: '/x' } })).toThrow(
          `${e.construct} 'svc': env.${variable} must not be set: it moves the hub cache off the model cache volume (/data), where the download fills it and the server reads it offline; set modelCache instead (got "${variable}")`,
        );
      }
      expect(() => make({ hfTokenSecret: { name: 'hf', key: 'a b' } })).toThrow(/hfTokenSecret\.key must be/);
      // The construct's own pod annotations are not silently replaced or overridden.
      expect(() => make({ pod: { annotations: { 'prometheus.io/scrape': 'false' } } })).toThrow(
        `${e.construct} 'svc': pod.annotations.prometheus.io/scrape is set by the construct for its own mechanism: leave it out (got "false")`,
      );
      expect(env.POD_IP).toEqual({ fieldRef: { fieldPath: 'status.podIP' } });
      expect(() => make({ env: { HF_HUB_OFFLINE: '0' } })).toThrow(
        `${e.construct} 'svc': env.HF_HUB_OFFLINE is set by the construct; set modelCache instead (got "0")`,
      );
      expect(() => make({ hfTokenSecret: { name: 'a', key: 'b' }, env: { HF_TOKEN: 'x' } })).toThrow(
        /env.HF_TOKEN is set by hfTokenSecret/,
      );
    });
    test('envFrom', () => {
      expect(main({ envFrom: [EnvFrom.secret('proxy')] }).envFrom).toEqual([{ secretRef: { name: 'proxy' } }]);
    });
    test('volumes', () => {
      const m = main({
        volumes: [
          { volume: { name: 'ca', configMap: { name: 'ca-bundle' } }, mountPath: '/etc/ssl/custom', readOnly: true },
        ],
      });
      expect(m.volumeMounts).toContainEqual({ name: 'ca', mountPath: '/etc/ssl/custom', readOnly: true });
      expect(() => make({ volumes: [{ volume: { name: 'x', emptyDir: {} }, mountPath: '/data' }] })).toThrow(
        /volumes\[0\].mountPath must not be a path/,
      );
    });
    test('gpuResource (MIG) and extendedResources', () => {
      const r = main({
        gpuResource: 'nvidia.com/mig-3g.40gb',
        extendedResources: { 'vpc.amazonaws.com/efa': 1 },
      }).resources;
      expect(r.limits).toMatchObject({ 'nvidia.com/mig-3g.40gb': 1, 'vpc.amazonaws.com/efa': 1 });
      expect(r.limits['nvidia.com/gpu']).toBeUndefined();
    });
    test('cpu, memory and guaranteedQos', () => {
      const r = main({ cpu: 6, memory: Size.gibibytes(48), guaranteedQos: true }).resources;
      expect(r.requests).toMatchObject({ cpu: '6', memory: '48Gi' });
      expect(r.limits).toMatchObject({ cpu: '6', memory: '48Gi' });
      expect(synthEngine(e, { cpu: 6, guaranteedQos: true }).init.resources.limits.cpu).toBe('6');
    });
    test('nodeSelector', () => {
      expect(pod({ nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' } }).nodeSelector).toEqual({
        'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      });
    });
    test('runAsUser', () => {
      expect(pod({ ...e.nonRoot, runAsUser: 4242 }).securityContext).toMatchObject({
        runAsUser: 4242,
        runAsGroup: 4242,
        fsGroup: 4242,
      });
    });
    test('clusterDomain', () => {
      expect(synthEngine(e, { clusterDomain: 'k.local' }, 'ns').svc.url).toBe('http://llm.ns.svc.k.local');
    });
    test('pod scheduling and identity fields', () => {
      const p = pod({
        pod: {
          tolerations: [{ key: 'sku', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['a'] }] }],
              },
            },
          },
          topologySpreadConstraints: [
            { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' },
          ],
          priorityClassName: 'serving-high',
          runtimeClassName: 'nvidia',
          schedulerName: 'volcano',
          imagePullSecrets: ['ngc'],
          serviceAccountName: 'llm',
          automountServiceAccountToken: true,
        },
      });
      expect(p.tolerations).toEqual([
        { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'sku', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
      ]);
      expect(p.affinity.nodeAffinity).toBeDefined();
      expect(p.topologySpreadConstraints).toHaveLength(2);
      expect(p).toMatchObject({
        priorityClassName: 'serving-high',
        runtimeClassName: 'nvidia',
        schedulerName: 'volcano',
        imagePullSecrets: [{ name: 'ngc' }],
        serviceAccountName: 'llm',
        automountServiceAccountToken: true,
      });
    });
    test('pod labels and annotations (never on selectors)', () => {
      const { sts } = synthEngine(e, { pod: { labels: { team: 'nlp' }, annotations: { 'example.com/owner': 'nlp' } } });
      expect(sts.spec.template.metadata.labels.team).toBe('nlp');
      expect(sts.spec.template.metadata.annotations['example.com/owner']).toBe('nlp');
      expect(sts.spec.selector.matchLabels.team).toBeUndefined();
    });
    test('sidecars and init containers (after the download), with the security defaults', () => {
      const p = pod({
        pod: {
          sidecars: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.31.0' }],
          initContainers: [{ name: 'warm', image: 'busybox:1.36.1' }],
        },
      });
      // The sidecar is a native sidecar: after the download and the user's init containers.
      expect(p.containers.map((c: any) => c.name)).toEqual([e.container]);
      expect(p.initContainers.map((c: any) => [c.name, c.restartPolicy])).toEqual([
        ['model-download', undefined],
        ['warm', undefined],
        ['proxy', 'Always'],
      ]);
      expect(p.initContainers[2].securityContext.allowPrivilegeEscalation).toBe(false);
      expect(() => make({ pod: { initContainers: [{ name: 'model-download', image: 'busybox:1.36.1' }] } })).toThrow(
        /must not use the name model-download/,
      );
    });
  });

  describe('wrong types through `as any` get the library error', () => {
    const cases: Array<[string, any]> = [
      ['replicas', 'three'],
      ['gpusPerReplica', null],
      ['modelId', 42],
      ['drainTimeout', 90],
      ['modelSize', '15Gi'],
      ['ipFamily', 'ipv6'],
      ['usageStats', 'no'],
      ['extraArgs', '--x'],
      ['autoscaling', 5],
      ['modelCache', 'rwx'],
      ['serviceMonitor', 'yes'],
      ['hfTokenSecret', 'hf-token'],
      ['serviceMonitorInterval', '30s'],
      ['image', 'Not An Image'],
    ];
    test.each(cases)('%s: %p', (prop, value) => {
      const err = configError(() => make({ [prop]: value }));
      expect(err.message.startsWith(`${e.construct} 'svc': ${prop}`)).toBe(true);
    });

    test('an unknown prop suggests the closest', () => {
      expect(() => make({ replica: 2 })).toThrow(/replica is not a known prop; did you mean 'replicas'\?/);
    });
  });
});

describe('the client Service across versions and engines (migration from TGI)', () => {
  test('TGI v1 and vLLM v2 of one name: one client Service selecting both StatefulSets', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    const tgi = ENGINES[0].make(chart, 'v1', { name: 'chat', modelId: 'meta-llama/Llama-3.1-8B-Instruct' });
    const vllm = ENGINES[1].make(chart, 'v2', {
      name: 'chat',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      version: 2,
    });
    const objects = synthValid(chart);
    const clients = objects.filter(o => o.kind === 'Service' && o.metadata.name === 'chat');
    expect(clients).toHaveLength(1);
    expect(tgi.service).toBe(vllm.service);
    expect(tgi.serviceName).toBe(vllm.serviceName);
    const selects = (sts: any) =>
      Object.entries(clients[0].spec.selector).every(([k, val]) => sts.spec.template.metadata.labels[k] === val);
    const stses = objects.filter(o => o.kind === 'StatefulSet');
    expect(stses.map(s => s.metadata.name).sort()).toEqual(['chat', 'chat-v2']);
    expect(stses.every(selects)).toBe(true);
    // Each version keeps its own per-pod objects.
    expect(
      objects
        .filter(o => o.kind === 'PodDisruptionBudget')
        .map(o => o.metadata.name)
        .sort(),
    ).toEqual(['chat', 'chat-v2']);
    // The PDBs never span versions: each selects its own StatefulSet's pods only.
    for (const pdb of objects.filter(o => o.kind === 'PodDisruptionBudget'))
      expect(pdb.spec.selector.matchLabels['app.kubernetes.io/instance']).toBe(pdb.metadata.name);
  });

  test('the client Service is the same object before, during and after the switch, and the guard sees no forbidden change', () => {
    const service = (build: (chart: Chart) => void) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
      build(chart);
      return synthValid(chart);
    };
    const model = 'meta-llama/Llama-3.1-8B-Instruct';
    const before = service(c => ENGINES[0].make(c, 'v1', { name: 'chat', modelId: model }));
    const during = service(c => {
      ENGINES[0].make(c, 'v1', { name: 'chat', modelId: model });
      ENGINES[1].make(c, 'v2', { name: 'chat', modelId: model, version: 2 });
    });
    const after = service(c => ENGINES[1].make(c, 'v2', { name: 'chat', modelId: model, version: 2 }));
    const client = (objects: any[]) => findOne(objects, 'Service', 'chat');
    expect(client(during)).toEqual(client(before));
    expect(client(after)).toEqual(client(before));
    expect(guard(before, during).errors).toBe(0);
    expect(guard(during, after).errors).toBe(0);
  });

  test('the same name and version twice is still a duplicate', () => {
    const chart = new Chart(Testing.app(), 'c');
    ENGINES[1].make(chart, 'a', { name: 'chat', modelId: 'm/a' });
    ENGINES[2].make(chart, 'b', { name: 'chat', modelId: 'm/a' });
    expect(() => synthValid(chart)).toThrow(
      /SglangInferenceService 'b': name must make objects unique, but (StatefulSet "chat"|Service "chat-headless") is also made by VllmInferenceService 'a'/,
    );
  });
});
