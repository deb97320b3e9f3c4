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

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// Service names are DNS-1035 labels: they must also start with a letter.
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Size) return `${value.toMebibytes()}Mi`;
  if (value instanceof Duration) return `${value.toSeconds()}s`;
  return JSON.stringify(value) ?? String(value);
}

/**
 * One validator per construct instance: it knows who is speaking, so every check words its
 * error the same way.
 */
export class Validator {
  constructor(private readonly construct: string, private readonly id: string) {}

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
  wholeNumber(prop: string, value: number, min: number, max?: number): number {
    const ok = typeof value === 'number' && Number.isInteger(value) && value >= min && (max === undefined || value <= max);
    if (!ok) {
      this.fail(prop, max === undefined ? `must be a whole number >= ${min}` : `must be a whole number from ${min} to ${max}`, value);
    }
    return value;
  }

  /** A DNS-1123 label (pods, StatefulSets, claims). */
  dnsLabel(prop: string, value: string, maxLength = 63): string {
    if (typeof value !== 'string' || value.length === 0) {
      this.fail(prop, 'must be a non-empty DNS-1123 label', value);
    }
    if (!DNS1123_LABEL.test(value)) {
      this.fail(prop, 'must be a DNS-1123 label: lower-case letters, digits and "-", starting and ending with a letter or digit', value);
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
      this.fail(prop, 'must be a DNS-1123 subdomain: lower-case letters, digits, "-" and ".", at most 253 characters', value);
    }
    return value;
  }

  nonEmpty(prop: string, value: string): string {
    if (typeof value !== 'string' || value.trim().length === 0) this.fail(prop, 'must be a non-empty string', value);
    return value;
  }

  absolutePath(prop: string, value: string): string {
    if (typeof value !== 'string' || !value.startsWith('/') || value.split('/').includes('..')) {
      this.fail(prop, 'must be an absolute path without ".." segments', value);
    }
    return value;
  }

  positiveSize(prop: string, value: Size): Size {
    if (!(value instanceof Size) || !(value.toKibibytes() > 0)) {
      this.fail(prop, 'must be a positive size', value);
    }
    return value;
  }

  positive(prop: string, value: number): number {
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) this.fail(prop, 'must be a positive number', value);
    return value;
  }

  /** The /dev/shm size: positive and below the memory limit it counts against. */
  sharedMemory(value: Size, memory: Size): Size {
    this.positiveSize('sharedMemory', value);
    if (value.toKibibytes() >= memory.toKibibytes()) {
      this.fail('sharedMemory', `must be smaller than memory (${memory.asString()}), because /dev/shm usage counts against the memory limit`, value);
    }
    return value;
  }

  envName(prop: string, value: string): string {
    if (!ENV_VAR_NAME.test(value)) this.fail(prop, 'must be a valid environment variable name', value);
    return value;
  }

  /** Whole seconds in [minSeconds, maxSeconds]. */
  seconds(prop: string, value: Duration, minSeconds: number, maxSeconds?: number): number {
    const s = value.toSeconds({ integral: false });
    if (!Number.isInteger(s) || s < minSeconds || (maxSeconds !== undefined && s > maxSeconds)) {
      const range = maxSeconds === undefined ? `>= ${minSeconds}s` : `from ${minSeconds}s to ${maxSeconds}s`;
      this.fail(prop, `must be a whole number of seconds ${range}`, value);
    }
    return s;
  }
}
