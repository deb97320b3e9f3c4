import * as path from 'path';
import { goNumber, mayBeNumber } from '../validation/go-yaml-scalars';

/**
 * Strings that do not survive the trip through YAML: cdk8s writes manifests with the `yaml`
 * package in YAML 1.1 mode, which quotes a string only when YAML 1.1 would read it as something
 * else, but kubectl reads them with go-yaml v2, which also reads `0o17`, `0_x1f` or `1_e3` as
 * numbers. Such a value is refused by the API server in a string field ("cannot unmarshal
 * number"), and in a port name or a map key it silently becomes the number. Returns the number
 * kubectl would read, or undefined for a string that arrives as written.
 */
export function readBackAsNumber(s: string): number | undefined {
  // Fast path: only what starts like a number can be read as one (most strings are names).
  if (s.length === 0 || !mayBeNumber(s)) return undefined;
  let r = READ_BACK.get(s);
  if (r === undefined) {
    const n = goNumber(s);
    r = n !== undefined && writtenPlain(s) ? n : null;
    if (READ_BACK.size < 10_000) READ_BACK.set(s, r);
  }
  return r === null ? undefined : r;
}

const READ_BACK = new Map<string, number | null>();

type Stringify = (value: unknown, options: object) => string;
let stringify: Stringify | undefined;

/** Whether cdk8s's own `yaml` writes the string without quotes, as cdk8s calls it. */
function writtenPlain(s: string): boolean {
  if (!stringify) {
    // cdk8s's copy of `yaml` (it may have its own under node_modules/cdk8s), loaded on first need.
    const cdk8sMain = require.resolve('cdk8s');

    stringify = (require(require.resolve('yaml', { paths: [path.dirname(cdk8sMain)] })) as { stringify: Stringify })
      .stringify;
  }
  const text = stringify({ v: s }, { keepUndefined: true, lineWidth: 0, version: '1.1' });
  return !/^v: ['"]/.test(text);
}

/**
 * Every string value and map key of an object's JSON that kubectl would read back as a number,
 * as the messages to report (see `readBackAsNumber`).
 */
export function numberLikeErrors(json: unknown): string[] {
  const errors: string[] = [];
  walk(json, errors);
  return errors;
}

function walk(node: unknown, errors: string[]): void {
  if (typeof node === 'string') {
    const n = readBackAsNumber(node);
    if (n !== undefined) errors.push(numberLikeMessage(node, n));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) walk(item, errors);
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    const n = readBackAsNumber(key);
    if (n !== undefined) errors.push(numberLikeMessage(key, n));
    walk(value, errors);
  }
}

function numberLikeMessage(s: string, n: number): string {
  return `holds the string ${JSON.stringify(s)}, which cdk8s writes unquoted (YAML 1.1) and kubectl reads back as the number ${n}: the API server then refuses it in a string field, and in a port name or a map key the number silently replaces it; spell the value differently (got ${JSON.stringify(s)})`;
}
