import { Size } from 'cdk8s';
import { EnvFrom, EnvValue } from '../../src/common/env';
import { ConfigurationError } from '../../src/validation/validate';
import { envOf, findOne, synthValid, testChart } from '../support/synth';
import { TestWorkload, TestWorkloadProps } from '../support/test-workload';

function build(props: Partial<TestWorkloadProps>) {
  const chart = testChart('ml');
  const w = new TestWorkload(chart, 'w', { name: 'w', ...props });
  const sts = findOne(synthValid(chart), 'StatefulSet', 'w');
  return { w, sts, pod: sts.spec.template, spec: sts.spec.template.spec, main: sts.spec.template.spec.containers[0] };
}

function refused(props: Partial<TestWorkloadProps>, prop: string | RegExp): void {
  const chart = testChart();
  let error: unknown;
  try {
    new TestWorkload(chart, 'w', { name: 'w', ...props });
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigurationError);
  const message = (error as Error).message;
  expect(message).toMatch(/^TestWorkload 'w': /);
  if (typeof prop === 'string') expect(message).toContain(`'w': ${prop} `);
  else expect(message).toMatch(prop);
}

describe('env', () => {
  test('plain strings and every EnvValue source reach the main container', () => {
    const { main } = build({
      env: {
        A: '1',
        TOKEN: EnvValue.fromSecretKey('hf', 'token'),
        CONF: EnvValue.fromConfigMapKey('cfg', 'k', true),
        POD: EnvValue.fromFieldRef("metadata.labels['team']"),
        MEM: EnvValue.fromResource('limits.memory'),
        B: EnvValue.fromValue('2'),
      },
    });
    const env = envOf(main);
    expect(env.A).toBe('1');
    expect(env.B).toBe('2');
    expect(env.TOKEN).toEqual({ secretKeyRef: { name: 'hf', key: 'token' } });
    expect(env.CONF).toEqual({ configMapKeyRef: { name: 'cfg', key: 'k', optional: true } });
    expect(env.POD).toEqual({ fieldRef: { fieldPath: "metadata.labels['team']" } });
    expect(env.MEM).toEqual({ resourceFieldRef: { resource: 'limits.memory' } });
  });

  test('a user value replaces a default in place: one variable, never two', () => {
    const { main } = build({ env: { HF_HOME: '/datasets/hf' } });
    const names = main.env.map((e: any) => e.name);
    expect(names.filter((n: string) => n === 'HF_HOME')).toHaveLength(1);
    expect(envOf(main).HF_HOME).toBe('/datasets/hf');
  });

  test('a variable the construct owns is refused, naming the prop to use', () => {
    refused({ env: { WORLD_SIZE: '8' } }, /env\.WORLD_SIZE is set by the construct; set replicas instead/);
  });

  test.each([
    [{ env: { 'BAD NAME': 'x' } }, 'env.BAD NAME'],
    [{ env: { A: 3 as any } }, 'env.A'],
    [{ env: { A: EnvValue.fromSecretKey('Bad_Name', 'k') } }, 'env.A secret name'],
    [{ env: { A: EnvValue.fromSecretKey('ok', 'bad/key') } }, 'env.A key'],
    [{ env: { A: EnvValue.fromFieldRef('spec.containers') } }, 'env.A'],
    // status.hostIPs needs the PodHostIPs gate, off in 1.28; a subscript is a qualified name.
    [{ env: { A: EnvValue.fromFieldRef('status.hostIPs') } }, 'env.A'],
    [{ env: { A: EnvValue.fromFieldRef("metadata.labels['a b']") } }, 'env.A key'],
    [{ env: { A: EnvValue.fromSecretKey('s', 'k', 'yes' as any) } }, 'env.A optional'],
    [{ env: { A: EnvValue.fromConfigMapKey('c', 'k', 1 as any) } }, 'env.A optional'],
    [{ env: { A: EnvValue.fromResource('limits.nvidia.com/gpu') } }, 'env.A'],
    [{ env: [] as any }, 'env'],
    [{ envFrom: [{}] as any }, 'envFrom[0]'],
    [{ envFrom: [EnvFrom.secret('s', '1BAD')] }, 'envFrom[0] prefix'],
  ])('refused: %j', (props, prop) => refused(props, prop));

  test('envFrom ConfigMaps and Secrets, with prefixes', () => {
    const { main } = build({ envFrom: [EnvFrom.configMap('nccl'), EnvFrom.secret('creds', 'AWS_')] });
    expect(main.envFrom).toEqual([
      { configMapRef: { name: 'nccl' } },
      { prefix: 'AWS_', secretRef: { name: 'creds' } },
    ]);
  });
});

describe('volumes', () => {
  test.each(['/dev/shm/', '//home/x', '/tmp/./', '/home/x/'])(
    "a mount path not in normal form (%s) is refused: the kubelet compares paths as strings, so it would mount over the construct's",
    p => {
      refused(
        { volumes: [{ volume: { name: 'extra', emptyDir: {} }, mountPath: p }] },
        `volumes[0].mountPath must be a normalized absolute path (no "//", "/./" or trailing "/"), because the kubelet compares mount paths as strings (got ${JSON.stringify(p)})`.replace(
          / \(got.*$/,
          '',
        ),
      );
    },
  );

  test('an existing claim, a ConfigMap and a CSI volume are added and mounted', () => {
    const { spec, main } = build({
      volumes: [
        {
          volume: { name: 'datasets', persistentVolumeClaim: { claimName: 'datasets', readOnly: true } },
          mountPath: '/datasets',
          readOnly: true,
        },
        { volume: { name: 'cfg', configMap: { name: 'cfg' } }, mountPath: '/etc/cfg' },
        { volume: { name: 'fsx', csi: { driver: 'fsx.csi.aws.com' } } },
      ],
    });
    expect(spec.volumes.map((v: any) => v.name)).toEqual(expect.arrayContaining(['datasets', 'cfg', 'fsx']));
    expect(main.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'datasets', mountPath: '/datasets', readOnly: true },
        { name: 'cfg', mountPath: '/etc/cfg' },
      ]),
    );
    expect(main.volumeMounts.find((m: any) => m.name === 'fsx')).toBeUndefined();
  });

  test.each([
    [{ volumes: [{ volume: { name: 'x', emptyDir: {} }, mountPath: '/dev/shm' }] }, 'volumes[0].mountPath'],
    [{ volumes: [{ volume: { name: 'x', emptyDir: {} }, mountPath: '/home/x' }] }, 'volumes[0].mountPath'],
    [{ volumes: [{ volume: { name: 'dshm', emptyDir: {} }, mountPath: '/data' }] }, 'volumes[0].volume.name'],
    [{ volumes: [{ volume: { name: 'home', emptyDir: {} } }] }, 'volumes[0].volume.name'],
    [
      {
        volumes: [
          { volume: { name: 'a', emptyDir: {} }, mountPath: '/a' },
          { volume: { name: 'b', emptyDir: {} }, mountPath: '/a' },
        ],
      },
      'volumes[1].mountPath',
    ],
    [{ volumes: [{ volume: { name: 'a' } }] }, 'volumes[0].volume'],
    [{ volumes: [{ volume: { name: 'a', emptyDir: {}, secret: { secretName: 's' } } }] }, 'volumes[0].volume'],
    [{ volumes: [{ volume: { name: 'a', emptyDir: {} }, mountPath: 'relative' }] }, 'volumes[0].mountPath'],
    [{ volumes: [{ volume: { name: 'a', emptyDir: {} }, mountPath: '/a', subPath: '../x' }] }, 'volumes[0].subPath'],
    [{ volumes: [{ volume: { name: 'a', emptyDir: {} }, readOnly: true }] }, 'volumes[0].mountPath'],
    [
      { volumes: [{ volume: { name: 'a', emptyDir: {} }, mountpath: '/a' } as any] },
      /volumes\[0\]\.mountpath is not a known prop; did you mean 'mountPath'\?/,
    ],
    [{ claim: { name: 'dshm', mountPath: '/c' } }, 'claim'],
    [{ claim: { name: 'c', mountPath: '/tmp/../x' } }, 'claim'],
    [{ claim: { name: 'c', mountPath: '/home/x' } }, 'claim'],
  ])('refused: %j', (props, prop) => refused(props, prop));

  test('a volume only a sidecar mounts', () => {
    const { spec } = build({
      volumes: [{ volume: { name: 'logs', emptyDir: {} } }],
      pod: {
        sidecars: [
          { name: 'shipper', image: 'fluent/fluent-bit:3.1.0', volumeMounts: [{ name: 'logs', mountPath: '/logs' }] },
        ],
      },
    });
    expect(spec.initContainers[0].volumeMounts).toEqual([{ name: 'logs', mountPath: '/logs' }]);
  });

  test('a sidecar mounting a volume the pod lacks is refused', () => {
    refused(
      {
        pod: { sidecars: [{ name: 's', image: 'busybox:1.36.1', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }] },
      },
      /volumeMounts must name a volume of the pod/,
    );
  });
});

describe('resources', () => {
  test('device resources and MIG profiles synthesize as quantities in requests and limits', () => {
    const { main } = build({
      gpuResource: 'nvidia.com/mig-1g.10gb',
      gpus: 2,
      extendedResources: { 'rdma/rdma_shared_device_a': 1, 'vpc.amazonaws.com/efa': 4 },
    });
    for (const part of ['requests', 'limits']) {
      expect(main.resources[part]['nvidia.com/mig-1g.10gb']).toBe(2);
      expect(main.resources[part]['rdma/rdma_shared_device_a']).toBe(1);
      expect(main.resources[part]['vpc.amazonaws.com/efa']).toBe(4);
      expect(main.resources[part]['nvidia.com/gpu']).toBeUndefined();
    }
  });

  test('no CPU limit by default; guaranteedQos limits CPU to the request', () => {
    expect(build({}).main.resources.limits.cpu).toBeUndefined();
    const { main } = build({ guaranteedQos: true, cpu: 8, memory: Size.gibibytes(64) });
    expect(main.resources.limits.cpu).toBe('8');
    expect(main.resources.requests.cpu).toBe('8');
    expect(main.resources.limits.memory).toBe(main.resources.requests.memory);
  });

  test('guaranteedQos needs a whole number of CPUs: the static CPU manager pins only those', () => {
    refused(
      { guaranteedQos: true, cpu: 1.5 },
      'cpu must be a whole number of CPUs with guaranteedQos: the static CPU manager pins only integer CPU requests',
    );
    expect(() => build({ guaranteedQos: true, cpu: 2 })).not.toThrow();
    expect(() => build({ cpu: 1.5 })).not.toThrow();
  });

  test('guaranteedQos with a sidecar that does not limit CPU and memory fails synth', () => {
    const chart = testChart();
    new TestWorkload(chart, 'w', {
      name: 'w',
      guaranteedQos: true,
      pod: { sidecars: [{ name: 's', image: 'busybox:1.36.1' }] },
    });
    expect(() => synthValid(chart)).toThrow(
      /TestWorkload 'w': guaranteedQos needs container 's' to request and limit the same cpu/,
    );
  });

  test.each([
    [{ extendedResources: { cpu: 1 } }, 'extendedResources.cpu'],
    [{ extendedResources: { 'hugepages-2Mi': 1 } }, 'extendedResources.hugepages-2Mi'],
    [{ extendedResources: { efa: 1 } }, 'extendedResources.efa'],
    [{ extendedResources: { 'example.kubernetes.io/x': 1 } }, 'extendedResources.example.kubernetes.io/x'],
    [{ extendedResources: { 'nvidia.com/gpu': 1 } }, 'extendedResources.nvidia.com/gpu'],
    [{ extendedResources: { 'vpc.amazonaws.com/efa': 0.5 } }, 'extendedResources.vpc.amazonaws.com/efa'],
    [{ extendedResources: { 'vpc.amazonaws.com/efa': null as any } }, 'extendedResources.vpc.amazonaws.com/efa'],
    [{ gpuResource: 'gpu' }, 'gpuResource'],
    [{ cpu: NaN }, 'cpu'],
    [{ memory: '16Gi' as any }, 'memory'],
    [{ memory: Size.gibibytes(1.3) }, /memory must be a whole number of KiB.*\(got 1\.3Gi\)/],
    [{ memory: Size.gibibytes(1) }, /sharedMemory must be smaller than memory/],
    [{ guaranteedQos: 'yes' as any }, 'guaranteedQos'],
  ])('refused: %j', (props, prop) => refused(props, prop));
});

describe('pod options', () => {
  const pod = {
    tolerations: [{ key: 'sku', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['a100'] }] }],
        },
      },
    },
    topologySpreadConstraints: [
      { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' },
    ],
    priorityClassName: 'training-high',
    runtimeClassName: 'nvidia',
    schedulerName: 'volcano',
    imagePullSecrets: ['ngc-pull'],
    serviceAccountName: 'trainer',
    labels: { team: 'nlp' },
    annotations: { 'example.com/owner': 'nlp' },
    initContainers: [{ name: 'fetch', image: 'busybox:1.36.1', command: ['true'] }],
    sidecars: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.31.0', securityContext: { readOnlyRootFilesystem: true } }],
  };

  test("every field reaches the pod template, merged with the construct's own", () => {
    const { sts, pod: tpl, spec } = build({ pod, nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' } });
    expect(spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      pod.tolerations[0],
    ]);
    expect(spec.affinity).toEqual(pod.affinity);
    expect(spec.topologySpreadConstraints).toEqual(pod.topologySpreadConstraints);
    expect(spec.priorityClassName).toBe('training-high');
    expect(spec.runtimeClassName).toBe('nvidia');
    expect(spec.schedulerName).toBe('volcano');
    expect(spec.imagePullSecrets).toEqual([{ name: 'ngc-pull' }]);
    expect(spec.serviceAccountName).toBe('trainer');
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' });
    expect(tpl.metadata.labels.team).toBe('nlp');
    expect(sts.spec.selector.matchLabels.team).toBeUndefined();
    expect(tpl.metadata.annotations['example.com/owner']).toBe('nlp');
    // Sidecars are native sidecars, after the user's init containers.
    expect(spec.initContainers.map((c: any) => [c.name, c.restartPolicy])).toEqual([
      ['fetch', undefined],
      ['proxy', 'Always'],
    ]);
    expect(spec.containers.map((c: any) => c.name)).toEqual(['main']);
  });

  test("extra containers get the construct's security context unless they set a field themselves", () => {
    const { w, spec } = build({ pod });
    const proxy = spec.initContainers.find((c: any) => c.name === 'proxy');
    expect(proxy.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
    });
    expect(spec.initContainers[0].securityContext.capabilities).toEqual({ drop: ['ALL'] });
    expect(w.level).toBe('restricted');
  });

  test('the Pod Security level follows what the user added', () => {
    expect(
      build({ volumes: [{ volume: { name: 'nfs', nfs: { server: 'nfs', path: '/x' } }, mountPath: '/nfs' }] }).w.level,
    ).toBe('baseline');
    expect(build({ volumes: [{ volume: { name: 'h', hostPath: { path: '/x' } }, mountPath: '/h' }] }).w.level).toBe(
      'privileged',
    );
    expect(
      build({
        pod: {
          sidecars: [
            {
              name: 's',
              image: 'busybox:1.36.1',
              securityContext: { privileged: true, allowPrivilegeEscalation: true },
            },
          ],
        },
      }).w.level,
    ).toBe('privileged');
  });

  test('the API token is mounted only when asked', () => {
    expect(
      build({ pod: { serviceAccountName: 'sa', automountServiceAccountToken: true } }).spec
        .automountServiceAccountToken,
    ).toBe(true);
  });

  test.each([
    [{ pod: { labels: { 'app.kubernetes.io/name': 'x' } } }, 'pod.labels.app.kubernetes.io/name'],
    [{ pod: { labels: { team: 'has space' } } }, 'pod.labels.team'],
    [{ pod: { labels: { 'bad key!': 'x' } } }, 'pod.labels key'],
    [{ pod: { annotations: { 'a/b/c': 'x' } } }, 'pod.annotations key'],
    [{ nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA A100' } }, 'nodeSelector.nvidia.com/gpu.product'],
    [{ pod: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] } }, 'pod.tolerations[0].value'],
    [{ pod: { tolerations: [{ key: 'k', operator: 'Maybe' }] } }, 'pod.tolerations[0].operator'],
    [{ pod: { tolerations: [{ key: 'k', effect: 'NoRun' }] } }, 'pod.tolerations[0].effect'],
    [
      { pod: { tolerations: [{ key: 'k', effect: 'NoSchedule', tolerationSeconds: 10 }] } },
      'pod.tolerations[0].tolerationSeconds',
    ],
    [{ pod: { tolerations: [{ operator: 'Equal', value: 'x' }] } }, 'pod.tolerations[0].operator'],
    [{ pod: { priorityClassName: 'High' } }, 'pod.priorityClassName'],
    [{ pod: { imagePullSecrets: 'ngc' as any } }, 'pod.imagePullSecrets'],
    [{ pod: { serviceAccountName: '' } }, 'pod.serviceAccountName'],
    [{ pod: { sidecars: [{ name: 'main', image: 'busybox:1.36.1' }] } }, 'pod.sidecars[0].name'],
    [{ pod: { sidecars: [{ name: 's', image: 'busy box' }] } }, 'pod.sidecars[0].image'],
    [{ pod: { initContainers: [{ name: 'Init', image: 'busybox' }] } }, 'pod.initContainers[0].name'],
    [
      { pod: { schedulername: 'volcano' } as any },
      /pod\.schedulername is not a known prop; did you mean 'schedulerName'\?/,
    ],
    [{ nodeselector: {} } as any, /nodeselector is not a known prop; did you mean 'nodeSelector'\?/],
  ])('refused: %j', (props, prop) => refused(props as Partial<TestWorkloadProps>, prop));
});

describe("wrong types from JavaScript get the library's error, never a TypeError", () => {
  test.each([
    [{ envFrom: 'nccl' }, 'envFrom'],
    [{ pod: { tolerations: {} } }, 'pod.tolerations'],
    [{ pod: { tolerations: [null] } }, 'pod.tolerations[0]'],
    [{ pod: { topologySpreadConstraints: 'zone' } }, 'pod.topologySpreadConstraints'],
    [{ pod: { sidecars: { name: 's' } } }, 'pod.sidecars'],
    [{ pod: { initContainers: 'x' } }, 'pod.initContainers'],
    [
      { pod: { sidecars: [{ name: 's', image: 'busybox:1.36.1', volumeMounts: {} }] } },
      /volumeMounts must be an array/,
    ],
    [{ pod: { affinity: [] } }, 'pod.affinity'],
    [{ pod: 'x' }, 'pod'],
    [{ volumes: {} }, 'volumes'],
    [{ volumes: [null] }, 'volumes[0]'],
    [{ extendedResources: [] }, 'extendedResources'],
    [{ nodeSelector: 'gpu' }, 'nodeSelector'],
    [{ runAsUser: '1000' }, 'runAsUser'],
  ])('%j', (props, prop) => refused(props as any, prop));
});
