import { Chart, Testing } from 'cdk8s';
import { EnvValue, GpuTrainingStatefulSet } from '../../src';
import { isCredentialEnvName, metadataTargetReason } from '../../src/common/env';

function trainer(env: Record<string, string | EnvValue>): void {
  new GpuTrainingStatefulSet(new Chart(Testing.app(), 'c'), 't', {
    name: 't',
    image: 'i',
    gpusPerPod: 1,
    args: ['train.py'],
    env,
  });
}

describe('dangerous env values', () => {
  test.each([
    'HF_TOKEN',
    'HUGGING_FACE_HUB_TOKEN',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'OPENAI_API_KEY',
    'WANDB_API_KEY',
    'NGC_APIKEY',
    'DB_PASSWORD',
    'CLIENT_SECRET',
    'JWT_PRIVATE_KEY',
    'hf_token',
  ])('a literal credential in %s is refused naming the prop, as a string or EnvValue.fromValue', name => {
    for (const value of ['hf_abcdefghijklmnop', EnvValue.fromValue('hf_abcdefghijklmnop')]) {
      let message = '';
      try {
        trainer({ [name]: value });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toContain(`env.${name} must not be a literal`);
      expect(message).toContain('EnvValue.fromSecretKey');
      // The secret itself never reaches the error message (or a CI log).
      expect(message).not.toContain('hf_abcdefghijklmnop');
    }
  });

  test('a credential from a Secret, an empty value or a $(VAR) reference is fine', () => {
    expect(() => trainer({ HF_TOKEN: EnvValue.fromSecretKey('hf', 'token') })).not.toThrow();
    expect(() => trainer({ HF_TOKEN: '' })).not.toThrow();
    expect(() => trainer({ HF_TOKEN: '$(HUGGING_FACE_HUB_TOKEN)' })).not.toThrow();
  });

  test('names that merely end like a credential are not one', () => {
    expect(isCredentialEnvName('HF_HUB_DISABLE_IMPLICIT_TOKEN')).toBe(false);
    expect(isCredentialEnvName('MAX_NUM_BATCHED_TOKENS')).toBe(false);
    expect(isCredentialEnvName('SECRET_NAME')).toBe(false);
    expect(() => trainer({ HF_HUB_DISABLE_IMPLICIT_TOKEN: '1' })).not.toThrow();
  });

  test.each(['http://hub-mirror.internal', 'http://10.0.0.5:8080', 'ftp://hub', 'hub.internal'])(
    'HF_ENDPOINT %s, which would carry the token in clear (or is no URL), is refused',
    url => {
      expect(() => trainer({ HF_ENDPOINT: url })).toThrow(/env\.HF_ENDPOINT must be/);
      expect(() => trainer({ HF_ENDPOINT: EnvValue.fromValue(url) })).toThrow(/env\.HF_ENDPOINT must be/);
    },
  );

  test('HF_ENDPOINT over https, or plain http to loopback, is fine', () => {
    for (const url of ['https://hub-mirror.internal', 'http://localhost:8080', 'http://127.0.0.1:5000'])
      expect(() => trainer({ HF_ENDPOINT: url })).not.toThrow();
  });

  test('metadata targets in every written form', () => {
    const host = (url: string) => new URL(url).hostname;
    for (const url of [
      'http://169.254.169.254/',
      'http://2852039166/',
      'http://0251.0376.0251.0376/',
      'http://[FE80::1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://Metadata.Google.Internal/',
    ]) {
      expect(metadataTargetReason(host(url))).toBeDefined();
    }
    for (const url of ['http://localhost/', 'http://10.0.0.1/', 'http://[fd00::1]/', 'http://metadata-proxy/'])
      expect(metadataTargetReason(host(url))).toBeUndefined();
  });
});
