// Each case cites the Kubernetes function whose behaviour it checks.
import { guard, IMMUTABLE_FIELDS } from '../../src';
import { liveExport } from './live-export';

const paths = (before: any[], after: any[], serverVersion?: string) =>
  guard(before, after, { serverVersion })
    .findings.filter(f => f.severity === 'error')
    .map(f => f.path);
const errorsOf = (before: any[], after: any[], serverVersion?: string) =>
  guard(before, after, { serverVersion }).findings.filter(f => f.severity === 'error');

const sts = (spec: object = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'db' },
  spec: {
    serviceName: 'db',
    selector: { matchLabels: { app: 'db' } },
    template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } },
    ...spec,
  },
});
const pod = (spec: object = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p' },
  spec: { containers: [{ name: 'c', image: 'i:1' }], ...spec },
});
const pvc = (spec: object = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, ...spec },
});
const job = (spec: object = {}, template: object = {}) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'j' },
  spec: {
    template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i:1' }], ...template } },
    ...spec,
  },
});
const svc = (spec: object = {}) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 's' },
  spec: { selector: { app: 'a' }, ports: [{ port: 80 }], ...spec },
});

describe('the rules table', () => {
  test('names a Kubernetes source function for every rule and covers the kinds with immutable fields', () => {
    const kinds = IMMUTABLE_FIELDS.map(r => `${r.group}/${r.kind}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'apps/StatefulSet',
        'apps/Deployment',
        'apps/ReplicaSet',
        'apps/DaemonSet',
        '/Pod',
        '/PersistentVolume',
        '/PersistentVolumeClaim',
        'batch/Job',
        'batch/CronJob',
        '/Service',
        '/Secret',
        '/ConfigMap',
        'networking.k8s.io/IngressClass',
        'scheduling.k8s.io/PriorityClass',
        'storage.k8s.io/StorageClass',
        'rbac.authorization.k8s.io/RoleBinding',
        'rbac.authorization.k8s.io/ClusterRoleBinding',
      ]),
    );
    for (const k of IMMUTABLE_FIELDS) for (const r of k.fields) expect(r.source).toMatch(/Validate|validate|strategy/);
  });

  test('an unsupported server version is refused', () => {
    // The floor is the library's API floor, 1.32: older servers are refused, naming it.
    for (const v of ['1.31', '1.28', '1.27'])
      expect(() => guard([], [], { serverVersion: v })).toThrow(
        `server version "${v}" is not supported: give 1.NN, 1.32 or newer`,
      );
    expect(() => guard([], [], { serverVersion: 'latest' })).toThrow(/not supported/);
    expect(guard([], [], { serverVersion: '1.32' }).serverVersion).toBe('1.32');
    expect(guard([], []).serverVersion).toBe('1.32');
    expect(() => guard([{ kind: 'ConfigMap' } as any], [])).toThrow(/--before: .* is not a Kubernetes object/);
  });
});

describe('ValidateStatefulSetUpdate', () => {
  test.each(['1.32'])('revisionHistoryLimit is immutable on %s (kubernetes#130263), quoting that version', v => {
    const [f] = errorsOf([liveExport(sts({ revisionHistoryLimit: 10 }))], [sts({ revisionHistoryLimit: 3 })], v);
    expect(f).toMatchObject({ path: 'spec.revisionHistoryLimit', before: 10, after: 3 });
    expect(f.message).toBe(
      "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    );
  });

  test('revisionHistoryLimit is mutable from 1.33, whose message lists it', () => {
    expect(paths([sts({ revisionHistoryLimit: 10 })], [sts({ revisionHistoryLimit: 3 })], '1.33')).toEqual([]);
    const [f] = errorsOf([sts()], [sts({ serviceName: 'other' })], '1.33');
    expect(f.message).toContain("'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy'");
  });

  test('omitting revisionHistoryLimit against a live default of 10 is no change', () => {
    expect(paths([liveExport(sts())], [sts()])).toEqual([]);
  });

  test('replicas, ordinals, template, updateStrategy, retention policy and minReadySeconds may change', () => {
    const after = sts({
      replicas: 5,
      ordinals: { start: 1 },
      minReadySeconds: 10,
      updateStrategy: { type: 'OnDelete', rollingUpdate: null },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
    });
    (after.spec as any).template.spec.containers[0].image = 'i:2';
    expect(paths([liveExport(sts())], [after])).toEqual([]);
    // Without the null, kubectl apply keeps the live, defaulted rollingUpdate, and ValidateStatefulSetSpec
    // refuses it beside OnDelete ("only allowed for updateStrategy 'RollingUpdate'").
    const kept = sts({ updateStrategy: { type: 'OnDelete' } });
    expect(paths([liveExport(sts())], [kept])).toEqual(['spec.updateStrategy.rollingUpdate']);
  });

  test('podManagementPolicy, serviceName, selector and volumeClaimTemplates may not', () => {
    expect(
      paths(
        [liveExport(sts())],
        [sts({ podManagementPolicy: 'Parallel', serviceName: 'x', selector: { matchLabels: { app: 'x' } } })],
      ),
    ).toEqual(['spec.podManagementPolicy', 'spec.selector', 'spec.serviceName']);
  });

  test('an empty volumeClaimTemplates list equals none (apiequality.Semantic)', () => {
    expect(paths([sts()], [sts({ volumeClaimTemplates: [] })])).toEqual([]);
  });

  test('a string field set to "" is Go\'s zero value, the same as absent; a pointer string is not', () => {
    expect(paths([sts()], [sts({ podManagementPolicy: '' })])).toEqual([]);
    const vct = (sc?: string) =>
      sts({
        volumeClaimTemplates: [
          {
            metadata: { name: 'd' },
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '1Gi' } },
              ...(sc === undefined ? {} : { storageClassName: sc }),
            },
          },
        ],
      });
    expect(paths([vct()], [vct('')])).toEqual(['spec.volumeClaimTemplates']);
  });
});

describe('Deployment, ReplicaSet, DaemonSet strategies: ValidateUpdate keeps spec.selector immutable', () => {
  test.each(['Deployment', 'ReplicaSet', 'DaemonSet'])('%s selector', kind => {
    const o = (labels: object, exprs?: object[]) => ({
      apiVersion: 'apps/v1',
      kind,
      metadata: { name: 'w' },
      spec: {
        selector: { matchLabels: labels, ...(exprs ? { matchExpressions: exprs } : {}) },
        template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    });
    expect(paths([o({ a: '1' })], [o({ a: '2' })])).toEqual(['spec.selector']);
    expect(errorsOf([o({ a: '1' })], [o({ a: '2' })])[0].message).toBe(
      'spec.selector: Invalid value: {"matchLabels":{"a":"2"}}: field is immutable',
    );
    // matchExpressions: [] is the same selector as none.
    expect(paths([o({ a: '1' })], [o({ a: '1' }, [])])).toEqual([]);
  });
});

describe('ValidatePodUpdate', () => {
  test('image, activeDeadlineSeconds (lowered) and added tolerations may change', () => {
    const before = pod({ activeDeadlineSeconds: 100, tolerations: [{ key: 'a', operator: 'Exists' }] });
    const after = pod({
      activeDeadlineSeconds: 50,
      tolerations: [
        { key: 'a', operator: 'Exists' },
        { key: 'b', operator: 'Exists' },
      ],
    });
    after.spec.containers[0].image = 'i:2';
    expect(paths([liveExport(before)], [after])).toEqual([]);
  });

  test('other spec fields, removed tolerations and a raised or unset deadline are refused', () => {
    expect(paths([pod()], [pod({ nodeSelector: { a: 'b' } })])).toEqual(['spec.nodeSelector']);
    expect(errorsOf([pod()], [pod({ nodeSelector: { a: 'b' } })])[0].message).toMatch(
      /^spec: Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`/,
    );
    expect(paths([pod({ tolerations: [{ key: 'a', operator: 'Exists' }] })], [pod()])).toEqual(['spec.tolerations']);
    expect(errorsOf([pod({ activeDeadlineSeconds: 10 })], [pod({ activeDeadlineSeconds: 20 })])[0].message).toBe(
      'spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value',
    );
    expect(errorsOf([pod({ activeDeadlineSeconds: 10 })], [pod()])[0].message).toBe(
      'spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value',
    );
  });

  test('scheduling gates may be removed, not added (validateOnlyDeletedSchedulingGates)', () => {
    expect(paths([pod({ schedulingGates: [{ name: 'kueue' }] })], [pod()])).toEqual([]);
    expect(errorsOf([pod()], [pod({ schedulingGates: [{ name: 'kueue' }] })])[0].message).toBe(
      "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate 'kueue'",
    );
  });

  test('a live pod with its admission-added fields, against its manifest, is clean', () => {
    const live = liveExport(pod());
    Object.assign(live.spec, {
      nodeName: 'gpu-1',
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
      imagePullSecrets: [{ name: 'registry' }],
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      volumes: [
        {
          name: 'kube-api-access-x7k2p',
          projected: {
            defaultMode: 420,
            sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }],
          },
        },
      ],
    });
    live.spec.containers[0].volumeMounts = [
      { name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
    ];
    expect(paths([live], [pod()])).toEqual([]);
  });
});

describe('ValidatePersistentVolumeUpdate', () => {
  const pv = (spec: object) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pv-a' },
    spec: { capacity: { storage: '100Gi' }, accessModes: ['ReadWriteOnce'], ...spec },
  });
  test('the volume source is immutable; reclaim policy, capacity and claimRef are not', () => {
    const [f] = errorsOf(
      [pv({ csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1' } })],
      [pv({ csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-2' } })],
    );
    expect(f).toMatchObject({
      path: 'spec.csi',
      message: 'spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation',
    });
    const src = { csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1' } };
    expect(
      paths(
        [pv({ ...src, persistentVolumeReclaimPolicy: 'Delete' })],
        [
          pv({
            ...src,
            persistentVolumeReclaimPolicy: 'Retain',
            capacity: { storage: '200Gi' },
            claimRef: { name: 'x', namespace: 'ml' },
          }),
        ],
      ),
    ).toEqual([]);
  });
});

describe('ValidatePersistentVolumeClaimUpdate', () => {
  test('a bound claim may grow; equal values in other units are no change', () => {
    expect(paths([liveExport(pvc())], [pvc({ resources: { requests: { storage: '20Gi' } } })])).toEqual([]);
    expect(paths([liveExport(pvc())], [pvc({ resources: { requests: { storage: '10240Mi' } } })])).toEqual([]);
  });

  test('a pending claim may not change its request at all', () => {
    const [f] = errorsOf(
      [liveExport(pvc(), { pvcPhase: 'Pending' })],
      [pvc({ resources: { requests: { storage: '20Gi' } } })],
    );
    expect(f).toMatchObject({
      path: 'spec.resources',
      message:
        'spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
    });
    expect(
      errorsOf(
        [liveExport(pvc(), { pvcPhase: 'Pending' })],
        [pvc({ resources: { requests: { storage: '20Gi' } } })],
        '1.35',
      ).map(e => [e.path, e.message]),
    ).toEqual([[f.path, f.message]]);
  });

  test('volumeAttributesClassName may change once the VolumeAttributesClass gate is on by default (GA, 1.34); with the gate off (1.32-1.33) a set class may not change', () => {
    expect(
      paths(
        [liveExport(pvc({ volumeAttributesClassName: 'gold' }))],
        [pvc({ volumeAttributesClassName: 'silver' })],
        '1.34',
      ),
    ).toEqual([]);
    expect(
      errorsOf(
        [liveExport(pvc({ volumeAttributesClassName: 'gold' }))],
        [pvc({ volumeAttributesClassName: 'silver' })],
        '1.32',
      ).map(f => f.message),
    ).toEqual([
      'spec.volumeAttributesClassName: Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled',
    ]);
    expect(
      paths(
        [liveExport(pvc({ volumeAttributesClassName: 'gold' }))],
        [pvc({ volumeAttributesClassName: 'silver' })],
        '1.33',
      ),
    ).toEqual(['spec.volumeAttributesClassName']);
    // DropDisabledFields: with the gate off a class on a claim that had none is dropped, not refused.
    expect(paths([liveExport(pvc())], [pvc({ volumeAttributesClassName: 'silver' })], '1.33')).toEqual([]);
  });

  test('a shrink to status.capacity or below is refused, in the words of 1.32+ (RecoverVolumeExpansionFailure)', () => {
    for (const v of [undefined, '1.32', '1.35'])
      expect(
        errorsOf([liveExport(pvc())], [pvc({ resources: { requests: { storage: '5Gi' } } })], v).map(f => f.message),
      ).toEqual(['spec.resources.requests.storage: Forbidden: field can not be less than status.capacity']);
  });

  test('on 1.32+ a request may drop back above status.capacity (recovery from a failed expansion)', () => {
    const live = liveExport(pvc({ resources: { requests: { storage: '50Gi' } } }));
    live.status.capacity.storage = '10Gi';
    expect(paths([live], [pvc({ resources: { requests: { storage: '20Gi' } } })], '1.32')).toEqual([]);
    // Not down to the capacity itself, nor below it.
    for (const storage of ['10Gi', '5Gi'])
      expect(paths([live], [pvc({ resources: { requests: { storage } } })], '1.32')).toEqual([
        'spec.resources.requests.storage',
      ]);
  });

  test('volumeName may be set once; storageClassName may go from unset to set; both kept when a manifest omits them', () => {
    expect(paths([pvc()], [pvc({ volumeName: 'pv-a' })])).toEqual([]);
    expect(paths([pvc({ volumeName: 'pv-a' })], [pvc({ volumeName: 'pv-b' })])).toEqual(['spec.volumeName']);
    const unset = liveExport(pvc());
    delete unset.spec.storageClassName;
    expect(paths([unset], [pvc({ storageClassName: 'fast' })])).toEqual([]);
    // A manifest baseline cannot tell an unset class from the default one DefaultStorageClass gave it.
    expect(paths([pvc()], [pvc({ storageClassName: 'fast' })])).toEqual(['spec.storageClassName']);
    expect(paths([pvc({ storageClassName: 'a' })], [pvc({ storageClassName: 'b' })])).toEqual([
      'spec.storageClassName',
    ]);
    expect(paths([liveExport(pvc())], [pvc()])).toEqual([]);
  });

  test('dataSource is mirrored into dataSourceRef by the server', () => {
    const src = { dataSource: { kind: 'VolumeSnapshot', apiGroup: 'snapshot.storage.k8s.io', name: 'snap' } };
    expect(paths([liveExport(pvc(src))], [pvc(src)])).toEqual([]);
  });
});

describe('ValidateJobSpecUpdate', () => {
  test('the template is immutable, including restartPolicy (not hidden by normalization)', () => {
    expect(paths([liveExport(job())], [job({}, { restartPolicy: 'OnFailure' })])).toEqual(['spec.template']);
    expect(paths([liveExport(job())], [job({}, { containers: [{ name: 'c', image: 'i:2' }] })])).toEqual([
      'spec.template',
    ]);
  });

  test('scheduling directives of a suspended Job that never started may change (validatePodTemplateUpdate)', () => {
    const before = liveExport(job({ suspend: true }), { jobStarted: false });
    const after = job(
      { suspend: true },
      { nodeSelector: { pool: 'h100' }, tolerations: [{ key: 'gpu', operator: 'Exists' }] },
    );
    expect(paths([before], [after])).toEqual([]);
    expect(paths([liveExport(job({ suspend: true }), { jobStarted: true })], [after])).toEqual(['spec.template']);
    expect(paths([before], [job({ suspend: true }, { containers: [{ name: 'c', image: 'i:2' }] })])).toEqual([
      'spec.template',
    ]);
  });

  test('completions: immutable unless Indexed and changed in tandem with parallelism (validateCompletions)', () => {
    expect(paths([job({ completions: 4, parallelism: 4 })], [job({ completions: 8, parallelism: 8 })])).toEqual([
      'spec.completions',
    ]);
    const indexed = (c: number, p: number) => job({ completionMode: 'Indexed', completions: c, parallelism: p });
    expect(paths([indexed(4, 4)], [indexed(8, 8)])).toEqual([]);
    expect(errorsOf([indexed(4, 4)], [indexed(8, 4)])[0].message).toBe(
      'spec.completions: Invalid value: 8: can only be modified in tandem with spec.parallelism',
    );
  });

  test('podFailurePolicy, completionMode and backoffLimitPerIndex are immutable', () => {
    const pfp = { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [42] } }] };
    expect(paths([job()], [job({ podFailurePolicy: pfp })])).toEqual(['spec.podFailurePolicy']);
    expect(paths([job()], [job({ completionMode: 'Indexed', completions: 1 })])).toContain('spec.completionMode');
    const bl = (n: number) =>
      job({ completionMode: 'Indexed', completions: 2, parallelism: 2, backoffLimitPerIndex: n });
    expect(paths([bl(1)], [bl(2)])).toEqual(['spec.backoffLimitPerIndex']);
    expect(paths([bl(1)], [bl(2)], '1.35')).toEqual(['spec.backoffLimitPerIndex']);
  });

  test('zero values a manifest spells out (hostNetwork: false, initialDelaySeconds: 0) and server-written divisors are no change', () => {
    const spelled = job(
      {},
      {
        hostNetwork: false,
        containers: [
          {
            name: 'c',
            image: 'i:1',
            stdin: false,
            readinessProbe: { exec: { command: ['true'] }, initialDelaySeconds: 0 },
            env: [{ name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }],
          },
        ],
      },
    );
    const plain = job(
      {},
      {
        containers: [
          {
            name: 'c',
            image: 'i:1',
            readinessProbe: { exec: { command: ['true'] } },
            env: [{ name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }],
          },
        ],
      },
    );
    const live = liveExport(plain);
    live.spec.template.spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor = '0';
    expect(paths([live], [spelled])).toEqual([]);
    expect(paths([live], [job({}, { hostNetwork: true, containers: plain.spec.template.spec.containers })])).toEqual([
      'spec.template',
    ]);
  });

  test('the selector and labels the Job strategy generated are not a change; parallelism and backoffLimit may change', () => {
    expect(paths([liveExport(job())], [job({ parallelism: 3, backoffLimit: 2 })])).toEqual([]);
  });

  test('ValidateCronJobUpdate has no immutable field: a jobTemplate change applies', () => {
    const cj = (image: string) => ({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'c' },
      spec: {
        schedule: '0 * * * *',
        jobTemplate: {
          spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image }] } } },
        },
      },
    });
    expect(guard([liveExport(cj('a'))], [cj('b')]).findings).toEqual([]);
  });
});

describe('ValidateServiceUpdate / validateServiceClusterIPsRelatedFields', () => {
  test('clusterIP "" and clusterIPs [] keep what was allocated', () => {
    expect(paths([liveExport(svc())], [svc({ clusterIP: '', clusterIPs: [] })])).toEqual([]);
    expect(paths([liveExport(svc())], [svc()])).toEqual([]);
  });

  test('a changed cluster IP or IP family is refused', () => {
    const [f] = errorsOf([liveExport(svc({ clusterIP: '10.0.0.1' }))], [svc({ clusterIP: '10.0.0.2' })]);
    expect(f).toMatchObject({
      path: 'spec.clusterIP',
      before: '10.0.0.1',
      after: '10.0.0.2',
      message: 'spec.clusterIPs[0]: Invalid value: ["10.0.0.2"]: may not change once set',
    });
    expect(paths([liveExport(svc({ clusterIP: '10.0.0.1' }))], [svc({ clusterIPs: ['10.0.0.2'] })])).toEqual([
      'spec.clusterIPs[0]',
    ]);
    expect(paths([liveExport(svc())], [svc({ ipFamilies: ['IPv6'] })])).toEqual(['spec.ipFamilies[0]']);
    expect(paths([liveExport(svc({ clusterIP: 'None' }))], [svc({ clusterIP: '10.0.0.9' })])).toEqual([
      'spec.clusterIP',
    ]);
  });

  test('a dual-stack upgrade is allowed; a downgrade needs SingleStack', () => {
    expect(
      paths([liveExport(svc())], [svc({ ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4', 'IPv6'] })]),
    ).toEqual([]);
    const dual = liveExport(svc({ ipFamilyPolicy: 'PreferDualStack' }));
    Object.assign(dual.spec, { clusterIPs: ['10.96.12.34', 'fd00::1'], ipFamilies: ['IPv4', 'IPv6'] });
    expect(
      paths([dual], [svc({ ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'], clusterIPs: ['10.96.12.34'] })]),
    ).toEqual([]);
    expect(
      paths([dual], [svc({ ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4'], clusterIPs: ['10.96.12.34'] })]),
    ).toEqual(['spec.ipFamilyPolicy']);
  });

  test('loadBalancerClass may not change while the type stays LoadBalancer (validateLoadBalancerClassField)', () => {
    const lb = (c: string) => svc({ type: 'LoadBalancer', loadBalancerClass: c });
    expect(paths([lb('a')], [lb('b')])).toEqual(['spec.loadBalancerClass']);
    expect(paths([svc()], [lb('b')])).toEqual([]);
  });
});

describe('ValidateSecretUpdate and ValidateConfigMapUpdate', () => {
  const secret = (extra: object) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tok' }, ...extra });
  test('a Secret type never changes, flagged or not', () => {
    expect(
      errorsOf(
        [liveExport(secret({ data: { a: 'eA==' } }))],
        [secret({ type: 'kubernetes.io/tls', data: { a: 'eA==' } })],
      )[0].message,
    ).toBe('type: Invalid value: "kubernetes.io/tls": field is immutable');
  });
  test('stringData compares equal to live data holding the same bytes', () => {
    expect(
      paths(
        [liveExport(secret({ stringData: { token: 'hf_abc' } }))],
        [secret({ stringData: { token: 'hf_abc' }, immutable: true })].map(s => ({ ...s, immutable: undefined })),
      ),
    ).toEqual([]);
    expect(
      paths(
        [liveExport(secret({ stringData: { token: 'hf_abc' }, immutable: true }))],
        [secret({ stringData: { token: 'hf_abc' }, immutable: true })],
      ),
    ).toEqual([]);
    expect(
      paths(
        [liveExport(secret({ stringData: { token: 'hf_abc' }, immutable: true }))],
        [secret({ stringData: { token: 'hf_xyz' }, immutable: true })],
      ),
    ).toEqual(['data']);
  });
  test('an empty value in data is data: {token: ""} is not the same as no token', () => {
    expect(paths([secret({ data: { token: '' }, immutable: true })], [secret({ data: {}, immutable: true })])).toEqual([
      'data',
    ]);
  });
  test('immutable ConfigMaps: data, binaryData and the flag', () => {
    const cm = (data: object, immutable?: boolean) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data,
      ...(immutable === undefined ? {} : { immutable }),
    });
    expect(paths([cm({ a: '1' })], [cm({ a: '2' })])).toEqual([]);
    expect(paths([cm({ a: '1' }, true)], [cm({ a: '2' }, true)])).toEqual(['data']);
    expect(paths([cm({ a: '1' }, true)], [cm({ a: '1' })])).toEqual(['immutable']);
  });
});

describe('other kinds', () => {
  test('ValidateRoleBindingUpdate / ValidateClusterRoleBindingUpdate: roleRef', () => {
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      const rb = (role: string) => ({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind,
        metadata: { name: 'rb' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'a', namespace: 'ml' }],
      });
      expect(errorsOf([rb('a')], [rb('b')])[0].message).toMatch(/^roleRef: Invalid value: .*: cannot change roleRef$/);
      expect(paths([rb('a')], [{ ...rb('a'), subjects: [] }])).toEqual([]);
    }
  });
  test('ValidateStorageClassUpdate: parameters, provisioner, reclaimPolicy, volumeBindingMode; defaults on read', () => {
    const sc = (extra: object) => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'fast' },
      provisioner: 'ebs.csi.aws.com',
      parameters: { type: 'gp3' },
      ...extra,
    });
    expect(paths([liveExport(sc({}))], [sc({})])).toEqual([]);
    expect(
      paths(
        [liveExport(sc({}))],
        [sc({ reclaimPolicy: 'Retain', volumeBindingMode: 'WaitForFirstConsumer', parameters: { type: 'io2' } })],
      ),
    ).toEqual(['parameters', 'reclaimPolicy', 'volumeBindingMode']);
    expect(paths([sc({})], [sc({ allowVolumeExpansion: true })])).toEqual([]);
  });
  test('ValidateIngressClassUpdate: spec.controller', () => {
    const ic = (c: string, p?: object) => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'nginx' },
      spec: { controller: c, ...(p ? { parameters: p } : {}) },
    });
    expect(paths([ic('k8s.io/ingress-nginx')], [ic('example.com/other')])).toEqual(['spec.controller']);
    expect(paths([ic('k8s.io/ingress-nginx')], [ic('k8s.io/ingress-nginx', { kind: 'X', name: 'y' })])).toEqual([]);
  });
  test('ValidatePriorityClassUpdate: value and preemptionPolicy', () => {
    const pc = (value: number, extra: object = {}) => ({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'train' },
      value,
      ...extra,
    });
    expect(errorsOf([pc(1000)], [pc(2000)])[0].message).toBe('value: Forbidden: may not be changed in an update.');
    expect(
      paths(
        [pc(1000)],
        [pc(1000, { preemptionPolicy: 'PreemptLowerPriority', globalDefault: true, description: 'x' })],
      ),
    ).toEqual([]);
    expect(paths([pc(1000)], [pc(1000, { preemptionPolicy: 'Never' })])).toEqual(['preemptionPolicy']);
  });
});

describe('CRDs: x-kubernetes-validations self == oldSelf (apiextensions CEL transition rules)', () => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'trainjobs.example.com' },
    spec: {
      group: 'example.com',
      names: { kind: 'TrainJob', plural: 'trainjobs' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha2',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: {
                    replicatedJobs: {
                      type: 'array',
                      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'Value is immutable' }],
                    },
                    suspend: { type: 'boolean' },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
  const js = (replicas: number, suspend = false) => ({
    apiVersion: 'example.com/v1alpha2',
    kind: 'TrainJob',
    metadata: { name: 'train' },
    spec: { suspend, replicatedJobs: [{ name: 'w', replicas }] },
  });
  test('a change to an immutable property is refused with the CRD message, when the CRD is in the input', () => {
    expect(errorsOf([crd, js(2)], [crd, js(4)])[0]).toMatchObject({
      path: 'spec.replicatedJobs',
      message: 'spec.replicatedJobs: Invalid value: "array": Value is immutable',
    });
    expect(paths([crd, js(2)], [crd, js(2, true)])).toEqual([]);
    expect(paths([js(2)], [js(4)])).toEqual([]);
  });
  test('a rule self.x == oldSelf.x on an object guards field x, reported on the object', () => {
    const withRule = JSON.parse(JSON.stringify(crd));
    withRule.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = [
      { rule: 'self.suspend == oldSelf.suspend' },
    ];
    expect(errorsOf([withRule, js(2, false)], [withRule, js(2, true)])[0]).toMatchObject({
      path: 'spec',
      message: 'spec: Invalid value: "object": failed rule: self.suspend == oldSelf.suspend',
    });
  });
  test('CRDs installed apart from the manifests are given as customResourceDefinitions', () => {
    expect(guard([js(2)], [js(4)], { customResourceDefinitions: [crd] }).findings.map(f => f.path)).toEqual([
      'spec.replicatedJobs',
    ]);
  });
});
