// Cases where the guard must answer as the API server would, each citing the upstream function
// whose behaviour it checks (kubernetes/kubernetes unless named otherwise).
import { guard, GuardOptions } from '../../src';
import { normalize } from '../../src/guard/normalize';
import { plan } from '../../src/guard/plan';
import { liveExport } from './live-export';

const errorsOf = (before: any[], after: any[], options: GuardOptions = {}) =>
  guard(before, after, options).findings.filter(f => f.severity === 'error');
const paths = (before: any[], after: any[], options: { serverVersion?: string; kueueVersion?: string } = {}) =>
  errorsOf(before, after, options).map(f => f.path);
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

const job = (spec: object = {}, template: object = {}, meta: object = {}) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'train', namespace: 'ml', ...meta },
  spec: {
    template: {
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'c', image: 'i:1', resources: { limits: { 'nvidia.com/gpu': '1' } } }],
        ...template,
      },
    },
    ...spec,
  },
});

describe('kubectl apply three-way merge (kubectl CreateThreeWayMergePatch): a live baseline is compared with what the apply stores', () => {
  test('a Kueue-admitted Job (nodeSelector, tolerations, labels and annotations written into its template at admission), unchanged, is clean', () => {
    const manifest = job({ suspend: true }, {}, { labels: { 'kueue.x-k8s.io/queue-name': 'q' } });
    const live = liveExport(manifest);
    live.spec.suspend = false;
    const t = live.spec.template;
    t.spec.nodeSelector = { 'cloud.google.com/gke-accelerator': 'nvidia-a100' };
    t.spec.tolerations = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
    t.metadata = {
      ...(t.metadata ?? {}),
      labels: { ...(t.metadata?.labels ?? {}), 'kueue.x-k8s.io/podset': 'main' },
      annotations: { 'kueue.x-k8s.io/workload': 'job-train-1' },
    };
    live.status = { startTime: '2026-01-01T00:00:00Z', active: 1 };
    expect(errorsOf([live], [manifest])).toEqual([]);
  });

  test('a field the last apply set and the manifest drops is deleted by the apply: a template change of a started Job is still refused (ValidateJobSpecUpdate)', () => {
    const manifest = job({}, { nodeSelector: { pool: 'a' } });
    const live = liveExport(manifest);
    live.status = { startTime: '2026-01-01T00:00:00Z', active: 1 };
    expect(paths([live], [job()])).toEqual(['spec.template']);
  });

  test('live-only items of a merge-keyed list stay (strategic merge patch on containers[].env by name)', () => {
    const manifest = job();
    const live = liveExport(manifest);
    live.spec.template.spec.containers[0].env = [{ name: 'INJECTED', value: '1' }];
    expect(errorsOf([live], [manifest])).toEqual([]);
    // The manifest's own change is still seen.
    const changed = clone(manifest);
    (changed.spec.template.spec.containers[0] as any).env = [{ name: 'MINE', value: '2' }];
    expect(paths([live], [changed])).toEqual(['spec.template']);
  });

  test('without a last-applied annotation kubectl apply deletes nothing', () => {
    const manifest = job();
    const live = liveExport(manifest);
    delete live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'];
    live.spec.template.spec.nodeSelector = { pool: 'a' };
    expect(errorsOf([live], [manifest])).toEqual([]);
  });
});

describe('merge-keyed list items without their key (strategicpatch; a 1.32 StatefulSet template is not validated on create, so only the apply stops it)', () => {
  const sts = (env: object[]) => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'train', namespace: 'ml' },
    spec: {
      serviceName: 'train',
      selector: { matchLabels: { app: 'train' } },
      template: {
        metadata: { labels: { app: 'train' } },
        spec: { containers: [{ name: 'c', image: 'i:1', env }] },
      },
    },
  });

  test.each(['1.32', '1.35'])('an env item without its name is an error at %s, naming the item and the key', v => {
    const errors = errorsOf([sts([{ name: 'A', value: '1' }])], [sts([{ name: 'A', value: '1' }, { value: '90' }])], {
      serverVersion: v,
    });
    expect(errors.map(e => e.path)).toEqual(['spec.template.spec.containers[0].env[1]']);
    expect(errors[0].message).toMatch(/does not contain declared merge key: name/);
    // Server-side apply merges such an item (checked on the 1.32 server).
    expect(
      errorsOf([sts([{ name: 'A', value: '1' }])], [sts([{ name: 'A', value: '1' }, { value: '90' }])], {
        serverVersion: v,
        serverSideApply: true,
      }),
    ).toEqual([]);
  });

  test('items with their keys, and lists without a merge key (args), are clean', () => {
    const after = sts([{ name: 'A', value: '2' }]);
    (after.spec.template.spec.containers[0] as any).args = ['--x'];
    expect(errorsOf([sts([{ name: 'A', value: '1' }])], [after])).toEqual([]);
  });
});

describe('server defaults the guard must apply to both sides', () => {
  test('SetDefaults_Job (pkg/apis/batch/v1/defaults.go): podFailurePolicy onPodConditions[].status defaults to "True"', () => {
    const rules = (status?: string) => ({
      podFailurePolicy: {
        rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', ...(status ? { status } : {}) }] }],
      },
    });
    const live = liveExport(job(rules('True')));
    expect(errorsOf([live], [job(rules())])).toEqual([]);
    expect(errorsOf([job(rules())], [job(rules('True'))])).toEqual([]);
    expect(paths([live], [job(rules('False'))])).toEqual(['spec.podFailurePolicy']);
  });

  test.each(['RoleBinding', 'ClusterRoleBinding'])(
    'SetDefaults_%s (pkg/apis/rbac/v1/defaults.go): roleRef.apiGroup defaults to rbac.authorization.k8s.io',
    kind => {
      const rb = (roleRef: object) => ({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind,
        metadata: { name: 'x', ...(kind === 'RoleBinding' ? { namespace: 'ml' } : {}) },
        roleRef,
      });
      const withGroup = rb({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'r' });
      expect(errorsOf([liveExport(withGroup)], [rb({ kind: 'ClusterRole', name: 'r' })])).toEqual([]);
      expect(errorsOf([rb({ kind: 'ClusterRole', name: 'r' })], [withGroup])).toEqual([]);
      // ValidateRoleBindingUpdate: a different role is still refused.
      expect(paths([liveExport(withGroup)], [rb({ kind: 'ClusterRole', name: 'other' })])).toEqual(['roleRef']);
    },
  );

  test('SetDefaults_Container with parsers.ParseImageName: `name:latest@sha256:...` defaults to Always, `name@sha256:...` to IfNotPresent', () => {
    const digest = 'sha256:' + '0'.repeat(64);
    const pod = (image: string, imagePullPolicy?: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ml' },
      spec: { containers: [{ name: 'c', image, ...(imagePullPolicy ? { imagePullPolicy } : {}) }] },
    });
    const live = (image: string, policy: string) => {
      const l = liveExport(pod(image));
      l.spec.containers[0].imagePullPolicy = policy;
      return l;
    };
    expect(errorsOf([live(`img:latest@${digest}`, 'Always')], [pod(`img:latest@${digest}`)])).toEqual([]);
    expect(errorsOf([live(`img@${digest}`, 'IfNotPresent')], [pod(`img@${digest}`)])).toEqual([]);
    // ValidatePodUpdate: the pull policy itself may not change.
    expect(paths([live(`img:latest@${digest}`, 'Always')], [pod(`img:latest@${digest}`, 'IfNotPresent')])).toEqual([
      'spec.containers',
    ]);
  });
});

describe('ValidatePersistentVolumeUpdate and ValidatePersistentVolumeClaimUpdate (pkg/apis/core/validation/validation.go)', () => {
  const pv = (csi: object = {}, spec: object = {}) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pv1' },
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      csi: { driver: 'd.example.com', volumeHandle: 'h1', ...csi },
      ...spec,
    },
  });
  const pvc = (spec: object = {}) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: 'ml' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, ...spec },
  });

  test('a PV may gain csi.controllerExpandSecretRef ("if oldPV does not have ControllerExpandSecretRef then allow it to be set"), not change it or the rest of the source', () => {
    const ref = { controllerExpandSecretRef: { name: 's', namespace: 'kube-system' } };
    expect(errorsOf([liveExport(pv())], [pv(ref)])).toEqual([]);
    expect(
      paths([liveExport(pv(ref))], [pv({ controllerExpandSecretRef: { name: 'other', namespace: 'kube-system' } })]),
    ).toEqual(['spec.csi']);
    expect(paths([liveExport(pv())], [pv({ ...ref, volumeHandle: 'h2' })])).toEqual(['spec.csi']);
  });

  test.each(['1.32', '1.33', '1.34'])(
    '%s: a set volumeAttributesClassName may not become nil or "" (the claim and the volume)',
    v => {
      const gateOff = v !== '1.34';
      const off = gateOff
        ? [
            'spec.volumeAttributesClassName: Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled',
          ]
        : [];
      const messages = (before: any, after: any) =>
        errorsOf([before], [after], { serverVersion: v }).map(f => f.message);
      expect(
        messages(liveExport(pvc({ volumeAttributesClassName: 'gold' })), pvc({ volumeAttributesClassName: null })),
      ).toEqual([...off, 'spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden']);
      expect(
        messages(liveExport(pvc({ volumeAttributesClassName: 'gold' })), pvc({ volumeAttributesClassName: '' })),
      ).toEqual([
        ...off,
        'spec.volumeAttributesClassName: Forbidden: update from non-nil value to an empty string is forbidden',
      ]);
      // The manifest drops a class the last apply set: kubectl apply deletes it.
      expect(messages(liveExport(pvc({ volumeAttributesClassName: 'gold' })), pvc())).toEqual([
        ...off,
        'spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden',
      ]);
      expect(messages(liveExport(pv({}, { volumeAttributesClassName: 'gold' })), pv())).toEqual([
        ...off,
        'spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden',
      ]);
    },
  );
});

describe('ValidatePodUpdate for a gated pod (KEP-3838: validateNodeSelectorMutation, validateNodeAffinityMutation)', () => {
  const pod = (spec: object = {}) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ml' },
    spec: { containers: [{ name: 'c', image: 'i:1' }], ...spec },
  });
  const gates = { schedulingGates: [{ name: 'example.com/wait' }] };
  const required = (...terms: object[]) => ({
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
  });
  const zone = { key: 'zone', operator: 'In', values: ['a'] };
  const gpu = { key: 'gpu', operator: 'Exists' };

  test('a gated pod may gain nodeSelector entries and node affinity; an ungated one may not', () => {
    expect(errorsOf([liveExport(pod(gates))], [pod({ ...gates, nodeSelector: { pool: 'gpu' } })])).toEqual([]);
    expect(errorsOf([liveExport(pod(gates))], [pod({ ...gates, ...required({ matchExpressions: [zone] }) })])).toEqual(
      [],
    );
    expect(
      errorsOf(
        [liveExport(pod({ ...gates, ...required({ matchExpressions: [zone] }) }))],
        [pod({ ...gates, ...required({ matchExpressions: [zone, gpu] }) })],
      ),
    ).toEqual([]);
    expect(paths([liveExport(pod())], [pod({ nodeSelector: { pool: 'gpu' } })])).toEqual(['spec.nodeSelector']);
  });

  test('a gated pod may not change or remove nodeSelector entries, nor add, remove or change node selector terms', () => {
    const live = liveExport(
      pod({ ...gates, nodeSelector: { pool: 'gpu' }, ...required({ matchExpressions: [zone] }) }),
    );
    expect(
      errorsOf(
        [live],
        [pod({ ...gates, nodeSelector: { pool: 'cpu' }, ...required({ matchExpressions: [zone] }) })],
      ).map(f => f.message),
    ).toEqual([
      'spec.nodeSelector: Invalid value: {"pool":"cpu"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',
    ]);
    expect(
      paths(
        [live],
        [
          pod({
            ...gates,
            nodeSelector: { pool: 'gpu' },
            ...required({ matchExpressions: [zone] }, { matchExpressions: [gpu] }),
          }),
        ],
      ),
    ).toEqual(['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms']);
    expect(
      paths([live], [pod({ ...gates, nodeSelector: { pool: 'gpu' }, ...required({ matchExpressions: [gpu] }) })]),
    ).toEqual(['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]']);
  });
});

describe('validateCustomResourceDefinitionSpecUpdate (apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go)', () => {
  const crd = (spec: { scope?: string; kind?: string; plural?: string; group?: string } = {}) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${spec.plural ?? 'widgets'}.${spec.group ?? 'example.com'}` },
    spec: {
      group: spec.group ?? 'example.com',
      scope: spec.scope ?? 'Namespaced',
      names: {
        kind: spec.kind ?? 'Widget',
        plural: spec.plural ?? 'widgets',
        singular: 'widget',
        listKind: `${spec.kind ?? 'Widget'}List`,
      },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
    },
  });
  const established = (o: any, status: 'True' | 'False') => {
    const live = liveExport(o);
    live.status = {
      conditions: [
        { type: 'Established', status },
        { type: 'NamesAccepted', status: 'True' },
      ],
      acceptedNames: o.spec.names,
      storedVersions: ['v1'],
    };
    return live;
  };

  test('scope and names.kind may not change once the CRD is established', () => {
    expect(errorsOf([established(crd(), 'True')], [crd({ scope: 'Cluster' })]).map(f => f.message)).toEqual([
      'spec.scope: Invalid value: "Cluster": field is immutable',
    ]);
    expect(paths([established(crd(), 'True')], [crd({ kind: 'Gadget' })])).toEqual(['spec.names.kind']);
    // Not established yet: both may change.
    expect(errorsOf([established(crd(), 'False')], [crd({ scope: 'Cluster', kind: 'Gadget' })])).toEqual([]);
    // A manifest baseline has no status: an applied CRD is established within seconds.
    expect(paths([crd()], [crd({ scope: 'Cluster' })])).toEqual(['spec.scope']);
  });

  test('group and names.plural never change', () => {
    const before = established(crd(), 'False');
    const after = crd({ plural: 'gizmos' });
    after.metadata.name = before.metadata.name;
    expect(paths([before], [after])).toEqual(['spec.names.plural']);
    const moved = crd({ group: 'other.example.com' });
    moved.metadata.name = before.metadata.name;
    expect(paths([before], [moved])).toEqual(['spec.group']);
  });
});

describe("a previous manifest as the baseline: the stored object is that manifest with the server's defaults", () => {
  test('SetDefaults_Job: a Job that set neither completions nor parallelism was stored with completions 1; setting parallelism alone keeps it (allowed)', () => {
    expect(errorsOf([job()], [job({ parallelism: 2 })])).toEqual([]);
    expect(paths([job()], [job({ completions: 3, parallelism: 2 })])).toEqual(['spec.completions']);
  });

  test('PVC storageClassName from unset: the DefaultStorageClass admission plugin may have set the default class, so the change is reported (validateStorageClassUpgradeFromNil allows it only on a truly unset claim)', () => {
    const pvc = (spec: object = {}) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'ml' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, ...spec },
    });
    const [f] = errorsOf([pvc()], [pvc({ storageClassName: 'fast' })]);
    expect(f).toMatchObject({ path: 'spec.storageClassName', message: expect.stringMatching(/default StorageClass/) });
    // A live claim without a class (a cluster with no default) is known to be unset: allowed.
    const unset = liveExport(pvc());
    delete unset.spec.storageClassName;
    expect(errorsOf([unset], [pvc({ storageClassName: 'fast' })])).toEqual([]);
  });

  test("Kueue's mutating webhook wrote the queue name into the pod template on create: a manifest that now sets it to that name changes nothing", () => {
    const sts = (templateLabels: object) => ({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 's', namespace: 'ml', labels: { 'kueue.x-k8s.io/queue-name': 'q' } },
      spec: {
        replicas: 2,
        serviceName: 's',
        selector: { matchLabels: { app: 's' } },
        template: {
          metadata: { labels: { app: 's', ...templateLabels } },
          spec: { containers: [{ name: 'c', image: 'i:1' }] },
        },
      },
    });
    expect(errorsOf([sts({})], [sts({ 'kueue.x-k8s.io/queue-name': 'q' })], { kueueVersion: '0.10.2' })).toEqual([]);
    // v0.9's webhook mutates on create only: another name in the manifest reaches the validator.
    expect(paths([sts({})], [sts({ 'kueue.x-k8s.io/queue-name': 'other' })], { kueueVersion: '0.9.4' })).toEqual([
      'spec.template.metadata.labels[kueue.x-k8s.io/queue-name]',
    ]);
    // v0.10's mutates on update too, and writes the StatefulSet's queue name over it first.
    expect(paths([sts({})], [sts({ 'kueue.x-k8s.io/queue-name': 'other' })], { kueueVersion: '0.10.2' })).toEqual([]);
  });
});

describe('CRD transition rules on custom resources (apiextensions-apiserver CEL validation): "" and [] are values, not absence', () => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { kind: 'Widget', plural: 'widgets' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: {
                    mode: {
                      type: 'string',
                      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'mode is immutable' }],
                    },
                    zones: {
                      type: 'array',
                      items: { type: 'string' },
                      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'zones is immutable' }],
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
  const widget = (spec: object) => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'ml' },
    spec,
  });

  test('a string set to "" and a list set to [] are changes the rule refuses; an unchanged "" is not', () => {
    const opts = { customResourceDefinitions: [crd] } as any;
    const run = (before: object, after: object) =>
      guard([liveExport(widget(before))], [widget(after)], opts)
        .findings.filter(f => f.severity === 'error')
        .map(f => f.path);
    expect(run({ mode: 'fast' }, { mode: '' })).toEqual(['spec.mode']);
    expect(run({ zones: ['a'] }, { zones: [] })).toEqual(['spec.zones']);
    expect(run({ mode: '' }, { mode: '' })).toEqual([]);
  });
});

describe('strategic merge patch order ($setElementOrder): a live-only item keeps its place', () => {
  test('a Pod whose first container was injected by a webhook, unchanged manifest, is clean; an image bump stays allowed (ValidatePodUpdate)', () => {
    const pod = (image = 'i:1') => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ml' },
      spec: { containers: [{ name: 'c', image }] },
    });
    const live = liveExport(pod());
    live.spec.containers.unshift({
      name: 'proxy',
      image: 'proxy:1',
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      resources: {},
    });
    expect(errorsOf([live], [pod()])).toEqual([]);
    expect(errorsOf([live], [pod('i:2')])).toEqual([]);
  });
});

describe('kubectl apply keeps what the server and its admission wrote (second review)', () => {
  const sts = (labels: Record<string, string> = {}) => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'train', namespace: 'ml', labels: { 'app.kubernetes.io/name': 'train', ...labels } },
    spec: {
      replicas: 2,
      serviceName: 'train',
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'OnDelete' },
      selector: { matchLabels: { 'app.kubernetes.io/name': 'train' } },
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': 'train' } },
        spec: { containers: [{ name: 'c', image: 'i:1' }] },
      },
    },
  });

  test.each(['0.9', '0.10', '0.12', '0.14'])(
    'a queue-name label Kueue\'s webhook wrote (LocalQueue defaulting), not in last-applied, stays on apply: no "removed" error (Kueue %s)',
    kueueVersion => {
      const manifest = sts();
      const live = liveExport(manifest);
      live.metadata.labels = { ...live.metadata.labels, 'kueue.x-k8s.io/queue-name': 'default' };
      // The same (*Webhook).Default wrote the queue name into the pod template.
      live.spec.template.metadata.labels = {
        ...live.spec.template.metadata.labels,
        'kueue.x-k8s.io/queue-name': 'default',
      };
      expect(errorsOf([live], [manifest], { kueueVersion })).toEqual([]);
    },
  );

  test('a Pod keeps the toleration ExtendedResourceToleration adds for its GPUs, on update too (plugin/pkg/admission/extendedresourcetoleration)', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ml' },
      spec: {
        tolerations: [{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' }],
        containers: [{ name: 'c', image: 'i:1', resources: { limits: { 'nvidia.com/gpu': '1' } } }],
      },
    };
    const live = liveExport(pod);
    live.spec.tolerations = [
      ...live.spec.tolerations,
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ];
    const bumped = clone(pod);
    bumped.spec.containers[0].image = 'i:2';
    expect(errorsOf([live], [bumped])).toEqual([]);
  });

  test('an object last written by server-side apply is flagged: the guard models client-side apply only', () => {
    const manifest = sts();
    const live = liveExport(manifest);
    delete live.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'];
    live.metadata.managedFields = [
      {
        manager: 'kustomize-controller',
        operation: 'Apply',
        apiVersion: 'apps/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: {},
      },
    ];
    const warning = guard([live], [manifest]).findings.find(f => f.code === 'server-side-apply');
    expect(warning?.message).toMatch(/last written by server-side apply \(kustomize-controller\)/);
  });

  test('a sanitized export that still carries the last-applied annotation is a live object', () => {
    const manifest = job({}, {}, {});
    const live: any = liveExport(manifest);
    live.spec.template.spec.nodeSelector = { pool: 'kueue-flavor' };
    for (const k of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields']) delete live.metadata[k];
    delete live.status;
    expect(live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).toBeDefined();
    expect(errorsOf([live], [manifest])).toEqual([]);
  });
});

describe('the deprecated serviceAccount alias (Convert_core_PodSpec_To_v1_PodSpec / Convert_v1_PodSpec_To_core_PodSpec, pkg/apis/core/v1/conversion.go)', () => {
  const withAccount = (account: object) => job({}, account);
  const rotator = { serviceAccountName: 'credential-rotator' };
  const v135 = { serverVersion: '1.35' };

  test('the stored pod spec carries serviceAccount = serviceAccountName; a manifest that sets only serviceAccount gets the name from it', () => {
    expect(normalize(withAccount(rotator)).spec.template.spec).toMatchObject({
      serviceAccountName: 'credential-rotator',
      serviceAccount: 'credential-rotator',
    });
    expect(normalize(withAccount({ serviceAccount: 'old' })).spec.template.spec).toMatchObject({
      serviceAccountName: 'old',
      serviceAccount: 'old',
    });
    // Both set: the name wins, and the stored alias follows it.
    expect(
      normalize(withAccount({ serviceAccountName: 'new', serviceAccount: 'old' })).spec.template.spec,
    ).toMatchObject({ serviceAccountName: 'new', serviceAccount: 'new' });
  });

  test('a Job whose manifest drops serviceAccountName is accepted (kube-apiserver 1.35.4): kubectl apply deletes only the name, the stored serviceAccount stays and fills it back', () => {
    // A previous manifest as the baseline.
    expect(errorsOf([withAccount(rotator)], [job()], v135)).toEqual([]);
    // The live export, which has the alias and a started Job.
    const live = liveExport(withAccount(rotator));
    expect(live.spec.template.spec.serviceAccount).toBe('credential-rotator');
    expect(live.status.startTime).toBeDefined();
    expect(errorsOf([live], [job()], v135)).toEqual([]);
  });

  test('a Job whose serviceAccountName changes (or whose manifest swaps it for a different deprecated serviceAccount) is still refused (ValidateJobSpecUpdate), named once', () => {
    for (const before of [withAccount(rotator), liveExport(withAccount(rotator))]) {
      const [f, ...rest] = errorsOf([before], [withAccount({ serviceAccountName: 'other' })], v135);
      expect(rest).toEqual([]);
      expect(f).toMatchObject({
        code: 'immutable-field',
        path: 'spec.template',
        before: { spec: { serviceAccountName: 'credential-rotator' } },
        after: { spec: { serviceAccountName: 'other' } },
      });
      expect(paths([before], [withAccount({ serviceAccount: 'other' })], v135)).toEqual(['spec.template']);
    }
  });

  test('the deprecated serviceAccount alone, then serviceAccountName of the same value: unchanged; a changed alias next to the kept name is ignored by the server', () => {
    expect(errorsOf([withAccount({ serviceAccount: 'a' })], [withAccount({ serviceAccountName: 'a' })])).toEqual([]);
    // The name stays (not in last-applied) and wins over the alias on decode.
    expect(errorsOf([withAccount({ serviceAccount: 'a' })], [withAccount({ serviceAccount: 'b' })])).toEqual([]);
  });

  test('a bare Pod (ValidatePodUpdate): dropping serviceAccountName keeps it; changing it is one finding', () => {
    const pod = (account: object = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ml' },
      spec: { containers: [{ name: 'c', image: 'i:1' }], ...account },
    });
    const live = liveExport(pod(rotator));
    live.spec.serviceAccount = 'credential-rotator';
    for (const before of [pod(rotator), live]) {
      expect(errorsOf([before], [pod()])).toEqual([]);
      expect(paths([before], [pod({ serviceAccountName: 'other' })])).toEqual(['spec.serviceAccountName']);
    }
  });

  test.each(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet'])(
    'a %s (mutable template): dropping serviceAccountName restarts no pod; a new name is one template change',
    kind => {
      const workload = (account: object = {}) => ({
        apiVersion: 'apps/v1',
        kind,
        metadata: { name: 'w', namespace: 'ml' },
        spec: {
          ...(kind === 'StatefulSet' ? { serviceName: 'w' } : {}),
          selector: { matchLabels: { app: 'w' } },
          template: {
            metadata: { labels: { app: 'w' } },
            spec: { containers: [{ name: 'c', image: 'i:1' }], ...account },
          },
        },
      });
      const bases = [
        workload(rotator),
        ...(kind === 'DaemonSet' || kind === 'ReplicaSet' ? [] : [liveExport(workload(rotator))]),
      ];
      for (const before of bases) {
        expect(errorsOf([before], [workload()])).toEqual([]);
        expect(plan([before], [workload()]).workloads[0]).toMatchObject({ restarts: false, changes: [] });
        const renamed = workload({ serviceAccountName: 'other' });
        expect(errorsOf([before], [renamed])).toEqual([]);
        expect(plan([before], [renamed]).workloads[0]).toMatchObject({
          restarts: true,
          changes: ['spec.serviceAccountName'],
        });
      }
    },
  );

  test('a CronJob (mutable jobTemplate): dropping serviceAccountName leaves the template unchanged', () => {
    const cron = (account: object = {}) => ({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'rotate', namespace: 'ml' },
      spec: { schedule: '0 * * * *', jobTemplate: { spec: job({}, account).spec } },
    });
    for (const before of [cron(rotator), liveExport(cron(rotator))]) {
      expect(errorsOf([before], [cron()])).toEqual([]);
      expect(plan([before], [cron()]).workloads[0]).toMatchObject({ restarts: false, changes: [] });
    }
  });

  test('a JobSet (a custom resource, stored as JSON, not converted): its pod templates get no alias, so dropping serviceAccountName is a change the webhook refuses', () => {
    const jobSet = (account: object = {}) => ({
      apiVersion: 'jobset.x-k8s.io/v1alpha2',
      kind: 'JobSet',
      metadata: { name: 'j', namespace: 'ml' },
      spec: {
        replicatedJobs: [{ name: 'w', replicas: 1, template: { spec: job({}, account).spec } }],
      },
    });
    const stored = normalize(jobSet(rotator)).spec.replicatedJobs[0].template.spec.template.spec;
    expect(stored.serviceAccount).toBeUndefined();
    expect(paths([jobSet(rotator)], [jobSet()])).toEqual(['spec.replicatedJobs']);
  });
});
