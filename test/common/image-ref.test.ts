import { ImageRef } from '../../src/common/image-ref';

describe('ImageRef', () => {
  test.each([
    ['vllm/vllm-openai:v0.18.0', 'docker.io/vllm/vllm-openai', 'v0.18.0', [0, 18, 0]],
    ['docker.io/vllm/vllm-openai:v0.9.2', 'docker.io/vllm/vllm-openai', 'v0.9.2', [0, 9, 2]],
    ['ubuntu:24.04', 'docker.io/library/ubuntu', '24.04', [24, 4, 0]],
    [
      'ghcr.io/huggingface/text-generation-inference:3.0.1',
      'ghcr.io/huggingface/text-generation-inference',
      '3.0.1',
      [3, 0, 1],
    ],
    ['lmsysorg/sglang:v0.5.20-cu126', 'docker.io/lmsysorg/sglang', 'v0.5.20-cu126', [0, 5, 20]],
    ['vllm/vllm-openai:v0.18.0rc1', 'docker.io/vllm/vllm-openai', 'v0.18.0rc1', [0, 18, 0]],
    ['localhost:5000/vllm:v1.2.3', 'localhost:5000/vllm', 'v1.2.3', [1, 2, 3]],
    ['registry.example.com:5000/a/b', 'registry.example.com:5000/a/b', undefined, undefined],
    ['vllm/vllm-openai:latest', 'docker.io/vllm/vllm-openai', 'latest', undefined],
    ['vllm/vllm-openai@sha256:' + 'a'.repeat(64), 'docker.io/vllm/vllm-openai', undefined, undefined],
    ['vllm/vllm-openai:v0.17.1@sha256:' + 'a'.repeat(64), 'docker.io/vllm/vllm-openai', 'v0.17.1', [0, 17, 1]],
  ])('%s', (ref, repository, tag, version) => {
    const r = ImageRef.parse(ref);
    expect([r.repository, r.tag, r.version]).toEqual([repository, tag, version]);
  });

  test('isBefore compares releases, and is false for a tag that names none', () => {
    expect(ImageRef.parse('x:v0.17.9').isBefore([0, 18, 0])).toBe(true);
    expect(ImageRef.parse('x:v0.18.0').isBefore([0, 18, 0])).toBe(false);
    expect(ImageRef.parse('x:v1.0.0').isBefore([0, 18, 0])).toBe(false);
    expect(ImageRef.parse('x:nightly').isBefore([0, 18, 0])).toBe(false);
  });
});
