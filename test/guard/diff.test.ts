import { Chart, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-32';
import { buildApps } from '../../apps/apps';
import {
  GpuTrainingStatefulSet,
  guard,
  RotatingGpuSecret,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
} from '../../src';
import { liveExport, seed000 } from './fixtures';

const STS_MESSAGE =
  "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
const errorsOf = (r: ReturnType<typeof guard>) => r.findings.filter(f => f.severity === 'error');

/** Every object the example apps synthesize: whatever constructs the library has today. */
function appObjects(): any[] {
  const app = Testing.app();
  buildApps(app);
  return app.charts.flatMap(c => Testing.synth(c));
}

describe("guard on this library's own output", () => {
  test('the live export of every object of every example app, against its manifest, is clean', () => {
    const objects = appObjects();
    expect(new Set(objects.map(o => o.kind))).toEqual(expect.objectContaining({ size: expect.any(Number) }));
    const result = guard(
      objects.map(o => liveExport(o)),
      objects,
    );
    expect(result.findings).toEqual([]);
    expect(result.objects).toEqual({ before: objects.length, after: objects.length });
    expect(result).toEqual({ findings: [], errors: 0, warnings: 0 });
  });

  test.each([
    [
      'GpuTrainingStatefulSet',
      (c: Chart) =>
        new GpuTrainingStatefulSet(c, 't', {
          name: 'trainer',
          image: 'nvcr.io/nvidia/pytorch:24.08-py3',
          gpusPerPod: 2,
          replicas: 2,
          args: ['train.py'],
        }),
    ],
    [
      'GpuTrainingStatefulSet adopting volumes (pre-bound claims)',
      (c: Chart) =>
        new GpuTrainingStatefulSet(c, 't', {
          name: 'trainer',
          image: 'nvcr.io/nvidia/pytorch:24.08-py3',
          gpusPerPod: 2,
          replicas: 2,
          args: ['train.py'],
          version: 2,
          storage: { size: Size.gibibytes(100), storageClassName: 'gp3' },
          adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] },
        }),
    ],
    [
      'TgiInferenceService',
      (c: Chart) => new TgiInferenceService(c, 'tgi', { name: 'tgi', modelId: 'm', replicas: 2 }),
    ],
    [
      'VllmInferenceService',
      (c: Chart) =>
        new VllmInferenceService(c, 'vllm', {
          name: 'vllm',
          modelId: 'meta-llama/Llama-3.1-8B-Instruct',
          replicas: 2,
        } as any),
    ],
    [
      'SglangInferenceService',
      (c: Chart) =>
        new SglangInferenceService(c, 'sglang', {
          name: 'sglang',
          modelId: 'meta-llama/Llama-3.1-8B-Instruct',
          replicas: 2,
        } as any),
    ],
    [
      'RotatingGpuSecret (with its first-rotation Job)',
      (c: Chart) =>
        new RotatingGpuSecret(c, 's', {
          name: 'hf-token',
          keys: ['token'],
          rotation: { image: 'registry.example.com/rotator:1.0' },
        }),
    ],
  ])('%s: live export of its synthesized output is clean', (_name, make) => {
    const chart = new Chart(Testing.app(), 'c');
    make(chart);
    const objects = Testing.synth(chart);
    expect(objects.map(o => o.kind)).toEqual(
      expect.arrayContaining([_name.startsWith('RotatingGpuSecret') ? 'Secret' : 'StatefulSet']),
    );
    if (_name.startsWith('RotatingGpuSecret'))
      expect(objects.map(o => o.kind)).toEqual(expect.arrayContaining(['Job', 'CronJob', 'Secret']));
    expect(
      guard(
        objects.map(o => liveExport(o)),
        objects,
      ).findings,
    ).toEqual([]);
  });

  test("renaming a construct id changes nothing in this library's output", () => {
    const build = (id: string) => {
      const chart = new Chart(Testing.app(), 'c');
      new GpuTrainingStatefulSet(chart, id, {
        name: 'trainer',
        image: 'i:1',
        gpusPerPod: 1,
        args: ['train.py'],
        storage: { size: Size.gibibytes(1) },
      });
      new TgiInferenceService(chart, `${id}-tgi`, { name: 'tgi', modelId: 'm' });
      return Testing.synth(chart);
    };
    expect(guard(build('a'), build('b')).findings).toEqual([]);
  });

  test('a selector change caused by renaming a construct in plain cdk8s-plus is flagged', () => {
    const build = (id: string) => {
      const chart = new Chart(Testing.app(), 'c');
      new kplus.Deployment(chart, id, {
        metadata: { name: 'web' },
        containers: [{ image: 'nginx', portNumber: 8080 }],
      });
      return Testing.synth(chart).filter(o => o.kind === 'Deployment');
    };
    expect(guard(build('web'), build('frontend')).findings).toEqual([
      expect.objectContaining({
        object: 'Deployment/web',
        path: 'spec.selector',
        source: expect.stringContaining('strategy.go'),
      }),
    ]);
  });
});

describe('seeds', () => {
  test('seed 000: v1.2.0 -> v1.3.0 under the same name flags volumeClaimTemplates (ValidateStatefulSetUpdate)', () => {
    const result = guard([seed000('1.2.0')], [seed000('1.3.0', 'gpu-pvc', { runAsUser: 0 })]);
    expect(result.errors).toBe(1);
    const [f] = result.findings;
    expect(f).toMatchObject({
      severity: 'error',
      code: 'immutable-field',
      object: 'StatefulSet/onnx-trainer',
      path: 'spec.volumeClaimTemplates',
      message: STS_MESSAGE,
      source: expect.stringContaining('ValidateStatefulSetUpdate'),
    });
    expect(JSON.stringify(f.before)).toContain('data-pvc');
    expect(JSON.stringify(f.after)).toContain('gpu-pvc');
    // A plain StatefulSet: orphan-delete and re-apply keeps the pods and the claims.
    expect(f.remedy).toMatch(/--cascade=orphan/);
  });

  test('seed 000: pod-template changes (image, securityContext, env, resources) apply', () => {
    const after = seed000('1.3.0', 'data-pvc', { runAsUser: 0 });
    after.spec.template.spec.containers[0].securityContext = { capabilities: { add: ['IPC_LOCK'] } };
    after.spec.template.spec.containers[0].env = [{ name: 'NCCL_DEBUG', value: 'INFO' }];
    expect(guard([liveExport(seed000('1.2.0'))], [after]).findings).toEqual([]);
  });

  test('seed 001: OrderedReady -> Parallel on a live StatefulSet is flagged', () => {
    const after = seed000('1.2.0');
    after.spec.podManagementPolicy = 'Parallel';
    expect(guard([liveExport(seed000('1.2.0'))], [after]).findings).toEqual([
      expect.objectContaining({
        path: 'spec.podManagementPolicy',
        before: 'OrderedReady',
        after: 'Parallel',
        message: STS_MESSAGE,
      }),
    ]);
  });
});

describe('semantic equality and server-added fields', () => {
  const withContainer = (c: object) => {
    const s = seed000('1.2.0');
    Object.assign(s.spec.template.spec.containers[0], c);
    return s;
  };
  test('quantities compare by value; empty lists equal absent', () => {
    const b = withContainer({ resources: { requests: { cpu: '0.5', memory: '1Gi' } } });
    const a = withContainer({ resources: { requests: { cpu: '500m', memory: '1024Mi' } } });
    a.spec.selector.matchExpressions = [];
    a.spec.volumeClaimTemplates[0].spec.resources.requests.storage = '102400Mi';
    expect(guard([b], [a]).findings).toEqual([]);
  });
  test('serviceAccount (the alias) and imagePullPolicy by tag, as the server writes them', () => {
    const m = withContainer({ image: 'registry:5000/team/img' });
    m.spec.template.spec.serviceAccountName = 'trainer';
    const live = liveExport(m);
    expect(live.spec.template.spec.serviceAccount).toBe('trainer');
    expect(live.spec.template.spec.containers[0].imagePullPolicy).toBe('Always');
    expect(guard([live], [m]).findings).toEqual([]);
  });
  test('a real change stays visible: a new claim template size', () => {
    const a = seed000('1.2.0');
    a.spec.volumeClaimTemplates[0].spec.resources.requests.storage = '200Gi';
    expect(errorsOf(guard([liveExport(seed000('1.2.0'))], [a])).map(f => f.path)).toEqual([
      'spec.volumeClaimTemplates',
    ]);
  });
});

describe('what actually happens: warnings and remedies', () => {
  const training = (version: number, extra: object = {}) => {
    const chart = new Chart(Testing.app(), 'c');
    new GpuTrainingStatefulSet(chart, 't', {
      name: 'onnx-trainer',
      image: 'i:1',
      gpusPerPod: 2,
      replicas: 2,
      version,
      args: ['train.py'],
      storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100), storageClassName: 'gp3' },
      ...extra,
    });
    return Testing.synth(chart);
  };
  const tgi = (version: number) => {
    const chart = new Chart(Testing.app(), 'c');
    new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'm', version });
    return Testing.synth(chart);
  };

  test('a training version bump warns that the old StatefulSet keeps its GPUs and its claims hold the data', () => {
    const result = guard(training(1), training(2));
    expect(result.errors).toBe(0);
    const w = result.findings.find(f => f.code === 'statefulset-replaced')!;
    expect(w.message).toContain('gpu-pvc-onnx-trainer-v2-0, gpu-pvc-onnx-trainer-v2-1');
    expect(w.message).toContain('gpu-pvc-onnx-trainer-v1-0, gpu-pvc-onnx-trainer-v1-1');
    expect(w.message).toMatch(/keeps running with its pods and their 4 GPU\(s\)/);
    expect(w.remedy).toMatch(/adoptVolumes/);
    const adopted = guard(
      training(1),
      training(2, { adoptVolumes: { persistentVolumes: ['pv-a', 'pv-b'] } }),
    ).findings.find(f => f.code === 'statefulset-replaced')!;
    expect(adopted.remedy).not.toMatch(/set adoptVolumes/);
  });

  test('a TGI version bump: model caches with Delete retention, re-downloaded, and no adoptVolumes in the remedy', () => {
    const before = tgi(1);
    const after = tgi(2);
    if (JSON.stringify(before) === JSON.stringify(after)) return; // the construct has no version prop
    const result = guard(before, after);
    for (const f of result.findings) expect(`${f.message} ${f.remedy}`).not.toMatch(/adoptVolumes|adoption runbook/);
    const w = result.findings.find(f => f.code === 'statefulset-replaced')!;
    if (JSON.stringify(before).includes('"whenDeleted":"Delete"'))
      expect(w.message).toMatch(/downloads the model again/);
    // The old version's Services and PDB are reported with it, and removed with it by label; a one-step bump of a
    // serving version also warns of the gap under a pruning sync, first: an outage outranks a leftover.
    expect(result.findings.map(f => f.code)).toEqual(['serving-version-gap', 'statefulset-replaced']);
    expect(w.remedy).toMatch(/kubectl delete statefulset,.* -l app.kubernetes.io\/instance=tgi-v1/);
  });

  test('an immutable change on a TGI StatefulSet: bump version, no adoption', () => {
    const before = tgi(1);
    const after = JSON.parse(JSON.stringify(before));
    const sts = after.find((o: any) => o.kind === 'StatefulSet');
    sts.spec.podManagementPolicy = sts.spec.podManagementPolicy === 'Parallel' ? 'OrderedReady' : 'Parallel';
    const [f] = errorsOf(guard(before, after));
    expect(f.remedy).toMatch(/^bump `version`/);
    expect(f.remedy).not.toMatch(/adoptVolumes/);
  });

  test('an immutable change on a training StatefulSet: bump version, adoption for the data', () => {
    const before = training(1);
    const after = JSON.parse(JSON.stringify(before));
    after.find((o: any) => o.kind === 'StatefulSet').spec.serviceName = 'other';
    const [f] = errorsOf(guard(before, after));
    expect(f.remedy).toMatch(/^bump `version` on the cdk8s-gpu construct for app.kubernetes.io\/name=onnx-trainer/);
    expect(f.remedy).toMatch(/adoptVolumes/);
  });

  test('an object missing from after is a warning: a renamed job leaves its StatefulSet and GPUs running', () => {
    const before = training(1);
    const chart = new Chart(Testing.app(), 'c');
    new GpuTrainingStatefulSet(chart, 't', {
      name: 'renamed-trainer',
      image: 'i:1',
      gpusPerPod: 2,
      replicas: 2,
      args: ['train.py'],
      storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100) },
    });
    const result = guard(before, Testing.synth(chart));
    expect(result.errors).toBe(0);
    const sts = result.findings.find(f => f.kind === 'StatefulSet')!;
    expect(sts).toMatchObject({ severity: 'warning', code: 'object-removed' });
    expect(sts.message).toMatch(/keeps running with its pods and their 4 GPU\(s\)/);
    expect(sts.message).toContain('gpu-pvc-onnx-trainer-v1-0');
  });

  test('objects the server creates (owned, Endpoints, kube-root-ca.crt) are not reported missing', () => {
    const owned = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x-0', ownerReferences: [{ kind: 'StatefulSet', name: 'x' }] },
      spec: { containers: [] },
    };
    const ca = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root-ca.crt', namespace: 'ml' } };
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-1', annotations: { 'pv.kubernetes.io/provisioned-by': 'ebs.csi.aws.com' } },
      spec: { csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1' } },
    };
    expect(guard([owned, ca, pv], []).findings).toEqual([]);
    // Claims the StatefulSet controller made from its templates (Retain: no ownerReference).
    const sts = liveExport(seed000('1.2.0'));
    const claim = liveExport({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-pvc-onnx-trainer-2' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } },
    });
    expect(guard([sts, claim], [seed000('1.2.0')]).findings).toEqual([]);
  });

  test('replicas on an OnDelete training StatefulSet warns about mixed world sizes', () => {
    const before = training(1, { updateStrategy: undefined });
    const sts = before.find((o: any) => o.kind === 'StatefulSet');
    if (sts.spec.updateStrategy?.type !== 'OnDelete') sts.spec.updateStrategy = { type: 'OnDelete' };
    const after = JSON.parse(JSON.stringify(before));
    after.find((o: any) => o.kind === 'StatefulSet').spec.replicas = 4;
    const result = guard(before, after);
    expect(result.errors).toBe(0);
    expect(result.findings).toEqual([
      expect.objectContaining({
        severity: 'warning',
        code: 'ondelete-replicas',
        path: 'spec.replicas',
        before: 2,
        after: 4,
      }),
    ]);
  });

  test('an object that appears twice on one side is an input error', () => {
    expect(() => guard([seed000('1.2.0'), seed000('1.2.0')], [seed000('1.2.0')])).toThrow(/appears twice in --before/);
  });
});
