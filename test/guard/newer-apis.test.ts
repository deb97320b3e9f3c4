import { Size, Testing } from 'cdk8s';
import { GpuTrainingJob, guard, ModelCache, plan, VllmInferenceService } from '../../src';
import type { KubeObject } from '../../src/guard/normalize';
import { claimCounts, gpusOfPod } from '../../src/guard/workload';
import { testChart } from '../support/synth';

function serving(version: number, gpus = 2): KubeObject[] {
  const chart = testChart('serving');
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    version,
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    gpusPerReplica: gpus,
    replicas: 3,
    modelSize: Size.gibibytes(16),
    modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
    dynamicResourceAllocation: { kubernetesVersion: '1.34' },
  });
  return Testing.synth(chart) as KubeObject[];
}

function training(): KubeObject[] {
  const chart = testChart('ml');
  new GpuTrainingJob(chart, 'train', {
    name: 'pretrain',
    image: 'nvcr.io/nvidia/pytorch:25.01-py3',
    command: ['python', 'train.py'],
    nodes: 2,
    gpusPerPod: 8,
    dynamicResourceAllocation: { kubernetesVersion: '1.34' },
  });
  return Testing.synth(chart) as KubeObject[];
}

describe('guard: Dynamic Resource Allocation needs 1.34', () => {
  test.each(['1.32', '1.33'])(
    '%s: the claim template is not served, and the pod templates would lose their claims',
    serverVersion => {
      for (const output of [serving(1), training()]) {
        const findings = guard(output, output, { serverVersion }).findings;
        const notServed = findings.filter(f => f.code === 'api-not-served');
        expect(notServed.map(f => f.kind)).toEqual(['ResourceClaimTemplate']);
        expect(notServed[0].severity).toBe('error');
        expect(notServed[0].message).toMatch(
          new RegExp(`Kubernetes ${serverVersion.replace('.', '\\.')} does not serve resource\\.k8s\\.io/v1`),
        );
        const dropped = findings.filter(f => f.code === 'claims-dropped');
        expect(dropped.length).toBeGreaterThan(0);
        expect(dropped.every(f => f.path.endsWith('.resourceClaims') && f.severity === 'error')).toBe(true);
        expect(dropped[0].message).toMatch(/drops a pod's resourceClaims .* start without the devices/);
      }
      // A new app (nothing before) is refused too: the objects are created, not updated.
      expect(guard([], training(), { serverVersion }).errors).toBeGreaterThan(0);
    },
  );

  test.each(['1.34', '1.35'])('%s: served and kept, nothing to report', serverVersion => {
    for (const output of [serving(1), training()]) {
      const codes = guard(output, output, { serverVersion }).findings.map(f => f.code);
      expect(codes).not.toContain('api-not-served');
      expect(codes).not.toContain('claims-dropped');
    }
  });

  test('the default target is the floor (1.32): a DRA app is refused without --server-version', () => {
    expect(guard([], serving(1)).findings.map(f => f.code)).toContain('api-not-served');
  });
});

describe('plan: GPUs claimed through a template count like device-plugin GPUs', () => {
  test('the claim template gives each pod its count', () => {
    const objects = serving(1, 4);
    const claims = claimCounts(objects);
    const deployment = objects.find(o => o.kind === 'Deployment')!;
    expect(gpusOfPod(deployment.spec.template.spec)).toBe(0);
    expect(gpusOfPod(deployment.spec.template.spec, claims, 'serving')).toBe(4);
  });

  test("the library's own claim template counts whatever its class is named; another's only by a GPU class", () => {
    const chart = testChart('serving');
    new VllmInferenceService(chart, 'llm', {
      name: 'llm',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      gpusPerReplica: 4,
      modelSize: Size.gibibytes(16),
      modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      dynamicResourceAllocation: { kubernetesVersion: '1.34', deviceClassName: 'h100.example.com' },
    });
    const objects = Testing.synth(chart) as KubeObject[];
    const template = objects.find(o => o.kind === 'ResourceClaimTemplate')!;
    expect([...claimCounts(objects).values()]).toEqual([4]);
    const foreign = (deviceClassName: string) =>
      claimCounts([
        {
          ...template,
          metadata: { name: 'x', namespace: 'serving' },
          spec: { spec: { devices: { requests: [{ name: 'r', exactly: { deviceClassName, count: 2 } }] } } },
        },
      ]).get('serving/x');
    expect([
      foreign('gpu.nvidia.com'),
      foreign('mig.nvidia.com'),
      foreign('gpu.amd.com'),
      foreign('nic.example.com'),
    ]).toEqual([2, 2, 2, 0]);
  });

  test('a one-step version bump: the new Deployment needs 3 × 2 GPUs, the pruned one frees as many', () => {
    const p = plan(serving(1), serving(2), { serverVersion: '1.34' });
    const created = p.workloads.find(w => w.mode === 'new' && w.kind === 'Deployment')!;
    expect(created.gpusPerPod).toBe(2);
    expect(created.gpusDuringRollout).toEqual({ min: 6, max: 6 });
    expect(p.pruned.find(o => o.kind === 'Deployment')!.gpus).toEqual({ min: 6, max: 6 });
    // The old claim template goes with the old version, as content-named, not as a mistake.
    expect(p.pruned.find(o => o.kind === 'ResourceClaimTemplate')!.note).toMatch(
      /^a GPU claim template no pod template names any more/,
    );
  });

  test('a template change (more GPUs per pod) is a new claim template and a rollout of the pods', () => {
    const p = plan(serving(1, 2), serving(1, 4), { serverVersion: '1.34' });
    const w = p.workloads.find(x => x.kind === 'Deployment')!;
    expect(w.restarts).toBe(true);
    expect(w.changes.join()).toMatch(/resourceClaimTemplateName/);
    expect(w.gpusPerPod).toBe(4);
    expect(p.pruned.find(o => o.kind === 'ResourceClaimTemplate')!.note).toMatch(
      /^a GPU claim template, named by a hash of its request .*: ResourceClaimTemplate\/serving\/llm-v1-gpus-[0-9a-f]{10} holds the new request/,
    );
  });
});
