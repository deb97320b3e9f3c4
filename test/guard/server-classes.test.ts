// Classes where the guard once disagreed with the API server (issue #22), each tested at its
// boundaries. Each case cites the Kubernetes function whose behaviour it checks.
import { guard } from '../../src';
import { BUILT_IN_GROUPS, isBuiltInGroup } from '../../src/guard/normalize';
import { liveExport } from './live-export';

const errorsOf = (before: any[], after: any[], serverVersion?: string) =>
  guard(before, after, { serverVersion }).findings.filter(f => f.severity === 'error');
const paths = (before: any[], after: any[], serverVersion?: string) =>
  errorsOf(before, after, serverVersion).map(f => f.path);

const svc = (spec: object = {}) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 's', namespace: 'ml' },
  spec: { selector: { app: 'a' }, ports: [{ port: 80 }], ...spec },
});

describe('Service: patchAllocatedValues then normalizeClusterIPs (pkg/registry/core/service/storage/storage.go beginUpdate), then validateUpgradeDowngradeClusterIPs', () => {
  test('a manifest that sets clusterIP only, changed to another address, is refused from a manifest baseline too', () => {
    const [f] = errorsOf([svc({ clusterIP: '10.0.0.1' })], [svc({ clusterIP: '10.0.0.2' })]);
    expect(f).toMatchObject({
      path: 'spec.clusterIP',
      message: 'spec.clusterIPs[0]: Invalid value: ["10.0.0.2"]: may not change once set',
    });
    // The boundary: the same address, or leaving it out (the allocated one is kept), is allowed.
    expect(paths([svc({ clusterIP: '10.0.0.1' })], [svc({ clusterIP: '10.0.0.1' })])).toEqual([]);
    expect(paths([svc({ clusterIP: '10.0.0.1' })], [svc()])).toEqual([]);
    expect(paths([svc({ clusterIP: '10.0.0.1' })], [svc({ clusterIP: '' })])).toEqual([]);
    expect(paths([liveExport(svc({ clusterIP: '10.0.0.1' }))], [svc({ clusterIP: '10.0.0.2' })])).toEqual([
      'spec.clusterIP',
    ]);
  });

  test('headless to an address (None -> 10.0.0.2) is refused; headless to headless is not', () => {
    for (const before of [svc({ clusterIP: 'None' }), liveExport(svc({ clusterIP: 'None' }))]) {
      expect(paths([before], [svc({ clusterIP: '10.0.0.2' })])).toEqual(['spec.clusterIP']);
      expect(paths([before], [svc({ clusterIP: 'None' })])).toEqual([]);
    }
  });

  test('headless to NodePort or LoadBalancer keeps clusterIPs [None], which ValidateService refuses', () => {
    for (const type of ['NodePort', 'LoadBalancer']) {
      for (const before of [svc({ clusterIP: 'None' }), liveExport(svc({ clusterIP: 'None' }))]) {
        const [f] = errorsOf([before], [svc({ type })]);
        expect(f).toMatchObject({
          path: 'spec.type',
          before: 'ClusterIP',
          after: type,
          message: `spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for ${type} services`,
        });
      }
    }
    // The boundary: a Service with an address may become NodePort.
    expect(paths([liveExport(svc())], [svc({ type: 'NodePort' })])).toEqual([]);
    expect(paths([svc({ clusterIP: 'None' })], [svc({ type: 'ClusterIP' })])).toEqual([]);
  });

  test('ExternalName keeps no cluster IP: a change to or from it is not a clusterIPs change', () => {
    expect(paths([svc({ type: 'ExternalName', externalName: 'a.example.com' })], [svc()])).toEqual([]);
  });
});

const crd = (versions: Array<{ name: string; storage: boolean; served?: boolean }>, status?: object) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: versions.map(v => ({ served: true, ...v, schema: { openAPIV3Schema: { type: 'object' } } })),
  },
  ...(status ? { status } : {}),
});

describe('CustomResourceDefinition: ValidateCustomResourceDefinitionStoredVersions on update', () => {
  test('dropping a version still in status.storedVersions is refused, with the index the server names', () => {
    const live = crd(
      [
        { name: 'v1alpha1', storage: false },
        { name: 'v1', storage: true },
      ],
      {
        storedVersions: ['v1alpha1', 'v1'],
        conditions: [{ type: 'Established', status: 'True' }],
      },
    );
    const [f] = errorsOf([live], [crd([{ name: 'v1', storage: true }])]);
    expect(f).toMatchObject({
      path: 'spec.versions',
      message: 'status.storedVersions[0]: Invalid value: "v1alpha1": must appear in spec.versions',
      remedy: expect.stringMatching(/served: false.*--subresource=status/),
    });
    // The boundary: kept but no longer served is allowed; so is dropping a version never stored.
    expect(
      paths(
        [live],
        [
          crd([
            { name: 'v1alpha1', storage: false, served: false },
            { name: 'v1', storage: true },
          ]),
        ],
      ),
    ).toEqual([]);
    const migrated = { ...live, status: { ...live.status, storedVersions: ['v1'] } };
    expect(paths([migrated], [crd([{ name: 'v1', storage: true }])])).toEqual([]);
  });

  test('a manifest baseline: its storage version is stored, so dropping it is refused', () => {
    const before = crd([{ name: 'v1beta1', storage: true }]);
    expect(paths([before], [crd([{ name: 'v1', storage: true }])])).toEqual(['spec.versions']);
    expect(
      paths(
        [before],
        [
          crd([
            { name: 'v1beta1', storage: false },
            { name: 'v1', storage: true },
          ]),
        ],
      ),
    ).toEqual([]);
  });
});

describe('CSIDriver: ValidateCSIDriverUpdate (1.28+: attachRequired and volumeLifecycleModes)', () => {
  const driver = (spec: object = {}) => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: { name: 'csi.example.com' },
    spec,
  });
  test('attachRequired and volumeLifecycleModes are immutable, against their defaults too', () => {
    expect(errorsOf([driver({ attachRequired: true })], [driver({ attachRequired: false })])[0].message).toBe(
      'spec.attachedRequired: Invalid value: false: field is immutable',
    );
    expect(paths([driver()], [driver({ attachRequired: false })])).toEqual(['spec.attachedRequired']);
    expect(paths([driver()], [driver({ volumeLifecycleModes: ['Ephemeral'] })])).toEqual(['spec.volumeLifecycleModes']);
    expect(paths([driver()], [driver({ attachRequired: true, volumeLifecycleModes: ['Persistent'] })])).toEqual([]);
  });
  test('podInfoOnMount and fsGroupPolicy may change (kubernetes#116209, in 1.28)', () => {
    for (const v of ['1.32', '1.35'])
      expect(paths([driver()], [driver({ podInfoOnMount: true, fsGroupPolicy: 'File' })], v)).toEqual([]);
  });
});

describe('Job spec.managedBy (ValidateJobSpecUpdate; JobManagedBy alpha in 1.30, beta from 1.32)', () => {
  const job = (managedBy?: string) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j' },
    spec: {
      ...(managedBy ? { managedBy } : {}),
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i:1' }] } },
    },
  });
  test('1.32+ (the floor, gate on): no change at all, a stored value or a new one', () => {
    for (const v of ['1.32', '1.35']) {
      expect(paths([job('a.example.com/x')], [job('b.example.com/y')], v)).toEqual(['spec.managedBy']);
      expect(paths([job()], [job('b.example.com/y')], v)).toEqual(['spec.managedBy']);
    }
  });
});

describe('built-in API groups: an exact list per server version, not a .k8s.io suffix', () => {
  test('groups served by CRDs or aggregated servers are custom resources, whatever their suffix', () => {
    for (const g of ['snapshot.storage.k8s.io', 'autoscaling.k8s.io', 'gateway.networking.k8s.io', 'metrics.k8s.io'])
      expect(isBuiltInGroup(g)).toBe(false);
    for (const g of ['', 'apps', 'batch', 'policy', 'storage.k8s.io', 'rbac.authorization.k8s.io'])
      expect(isBuiltInGroup(g)).toBe(true);
    expect(isBuiltInGroup('storagemigration.k8s.io', 29)).toBe(false);
    expect(isBuiltInGroup('storagemigration.k8s.io', 30)).toBe(true);
  });

  test('the list is the groups of the vendored 1.32 and 1.36 API definitions (resources they serve)', () => {
    const groups = (v: string) => {
      const defs = require(`../../src/validation/schemas/k8s-v${v}.json`).definitions as Record<string, any>;
      const out = new Set<string>();
      for (const d of Object.values(defs))
        for (const gvk of d['x-kubernetes-group-version-kind'] ?? []) if (gvk.group.includes('.')) out.add(gvk.group);
      // Meta types (WatchEvent, DeleteOptions) carry groups that serve no resource.
      for (const g of ['admission.k8s.io', 'imagepolicy.k8s.io']) out.delete(g);
      return [...out].sort();
    };
    expect(
      [...BUILT_IN_GROUPS]
        .filter(([, since]) => since <= 32)
        .map(([g]) => g)
        .sort(),
    ).toEqual(groups('1.32.0'));
    expect([...BUILT_IN_GROUPS.keys()].sort()).toEqual(groups('1.36.0'));
  });
});

describe('the text report names the changed fields, not whole lists', () => {
  test('a one-field change in a claim template prints that field, before and after', () => {
    const { formatReport } = require('../../src') as typeof import('../../src');
    const { seed000 } = require('./fixtures') as typeof import('./fixtures');
    const b = seed000('1.2.0');
    const a = seed000('1.2.0');
    a.spec.volumeClaimTemplates[0].spec.resources.requests.storage = '200Gi';
    const text = formatReport(guard([b], [a]));
    expect(text).toContain('  changed: [data-pvc].spec.resources.requests.storage: "100Gi" -> "200Gi"');
    expect(text).not.toContain('  before: [');
    // Short values are still printed whole.
    expect(formatReport(guard([svc({ clusterIP: '10.0.0.1' })], [svc({ clusterIP: '10.0.0.2' })]))).toContain(
      '  before: "10.0.0.1"\n  after:  "10.0.0.2"',
    );
  });
});

describe('a headless Service whose manifest drops clusterIP: None stays headless (patchAllocatedValues)', () => {
  test('warned, not refused; a manifest that keeps None, or a Service with an address, is not warned', () => {
    for (const before of [svc({ clusterIP: 'None' }), liveExport(svc({ clusterIP: 'None' }))]) {
      const r = guard([before], [svc()]);
      expect(r.errors).toBe(0);
      expect(r.findings).toEqual([
        expect.objectContaining({ code: 'service-stays-headless', severity: 'warning', path: 'spec.clusterIP' }),
      ]);
      expect(guard([before], [svc({ clusterIP: 'None' })]).findings).toEqual([]);
    }
    expect(guard([liveExport(svc())], [svc()]).findings).toEqual([]);
  });
});

describe('CRD structural defaults are applied before a self == oldSelf rule (apiextensions defaulting)', () => {
  const schemaCrd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
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
                      default: 'fast',
                      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'mode is immutable' }],
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
  const widget = (spec: object) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec });
  const errs = (b: object, a: object) =>
    guard([widget(b)], [widget(a)], { customResourceDefinitions: [schemaCrd as any] }).findings.filter(
      f => f.severity === 'error',
    );
  test('an omitted field holds its default: changing it from the default is refused, restating it is not', () => {
    expect(errs({}, { mode: 'safe' })).toEqual([
      expect.objectContaining({
        path: 'spec.mode',
        before: 'fast',
        after: 'safe',
        message: 'spec.mode: Invalid value: "string": mode is immutable',
      }),
    ]);
    expect(errs({}, { mode: 'fast' })).toEqual([]);
    expect(errs({ mode: 'fast' }, {})).toEqual([]);
    expect(errs({ mode: 'safe' }, {})).toEqual([expect.objectContaining({ path: 'spec.mode' })]);
  });
});

describe('server-side apply: modelled from the Apply managers managedFields (FieldsV1)', () => {
  const job = (env: object[]) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j', namespace: 'ml' },
    spec: {
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i:1', env }] } },
    },
  });
  const ssaLive = () => {
    const live = liveExport(job([{ name: 'A', value: '1' }]));
    delete live.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'];
    live.spec.template.spec.nodeSelector = { pool: 'kueue' };
    live.status = { startTime: '2026-01-01T00:00:00Z', active: 1 };
    live.metadata.managedFields = [
      {
        manager: 'kustomize-controller',
        operation: 'Apply',
        apiVersion: 'batch/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:spec': {
            'f:template': {
              'f:spec': {
                'f:restartPolicy': {},
                'f:containers': {
                  'k:{"name":"c"}': {
                    '.': {},
                    'f:name': {},
                    'f:image': {},
                    'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} } },
                  },
                },
              },
            },
          },
        },
      },
      {
        manager: 'kueue',
        operation: 'Update',
        apiVersion: 'batch/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:nodeSelector': { 'f:pool': {} } } } } },
      },
    ];
    return live;
  };
  test('a field the manager owns and the manifest drops is removed: a started Job template change is refused', () => {
    const r = guard([ssaLive()], [job([])]);
    expect(r.findings.filter(f => f.severity === 'error').map(f => f.path)).toEqual(['spec.template']);
    expect(r.findings.some(f => f.code === 'server-side-apply')).toBe(false);
  });
  test('the same manifest, and fields another manager owns (Kueue nodeSelector), are no change', () => {
    expect(guard([ssaLive()], [job([{ name: 'A', value: '1' }])]).findings).toEqual([]);
  });
});
