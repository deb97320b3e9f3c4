import { checkManifests } from '../../src/checks/manifests';
import { strictErrors } from '../support/strict-schema';

function pod(spec: any): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec };
}

describe('strict schema validation', () => {
  test('accepts a valid object', () => {
    expect(
      strictErrors(pod({ containers: [{ name: 'c', image: 'i', resources: { limits: { 'nvidia.com/gpu': 2 } } }] })),
    ).toEqual([]);
  });

  test("rejects seed 001's pod-level preStop as an unknown field", () => {
    const errors = strictErrors(
      pod({ containers: [{ name: 'c', image: 'i' }], preStop: { exec: { command: ['sleep', '5'] } } }),
    );
    expect(errors).toEqual(['Pod/p.spec: unknown field "preStop"']);
  });

  test("rejects seed 004's annotations on a volume", () => {
    const errors = strictErrors(
      pod({
        containers: [{ name: 'c', image: 'i' }],
        volumes: [
          {
            name: 'gpu-cred',
            secret: { secretName: 'gpu-credentials' },
            annotations: { 'kubernetes.io/secret-reload': 'true' },
          },
        ],
      }),
    );
    expect(errors).toEqual(['Pod/p.spec.volumes[0]: unknown field "annotations"']);
  });

  test('a null is what the decoder makes of it: an absent field, so a null required field is missing', () => {
    const nullGpu = pod({ containers: [{ name: 'c', image: 'i', resources: { limits: { 'nvidia.com/gpu': null } } }] });
    // Accepted by the server, as 0 GPUs: the output rules (checkManifests) refuse it instead.
    expect(strictErrors(nullGpu)).toEqual([]);
    expect(checkManifests([nullGpu])).toEqual([
      'Pod/p spec.containers[0].resources.limits.nvidia.com/gpu: null is stored as the quantity 0; give the amount, or leave the resource out',
    ]);
    expect(strictErrors(pod({ containers: [{ name: null, image: 'i' }] }))).toEqual([
      'Pod/p.spec.containers[0]: missing required field "name"',
    ]);
    expect(strictErrors(pod({ containers: [null] }))).toEqual([
      'Pod/p.spec.containers[0]: missing required field "name"',
    ]);
  });

  test('rejects wrong types and missing required fields', () => {
    const errors = strictErrors(
      pod({ containers: [{ name: 'c', ports: [{ containerPort: '80' }] }], terminationGracePeriodSeconds: 1.5 }),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        'Pod/p.spec.containers[0].ports[0].containerPort: expected integer, got string "80"',
        'Pod/p.spec.terminationGracePeriodSeconds: expected integer, got number 1.5',
      ]),
    );
  });

  test('rejects fields that only exist in later releases at the 1.32 floor', () => {
    // The lifecycle's stopSignal is alpha in 1.33: at a 1.32 floor it is an unknown field.
    const obj = pod({ containers: [{ name: 'c', image: 'i', lifecycle: { stopSignal: 'SIGINT' } }] });
    expect(strictErrors(obj, '1.32.0')).toEqual(['Pod/p.spec.containers[0].lifecycle: unknown field "stopSignal"']);
    expect(strictErrors(obj, '1.36.0')).toEqual([]);
    // The sleep action, absent from the old 1.28 floor, is in both.
    const sleep = pod({ containers: [{ name: 'c', image: 'i', lifecycle: { preStop: { sleep: { seconds: 5 } } } }] });
    expect(strictErrors(sleep, '1.32.0')).toEqual([]);
  });

  test('rejects unknown kinds, bad names and label values', () => {
    expect(strictErrors({ apiVersion: 'v1', kind: 'Nope', metadata: { name: 'x' } })).toEqual([
      'Nope/x: v1 Nope does not exist in Kubernetes 1.32.0',
    ]);
    expect(
      strictErrors({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'Bad_Name', labels: { a: 'x'.repeat(64) } },
      }),
    ).toHaveLength(2);
  });
});
