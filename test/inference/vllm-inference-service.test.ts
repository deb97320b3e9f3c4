import { Duration } from 'cdk8s';
import { VLLM_DEFAULT_IMAGE, VllmInferenceService, VllmInferenceServiceProps, VllmQuantization } from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid, testChart } from '../support/synth';
import { flagValue } from './support';

const base: VllmInferenceServiceProps = { name: 'llm', modelId: 'meta-llama/Llama-3.1-8B-Instruct' };

function synth(props: Partial<VllmInferenceServiceProps> = {}) {
  const chart = testChart();
  const llm = new VllmInferenceService(chart, 'llm', { ...base, ...props });
  const objects = synthValid(chart);
  const pod = findOne(objects, 'StatefulSet').spec.template.spec;
  return { llm, objects, pod, main: pod.containers[0], init: pod.initContainers[0] };
}

describe('VllmInferenceService', () => {
  test("the engine's own startup deadline is the startup probe's budget, not vLLM's 600 s", () => {
    const { main, llm } = synth({ modelId: 'meta-llama/Llama-3.1-70B-Instruct', gpusPerReplica: 4 });
    expect(llm.startupBudgetSeconds).toBeGreaterThan(600);
    expect(envOf(main).VLLM_ENGINE_READY_TIMEOUT_S).toBe(String(llm.startupBudgetSeconds));
    expect(envOf(synth({ maxModelLoadTime: Duration.minutes(50) }).main).VLLM_ENGINE_READY_TIMEOUT_S).toBe('3000');
    expect(() => synth({ env: { VLLM_ENGINE_READY_TIMEOUT_S: '600' } })).toThrow(
      /'llm': env.VLLM_ENGINE_READY_TIMEOUT_S is set by the construct; set maxModelLoadTime instead/,
    );
  });

  test('the issue example: `vllm serve <model>` via the image entrypoint, with the practice flags', () => {
    const { main, llm } = synth({
      replicas: 2,
      gpusPerReplica: 1,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      version: 1,
    });
    expect(main.command).toBeUndefined(); // ENTRYPOINT ["vllm", "serve"]
    expect(main.args[0]).toBe(base.modelId);
    expect(flagValue(main.args, '--host')).toBe('0.0.0.0');
    expect(flagValue(main.args, '--port')).toBe('8000');
    expect(flagValue(main.args, '--tensor-parallel-size')).toBe('1');
    // v0.18+: the default 0 aborts in-flight requests; the drain prop sets it.
    expect(flagValue(main.args, '--shutdown-timeout')).toBe('90');
    expect(envOf(main).HOSTNAME).toBeUndefined(); // vLLM reads --host only
    expect(llm.serviceName).toBe('llm');
    expect(llm.url).toBe('http://llm');
  });

  test('pins a released image', () => {
    expect(VLLM_DEFAULT_IMAGE).toMatch(/^vllm\/vllm-openai:v\d+\.\d+\.\d+$/);
    expect(synth().main.image).toBe(VLLM_DEFAULT_IMAGE);
  });

  test("runs as the image's non-root vllm user (UID 2000) with a writable home: restricted", () => {
    const { pod, main, llm } = synth();
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 2000, runAsGroup: 2000, fsGroup: 2000 });
    expect(podSecurityLevel(pod)).toBe('restricted');
    expect(llm.podSecurityLevel).toBe('restricted');
    expect(envOf(main).HOME).toBe('/home/vllm');
    expect(main.volumeMounts).toContainEqual({ name: 'home', mountPath: '/home/vllm' });
  });

  test("the download is the shared hub script under the image's python3, told the engine, model and revision", () => {
    expect(synth({ revision: 'abc' }).init.command).toEqual([
      'python3',
      '/opt/cdk8s-gpu/hub-download/hub-download.py',
      'vllm',
      base.modelId,
      'abc',
    ]);
  });

  test('modelled props become flags; usage stats off', () => {
    const { main } = synth({
      maxModelLen: 8192,
      quantization: VllmQuantization.FP8,
      servedModelNames: ['llama', 'tgi'],
      maxNumSeqs: 64,
      gpuMemoryUtilization: 0.85,
      revision: 'abc',
    });
    expect(main.args).toEqual(
      expect.arrayContaining([
        '--max-model-len',
        '8192',
        '--quantization',
        'fp8',
        '--max-num-seqs',
        '64',
        '--gpu-memory-utilization',
        '0.85',
        '--revision',
        'abc',
      ]),
    );
    const i = main.args.indexOf('--served-model-name');
    expect(main.args.slice(i, i + 3)).toEqual(['--served-model-name', 'llama', 'tgi']);
    expect(envOf(main)).toMatchObject({ VLLM_NO_USAGE_STATS: '1', DO_NOT_TRACK: '1', HF_HUB_OFFLINE: '1' });
  });

  test.each([
    '--tensor-parallel-size',
    '-tp',
    '--max-model-len',
    '--served-model-name',
    '--quantization',
    '--shutdown-timeout',
    '--model',
    '--download-dir',
  ])('extraArgs %s is refused', flag => {
    expect(() => synth({ extraArgs: [flag, '2'] })).toThrow(
      new RegExp(`^VllmInferenceService 'llm': extraArgs\\[0\\] must not set ${flag}: the construct sets it`),
    );
    expect(() => synth({ extraArgs: [`${flag}=2`] })).toThrow(/extraArgs\[0\] must not set/);
  });

  test('drain of 10 minutes: --shutdown-timeout 600 inside a 630 s grace period', () => {
    const { main, pod } = synth({ drainTimeout: Duration.minutes(10) });
    expect(flagValue(main.args, '--shutdown-timeout')).toBe('600');
    expect(pod.terminationGracePeriodSeconds).toBe(630);
  });

  test('argparse abbreviations of owned flags are refused too', () => {
    expect(() => synth({ extraArgs: ['--max-model', '4096'] })).toThrow(
      /extraArgs\[0\] must not abbreviate --max-model-len: argparse expands --max-model to it/,
    );
    expect(synth({ extraArgs: ['--max-num-batched-tokens', '8192'] }).main.args).toContain('--max-num-batched-tokens');
  });
});
