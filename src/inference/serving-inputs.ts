import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { configKey } from '../common/env';
import { ImageRef } from '../common/image-ref';
import { Validator } from '../validation/validate';
import { ImageFact, ServingEngine } from './engine';

// The serving props that reach the engine's command line and environment, checked as the engine
// and huggingface_hub would take them, so nothing the construct accepts fails in the container.

/** huggingface_hub's REPO_ID_REGEX: an optional namespace, then a name of 1-96 characters. */
const HUB_REPO_ID = /^(?:\w(?:[\w.-]*\w)?\/)?\w(?:[\w.-]{0,94}\w)?$/;
/** The variables that place huggingface_hub's cache (and transformers' older one). */
const HUB_CACHE_VARIABLES = ['HF_HOME', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_CACHE'];

/** A GGUF quantization name as repositories spell it in file names (`Q4_K_M`, `IQ2_XS`, `BF16`). */
const GGUF_QUANT = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * A hub repository id or an absolute path, as the download and the server take it; with an engine
 * that takes it (vLLM), `org/name:QUANT`, the GGUF file of that quantization.
 */
export function modelIdOf(v: Validator, value: string, engine?: ServingEngine, prop = 'modelId'): string {
  const modelId = v.nonEmpty(prop, value);
  // Both become command-line arguments: a leading "-" would be read as a flag.
  if (/\s/.test(modelId) || modelId.startsWith('-'))
    v.fail(prop, 'must be a hub id or an absolute path, without whitespace or a leading "-"', modelId);
  if (modelId.startsWith('/')) return modelId;
  const colon = modelId.indexOf(':');
  const repo = colon < 0 ? modelId : modelId.slice(0, colon);
  if (colon >= 0) {
    if (!engine?.ggufModelForm) {
      v.fail(
        prop,
        `must be a hub repository id or an absolute path: the "repo:QUANT" GGUF form is vLLM's, ${engine?.construct ?? 'this engine'} does not take it (download the .gguf file to a volume and give its path)`,
        modelId,
      );
    }
    if (!GGUF_QUANT.test(modelId.slice(colon + 1)))
      v.fail(prop, 'must name a GGUF quantization after ":" (e.g. "org/name-GGUF:Q4_K_M")', modelId);
  }
  // huggingface_hub's validate_repo_id (utils/_validators.py) refuses anything else before a download starts.
  if (!HUB_REPO_ID.test(repo) || repo.includes('--') || repo.includes('..') || repo.endsWith('.git')) {
    v.fail(
      prop,
      'must be a hub repository id ("name" or "org/name": letters, digits, "-", "_" and ".", at most 96 for the name, no "--" or "..", not ending in ".git") or an absolute path',
      modelId,
    );
  }
  return modelId;
}

/** A branch, tag or commit of the model repository. */
export function revisionOf(v: Validator, value: string | undefined, prop = 'revision'): string | undefined {
  if (value === undefined) return undefined;
  const revision = v.nonEmpty(prop, value);
  if (/\s/.test(revision) || revision.startsWith('-'))
    v.fail(prop, 'must be a branch, tag or commit, without whitespace or a leading "-"', revision);
  return revision;
}

/** `--flag=value` as [flag, value]; any other argument as [argument, undefined]. */
function splitFlag(arg: string): [string, string | undefined] {
  const eq = arg.indexOf('=');
  return eq > 0 && arg.startsWith('--') ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
}

/** The value of `flag` in args (`--flag value` or `--flag=value`), if given. */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = splitFlag(args[i]);
    if (name === flag) return inline ?? args[i + 1] ?? '';
  }
  return undefined;
}

/** Whether argparse (allow_abbrev) would expand `flag`, a prefix, to `target`. */
function abbreviates(engine: ServingEngine, flag: string, target: string): boolean {
  return engine.abbreviatedFlags && flag.startsWith('--') && flag.length > 2 && target.startsWith(flag);
}

/** Extra engine flags: none the construct sets or the engine cannot run with, in any spelling. */
export function extraArgsOf(
  v: Validator,
  engine: ServingEngine,
  value: string[] | undefined,
  tensorParallel: { size: number; of: string },
  /** Whether `kvCacheOffload` gives the engine a host-memory KV tier. */
  kvTier = false,
  /** Flags refused beyond the engine's own: set by another prop, or that the replica's layout cannot take. */
  more: readonly FlagRefusal[] = [],
): string[] {
  const extraArgs = v.stringArray('extraArgs', value) ?? [];
  const refusedFlags = extraArgs.length > 0 ? withMoreFlags(refusedFlagsOf(engine), more) : undefined;
  extraArgs.forEach((arg, i) => {
    if (engine.argsWordSplit && /[\s*?[]/.test(arg)) {
      v.fail(
        `extraArgs[${i}]`,
        "must not contain whitespace or glob characters: the image's entrypoint passes arguments through an unquoted $@, which would split or expand it (use the equivalent environment variable through env)",
        arg,
      );
    }
    const flag = arg.split('=')[0];
    const exact = refusedFlags!.get(flag);
    if (exact) v.fail(`extraArgs[${i}]`, `must not set ${flag}: ${exact.set}`, arg);
    const expands = [...refusedFlags!.keys()].find(f => abbreviates(engine, flag, f));
    if (expands)
      v.fail(
        `extraArgs[${i}]`,
        `must not abbreviate ${expands}: argparse expands ${flag} to it${refusedFlags!.get(expands)!.expanded}`,
        arg,
      );
  });
  refuseHubReferences(v, engine, extraArgs);
  refuseUnservedLoadFormat(v, engine, extraArgs);
  refuseIndivisibleParallelism(v, engine, extraArgs, tensorParallel);
  // Host caches the construct would not size, or flags the kvCacheOffload tier overrides.
  const unsized =
    typeof engine.kvOffload === 'string' ? undefined : engine.kvOffload.refuseExtraArgs(extraArgs, kvTier);
  if (unsized) v.fail('extraArgs', unsized, extraArgs);
  return extraArgs;
}

/** A group size that does not divide the tensor-parallel ranks leaves the engine no way to form its groups. */
function refuseIndivisibleParallelism(
  v: Validator,
  engine: ServingEngine,
  extraArgs: string[],
  tp: { size: number; of: string },
): void {
  const divisors = engine.tensorParallelDivisors;
  if (!divisors) return;
  extraArgs.forEach((arg, i) => {
    const [flag, inline] = splitFlag(arg);
    const named = divisors.flags.find(f => f === flag || abbreviates(engine, flag, f));
    if (named === undefined) return;
    const at = inline !== undefined ? i : i + 1;
    const value = inline ?? extraArgs[i + 1];
    if (value === undefined) v.fail(`extraArgs[${i}]`, `needs a value after ${named}`, arg);
    // argparse's int(): surrounding whitespace, a sign and leading zeros are accepted.
    const n = /^\s*\+?\d+\s*$/.test(value) ? Number(value) : NaN;
    if (!(n >= 1 && tp.size % n === 0))
      v.fail(
        `extraArgs[${at}]`,
        `must be a whole number dividing the tensor-parallel size ${tp.size} (${tp.of}) as ${named}: ${divisors.why}`,
        value,
      );
  });
}

/** A weight format the download does not fetch would leave the offline server without its files. */
function refuseUnservedLoadFormat(v: Validator, engine: ServingEngine, extraArgs: string[]): void {
  const lf = engine.loadFormat;
  if (!lf) return;
  extraArgs.forEach((arg, i) => {
    const value =
      arg === lf.flag ? extraArgs[i + 1] : arg.startsWith(`${lf.flag}=`) ? arg.slice(lf.flag.length + 1) : undefined;
    if (value !== undefined && !lf.served.includes(value)) {
      v.fail(
        `extraArgs[${arg === lf.flag ? i + 1 : i}]`,
        `must be a ${lf.flag} the download serves (${lf.served.join(', ')}): it fetches the weights the engine's auto format loads (safetensors, else bin, else pt), so the offline server would not find the files ${value} reads`,
        value,
      );
    }
  });
}

/**
 * The server runs offline (HF_HUB_OFFLINE=1) on what the download put in the cache: a flag naming
 * another model, tokenizer or adapter by hub id would fail at start. Each such value must be an
 * absolute path (a volume, or a repository's snapshot directory in the cache).
 */
function refuseHubReferences(v: Validator, engine: ServingEngine, extraArgs: string[]): void {
  extraArgs.forEach((arg, i) => {
    const [flag, inline] = splitFlag(arg);
    const what = Object.prototype.hasOwnProperty.call(engine.offlinePathFlags, flag)
      ? engine.offlinePathFlags[flag]
      : undefined;
    if (what === undefined) return;
    const values: [number, string][] = [];
    if (inline !== undefined) values.push([i, inline]);
    else for (let j = i + 1; j < extraArgs.length && !extraArgs[j].startsWith('-'); j++) values.push([j, extraArgs[j]]);
    for (const [j, value] of values) {
      for (const path of pathsOf(value)) {
        if (!path.startsWith('/')) {
          v.fail(
            `extraArgs[${j}]`,
            `must name ${what} (${flag}) by an absolute path: the server runs offline (HF_HUB_OFFLINE=1), so ${JSON.stringify(path)} is never fetched from the hub (put it on a volume and name its path)`,
            extraArgs[j],
          );
        }
      }
    }
  });
}

/** The same for the variables the engine reads like those flags (TGI `LORA_ADAPTERS`), set through `env`. */
export function refuseHubReferencesInEnv(
  v: Validator,
  engine: ServingEngine,
  env: Record<string, unknown> | undefined,
): void {
  for (const [name, what] of Object.entries(engine.offlinePathEnv)) {
    const value = env && Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
    if (typeof value !== 'string') continue;
    for (const path of pathsOf(value)) {
      if (!path.startsWith('/'))
        v.fail(
          `env.${name}`,
          `must name ${what} by an absolute path: the server runs offline (HF_HUB_OFFLINE=1), so ${JSON.stringify(path)} is never fetched from the hub (put it on a volume and name its path)`,
          value,
        );
    }
  }
}

/** The paths one value of such a flag names: a JSON object's path, or each `[name=]path` of a comma list. */
function pathsOf(value: string): string[] {
  if (value.trim().startsWith('{')) {
    try {
      const o = JSON.parse(value) as Record<string, unknown>;
      return [o.path ?? o.lora_path].filter((p): p is string => typeof p === 'string');
    } catch {
      return [value];
    }
  }
  return value
    .split(',')
    .filter(item => item !== '')
    .map(item => (item.includes('=') ? item.slice(item.indexOf('=') + 1) : item));
}

interface RefusedFlag {
  /** Why the flag itself is refused. */
  readonly set: string;
  /** Why an abbreviation that argparse expands to it is refused. */
  readonly expanded: string;
}

const REFUSED_FLAGS = new WeakMap<ServingEngine, ReadonlyMap<string, RefusedFlag>>();

/**
 * Flags extraArgs may not set, with why: what the engine cannot run with, then what the
 * construct sets (an abbreviation is judged by the first flag it expands to, in this order).
 * Engine facts, so made once per engine.
 */
/** Flags `extraArgs` must not hold, as exact names and as argparse abbreviations, and why. */
export interface FlagRefusal {
  readonly flags: readonly string[];
  /** Why, after "must not set <flag>: ". */
  readonly set: string;
  /** Why, after "argparse expands <abbreviation> to it". */
  readonly expanded: string;
}

/** The flags another prop sets, refused in `extraArgs`. */
export function setByProp(flags: readonly string[], prop: string): FlagRefusal {
  return { flags, set: `${prop} sets it`, expanded: `, which ${prop} sets` };
}

/** Flags refused for a reason of their own (`flag` -> why), none when `why` is undefined. */
export function refusedBecause(why: Readonly<Record<string, string>> | undefined): FlagRefusal[] {
  return Object.entries(why ?? {}).map(([flag, reason]) => ({ flags: [flag], set: reason, expanded: `; ${reason}` }));
}

/** The engine's refused flags and more. */
function withMoreFlags(
  flags: ReadonlyMap<string, RefusedFlag>,
  more: readonly FlagRefusal[],
): ReadonlyMap<string, RefusedFlag> {
  if (more.length === 0) return flags;
  const all = new Map(flags);
  for (const r of more) for (const f of r.flags) all.set(f, { set: r.set, expanded: r.expanded });
  return all;
}

function refusedFlagsOf(engine: ServingEngine): ReadonlyMap<string, RefusedFlag> {
  let flags = REFUSED_FLAGS.get(engine);
  if (!flags) {
    flags = new Map<string, RefusedFlag>([
      ...Object.entries(engine.contradictingFlags).map(([f, why]): [string, RefusedFlag] => [
        f,
        { set: `it ${why}`, expanded: `, which ${why}` },
      ]),
      ...Object.entries(engine.ownedFlags).map(([f, via]): [string, RefusedFlag] => {
        const from = via ? ` from ${via}` : '';
        return [
          f,
          {
            set: `the construct sets it${from}, and probes, Services and validation depend on it`,
            expanded: ` (or refuses it as ambiguous), and the construct sets it${from}`,
          },
        ];
      }),
    ]);
    REFUSED_FLAGS.set(engine, flags);
  }
  return flags;
}

/** The engine's facts about releases of its published image, against the tag of `image`. */
export function checkImageFacts(
  v: Validator,
  facts: readonly ImageFact[],
  image: string,
  nonRootBy: [string, unknown] | undefined,
): void {
  const ref = ImageRef.parse(image);
  const release = (x: readonly number[]) => x.join('.');
  for (const f of facts) {
    if (ref.repository !== f.repository) continue;
    if (f.minimum && ref.isBefore(f.minimum))
      v.fail('image', `must be release ${release(f.minimum)} or later: ${f.why}`, image);
    if (f.rootOnlyFrom && nonRootBy && ref.version && !ref.isBefore(f.rootOnlyFrom)) {
      const [prop, value] = nonRootBy;
      v.fail(
        prop,
        `asks for a non-root pod, which ${image} (${f.rootOnlyFrom.every(n => n === 0) ? 'every release' : `release ${release(f.rootOnlyFrom)} or later`}) cannot run: ${f.why}; leave runAsRoot unset (true)`,
        value,
      );
    }
  }
}

/**
 * The hub cache's location is the model cache volume: the download fills it there and the server
 * reads it offline. huggingface_hub takes HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE) over
 * HF_HOME (huggingface_hub/constants.py), so any of them set elsewhere loses the weights.
 */
export function refuseHubCacheEnv(v: Validator, env: Record<string, unknown> | undefined, cachePath: string): void {
  for (const variable of HUB_CACHE_VARIABLES) {
    if (env && Object.prototype.hasOwnProperty.call(env, variable)) {
      v.fail(
        `env.${variable}`,
        `must not be set: it moves the hub cache off the model cache volume (${cachePath}), where the download fills it and the server reads it offline; set modelCache instead`,
        variable,
      );
    }
  }
}

/** The hub token from a Secret, as HF_TOKEN. */
export function hubTokenEnv(
  v: Validator,
  secret: { name: string; key: string } | undefined,
  env: Record<string, unknown> | undefined,
): k8s.EnvVar[] {
  if (!secret) return [];
  v.knownProps('hfTokenSecret', secret, ['name', 'key']);
  v.dnsSubdomain('hfTokenSecret.name', secret.name);
  configKey(v, 'hfTokenSecret.key', v.nonEmpty('hfTokenSecret.key', secret.key));
  if (env && Object.prototype.hasOwnProperty.call(env, 'HF_TOKEN')) {
    v.fail('env.HF_TOKEN', 'is set by hfTokenSecret: set one of them', 'HF_TOKEN');
  }
  return [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: secret.name, key: secret.key } } }];
}
