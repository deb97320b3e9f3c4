import { execFileSync, spawnSync } from 'child_process';
import { EnvValue } from '../../src';
import { kubeletExpand } from '../../src/common/kubelet-expansion';
import { API_KEY_WRAPPER, WRAPPED_API_KEY_ENV } from '../../src/inference/serving-trust';
import { SHELLS } from '../support/shells';
import { configError, ENGINES, synthEngine } from './support';

const COMMIT = 'a'.repeat(40);
const SECRET = { name: 'llm-api', key: 'key' };

describe.each(ENGINES)('$construct: trust props', e => {
  const t = e.engine.trust;
  const err = (props: any) => configError(() => synthEngine(e, props)).message;

  test('apiKeySecret reaches the engine from the Secret, never as a literal', () => {
    const { main, init, sts } = synthEngine(e, { apiKeySecret: SECRET });
    const name = t.apiKeyEnv ?? WRAPPED_API_KEY_ENV;
    const variable = main.env.find((x: any) => x.name === name);
    expect(variable).toEqual({ name, valueFrom: { secretKeyRef: SECRET } });
    // No literal key anywhere: the flag appears only in the wrapper, reading the variable.
    expect(JSON.stringify(sts.spec.template.spec.containers.map((c: any) => c.args))).not.toMatch(/--api-key/);
    if (t.apiKeyEnv === undefined) {
      // SGLang: the wrapper passes the variable to --api-key, after the engine's own command.
      expect(main.command.slice(0, 4).map((s: string) => kubeletExpand(s, {}))).toEqual([
        'sh',
        '-c',
        API_KEY_WRAPPER,
        'sh',
      ]);
      expect(main.command.slice(4)).toEqual(['python3', '-m', 'sglang.launch_server']);
    } else {
      expect(main.command ?? []).not.toContain('sh');
    }
    // Health and metrics stay open: the probes are unchanged.
    expect(main.readinessProbe.httpGet.path).toBe(e.engine.healthPath);
    expect(init).toBeDefined();
  });

  test('no key, no variable and no wrapper by default', () => {
    const { main } = synthEngine(e);
    expect(main.env.map((x: any) => x.name)).not.toContain(t.apiKeyEnv ?? WRAPPED_API_KEY_ENV);
    expect((main.command ?? [])[0]).not.toBe('sh');
  });

  test('trustRemoteCode opts in by name, with a pinned commit', () => {
    const { main } = synthEngine(e, { trustRemoteCode: true, revision: COMMIT });
    if (t.trustRemoteCodeEnv) expect(main.env).toContainEqual({ name: t.trustRemoteCodeEnv, value: 'true' });
    else expect(main.args).toContain(t.trustRemoteCodeFlag);
    const off = synthEngine(e, { trustRemoteCode: false }).main;
    expect([...(off.args ?? []), ...off.env.map((x: any) => x.name)]).not.toContain(
      t.trustRemoteCodeEnv ?? t.trustRemoteCodeFlag,
    );
  });

  test.each([[undefined], ['main'], ['v1.0'], [COMMIT.slice(1)], [COMMIT.toUpperCase()]])(
    'trustRemoteCode with revision %s is refused: code at a moving ref',
    revision => {
      expect(err({ trustRemoteCode: true, ...(revision !== undefined ? { revision } : {}) })).toMatch(
        new RegExp(
          `^${e.construct} 'svc': trustRemoteCode needs revision pinned to a commit \\(40 hexadecimal characters\\)`,
        ),
      );
    },
  );

  test('a local model path needs no revision for trustRemoteCode', () => {
    expect(() => synthEngine(e, { modelId: '/models/custom', trustRemoteCode: true })).not.toThrow();
  });

  test.each([['--trust-remote-code'], ['--trust-remote-code=true'], ['--trust-remote-code=false']])(
    'extraArgs %s is refused, naming trustRemoteCode',
    arg => {
      expect(err({ extraArgs: [arg] })).toMatch(
        new RegExp(`extraArgs\\[0\\] must not set --trust-remote-code: .*set trustRemoteCode: true`),
      );
    },
  );

  test.each([['--api-key', 'sk-live'], ['--api-key=sk-live']])(
    'extraArgs %s is refused, naming apiKeySecret, redacted',
    (...args) => {
      const message = err({ extraArgs: args });
      expect(message).toMatch(/extraArgs\[0\] must not set --api-key: .*set apiKeySecret/);
      expect(message).not.toContain('sk-live');
    },
  );

  test.each([['--hf-token=hf_abc'], ['--admin-api-key'], ['--db-password=x'], ['--client-secret=x']])(
    'the credential-flag class %s is refused without echoing the value',
    arg => {
      const message = err({ extraArgs: [arg] });
      expect(message).toMatch(/extraArgs\[0\] must not pass a credential on the command line/);
      expect(message).not.toMatch(/hf_abc/);
    },
  );

  test('flags that only look alike pass (boundary)', () => {
    const args = [
      '--no-trust-remote-code',
      '--max-num-batched-tokens=8192',
      '--tokenizer-mode=auto',
      '--api-server-count=1',
    ];
    expect(synthEngine(e, { extraArgs: args }).main.args).toEqual(expect.arrayContaining(args));
  });

  test("the engine's own variables are refused in env, literal or from a Secret", () => {
    for (const name of [t.apiKeyEnv ?? WRAPPED_API_KEY_ENV, t.trustRemoteCodeEnv].filter(Boolean) as string[]) {
      expect(err({ env: { [name]: 'x' } })).toMatch(new RegExp(`env\\.${name} (must not|must not be a literal)`));
      expect(err({ env: { [name]: EnvValue.fromSecretKey('s', 'k') } })).toMatch(
        new RegExp(
          `env\\.${name} must not be set: the ${e.construct} takes it only from (apiKeySecret|trustRemoteCode)`,
        ),
      );
    }
  });

  test('a literal API_KEY or HF_TOKEN in env is refused as a credential (class)', () => {
    expect(err({ env: { HF_TOKEN: 'hf_x' } })).toMatch(/env\.HF_TOKEN must not be a literal/);
    expect(err({ env: { TOKEN: 'x' } })).toMatch(/env\.TOKEN must not be a literal/);
  });

  test('apiKeySecret is checked', () => {
    expect(err({ apiKeySecret: { name: 'Bad_Name', key: 'k' } })).toMatch(/apiKeySecret\.name/);
    expect(err({ apiKeySecret: { name: 's', key: '' } })).toMatch(/apiKeySecret\.key/);
    expect(err({ apiKeySecret: { name: 's', key: 'k', value: 'x' } })).toMatch(/apiKeySecret/);
    expect(err({ trustRemoteCode: 'yes' })).toMatch(/trustRemoteCode/);
  });
});

describe.each(Object.entries(SHELLS))('the API key wrapper under %s', (shell, path) => {
  const run = (key: string | undefined) => {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
    if (key !== undefined) env[WRAPPED_API_KEY_ENV] = key;
    const argv = shell === 'busybox' ? ['sh', '-c', API_KEY_WRAPPER] : ['-c', API_KEY_WRAPPER];
    return spawnSync(path!, [...argv, 'sh', 'printf', '[%s]', '--model-path', 'a b', '$HOME'], {
      env,
      encoding: 'utf8',
    });
  };

  (path ? test : test.skip)('passes the key as the last flag, every argument intact', () => {
    const r = run(`k'ey "$(id)" \\ *`);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`[--model-path][a b][$HOME][--api-key][k'ey "$(id)" \\ *]`);
  });

  (path ? test : test.skip)('refuses an empty or missing key instead of serving without authentication', () => {
    for (const key of ['', undefined]) {
      const r = run(key);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/API key Secret key is empty/);
    }
  });
});

test('the wrapper is valid POSIX sh (dash -n)', () => {
  if (!SHELLS.dash) return;
  execFileSync(SHELLS.dash, ['-n', '-c', API_KEY_WRAPPER]);
});
