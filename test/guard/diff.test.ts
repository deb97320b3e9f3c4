import { Chart, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { GpuTrainingStatefulSet, guard, IMMUTABLE_FIELDS, parseObjects, TgiInferenceService } from '../../src';
import { liveExport, seed000 } from './fixtures';

const STS_MESSAGE = "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

function pvc(storage: string, extra: object = {}): any {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'cache' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, ...extra } };
}

describe('guard', () => {
  test('the rules are one table covering the required kinds', () => {
    const kinds = IMMUTABLE_FIELDS.map(r => `${r.group}/${r.kind}`);
    expect(kinds).toEqual(expect.arrayContaining(['apps/StatefulSet', 'apps/Deployment', 'apps/ReplicaSet', 'apps/DaemonSet', 'batch/Job', '/Service',
      '/PersistentVolumeClaim', '/Secret', '/ConfigMap', 'rbac.authorization.k8s.io/RoleBinding', 'rbac.authorization.k8s.io/ClusterRoleBinding', 'storage.k8s.io/StorageClass']));
  });

  test('seed 000: v1.2.0 -> v1.3.0 under the same name flags volumeClaimTemplates', () => {
    const result = guard([seed000('1.2.0')], [seed000('1.3.0', 'gpu-pvc', { runAsUser: 0 })]);
    expect(result.errors).toBe(1);
    const [f] = result.findings;
    expect(f).toMatchObject({ severity: 'error', object: 'StatefulSet/onnx-trainer', path: 'spec.volumeClaimTemplates', message: STS_MESSAGE });
    expect(JSON.stringify(f.before)).toContain('data-pvc');
    expect(JSON.stringify(f.after)).toContain('gpu-pvc');
    expect(f.remedy).toMatch(/new name|delete/);
  });

  test('the same update with only pod-template changes (image, pod and container securityContext) is allowed', () => {
    const after = seed000('1.3.0', 'data-pvc', { runAsUser: 0 });
    after.spec.template.spec.containers[0].securityContext = { capabilities: { add: ['IPC_LOCK'] } };
    after.spec.template.spec.containers[0].env = [{ name: 'NCCL_DEBUG', value: 'INFO' }];
    after.spec.template.spec.containers[0].resources = { limits: { 'nvidia.com/gpu': 4 } };
    expect(guard([seed000('1.2.0')], [after])).toEqual({ findings: [], errors: 0, warnings: 0 });
  });

  test("seed 001: OrderedReady -> Parallel on a live StatefulSet is flagged", () => {
    const before = liveExport({ ...seed000('1.2.0'), metadata: { name: 'tgi' } });
    const after = { ...seed000('1.2.0'), metadata: { name: 'tgi' } };
    after.spec = { ...after.spec, podManagementPolicy: 'Parallel' };
    const result = guard([before], [after]);
    expect(result.findings).toEqual([expect.objectContaining({ path: 'spec.podManagementPolicy', before: 'OrderedReady', after: 'Parallel', message: STS_MESSAGE })]);
  });

  test('a selector change caused by renaming a construct in plain cdk8s-plus is flagged', () => {
    const build = (id: string) => {
      const chart = new Chart(Testing.app(), 'c');
      new kplus.Deployment(chart, id, { metadata: { name: 'web' }, containers: [{ image: 'nginx', portNumber: 8080 }] });
      return Testing.synth(chart).filter(o => o.kind === 'Deployment');
    };
    const result = guard(build('web'), build('frontend'));
    expect(result.findings).toEqual([expect.objectContaining({ object: 'Deployment/web', path: 'spec.selector', message: 'spec.selector: Invalid value: field is immutable' })]);
  });

  test("this library's constructs: renaming a construct id changes nothing", () => {
    const build = (id: string) => {
      const chart = new Chart(Testing.app(), 'c');
      new GpuTrainingStatefulSet(chart, id, { name: 'trainer', image: 'i', gpusPerPod: 1, storage: { size: Size.gibibytes(1) } });
      new TgiInferenceService(chart, `${id}-tgi`, { name: 'tgi', modelId: 'm' });
      return Testing.synth(chart);
    };
    expect(guard(build('a'), build('b')).findings).toEqual([]);
  });

  test('a live-format export of an unchanged object is clean', () => {
    const manifests = [seed000('1.2.0'), { apiVersion: 'v1', kind: 'Service', metadata: { name: 'onnx-trainer-svc' }, spec: { selector: { app: 'x' }, ports: [{ port: 80 }] } }, pvc('10Gi')];
    expect(guard(manifests.map(liveExport), manifests).findings).toEqual([]);
  });

  test('a live export of a synthesized TGI StatefulSet is clean', () => {
    const chart = new Chart(Testing.app(), 'c');
    new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm', replicas: 2 });
    const objects = Testing.synth(chart);
    expect(guard(objects.map(liveExport), objects).findings).toEqual([]);
  });

  test('a PVC storage increase is allowed, a decrease is flagged', () => {
    expect(guard([liveExport(pvc('10Gi'))], [pvc('20Gi')]).findings).toEqual([]);
    expect(guard([pvc('10Gi')], [pvc('10240Mi')]).findings).toEqual([]);
    const result = guard([liveExport(pvc('20Gi'))], [pvc('10Gi')]);
    expect(result.findings).toEqual([expect.objectContaining({ path: 'spec.resources.requests.storage', before: '20Gi', after: '10Gi', message: 'spec.resources.requests.storage: Forbidden: field can not be less than previous value' })]);
  });

  test('other PVC spec changes are flagged', () => {
    expect(guard([pvc('10Gi', { storageClassName: 'a' })], [pvc('10Gi', { storageClassName: 'b' })]).findings[0].path).toBe('spec.storageClassName');
  });

  test('immutable Secrets and ConfigMaps, roleRef, Job template, StorageClass, Service clusterIP', () => {
    const cm = (data: object, immutable?: boolean) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data, ...(immutable === undefined ? {} : { immutable }) });
    expect(guard([cm({ a: '1' })], [cm({ a: '2' })]).errors).toBe(0);
    expect(guard([cm({ a: '1' }, true)], [cm({ a: '2' }, true)]).findings[0].path).toBe('data');
    const rb = (role: string) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'rb' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role }, subjects: [] });
    expect(guard([rb('a')], [rb('b')]).findings[0].path).toBe('roleRef');
    const job = (image: string) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image }] } } } });
    expect(guard([job('a')], [job('b')]).findings[0].path).toBe('spec.template');
    const sc = (p: object) => ({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast' }, provisioner: 'ebs.csi.aws.com', parameters: p });
    expect(guard([sc({ type: 'gp2' })], [sc({ type: 'gp3' })]).findings[0].path).toBe('parameters');
    const svc = (ip?: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ...(ip ? { clusterIP: ip } : {}), ports: [{ port: 80 }] } });
    expect(guard([liveExport(svc())], [svc()]).errors).toBe(0);
    expect(guard([liveExport(svc('10.0.0.1'))], [svc('10.0.0.2')]).findings.map(f => f.path)).toContain('spec.clusterIP');
  });

  test('a version bump of a cdk8s-gpu StatefulSet warns that the new claims start empty, naming the old ones', () => {
    const build = (version: number, adopt?: string[]) => {
      const chart = new Chart(Testing.app(), 'c');
      new GpuTrainingStatefulSet(chart, 't', {
        name: 'onnx-trainer', image: 'i', gpusPerPod: 2, replicas: 2, version, storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100) },
        ...(adopt ? { adoptVolumes: { persistentVolumes: adopt } } : {}),
      });
      return Testing.synth(chart);
    };
    const result = guard(build(1), build(2));
    expect(result.errors).toBe(0);
    expect(result.warnings).toBe(1);
    const [w] = result.findings;
    expect(w.severity).toBe('warning');
    expect(w.message).toContain('gpu-pvc-onnx-trainer-v2-0, gpu-pvc-onnx-trainer-v2-1');
    expect(w.message).toContain('gpu-pvc-onnx-trainer-v1-0, gpu-pvc-onnx-trainer-v1-1');
    expect(w.remedy).toMatch(/adoptVolumes/);
    expect(guard(build(1), build(2, ['pv-a', 'pv-b'])).warnings).toBe(0);
  });

  test('a change to an immutable field of a cdk8s-gpu StatefulSet says: bump version', () => {
    const build = (claimName: string) => {
      const chart = new Chart(Testing.app(), 'c');
      new GpuTrainingStatefulSet(chart, 't', { name: 'trainer', image: 'i', gpusPerPod: 1, storage: { claimName, size: Size.gibibytes(1) } });
      return Testing.synth(chart);
    };
    const [f] = guard(build('data'), build('ckpt')).findings;
    expect(f.remedy).toMatch(/^bump `version` on the cdk8s-gpu construct for app.kubernetes.io\/name=trainer/);
  });

  test('parses List exports', () => {
    const objects = parseObjects('apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n', 'x');
    expect(objects.map(o => o.metadata.name)).toEqual(['a']);
  });
});
