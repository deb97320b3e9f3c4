import { ENGINES, synthEngine } from './support';

const terms = (pod: any) =>
  pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
const NEW = 'nvidia.com/cuda.driver-version.major';
const OLD = 'nvidia.com/cuda.driver.major';
/** The three ORed terms for a floor: the new label, else the deprecated one, else neither (no GPU operator). */
const floorTerms = (major: number, extra: any[] = []) => [
  { matchExpressions: [...extra, { key: NEW, operator: 'Gt', values: [String(major - 1)] }] },
  {
    matchExpressions: [
      ...extra,
      { key: NEW, operator: 'DoesNotExist' },
      { key: OLD, operator: 'Gt', values: [String(major - 1)] },
    ],
  },
  { matchExpressions: [...extra, { key: NEW, operator: 'DoesNotExist' }, { key: OLD, operator: 'DoesNotExist' }] },
];

const byEngine: Record<string, { image: string; floor: number; cu12: string; older?: string }> = {
  // vLLM images are CUDA 13 from v0.20 (vllm#39878); -cu129 tags stay CUDA 12.
  VllmInferenceService: {
    image: 'vllm/vllm-openai:v0.31.0',
    floor: 580,
    cu12: 'vllm/vllm-openai:v0.21.0-cu129',
    older: 'vllm/vllm-openai:v0.19.1',
  },
  SglangInferenceService: {
    image: 'lmsysorg/sglang:v0.5.20',
    floor: 580,
    cu12: 'lmsysorg/sglang:v0.5.19-cu129',
    older: 'lmsysorg/sglang:v0.5.10',
  },
  TgiInferenceService: {
    image: 'ghcr.io/huggingface/text-generation-inference:3.3.7',
    floor: 525,
    cu12: 'ghcr.io/huggingface/text-generation-inference:3.3.7',
  },
};

describe.each(ENGINES)('$construct: the NVIDIA driver its image needs', e => {
  const f = byEngine[e.construct];

  test("the default image's floor is a required node affinity on GFD's driver label, nodes without it allowed", () => {
    expect(e.image).toBe(f.image);
    expect(terms(synthEngine(e).pod)).toEqual(floorTerms(f.floor));
  });

  test('a CUDA 12 tag or an older release needs a 525 driver', () => {
    expect(terms(synthEngine(e, { image: f.cu12 }).pod)).toEqual(floorTerms(525));
    if (f.older) expect(terms(synthEngine(e, { image: f.older }).pod)).toEqual(floorTerms(525));
  });

  test('minDriverVersion overrides it, 0 turns it off; an image of another repository or without a release has none', () => {
    expect(terms(synthEngine(e, { minDriverVersion: 590 }).pod)).toEqual(floorTerms(590));
    expect(synthEngine(e, { minDriverVersion: 0 }).pod.affinity).toBeUndefined();
    expect(
      synthEngine(e, { image: 'registry.example.com/ml/server:1.2.3', runAsRoot: true }).pod.affinity,
    ).toBeUndefined();
    expect(synthEngine(e, { image: `${f.image.split(':')[0]}:latest` }).pod.affinity).toBeUndefined();
    expect(() => synthEngine(e, { minDriverVersion: -1 })).toThrow(`${e.construct} 'svc': minDriverVersion`);
  });

  test("the pod's own required terms are kept: each is ANDed with the driver terms", () => {
    const zone = { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['a'] };
    const gpu = { key: 'nvidia.com/gpu.product', operator: 'In', values: ['NVIDIA-H100-80GB-HBM3'] };
    const { pod } = synthEngine(e, {
      pod: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [zone] }, { matchExpressions: [gpu] }],
            },
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [zone] } }],
          },
        },
      },
    });
    expect(terms(pod)).toEqual([...floorTerms(f.floor, [zone]), ...floorTerms(f.floor, [gpu])]);
    expect(pod.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
  });
});
