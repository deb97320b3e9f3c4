import { Chart, Size } from 'cdk8s';
import {
  KvCacheOffload,
  SglangInferenceService,
  SglangInferenceServiceProps,
  TgiInferenceService,
  VllmInferenceService,
  VllmInferenceServiceProps,
} from '../../src';
import { quantityBytes, servingOutput } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

const MODEL = 'Qwen/Qwen2.5-7B-Instruct';
const GIB = 1024 ** 3;

/** The serving pod's main container, its /dev/shm volume and the rest of the output. */
function serve(make: (chart: Chart) => unknown) {
  const o = servingOutput(make);
  return { ...o, shm: o.template.spec.volumes.find((v: any) => v.emptyDir?.medium === 'Memory') };
}
const vllm = (props: Partial<VllmInferenceServiceProps> = {}) =>
  serve(c => new VllmInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props }));
const sglang = (props: Partial<SglangInferenceServiceProps> = {}) =>
  serve(c => new SglangInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props }));
const bytes = quantityBytes;

describe('kvCacheOffload: a host-memory tier for the KV cache', () => {
  test('vLLM: --kv-offloading-size in GiB (the engine total), and the tier added to /dev/shm and to memory', () => {
    const base = vllm({ gpusPerReplica: 2 });
    const tiered = vllm({ gpusPerReplica: 2, kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(40)) });
    expect(tiered.args).toMatch(/--kv-offloading-size 40( |$)/);
    expect(base.args).not.toMatch(/kv-offloading/);
    // vLLM keeps the tier in one /dev/shm file (shared_offload_region.py): the volume and the limit both grow.
    expect(bytes(tiered.shm.emptyDir.sizeLimit) - bytes(base.shm.emptyDir.sizeLimit)).toBe(40 * GIB);
    for (const side of ['requests', 'limits'] as const)
      expect(bytes(tiered.main.resources[side].memory) - bytes(base.main.resources[side].memory)).toBe(40 * GIB);
    expectValidOutput(tiered.objects);
  });

  test('SGLang: --hicache-size in whole GB per tensor-parallel rank, rounded down, and that much memory added', () => {
    const make = (offload?: Size) =>
      sglang({ gpusPerReplica: 4, ...(offload ? { kvCacheOffload: KvCacheOffload.cpu(offload) } : {}) });
    const base = make();
    const tiered = make(Size.gibibytes(100));
    // 100 GiB = 107.37 GB over 4 ranks: 26 GB each, 104 GB in all.
    expect(tiered.args).toMatch(/--enable-hierarchical-cache --hicache-size 26( |$)/);
    const added = bytes(tiered.main.resources.limits.memory) - bytes(base.main.resources.limits.memory);
    expect(Math.abs(added - 104e9)).toBeLessThan(1024);
    // SGLang's pool is the process's own pinned memory: /dev/shm stays as it was.
    expect(tiered.shm.emptyDir.sizeLimit).toBe(base.shm.emptyDir.sizeLimit);
    expectValidOutput(tiered.objects);
  });

  test.each<[string, () => unknown, RegExp]>([
    [
      'TGI has no host tier',
      () =>
        serve(
          c =>
            new TgiInferenceService(c, 'llm', {
              name: 'llm',
              modelId: MODEL,
              kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(8)),
            }),
        ),
      /^TgiInferenceService 'llm': kvCacheOffload needs vLLM or SGLang/,
    ],
    [
      "vLLM's /dev/shm given too small for the tier",
      () => vllm({ kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(16)), sharedMemory: Size.gibibytes(8) }),
      /sharedMemory must be larger than the KV-cache offload tier \(16Gi, a file in \/dev\/shm: vLLM 0\.31\.0 .*Insufficient space in \/dev\/shm" \(got /,
    ],
    [
      "vLLM's memory given too small for /dev/shm with the tier in it",
      () => vllm({ kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(16)), memory: Size.gibibytes(12) }),
      /sharedMemory must be smaller than memory/,
    ],
    [
      "SGLang's memory given too small for the pool beside /dev/shm",
      () => sglang({ kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(32)), memory: Size.gibibytes(32) }),
      /memory must hold the KV-cache offload tier \(kvCacheOffload, SGLang 0\.5\.20 .*\), 33203125Ki of pinned host memory, beside \/dev\/shm \(2Gi\)/,
    ],
    [
      'SGLang with less than 1 GB a rank',
      () => sglang({ gpusPerReplica: 2, kvCacheOffload: KvCacheOffload.cpu(Size.mebibytes(1500)) }),
      /kvCacheOffload must give each tensor-parallel rank at least 1 GB \(10\^9 bytes\): SGLang's --hicache-size is whole GB per rank \(2 ranks\) \(got "1500Mi"\)/,
    ],
    [
      'a multi-node group',
      () =>
        vllm({
          gpusPerReplica: 4,
          nodes: 2,
          kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(64)),
        }),
      /kvCacheOffload needs a single-node replica \(nodes 1\)/,
    ],
    [
      'the flags in extraArgs, where nothing would size the pod for them',
      () => vllm({ extraArgs: ['--kv-offloading-size', '40'] }),
      /extraArgs.*--kv-offloading-size.*kvCacheOffload/,
    ],
    [
      "vLLM's --kv-transfer-config beside the tier, whose connector vLLM replaces",
      () =>
        vllm({
          kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(8)),
          extraArgs: ['--kv-transfer-config', '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'],
        }),
      /extraArgs must not set --kv-transfer-config with kvCacheOffload: the tier's connector takes it/,
    ],
    [
      'an offload connector in --kv-transfer-config, a tier nothing sizes',
      () =>
        vllm({
          extraArgs: [
            '--kv-transfer-config={"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":107374182400}}',
          ],
        }),
      /extraArgs must not name an offload or LMCache connector in --kv-transfer-config/,
    ],
    [
      "SGLang's LMCache host cache",
      () => sglang({ extraArgs: ['--enable-lmcache'] }),
      /extraArgs must not set --enable-lmcache: a host cache or storage tier the pod is not sized for/,
    ],
    [
      'a plain object in place of KvCacheOffload.cpu()',
      () => vllm({ kvCacheOffload: { size: Size.gibibytes(4) } }),
      /kvCacheOffload must be made with KvCacheOffload\.cpu\(\)/,
    ],
  ])('refused: %s', (_, make, message) => {
    expect(make).toThrow(message);
  });

  test('a transfer connector that is no host tier stays allowed without kvCacheOffload', () => {
    const nixl = vllm({ extraArgs: ['--kv-transfer-config', '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'] });
    expect(nixl.args).toContain('NixlConnector');
  });

  test("SGLang's host-pool flags in extraArgs are refused the same way", () => {
    for (const flag of ['--enable-hierarchical-cache', '--hicache-size=10', '--hicache-ratio=2'])
      expect(() => sglang({ extraArgs: [flag] })).toThrow(/kvCacheOffload/);
  });
});
