import { JsonPatch, Testing } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { customKind, KIND, ManifestObject } from '../../src/common/manifest-object';
import { testChart } from '../support/synth';

const service = (chart = testChart()) =>
  new ManifestObject(chart, 'svc', KIND.Service, {
    metadata: { name: 'svc' },
    spec: { ports: [{ port: 80, targetPort: k8s.IntOrString.fromNumber(8080) }], selector: { app: 'a' } },
  });

describe('ManifestObject', () => {
  test("synthesizes exactly what cdk8s-plus-32's own class writes", () => {
    const props: k8s.KubeServiceProps = {
      metadata: { name: 'svc', labels: { a: 'b' } },
      spec: { clusterIp: 'None', ports: [{ port: 80, targetPort: k8s.IntOrString.fromString('http') }] },
    };
    const ours = testChart();
    new ManifestObject(ours, 'svc', KIND.Service, props);
    const theirs = testChart();
    new k8s.KubeService(theirs, 'svc', props);
    expect(Testing.synth(ours)).toEqual(Testing.synth(theirs));
  });

  test('converts the typed props when synthesized, so later additions are written', () => {
    const chart = testChart();
    const svc = service(chart);
    (svc.typedProps.spec!.ports as k8s.ServicePort[]).push({ name: 'metrics', port: 9090 });
    expect(Testing.synth(chart)[0].spec.ports).toEqual([
      { port: 80, targetPort: 8080 },
      { name: 'metrics', port: 9090 },
    ]);
  });

  test('a JsonPatch applies to the API JSON: a plain number where an IntOrString belongs stays', () => {
    const chart = testChart();
    const svc = service(chart);
    expect(svc.isPatched).toBe(false);
    svc.addJsonPatch(JsonPatch.replace('/spec/ports/0/targetPort', 9000));
    expect(svc.isPatched).toBe(true);
    expect(Testing.synth(chart)[0].spec.ports[0].targetPort).toBe(9000);
  });

  test('a patched object is checked strictly against the 1.28 API', () => {
    const chart = testChart();
    service(chart).addJsonPatch(JsonPatch.add('/spec/clusterIp', 'None'));
    expect(() => Testing.synth(chart)).toThrow(
      'Service/svc is invalid after a JsonPatch escape hatch: Service/svc.spec: unknown field "clusterIp"',
    );
  });

  test('a custom resource is its API JSON, and a patch is checked against its vendored CRD', () => {
    const chart = testChart();
    const jobSet = new ManifestObject(chart, 'js', customKind('jobset.x-k8s.io/v1alpha2', 'JobSet'), {
      metadata: { name: 'train' },
      spec: { replicatedJobs: [{ name: 'w', replicas: 1, template: { spec: { parallelism: 2 } } }] },
    } as any);
    expect(Testing.synth(chart)[0].spec.replicatedJobs[0].template.spec.parallelism).toBe(2);
    jobSet.addJsonPatch(JsonPatch.replace('/spec/replicatedJobs/0/template/spec/parallelism', '2'));
    expect(() => Testing.synth(chart)).toThrow(
      /JobSet\/train is invalid after a JsonPatch escape hatch: .*parallelism/,
    );
  });
});
