// How kubectl reads a plain (unquoted) YAML scalar that looks like a number: sigs.k8s.io/yaml
// decodes with its fork of go-yaml v2, whose resolve.go strips every `_` and then tries
// strconv.ParseInt(s, 0, 64) (sign; 0x, 0o, 0b or leading-0 octal; decimal) and yamlStyleFloat.
// Shared by the guard's YAML reader (guard/yaml.ts) and the synth-time check of what the
// library writes (common/yaml-scalars.ts). No imports, so either side may load it.

/** strconv.ParseInt(s, 0, 64) after go-yaml strips `_`. */
const GO_INT = /^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/;
/** go-yaml v2 yamlStyleFloat. */
const GO_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;

/** Whether a plain scalar may resolve to a number at all: every int and float starts like this. */
export function mayBeNumber(s: string): boolean {
  const c = s.charCodeAt(0);
  return (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46;
}

/** go-yaml strips every `_` before it parses a number. */
function stripped(s: string): string {
  return s.includes('_') ? s.replace(/_/g, '') : s;
}

/** Whether go-yaml v2 reads a plain scalar as an int. */
export function isGoInt(s: string): boolean {
  // Every int starts with a digit or a sign (not a dot).
  if (s.length === 0 || !mayBeNumber(s) || s.charCodeAt(0) === 46) return false;
  const plain = stripped(s);
  return plain.length > 0 && GO_INT.test(plain);
}

/** Whether go-yaml v2 reads a plain scalar as a float (yamlStyleFloat; `.inf`/`.nan` are the caller's). */
export function isGoFloat(s: string): boolean {
  return s.length > 0 && mayBeNumber(s) && GO_FLOAT.test(stripped(s));
}

/** The number go-yaml v2 reads from a plain scalar, or undefined when it reads a string. */
export function goNumber(s: string): number | undefined {
  if (isGoInt(s)) return goInt(stripped(s));
  if (isGoFloat(s)) return parseFloat(stripped(s));
  return undefined;
}

export function goInt(plain: string): number {
  const neg = plain[0] === '-';
  const body = plain[0] === '-' || plain[0] === '+' ? plain.slice(1) : plain;
  let v: number;
  if (/^0[xX]/.test(body)) v = parseInt(body.slice(2), 16);
  else if (/^0[oO]/.test(body)) v = parseInt(body.slice(2), 8);
  else if (/^0[bB]/.test(body)) v = parseInt(body.slice(2), 2);
  else if (body.length > 1 && body[0] === '0') v = parseInt(body.slice(1), 8);
  else v = parseInt(body, 10);
  return neg ? -v : v;
}
