import { Size, Testing } from 'cdk8s';
import {
  DeviceSelector,
  DynamicResourceAllocation,
  GpuTrainingJob,
  GpuTrainingStatefulSet,
  ModelCache,
  SglangInferenceService,
  VllmInferenceService,
} from '../../src';
import { DRA_DEVICES_MAX } from '../../src/common/device-claim';
import { ConfigurationError } from '../../src/validation/validate';
import { findOne, synthValid, testChart } from '../support/synth';
import { embeddedGroupPods, embeddedJobs } from '../support/valid-output';
import { TestWorkload, TestWorkloadProps } from '../support/test-workload';

const DRA: DynamicResourceAllocation = { kubernetesVersion: '1.34' };

function build(props: Partial<TestWorkloadProps>) {
  const chart = testChart('ml');
  new TestWorkload(chart, 'w', { name: 'w', ...props });
  const objects = synthValid(chart);
  const spec = findOne(objects, 'StatefulSet', 'w').spec.template.spec;
  return { objects, spec, main: spec.containers[0] };
}

function refusal(props: Partial<TestWorkloadProps>): string {
  try {
    new TestWorkload(testChart(), 'w', { name: 'w', ...props });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigurationError);
    return (e as Error).message;
  }
  throw new Error('expected a refusal');
}

const templates = (objects: any[]) => objects.filter(o => o.kind === 'ResourceClaimTemplate');

describe('dynamicResourceAllocation: the pod claims its GPUs from a ResourceClaimTemplate', () => {
  test('the template asks for exactly the pod GPUs of the class; the pod names it, the main container uses it, no device-plugin GPU is requested', () => {
    const { objects, spec, main } = build({
      gpus: 4,
      dynamicResourceAllocation: DRA,
      extendedResources: { 'vpc.amazonaws.com/efa': 1 },
    });
    const [t] = templates(objects);
    expect(t.apiVersion).toBe('resource.k8s.io/v1');
    expect(t.metadata.name).toMatch(/^w-gpus-[0-9a-f]{10}$/);
    expect(t.spec.spec.devices.requests).toEqual([
      { name: 'gpus', exactly: { deviceClassName: 'gpu.nvidia.com', allocationMode: 'ExactCount', count: 4 } },
    ]);
    expect(spec.resourceClaims).toEqual([{ name: 'gpus', resourceClaimTemplateName: t.metadata.name }]);
    expect(main.resources.claims).toEqual([{ name: 'gpus' }]);
    expect(main.resources.limits['nvidia.com/gpu']).toBeUndefined();
    expect(main.resources.requests['nvidia.com/gpu']).toBeUndefined();
    // Other devices stay extended resources, requested and limited alike.
    expect(main.resources.limits['vpc.amazonaws.com/efa']).toBe(1);
    // Pruned after the workload that uses it; created before it.
    expect(t.metadata.annotations).toEqual({
      'argocd.argoproj.io/sync-wave': '-2',
      'argocd.argoproj.io/sync-options': 'PruneLast=true',
    });
    expect(t.metadata.labels['app.kubernetes.io/component']).toBe('gpu-claim');
  });

  test('without it, nothing changes: the device plugin resource and no claim', () => {
    const { objects, spec, main } = build({ gpus: 2 });
    expect(templates(objects)).toHaveLength(0);
    expect(spec.resourceClaims).toBeUndefined();
    expect(main.resources.claims).toBeUndefined();
    expect(main.resources.limits['nvidia.com/gpu']).toBe(2);
  });

  test('selectors become CEL expressions that quote their values, and a class of its own is used', () => {
    const { objects } = build({
      dynamicResourceAllocation: {
        kubernetesVersion: '1.36',
        deviceClassName: 'gpu.example.com',
        selectors: [
          DeviceSelector.nvidiaProduct('NVIDIA "H100" 80GB\\HBM3'),
          DeviceSelector.attributeEquals('gpu.example.com/cores', 132),
          DeviceSelector.attributeEquals('gpu.example.com/nvlink', true),
        ],
      },
    });
    const exactly = templates(objects)[0].spec.spec.devices.requests[0].exactly;
    expect(exactly.deviceClassName).toBe('gpu.example.com');
    // Read by map index, and only where the device has the attribute (a missing one aborts the allocation).
    expect(exactly.selectors.map((s: any) => s.cel.expression)).toEqual([
      '"productName" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"]["productName"] == "NVIDIA \\"H100\\" 80GB\\\\HBM3"',
      '"cores" in device.attributes["gpu.example.com"] && device.attributes["gpu.example.com"]["cores"] == 132',
      '"nvlink" in device.attributes["gpu.example.com"] && device.attributes["gpu.example.com"]["nvlink"] == true',
    ]);
  });

  test('the name follows the request: a changed count or selector is a new template (its spec is immutable), the same request the same name', () => {
    const name = (props: Partial<TestWorkloadProps>) => templates(build(props).objects)[0].metadata.name;
    const one = name({ gpus: 1, dynamicResourceAllocation: DRA });
    expect(name({ gpus: 1, dynamicResourceAllocation: { kubernetesVersion: '1.35' } })).toBe(one);
    expect(name({ gpus: 2, dynamicResourceAllocation: DRA })).not.toBe(one);
    expect(
      name({
        gpus: 1,
        dynamicResourceAllocation: { ...DRA, selectors: [DeviceSelector.nvidiaProduct('NVIDIA B200')] },
      }),
    ).not.toBe(one);
  });
});

describe('dynamicResourceAllocation refusals: what the API server, the scheduler or Kueue would fail later', () => {
  test.each([
    [
      { kubernetesVersion: '1.33' },
      /dynamicResourceAllocation\.kubernetesVersion must be 1\.34 or newer: .*drops the pods' resourceClaims.* \(got "1\.33"\)/,
    ],
    [{ kubernetesVersion: '1.32' }, /kubernetesVersion must be 1\.34 or newer/],
    [
      { kubernetesVersion: 1.34 },
      /kubernetesVersion must be the cluster's Kubernetes minor, such as '1\.34' \(got 1\.34\)/,
    ],
    [{ kubernetesVersion: 'v1.34' }, /kubernetesVersion must be the cluster's Kubernetes minor/],
    [{}, /kubernetesVersion must be the cluster's Kubernetes minor/],
    [
      { ...DRA, deviceClassName: 'GPU_Class' },
      /dynamicResourceAllocation\.deviceClassName must be a DNS-1123 subdomain/,
    ],
    [{ ...DRA, count: 2 }, /dynamicResourceAllocation\.count is not a known prop/],
    [{ ...DRA, selectors: ['productName == "x"'] }, /selectors\[0\] must be made with DeviceSelector/],
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('productName', 'x')] },
      /selectors\[0\] must name an attribute as <domain>\/<identifier>/,
    ],
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/product-name', 'x')] },
      /must name an attribute/,
    ],
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/p', 'x'.repeat(65))] },
      /selectors\[0\] value must be well-formed text of 1 to 64 bytes/,
    ],
    // 22 characters, 66 bytes in UTF-8: the API counts bytes.
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/p', '€'.repeat(22))] },
      /selectors\[0\] value must be well-formed text of 1 to 64 bytes/,
    ],
    // A lone surrogate: CEL refuses "invalid unicode code point".
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/p', 'H100\ud800')] },
      /selectors\[0\] value must be well-formed text/,
    ],
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/driverVersion', '580.65.06')] },
      /selectors\[0\] must not compare NVIDIA's version attribute with a string/,
    ],
    [
      { ...DRA, selectors: [DeviceSelector.attributeEquals('gpu.nvidia.com/p', 1.5)] },
      /selectors\[0\] value must be a whole number/,
    ],
    [
      { ...DRA, selectors: [DeviceSelector.nvidiaProduct('A'), DeviceSelector.nvidiaProduct('A')] },
      /selectors must not repeat a selector/,
    ],
    [
      {
        ...DRA,
        selectors: Array.from({ length: 33 }, (_, i) => DeviceSelector.attributeEquals('gpu.nvidia.com/n', i)),
      },
      /selectors must hold at most 32 selectors .*\(got 33\)/,
    ],
  ])('%j', (dra, message) => {
    expect(refusal({ dynamicResourceAllocation: dra as DynamicResourceAllocation })).toMatch(message);
  });

  test('a GPU device plugin resource among extendedResources is refused too; other devices are not', () => {
    for (const name of ['nvidia.com/gpu', 'nvidia.com/mig-1g.10gb', 'amd.com/gpu'])
      expect(refusal({ dynamicResourceAllocation: DRA, extendedResources: { [name]: 1 } })).toMatch(
        new RegExp(
          `^TestWorkload 'w': extendedResources\\.${name.replace(/[./]/g, '\\$&')} must not be set with dynamicResourceAllocation`,
        ),
      );
    expect(() => build({ dynamicResourceAllocation: DRA, extendedResources: { 'rdma/ib': 1 } })).not.toThrow();
  });

  test('an attribute named like a CEL keyword and any well-formed text are accepted (held against a real API server in test/cluster)', () => {
    const { objects } = build({
      dynamicResourceAllocation: {
        ...DRA,
        selectors: [
          DeviceSelector.attributeEquals('gpu.nvidia.com/in', 'é€😀'),
          DeviceSelector.nvidiaProduct('€'.repeat(21)),
        ],
      },
    });
    expect(templates(objects)[0].spec.spec.devices.requests[0].exactly.selectors[0].cel.expression).toBe(
      '"in" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"]["in"] == "é€😀"',
    );
  });

  test("the device plugin's gpuResource beside it is refused: the GPUs would be asked for twice", () => {
    expect(refusal({ dynamicResourceAllocation: DRA, gpuResource: 'nvidia.com/mig-1g.10gb' })).toMatch(
      /^TestWorkload 'w': gpuResource must not be set with dynamicResourceAllocation/,
    );
  });

  test(`more than ${DRA_DEVICES_MAX} GPUs in one pod: the scheduler allocates at most ${DRA_DEVICES_MAX} devices to a claim`, () => {
    expect(refusal({ dynamicResourceAllocation: DRA, gpus: DRA_DEVICES_MAX + 8 })).toMatch(
      /dynamicResourceAllocation takes at most 32 GPUs per pod: .*claim limit.* \(got 40\)/,
    );
  });
});

describe('every workload kind takes it', () => {
  const dra = {
    dynamicResourceAllocation: { ...DRA, selectors: [DeviceSelector.nvidiaProduct('NVIDIA H100 80GB HBM3')] },
  };

  test('GpuTrainingJob: each Job pod claims its GPUs', () => {
    const chart = testChart('ml');
    new GpuTrainingJob(chart, 'train', {
      name: 'pretrain',
      image: 'nvcr.io/nvidia/pytorch:25.01-py3',
      command: ['python', 'train.py'],
      nodes: 2,
      gpusPerPod: 8,
      ...dra,
    });
    const objects = synthValid(chart);
    const [t] = templates(objects);
    expect(t.spec.spec.devices.requests[0].exactly.count).toBe(8);
    for (const job of embeddedJobs(objects)) {
      expect(job.spec.template.spec.resourceClaims).toEqual([
        { name: 'gpus', resourceClaimTemplateName: t.metadata.name },
      ]);
      expect(job.spec.template.spec.containers[0].resources.claims).toEqual([{ name: 'gpus' }]);
    }
  });

  test('GpuTrainingStatefulSet: the template is named per version, so a version bump never shares it', () => {
    const names = [1, 2].map(version => {
      const chart = testChart('ml');
      new GpuTrainingStatefulSet(chart, 'train', {
        name: 'pretrain',
        version,
        image: 'nvcr.io/nvidia/pytorch:25.01-py3',
        command: ['python', 'train.py'],
        replicas: 2,
        gpusPerPod: 4,
        ...dra,
      });
      const objects = synthValid(chart);
      const sts = objects.find(o => o.kind === 'StatefulSet');
      const [t] = templates(objects);
      expect(sts.spec.template.spec.resourceClaims[0].resourceClaimTemplateName).toBe(t.metadata.name);
      return t.metadata.name;
    });
    expect(names[0]).not.toBe(names[1]);
  });

  test('a vLLM Deployment and an SGLang multi-node group: leader and workers share one template', () => {
    const chart = testChart('serving');
    new VllmInferenceService(chart, 'chat', {
      name: 'chat',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      gpusPerReplica: 1,
      modelSize: Size.gibibytes(16),
      modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      ...dra,
    });
    new SglangInferenceService(chart, 'big', {
      name: 'big',
      modelId: 'meta-llama/Llama-3.1-405B-Instruct',
      gpusPerReplica: 8,
      nodes: 2,
      modelSize: Size.gibibytes(810),
      modelCache: ModelCache.sharedClaim({ claimName: 'big-models' }),
      ...dra,
    });
    const objects = synthValid(chart);
    const deployment = objects.find(o => o.kind === 'Deployment');
    const chatTemplate = deployment.spec.template.spec.resourceClaims[0].resourceClaimTemplateName;
    const groupPods = embeddedGroupPods(objects);
    const groupTemplates = new Set(groupPods.map(p => p.spec.resourceClaims[0].resourceClaimTemplateName));
    expect(groupTemplates.size).toBe(1);
    expect(
      templates(objects)
        .map(t => t.metadata.name)
        .sort(),
    ).toEqual([chatTemplate, ...groupTemplates].sort());
    for (const p of groupPods) expect(p.spec.containers[0].resources.limits['nvidia.com/gpu']).toBeUndefined();
  });

  test("NVIDIA's MIG class holds the MIG rules of a MIG gpuResource: one instance per replica, one node per group", () => {
    const mig = { dynamicResourceAllocation: { ...DRA, deviceClassName: 'mig.nvidia.com' } };
    const vllm = (props: object) => () =>
      new VllmInferenceService(testChart(), 'chat', {
        name: 'chat',
        modelId: 'meta-llama/Llama-3.1-8B-Instruct',
        modelSize: Size.gibibytes(16),
        ...mig,
        ...props,
      });
    expect(vllm({ gpusPerReplica: 2 })).toThrow(
      /^VllmInferenceService 'chat': gpusPerReplica must be 1 with MIG instances \(DeviceClass mig\.nvidia\.com\)/,
    );
    expect(vllm({ gpusPerReplica: 1, nodes: 2 })).toThrow(
      /^VllmInferenceService 'chat': nodes must be 1 with MIG instances \(DeviceClass mig\.nvidia\.com\)/,
    );
    expect(vllm({ gpusPerReplica: 1 })).not.toThrow();
  });

  test('a queued workload is refused: Kueue charges claimed devices to its quota only from v0.18, with a device class mapping', () => {
    expect(
      () =>
        new GpuTrainingJob(testChart(), 'train', {
          name: 'pretrain',
          image: 'nvcr.io/nvidia/pytorch:25.01-py3',
          command: ['python', 'train.py'],
          gpusPerPod: 8,
          queueName: 'research',
          ...dra,
        }),
    ).toThrow(
      /^GpuTrainingJob 'train': queueName must not be set with dynamicResourceAllocation: Kueue charges DRA devices .* \(got "research"\)$/,
    );
  });
});

test('the output of a DRA workload holds a kind the floor does not serve; the ResourceClaimTemplate is checked against the newest API', () => {
  const chart = testChart('ml');
  new TestWorkload(chart, 'w', { name: 'w', dynamicResourceAllocation: DRA });
  const t = Testing.synth(chart).find((o: any) => o.kind === 'ResourceClaimTemplate');
  const { strictErrors } = require('../../src/validation/strict-schema');
  expect(strictErrors(t, '1.36.0')).toEqual([]);
  expect(strictErrors(t, '1.32.0').join()).toMatch(
    /resource\.k8s\.io\/v1 ResourceClaimTemplate does not exist in Kubernetes 1\.32\.0/,
  );
});
