import { Chart, Testing } from 'cdk8s';
import { ModelCache, SglangInferenceService, TgiInferenceService, VllmInferenceService } from '../../src';
import { synthValid } from '../support/synth';

const models = () => ModelCache.sharedClaim({ claimName: 'models' });
const base = { modelId: 'Qwen/Qwen2.5-7B-Instruct' };

describe('one UID per shared model cache claim', () => {
  test('a root SGLang and a UID-2000 vLLM on one claim are refused, naming both', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    new VllmInferenceService(chart, 'a', { ...base, name: 'a', modelCache: models() });
    expect(() => new SglangInferenceService(chart, 'b', { ...base, name: 'b', modelCache: models() })).toThrow(
      "SglangInferenceService 'b': modelCache shares claim models with VllmInferenceService 'a', which runs as UID 2000, but this one runs as root (UID 0)",
    );
  });

  test('the same UID on one claim is fine: vLLM as root beside TGI', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    new TgiInferenceService(chart, 'tgi', { ...base, name: 'llm', modelCache: models() });
    new VllmInferenceService(chart, 'vllm', {
      ...base,
      name: 'llm',
      version: 2,
      runAsRoot: true,
      modelCache: models(),
    });
    expect(() => new VllmInferenceService(chart, 'x', { ...base, name: 'x', modelCache: models() })).toThrow(
      "VllmInferenceService 'x': modelCache shares claim models with TgiInferenceService 'tgi', which runs as root (UID 0), but this one runs as UID 2000",
    );
  });

  test('two vLLMs (UID 2000) share a claim', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    new VllmInferenceService(chart, 'a', { ...base, name: 'a', modelCache: models() });
    new VllmInferenceService(chart, 'b', { ...base, name: 'b', runAsUser: 2000, modelCache: models() });
    expect(synthValid(chart).length).toBeGreaterThan(0);
  });

  test('claims of the same name in other namespaces, and per-replica caches, are separate', () => {
    const app = Testing.app();
    const a = new Chart(app, 'a', { namespace: 'team-a' });
    const b = new Chart(app, 'b', { namespace: 'team-b' });
    new VllmInferenceService(a, 'v', { ...base, name: 'v', modelCache: models() });
    new SglangInferenceService(b, 's', { ...base, name: 's', modelCache: models() });
    new SglangInferenceService(a, 'own', { ...base, name: 'own' });
    expect(synthValid(a).length).toBeGreaterThan(0);
  });
});
