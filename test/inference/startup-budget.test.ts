import { Duration, Size } from 'cdk8s';
import { sizeFromModelId } from '../../src/inference/serving-timing';
import { ENGINES, synthEngine } from './support';

describe('the weights a model id states through its parameter count', () => {
  test.each([
    ['meta-llama/Llama-3.1-70B-Instruct', 70e9, 2],
    ['Qwen/Qwen2.5-0.5B-Instruct', 0.5e9, 2],
    ['mistralai/Mixtral-8x7B-Instruct-v0.1', 56e9, 2],
    ['neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8', 70e9, 1],
    ['hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4', 70e9, 0.5],
    ['/models/llama-70b', 70e9, 2],
    ['EleutherAI/gpt-neox-20b', 20e9, 2],
  ])('%s: %d parameters, %d bytes each', (id, parameters, bytes) => {
    expect(sizeFromModelId(id)).toMatchObject({ parameters, bytesPerParameter: bytes });
  });

  test.each(['openai-community/gpt2', 'org/b2b-model', 'org/model-v1.5'])('%s states no count: none', id => {
    expect(sizeFromModelId(id)).toBeUndefined();
  });
});

describe.each(ENGINES)('$construct: a startup budget that knows the model size', e => {
  test('without modelSize, a 70B id raises the budget past the 900 s default; a small one keeps it', () => {
    // 140 GB at 100 MB/s + 300 s warm-up, rounded up to the probe period.
    expect(
      synthEngine(e, { modelId: 'meta-llama/Llama-3.1-70B-Instruct', gpusPerReplica: 4 }).svc.startupBudgetSeconds,
    ).toBe(1700);
    expect(synthEngine(e, { modelId: 'Qwen/Qwen2.5-7B-Instruct' }).svc.startupBudgetSeconds).toBe(900);
  });

  test('modelSize and maxModelLoadTime still decide when given', () => {
    const id = 'meta-llama/Llama-3.1-70B-Instruct';
    expect(synthEngine(e, { modelId: id, modelSize: Size.gibibytes(15) }).svc.startupBudgetSeconds).toBe(470);
    expect(synthEngine(e, { modelId: id, maxModelLoadTime: Duration.minutes(20) }).svc.startupBudgetSeconds).toBe(1200);
  });

  test('4 GPUs or more with a model that states no size must declare one', () => {
    expect(() => synthEngine(e, { modelId: 'org/big-model', gpusPerReplica: 4 })).toThrow(
      `${e.construct} 'svc': modelSize is needed (or maxModelLoadTime) with gpusPerReplica 4`,
    );
    expect(synthEngine(e, { modelId: 'org/big-model', gpusPerReplica: 2 }).svc.startupBudgetSeconds).toBe(900);
    expect(
      synthEngine(e, { modelId: 'org/big-model', gpusPerReplica: 4, maxModelLoadTime: Duration.minutes(40) }).svc
        .startupBudgetSeconds,
    ).toBe(2400);
  });
});

describe.each(ENGINES)('$construct: a modelSize the model id contradicts', e => {
  const llama8b = 'meta-llama/Llama-3.1-8B-Instruct';

  test('a wrong unit (15 MiB for an 8B model) is refused, naming the range and the way out', () => {
    expect(() => synthEngine(e, { modelId: llama8b, modelSize: Size.mebibytes(15) })).toThrow(
      `${e.construct} 'svc': modelSize must be between 1.7Gi and 32.8Gi for the 8B parameters ${llama8b} states (2 to 32 bits a weight), or the startup budget is made from a wrong size; for a model whose name misstates its size, give maxModelLoadTime instead (got 15Mi)`,
    );
    expect(() => synthEngine(e, { modelId: llama8b, modelSize: Size.gibibytes(140) })).toThrow(
      /modelSize must be between/,
    );
  });

  test('every weight width from 2-bit to fp32 is accepted, at the edges too; an id with no count is not checked', () => {
    // 8e9 weights: 0.25 bytes each less 10% (1716.6 MiB) to 4 bytes each plus 10% (33569.3 MiB).
    const budget = (mib: number) =>
      synthEngine(e, { modelId: llama8b, modelSize: Size.mebibytes(mib) }).svc.startupBudgetSeconds;
    for (const mib of [1717, 4096, 15360, 30720, 33569]) expect(budget(mib)).toBeGreaterThan(0);
    for (const mib of [1716, 33570]) expect(() => budget(mib)).toThrow(/modelSize must be between/);
    expect(synthEngine(e, { modelId: 'org/house-model', modelSize: Size.mebibytes(15) }).svc.startupBudgetSeconds).toBe(
      310,
    );
  });
});
