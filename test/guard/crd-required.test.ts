// A custom resource's update is held to its CRD schema's required fields (src/guard/crd-required.ts).
// Reproduced on a real API server with the LeaderWorkerSet v0.9.0 webhooks: an LWS created with an env
// entry without `name` is stored with `name: ""` (its mutating webhook writes Go's zero value), while an
// update that drops the name is refused "Required value", by kubectl apply and by server-side apply.
import { guard } from '../../src';
import { missingRequired } from '../../src/guard/crd-required';
import { vendoredKind } from '../../src/validation/crd-registry';

const lws = (env: object[]) => ({
  apiVersion: 'leaderworkerset.x-k8s.io/v1',
  kind: 'LeaderWorkerSet',
  metadata: { name: 'g', namespace: 'ml' },
  spec: {
    leaderWorkerTemplate: {
      size: 2,
      workerTemplate: { spec: { containers: [{ name: 'c', image: 'i', env }] } },
    },
  },
});

describe('a required field of a custom resource left out by an update', () => {
  test('an env entry that loses its name is refused, with the path and the reason', () => {
    const errors = guard([lws([{ name: 'A', value: '1' }])], [lws([{ value: '1' }])]).findings.filter(
      f => f.severity === 'error',
    );
    const path = 'spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].env[0].name';
    expect(errors.map(e => [e.code, e.path])).toEqual([['invalid-field', path]]);
    expect(errors[0].message).toMatch(new RegExp(`^${path.replace(/[.[\]]/g, '\\$&')}: Required value`));
  });

  test('a field with a default, and a whole object, are not required of the manifest', () => {
    const schema = vendoredKind('leaderworkerset.x-k8s.io/v1', 'LeaderWorkerSet')!.schema;
    expect(missingRequired(lws([{ name: 'A', value: '1' }]), schema)).toEqual([]);
    // rolloutStrategy.type has a default (RollingUpdate): leaving it out is fine.
    const withStrategy = { ...lws([]), spec: { ...lws([]).spec, rolloutStrategy: {} } };
    expect(missingRequired(withStrategy, schema)).toEqual([]);
  });
});
