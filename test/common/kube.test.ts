import { ApiObject, App, Chart, JsonPatch, Size, Testing } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { buildApps } from '../../apps/apps';
import { Autoscaler, GpuTrainingStatefulSet, VllmInferenceService } from '../../src';
import * as kube from '../../src/common/kube';
import { synthesizeFast } from '../../src/common/synth-json';

/** JSON text keeps key order, which is the YAML's order; undefined values show (YAML writes them). */
const text = (x: unknown) => JSON.stringify(x, (_k, v) => (v === undefined ? '<undefined>' : v));

/** The library's class of an object, if any. `instanceof` cannot tell: cdk8s's Symbol.hasInstance says yes for any ApiObject. */
const classOf = (o: ApiObject) => Object.values(kube).find(K => typeof K === 'function' && 'GVK' in K && K.prototype.isPrototypeOf(o)) as (typeof kube.KubeService | undefined);

/** What cdk8s-plus-28's own class writes for the object. */
const original = (o: ApiObject) => Object.getPrototypeOf(classOf(o)!.prototype).toJson.call(o);

describe('the kinds the library creates', () => {
  test('synthesize every object of the example apps exactly as the cdk8s-plus-28 classes do, on the fast path', () => {
    const app = new App({ outdir: '/nonexistent' });
    buildApps(app);
    // The two kinds the example apps do not make: an HPA and claims adopted on a version bump.
    const extra = new Chart(app, 'extra');
    new VllmInferenceService(extra, 'hpa', { name: 'hpa', modelId: 'Qwen/Qwen2.5-7B-Instruct', autoscaling: { maxReplicas: 4, autoscaler: Autoscaler.hpa({ metricName: 'queue_depth' }) } });
    new GpuTrainingStatefulSet(extra, 'adopt', { name: 'adopt', image: 'i', args: ['t.py'], gpusPerPod: 1, version: 2, replicas: 2, storage: { size: Size.gibibytes(1) }, adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] } });
    const objects = app.node.findAll().filter((c): c is ApiObject => c instanceof ApiObject);
    const fast = objects.filter(o => classOf(o) !== undefined);
    expect(new Set(fast.map(o => o.kind))).toEqual(new Set(['ConfigMap', 'CronJob', 'HorizontalPodAutoscaler', 'Job', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'Secret', 'Service', 'ServiceAccount', 'StatefulSet']));
    for (const o of fast) {
      const base = Object.getPrototypeOf(classOf(o)!.prototype);
      expect(Object.values(k8s).some(K => typeof K === 'function' && K.prototype === base)).toBe(true);
      const props = `${base.constructor.name}Props`;
      expect([o.node.path, synthesizeFast(o, props) !== undefined]).toEqual([o.node.path, true]);
      expect([o.node.path, text(o.toJson())]).toEqual([o.node.path, text(original(o))]);
    }
  });

  test('are the cdk8s-plus-28 classes, by prototype and by name', () => {
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 's', { spec: { clusterIp: 'None' } });
    expect(k8s.KubeService.prototype.isPrototypeOf(svc)).toBe(true);
    expect(kube.KubeService.name).toBe('KubeService');
    expect(Testing.synth(chart)[0].spec).toEqual({ clusterIP: 'None' });
  });

  test('a JsonPatch applies to the API JSON, as the YAML reads (cdk8s-plus patched the typed props and lost plain values)', () => {
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 'svc', { metadata: { name: 'a' }, spec: { clusterIp: 'None', ports: [{ port: 80, targetPort: k8s.IntOrString.fromString('http') }] } });
    svc.addJsonPatch(JsonPatch.replace('/spec/ports/0/targetPort', 8080), JsonPatch.add('/spec/clusterIP', 'None'));
    expect(svc.toJson().spec).toEqual({ clusterIP: 'None', ports: [{ port: 80, targetPort: 8080 }] });
    const pdb = new kube.KubePodDisruptionBudget(chart, 'pdb', { metadata: { name: 'b' }, spec: { maxUnavailable: k8s.IntOrString.fromNumber(1), selector: { matchLabels: { a: 'b' } } } });
    pdb.addJsonPatch(JsonPatch.replace('/spec/maxUnavailable', 0));
    expect(pdb.toJson().spec.maxUnavailable).toBe(0);
    const pvc = new kube.KubePersistentVolumeClaim(chart, 'pvc', { metadata: { name: 'c' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: k8s.Quantity.fromString('1Gi') } } } });
    pvc.addJsonPatch(JsonPatch.replace('/spec/resources/requests/storage', 20));
    expect(pvc.toJson().spec.resources.requests.storage).toBe(20);
  });

  test('a patched object the API server would refuse fails synth, naming the object and the field', () => {
    const chart = new Chart(Testing.app(), 'c');
    const svc = new kube.KubeService(chart, 'svc', { metadata: { name: 'a' }, spec: { ports: [{ port: 80 }] } });
    svc.addJsonPatch(JsonPatch.add('/spec/publishNotReadyAdresses', true));
    expect(() => svc.toJson()).toThrow(/^Service\/a is invalid after a JsonPatch escape hatch: .*unknown field "publishNotReadyAdresses"/);
    const pvc = new kube.KubePersistentVolumeClaim(chart, 'pvc', { metadata: { name: 'c' }, spec: { resources: { requests: { storage: k8s.Quantity.fromString('1Gi') } } } });
    pvc.addJsonPatch(JsonPatch.replace('/spec/resources/requests/storage', '20 gigs'));
    expect(() => pvc.toJson()).toThrow(/PersistentVolumeClaim\/c is invalid after a JsonPatch escape hatch: .*"20 gigs" is not a Kubernetes quantity/);
    const sa = new kube.KubeServiceAccount(chart, 'sa', { metadata: { name: 'd' } });
    sa.addJsonPatch(JsonPatch.add('/automountServiceAccountToken', null));
    expect(() => sa.toJson()).toThrow(/ServiceAccount\/d is invalid after a JsonPatch escape hatch: .*null is not allowed/);
  });
});
