import camelCase from 'camelcase';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { definitionsOf } from '../../src/validation/strict-schema';
import { typedFields, typedName } from '../../src/validation/typed-input';
import { findOne, synthValid, testChart } from '../support/synth';
import { TestWorkload, testWorkloadError } from '../support/test-workload';

/** The error a workload with these props throws at construction. */
const errorOf = testWorkloadError;

const sidecar = (extra: object): k8s.Container => ({ name: 'proxy', image: 'envoyproxy/envoy:v1.30.1', ...extra });

describe('Kubernetes-typed pod options are checked against the shape cdk8s-plus-32 writes', () => {
  test('a plain string or number where a Quantity belongs is refused (cdk8s-plus writes it as null)', () => {
    expect(errorOf({ pod: { sidecars: [sidecar({ resources: { requests: { cpu: '100m' } } })] } })).toBe(
      'TestWorkload \'w\': pod.sidecars[0].resources.requests.cpu must be made with k8s.Quantity.fromString()/fromNumber() or k8s.IntOrString.fromString()/fromNumber(): cdk8s-plus-32 writes a plain value here as null (got "100m")',
    );
    expect(errorOf({ pod: { initContainers: [sidecar({ resources: { limits: { 'nvidia.com/gpu': 1 } } })] } })).toMatch(
      /^TestWorkload 'w': pod\.initContainers\[0\]\.resources\.limits\.nvidia\.com\/gpu must be made with k8s\.Quantity/,
    );
    expect(
      errorOf({
        volumes: [{ volume: { name: 'scratch', emptyDir: { sizeLimit: '10Gi' } } as any, mountPath: '/scratch' }],
      }),
    ).toMatch(/^TestWorkload 'w': volumes\[0\]\.volume\.emptyDir\.sizeLimit must be made with k8s\.Quantity/);
    expect(errorOf({ pod: { sidecars: [sidecar({ livenessProbe: { httpGet: { port: 8080 } } })] } })).toMatch(
      /pod\.sidecars\[0\]\.livenessProbe\.httpGet\.port must be made with k8s\.Quantity.* or k8s\.IntOrString/,
    );
  });

  test('a key the struct does not have is refused with the closest known one (cdk8s-plus drops it)', () => {
    expect(
      errorOf({ pod: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecutions: {} } } as any } }),
    ).toMatch(
      /^TestWorkload 'w': pod\.affinity\.nodeAffinity\.requiredDuringSchedulingIgnoredDuringExecutions is not a known prop; did you mean 'requiredDuringSchedulingIgnoredDuringExecution'\?/,
    );
    expect(errorOf({ pod: { sidecars: [sidecar({ volumeMount: [] })] } })).toMatch(
      /pod\.sidecars\[0\]\.volumeMount is not a known prop; did you mean 'volumeMounts'\?/,
    );
    expect(errorOf({ pod: { tolerations: [{ key: 'a', operator: 'Exists', effects: 'NoSchedule' } as any] } })).toMatch(
      /pod\.tolerations\[0\]\.effects is not a known prop; did you mean 'effect'\?/,
    );
    expect(
      errorOf({
        pod: {
          topologySpreadConstraints: [
            { maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelecter: {} } as any,
          ],
        },
      }),
    ).toMatch(/labelSelecter is not a known prop; did you mean 'labelSelector'\?/);
    // The API name where the typed name differs (hostIPC vs hostIpc) is not the typed one.
    expect(errorOf({ pod: { sidecars: [sidecar({ ports: [{ containerPort: 80, hostIP: '0.0.0.0' }] })] } })).toMatch(
      /hostIP is not a known prop; did you mean 'hostIp'\?/,
    );
  });

  test('null is refused, and lists and maps must be what they are', () => {
    expect(errorOf({ pod: { sidecars: [sidecar({ args: null })] } })).toBe(
      "TestWorkload 'w': pod.sidecars[0].args must not be null: leave it out instead (got null)",
    );
    expect(errorOf({ pod: { sidecars: [sidecar({ args: 'run' })] } })).toMatch(
      /pod\.sidecars\[0\]\.args must be an array \(got "run"\)/,
    );
    expect(errorOf({ pod: { sidecars: [sidecar({ resources: { limits: ['1'] } })] } })).toMatch(
      /pod\.sidecars\[0\]\.resources\.limits must be/,
    );
    expect(errorOf({ pod: { affinity: { nodeAffinity: 'any' } as any } })).toMatch(
      /pod\.affinity\.nodeAffinity must be/,
    );
  });

  test('well-typed values pass and reach the YAML whole', () => {
    const chart = testChart('ml');
    new TestWorkload(chart, 'w', {
      name: 'w',
      pod: {
        sidecars: [
          sidecar({
            resources: {
              requests: { cpu: k8s.Quantity.fromString('100m') },
              limits: { memory: k8s.Quantity.fromString('64Mi') },
            },
            ports: [{ containerPort: 9901, name: 'admin' }],
          }),
        ],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['gpu'] }] }],
            },
          },
        },
      },
    });
    const spec = findOne(synthValid(chart), 'StatefulSet', 'w').spec.template.spec;
    const proxy = spec.initContainers.find((c: any) => c.name === 'proxy');
    expect(proxy.resources).toEqual({ requests: { cpu: '100m' }, limits: { memory: '64Mi' } });
    expect(
      spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]
        .matchExpressions[0],
    ).toEqual({ key: 'pool', operator: 'In', values: ['gpu'] });
  });
});

describe("the typed field names are cdk8s-plus-32's", () => {
  const defs = definitionsOf('1.32.0');
  /** Every core/v1 struct reachable from the structs users hand the library. */
  const structs = new Set<string>();
  const visit = (name: string) => {
    if (structs.has(name) || !name.startsWith('io.k8s.api.core.v1.') || !defs[name]?.properties) return;
    structs.add(name);
    for (const field of Object.values(defs[name].properties)) {
      for (const s of [
        field,
        field.items,
        typeof field.additionalProperties === 'object' ? field.additionalProperties : undefined,
      ]) {
        if (s?.$ref) visit(s.$ref.replace('#/definitions/', ''));
      }
    }
  };
  ['Container', 'Volume', 'Affinity', 'TopologySpreadConstraint', 'Toleration'].forEach(s =>
    visit(`io.k8s.api.core.v1.${s}`),
  );

  test.each([...structs])('%s: each API field is read by its converter under the typed name', name => {
    const convert = (k8s as any)[`toJson_${camelCase(name.split('.').pop()!, { pascalCase: true })}`] as (
      x: unknown,
    ) => Record<string, unknown>;
    expect(typeof convert).toBe('function');
    for (const api of Object.keys(typedFields(name).size ? defs[name].properties! : {})) {
      const typed = typedName(api);
      expect(typedFields(name).has(typed)).toBe(true);
      const field = defs[name].properties![api];
      const probe =
        field.$ref?.endsWith('Quantity') || field.$ref?.endsWith('IntOrString')
          ? k8s.Quantity.fromString('1')
          : field.type === 'array'
            ? []
            : field.$ref || field.type === 'object'
              ? {}
              : 'x';
      expect([api, convert({ [typed]: probe })[api]]).not.toEqual([api, undefined]);
    }
  });
});
