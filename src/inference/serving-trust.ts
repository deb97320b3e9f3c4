import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { configKey, isCredentialEnvName } from '../common/env';
import { OwnedEnv } from '../common/workload-pod';
import { Validator } from '../validation/validate';
import { Launch, ServingEngine } from './engine';

// The two trust decisions of a server, taken only through props: who may call it (an API key from a
// Secret) and whether it runs the model repository's Python code. Every flag and variable that
// reaches either is refused elsewhere (extraArgs, env), naming the prop.

/** The variable the shell wrapper reads the key from, for an engine that takes it only as a flag. */
export const WRAPPED_API_KEY_ENV = 'SERVING_API_KEY';

/**
 * The wrapper: refuses an empty key (an empty `--api-key` turns authentication off in every engine:
 * `if api_key:`), then runs the engine's own command with the key as its last flag. POSIX sh, run
 * by the tests under dash and busybox. The key is in the server's argv (readable in
 * `/proc/<pid>/cmdline` by the pod's other processes): SGLang offers no other way.
 */
export const API_KEY_WRAPPER =
  `[ -n "\${${WRAPPED_API_KEY_ENV}:-}" ] || { echo "serving: the API key Secret key is empty; refusing to serve without authentication" >&2; exit 1; }\n` +
  `exec "$@" --api-key "$${WRAPPED_API_KEY_ENV}"`;

/** The trust props of a serving construct. */
export interface ServingTrustProps {
  readonly apiKeySecret?: { readonly name: string; readonly key: string };
  readonly trustRemoteCode?: boolean;
  readonly revision?: string;
  readonly modelId?: string;
  readonly extraArgs?: string[];
  readonly env?: Record<string, unknown>;
}

const COMMIT = /^[0-9a-f]{40}$/;

/**
 * The engine's launch with the trust props applied: the API key from its Secret (as the engine's
 * variable, or through the wrapper), remote code when asked for by name; and every other way to
 * either refused in `extraArgs` and `env`.
 */
export function applyServingTrust(
  v: Validator,
  engine: ServingEngine,
  props: ServingTrustProps,
  launch: Launch,
): Launch {
  const t = engine.trust;
  refuseTrustArgs(v, engine, props.extraArgs);
  refuseTrustEnv(v, engine, props.env);
  const trust = v.boolean('trustRemoteCode', props.trustRemoteCode, false);
  if (trust && !props.modelId?.startsWith('/') && !(props.revision !== undefined && COMMIT.test(props.revision)))
    v.failDescribed(
      'trustRemoteCode',
      "needs revision pinned to a commit (40 hexadecimal characters): the server runs the repository's Python code, and a branch or tag can move to code nobody reviewed",
      props.revision === undefined ? 'no revision' : `revision ${JSON.stringify(props.revision)}`,
    );
  const env: OwnedEnv[] = [];
  const args: string[] = [];
  if (trust) {
    if (t.trustRemoteCodeEnv) env.push({ env: { name: t.trustRemoteCodeEnv, value: 'true' }, via: 'trustRemoteCode' });
    else args.push(t.trustRemoteCodeFlag);
  }
  let command = launch.command;
  const secret = props.apiKeySecret;
  if (secret !== undefined) {
    v.knownProps('apiKeySecret', secret, ['name', 'key']);
    v.dnsSubdomain('apiKeySecret.name', secret.name);
    configKey(v, 'apiKeySecret.key', v.nonEmpty('apiKeySecret.key', secret.key));
    const valueFrom: k8s.EnvVarSource = { secretKeyRef: { name: secret.name, key: secret.key } };
    env.push({ env: { name: t.apiKeyEnv ?? WRAPPED_API_KEY_ENV, valueFrom }, via: 'apiKeySecret' });
    if (t.apiKeyEnv === undefined) {
      // Without a variable the key goes to the flag, read from the environment by a shell.
      if (!launch.command)
        throw new Error(`${engine.construct}: an engine without an API key variable needs its own command`);
      command = ['sh', '-c', API_KEY_WRAPPER, 'sh', ...launch.command];
    }
  }
  return { ...launch, ...(command ? { command } : {}), args: [...launch.args, ...args], env: [...launch.env, ...env] };
}

/**
 * The credential flags as command-line names: `--api-key`, and every `--<x>-token`, `--<x>-password`
 * ... (the CREDENTIAL_ENV suffixes): a literal credential in `extraArgs` is in the pod spec.
 */
function credentialFlag(flag: string): boolean {
  if (!flag.startsWith('--') || flag.length <= 2) return false;
  return isCredentialEnvName(flag.slice(2).replace(/-/g, '_'));
}

function refuseTrustArgs(v: Validator, engine: ServingEngine, extraArgs: string[] | undefined): void {
  if (!Array.isArray(extraArgs)) return; // extraArgsOf reports the type
  const t = engine.trust;
  extraArgs.forEach((arg, i) => {
    if (typeof arg !== 'string') return;
    const flag = arg.split('=')[0];
    // argparse expands an unambiguous prefix (`--trust-remote` is `--trust-remote-code`).
    const is = (target: string) =>
      flag === target ||
      (engine.abbreviatedFlags && flag.length > 3 && flag.startsWith('--') && target.startsWith(flag));
    if (is(t.trustRemoteCodeFlag))
      v.fail(
        `extraArgs[${i}]`,
        `must not set ${t.trustRemoteCodeFlag}: it runs the model repository's Python code in the server; set trustRemoteCode: true (with a pinned revision) to opt in by name`,
        arg,
      );
    if (is(t.apiKeyFlag))
      v.failDescribed(
        `extraArgs[${i}]`,
        `must not set ${t.apiKeyFlag}: a literal key in the pod spec is readable by anyone who can read the workload; set apiKeySecret (a Secret key) instead`,
        `${flag}${arg.includes('=') ? '=<redacted>' : ''}`,
      );
    if (credentialFlag(flag))
      v.failDescribed(
        `extraArgs[${i}]`,
        `must not pass a credential on the command line (${flag}): it would be a literal in the pod spec; give the engine its variable from a Secret through env (EnvValue.fromSecretKey)`,
        `${flag}${arg.includes('=') ? '=<redacted>' : ''}`,
      );
  });
}

function refuseTrustEnv(v: Validator, engine: ServingEngine, env: Record<string, unknown> | undefined): void {
  if (env === undefined || typeof env !== 'object' || env === null) return;
  const t = engine.trust;
  const owned: Array<[string | undefined, string]> = [
    [t.apiKeyEnv, 'apiKeySecret'],
    [t.apiKeyEnv === undefined ? WRAPPED_API_KEY_ENV : undefined, 'apiKeySecret'],
    [t.trustRemoteCodeEnv, 'trustRemoteCode'],
  ];
  for (const [name, prop] of owned) {
    if (name !== undefined && Object.prototype.hasOwnProperty.call(env, name))
      v.fail(`env.${name}`, `must not be set: the ${engine.construct} takes it only from ${prop}`, name);
  }
}
