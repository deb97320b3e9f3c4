import {
  SGLANG_DEFAULT_IMAGE,
  SglangInferenceService,
  SglangInferenceServiceProps,
  SglangQuantization,
} from '../../src';
import { podSecurityLevel } from '../support/pod-security';
import { envOf, findOne, synthValid, testChart } from '../support/synth';
import { flagValue } from './support';

const base: SglangInferenceServiceProps = { name: 'sgl', modelId: 'Qwen/Qwen2.5-7B-Instruct' };

function synth(props: Partial<SglangInferenceServiceProps> = {}) {
  const chart = testChart();
  const sgl = new SglangInferenceService(chart, 'sgl', { ...base, ...props });
  const objects = synthValid(chart);
  const pod = findOne(objects, 'StatefulSet').spec.template.spec;
  return { sgl, objects, pod, main: pod.containers[0], init: pod.initContainers[0] };
}

describe('SglangInferenceService', () => {
  test('the issue example: launch_server with an explicit host (its default 127.0.0.1 is unreachable), port 30000 and metrics', () => {
    const { main, sgl } = synth();
    expect(main.command).toEqual(['python3', '-m', 'sglang.launch_server']);
    expect(flagValue(main.args, '--model-path')).toBe(base.modelId);
    expect(flagValue(main.args, '--host')).toBe('0.0.0.0');
    expect(flagValue(main.args, '--port')).toBe('30000');
    expect(flagValue(main.args, '--tp-size')).toBe('1');
    expect(main.args).toContain('--enable-metrics');
    expect(sgl.serviceName).toBe('sgl');
  });

  test('pins a released image that runs as root: baseline, everything else locked down', () => {
    expect(SGLANG_DEFAULT_IMAGE).toMatch(/^lmsysorg\/sglang:v\d+\.\d+\.\d+$/);
    const { pod, main, sgl } = synth();
    expect(main.image).toBe(SGLANG_DEFAULT_IMAGE);
    expect(podSecurityLevel(pod)).toBe('baseline');
    expect(sgl.podSecurityLevel).toBe('baseline');
    expect(pod.securityContext.runAsUser).toBeUndefined();
    expect(main.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  });

  test('no drain flag: SGLang drains without a timeout, so the grace period bounds it', () => {
    const { main, pod } = synth();
    expect(main.args.some((a: string) => a.includes('timeout'))).toBe(false);
    expect(pod.terminationGracePeriodSeconds).toBe(120);
  });

  test('modelled props become flags; DO_NOT_TRACK by default', () => {
    const { main } = synth({
      contextLength: 32768,
      quantization: SglangQuantization.FP8,
      servedModelName: 'qwen',
      maxRunningRequests: 128,
      memFractionStatic: 0.85,
    });
    expect(main.args).toEqual(
      expect.arrayContaining([
        '--context-length',
        '32768',
        '--quantization',
        'fp8',
        '--served-model-name',
        'qwen',
        '--max-running-requests',
        '128',
        '--mem-fraction-static',
        '0.85',
      ]),
    );
    expect(envOf(main).DO_NOT_TRACK).toBe('1');
  });

  test("the download is the shared hub script under the image's python3, told the engine, model and revision", () => {
    expect(synth().init.command).toEqual([
      'python3',
      '/opt/cdk8s-gpu/hub-download/hub-download.py',
      'sglang',
      base.modelId,
      '',
    ]);
  });

  test.each([
    '--tp',
    '--tp-size',
    '--tensor-parallel-size',
    '--context-length',
    '--model-path',
    '--enable-metrics',
    '--host',
  ])('extraArgs %s is refused', flag => {
    expect(() => synth({ extraArgs: [flag, '2'] })).toThrow(
      new RegExp(`^SglangInferenceService 'sgl': extraArgs\\[0\\] must not set ${flag}`),
    );
  });

  test('argparse abbreviations of owned flags are refused too', () => {
    expect(() => synth({ extraArgs: ['--contex', '4096'] })).toThrow(
      'SglangInferenceService \'sgl\': extraArgs[0] must not abbreviate --context-length: argparse expands --contex to it (or refuses it as ambiguous), and the construct sets it from contextLength (got "--contex")',
    );
    expect(() => synth({ extraArgs: ['--po=1'] })).toThrow(/must not abbreviate --port/);
    expect(synth({ extraArgs: ['--enable-cache-report', '--chunked-prefill-size', '4096'] }).main.args).toContain(
      '--chunked-prefill-size',
    );
  });

  // Expert groups are taken within the tensor-parallel ranks: their size must divide the ranks (4 GPUs here).
  test.each([
    ['--ep-size', '4'],
    ['--ep-size=2'],
    ['--expert-parallel-size', '1'],
    ['--expert-par=4'],
    ['--ep-size', '04'],
  ])('an expert-parallel size dividing the tensor-parallel size is passed on: %s', (...extraArgs) => {
    expect(synth({ gpusPerReplica: 4, extraArgs }).main.args.slice(-extraArgs.length)).toEqual(extraArgs);
  });

  test.each([
    [['--ep-size', '8'], 1, '"8"'],
    [['--ep-size=3'], 0, '"3"'],
    [['--expert-parallel-size', '0'], 1, '"0"'],
    [['--ep-s', '16'], 1, '"16"'],
    [['--ep-size', 'x'], 1, '"x"'],
  ])('an expert-parallel size the tensor-parallel size cannot hold is refused: %j', (extraArgs, at, got) => {
    expect(() => synth({ gpusPerReplica: 4, extraArgs: extraArgs })).toThrow(
      `SglangInferenceService 'sgl': extraArgs[${at}] must be a whole number dividing the tensor-parallel size 4 (gpusPerReplica) as --`,
    );
    expect(() => synth({ gpusPerReplica: 4, extraArgs: extraArgs })).toThrow(`(got ${got})`);
  });

  test('an expert-parallel flag without its value is refused naming the flag', () => {
    expect(() => synth({ gpusPerReplica: 4, extraArgs: ['--ep-size'] })).toThrow(
      `SglangInferenceService 'sgl': extraArgs[0] needs a value after --ep-size (got "--ep-size")`,
    );
  });
});
