import { Duration, Size } from 'cdk8s';

/**
 * Thrown for a construct prop that breaks a rule. The message always reads
 * `<Construct> '<id>': <prop> <rule> (got <value>)`, so a user can find the line to change.
 */
export class ConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigurationError';
  }
}

/** The largest value of a Kubernetes int32 field (replicas, UIDs, seconds). */
export const INT32_MAX = 2147483647;

/** 2^63 bytes in KiB: the largest size Kubernetes counts (an int64 of bytes). */
const MAX_SIZE_KIB = 2 ** 53;

/** What the API server allows in an object's annotations: keys and values, in bytes. */
export const ANNOTATIONS_MAX_BYTES = 256 * 1024;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// Service names are DNS-1035 labels: they must also start with a letter.
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
// The reference grammar of distribution/reference, simplified: lower-case path components, an
// optional registry host with port, an optional tag and an optional digest.
const IMAGE_REF =
  /^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$/;

/** The known name nearest to `key` by edit distance, if any is close enough to be a typo. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** The size of annotations as the API server counts it: the UTF-8 bytes of every key and value. */
export function annotationBytes(annotations: Record<string, string>): number {
  let total = 0;
  for (const [key, val] of Object.entries(annotations)) total += Buffer.byteLength(key) + Buffer.byteLength(val);
  return total;
}

const TIME_ABBR: Record<string, string> = { millis: 'ms', seconds: 's', minutes: 'm', hours: 'h', days: 'd' };

/** A value as the user wrote it: sizes and durations in their own unit (`16Gi`, `5h`), not converted. */
export function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'function') return 'a function';
  if (value instanceof Size) {
    const s = value as unknown as { amount: number; unit: { abbr: string } };
    return `${s.amount}${s.unit.abbr}`;
  }
  if (value instanceof Duration) {
    const d = value as unknown as { amount: number; unit: { label: string } };
    return `${d.amount}${TIME_ABBR[d.unit.label] ?? ` ${d.unit.label}`}`;
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * One validator per construct instance: it knows who is speaking, so every check words its
 * error the same way.
 */
export class Validator {
  constructor(
    private readonly construct: string,
    private readonly id: string,
  ) {}

  /** Throws `<Construct> '<id>': <prop> <rule> (got <value>)`. */
  fail(prop: string, rule: string, got?: unknown): never {
    const suffix = arguments.length >= 3 ? ` (got ${show(got)})` : '';
    throw new ConfigurationError(`${this.construct} '${this.id}': ${prop} ${rule}${suffix}`);
  }

  /** Like fail, with the offending value already described (e.g. `53 characters: ...`). */
  failDescribed(prop: string, rule: string, described: string): never {
    throw new ConfigurationError(`${this.construct} '${this.id}': ${prop} ${rule} (got ${described})`);
  }

  /** A whole number in [min, max]. */
  /** A whole number in [min, max]; max defaults to the int32 limit of Kubernetes integer fields. */
  wholeNumber(prop: string, value: number, min: number, max: number = INT32_MAX): number {
    const ok = typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
    if (!ok) {
      const range =
        max !== INT32_MAX
          ? `from ${min} to ${max}`
          : `>= ${min}${typeof value === 'number' && value > max ? ` and at most ${max}, the largest Kubernetes integer` : ''}`;
      this.fail(prop, `must be a whole number ${range}`, value);
    }
    return value;
  }

  /** A DNS-1123 label (pods, StatefulSets, claims). */
  dnsLabel(prop: string, value: string, maxLength = 63): string {
    if (typeof value !== 'string' || value.length === 0) {
      this.fail(prop, 'must be a non-empty DNS-1123 label', value);
    }
    if (!DNS1123_LABEL.test(value)) {
      this.fail(
        prop,
        'must be a DNS-1123 label: lower-case letters, digits and "-", starting and ending with a letter or digit',
        value,
      );
    }
    if (value.length > maxLength) {
      this.failDescribed(prop, `must be at most ${maxLength} characters`, `${value.length} characters: ${value}`);
    }
    return value;
  }

  /** A DNS-1035 label: what a Service name must be. */
  serviceName(prop: string, value: string, maxLength = 63): string {
    this.dnsLabel(prop, value, maxLength);
    if (!DNS1035_LABEL.test(value)) {
      this.fail(prop, 'must start with a letter, because it names a Service (DNS-1035 label)', value);
    }
    return value;
  }

  /** A DNS-1123 subdomain (Secrets, ConfigMaps, PersistentVolumes). */
  dnsSubdomain(prop: string, value: string): string {
    if (typeof value !== 'string' || value.length === 0 || value.length > 253 || !DNS1123_SUBDOMAIN.test(value)) {
      this.fail(
        prop,
        'must be a DNS-1123 subdomain: lower-case letters, digits, "-" and ".", at most 253 characters',
        value,
      );
    }
    return value;
  }

  nonEmpty(prop: string, value: string): string {
    if (typeof value !== 'string' || value.trim().length === 0) this.fail(prop, 'must be a non-empty string', value);
    return value;
  }

  /**
   * An absolute path as the kubelet compares them: as strings. `/data/` or `//data` next to a
   * construct's `/data` passes every duplicate check and mounts over it, so only the normalized form
   * is taken.
   */
  absolutePath(prop: string, value: string): string {
    if (typeof value !== 'string' || !value.startsWith('/') || value.split('/').includes('..')) {
      this.fail(prop, 'must be an absolute path without ".." segments', value);
    }
    if (value.length > 1 && (value.endsWith('/') || /\/\/|\/\.(\/|$)/.test(value))) {
      this.fail(
        prop,
        'must be a normalized absolute path (no "//", "/./" or trailing "/"), because the kubelet compares mount paths as strings',
        value,
      );
    }
    return value;
  }

  /** A cdk8s Size of a whole number of KiB above zero (Kubernetes quantities have no fractions of a byte). */
  positiveSize(prop: string, value: Size): Size {
    if (!(value instanceof Size)) this.fail(prop, 'must be a Size, e.g. Size.gibibytes(16)', value);
    let kib: number;
    try {
      kib = value.toKibibytes();
    } catch {
      return this.fail(
        prop,
        'must be a whole number of KiB, e.g. Size.mebibytes(1331) rather than Size.gibibytes(1.3)',
        value,
      );
    }
    if (!(kib > 0) || !Number.isFinite(kib)) this.fail(prop, 'must be a positive size', value);
    // Past 2^53 KiB a size is no longer a whole number in a double, and its quantity is written with
    // an exponent (`9.765625e+296Ti`) that the API server refuses.
    if (kib > MAX_SIZE_KIB)
      this.fail(prop, 'must be at most 8Ei (2^63 bytes), the largest size Kubernetes counts', value);
    return value;
  }

  boolean(prop: string, value: boolean | undefined, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') this.fail(prop, 'must be true or false', value);
    return value;
  }

  /** A container image reference: no whitespace, no upper-case repository, as the kubelet parses it. */
  image(prop: string, value: string): string {
    if (typeof value !== 'string' || !IMAGE_REF.test(value)) {
      this.fail(
        prop,
        'must be an image reference such as "registry/repo:tag" or "repo@sha256:<digest>" (lower-case repository, no whitespace)',
        value,
      );
    }
    return value;
  }

  /** Label keys and values as the API server validates them (qualified names, 63-character values). */
  labels(prop: string, value: Record<string, string> | undefined): Record<string, string> {
    if (value === undefined) return {};
    this.plainObject(prop, value);
    for (const [key, val] of Object.entries(value)) {
      this.qualifiedName(`${prop} key`, key);
      this.labelValue(`${prop}.${key}`, val);
    }
    return value;
  }

  /** One label value (also what label selectors and toleration values must be). */
  labelValue(prop: string, value: unknown): string {
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) {
      this.fail(
        prop,
        'must be a label value: at most 63 characters, letters, digits, "-", "_" and ".", starting and ending with a letter or digit',
        value,
      );
    }
    return value;
  }

  /** Annotation keys are qualified names; values any string, 256 KiB in all (in UTF-8 bytes, as the server counts). */
  annotations(prop: string, value: Record<string, string> | undefined): Record<string, string> {
    if (value === undefined) return {};
    this.plainObject(prop, value);
    for (const [key, val] of Object.entries(value)) {
      this.qualifiedName(`${prop} key`, key);
      if (typeof val !== 'string') this.fail(`${prop}.${key}`, 'must be a string', val);
    }
    const total = annotationBytes(value);
    if (total > ANNOTATIONS_MAX_BYTES) this.fail(prop, 'must total at most 256 KiB', `${total} bytes`);
    return value;
  }

  /** A qualified name (`prefix/name` or `name`), as label and annotation keys and resource names are. */
  qualifiedName(prop: string, value: string): string {
    const [prefix, name, extra] =
      typeof value === 'string' ? (value.includes('/') ? value.split('/') : [undefined, value]) : [];
    const ok =
      typeof value === 'string' &&
      extra === undefined &&
      name !== undefined &&
      name.length > 0 &&
      name.length <= 63 &&
      QUALIFIED_NAME.test(name) &&
      (prefix === undefined || (prefix.length <= 253 && DNS1123_SUBDOMAIN.test(prefix)));
    if (!ok)
      this.fail(
        prop,
        'must be a qualified name: an optional DNS subdomain prefix and "/", then at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
        value,
      );
    return value;
  }

  /** An object literal (not an array, not null). */
  plainObject(prop: string, value: unknown): void {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      this.fail(prop, 'must be an object', value);
  }

  /** A member of a string enum, e.g. a quantization method: the message lists the members. */
  enumValue<T extends string>(prop: string, value: T, members: Record<string, T>, enumName: string): T {
    const all = Object.values(members);
    if (!all.includes(value)) this.fail(prop, `must be a ${enumName} (${all.join(', ')})`, value);
    return value;
  }

  /** A single word: a non-empty string without whitespace (a model name on a command line). */
  /** A single command-line argument value: argparse would read a leading "-" as the next flag. */
  word(prop: string, value: string): string {
    if (typeof value !== 'string' || value.trim() === '' || /\s/.test(value))
      this.fail(prop, 'must be a non-empty name without whitespace', value);
    if (value.startsWith('-'))
      this.fail(
        prop,
        'must not start with "-": it is a command-line argument, and the engine would read it as a flag',
        value,
      );
    return value;
  }

  /** An array (of anything), or an empty one when absent. */
  array<T>(prop: string, value: readonly T[] | undefined): readonly T[] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) this.fail(prop, 'must be an array', value);
    return value;
  }

  /** An array of strings, each non-empty. */
  stringArray(prop: string, value: string[] | undefined): string[] | undefined {
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) this.fail(prop, 'must be an array of strings', value);
    value.forEach((s, i) => {
      if (typeof s !== 'string') this.fail(`${prop}[${i}]`, 'must be a string', s);
    });
    return value;
  }

  /**
   * Refuses a prop key the construct does not know (a typo in a props object built at run time, or
   * a JavaScript caller), naming the closest known one.
   */
  knownProps(prefix: string, props: object | undefined, known: readonly string[]): void {
    if (props === undefined) return;
    // Callers name the prop either way (`gateway` or `gateway.`); the message joins with one dot.
    const base = prefix.replace(/\.$/, '');
    this.plainObject(base || 'props', props);
    for (const key of Object.keys(props)) {
      if (known.includes(key) || (props as Record<string, unknown>)[key] === undefined) continue;
      const near = closest(key, known);
      const prop = base ? `${base}.${key}` : key;
      this.fail(
        prop,
        `is not a known prop${near ? `; did you mean '${near}'?` : ''} (known: ${known.join(', ')})`,
        (props as Record<string, unknown>)[key],
      );
    }
  }

  positive(prop: string, value: number): number {
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value))
      this.fail(prop, 'must be a positive number', value);
    return value;
  }

  /** The /dev/shm size: positive and below the memory limit it counts against. */
  /** A ratio or quantile strictly between 0 and 1: the value given, else `fallback`. */
  fraction(prop: string, value: number | undefined, fallback: number): number {
    const x = value ?? fallback;
    if (typeof x !== 'number' || !(x > 0 && x < 1)) this.fail(prop, 'must be a number above 0 and below 1', value);
    return x;
  }

  sharedMemory(value: Size, memory: Size): Size {
    this.positiveSize('sharedMemory', value);
    if (value.toKibibytes() >= memory.toKibibytes()) {
      this.fail(
        'sharedMemory',
        `must be smaller than memory (${memory.asString()}), because /dev/shm usage counts against the memory limit`,
        value,
      );
    }
    return value;
  }

  envName(prop: string, value: string): string {
    if (typeof value !== 'string' || !ENV_VAR_NAME.test(value))
      this.fail(prop, 'must be a valid environment variable name', value);
    return value;
  }

  /** Whole seconds in [minSeconds, maxSeconds]. */
  seconds(prop: string, value: Duration, minSeconds: number, maxSeconds?: number): number {
    if (!(value instanceof Duration)) this.fail(prop, 'must be a Duration, e.g. Duration.seconds(30)', value);
    const s = value.toSeconds({ integral: false });
    if (!Number.isInteger(s) || s < minSeconds || (maxSeconds !== undefined && s > maxSeconds)) {
      const range = maxSeconds === undefined ? `>= ${minSeconds}s` : `from ${minSeconds}s to ${maxSeconds}s`;
      this.fail(prop, `must be a whole number of seconds ${range}`, value);
    }
    return s;
  }
}
