// YAML read the way kubectl reads it: sigs.k8s.io/yaml, which decodes with its fork of go-yaml v2
// (YAML 1.1 scalars) and converts the result to JSON. Parsed with js-yaml (8-10x faster than `yaml`
// on large exports, see bench/guard.ts) under a schema that resolves plain scalars as go-yaml v2's
// resolve.go does; plain block YAML (what synth and exports mostly are) is read by yaml-block.ts with
// the same scalar rules, and anything else by js-yaml. This module is required only when the guard
// runs (load.ts requires it lazily).
import * as jsyaml from 'js-yaml';
import { goInt, isGoFloat, isGoInt } from '../validation/go-yaml-scalars';
import { readBlockDocuments } from './yaml-block';

/** go-yaml v2 resolve.go: the YAML 1.1 booleans, not only `true`/`false`. */
// Maps, not object literals: `'toString' in {}` is true, and `in` on a literal is slow at scale.
const BOOLS = new Map<string, boolean>();
for (const s of ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']) BOOLS.set(s, true);
for (const s of ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']) BOOLS.set(s, false);

const NULLS = new Set(['~', 'null', 'Null', 'NULL']);
const SPECIAL_FLOATS = new Map<string, number>(
  Object.entries({
    '.nan': NaN,
    '.NaN': NaN,
    '.NAN': NaN,
    '.inf': Infinity,
    '.Inf': Infinity,
    '.INF': Infinity,
    '+.inf': Infinity,
    '+.Inf': Infinity,
    '+.INF': Infinity,
    '-.inf': -Infinity,
    '-.Inf': -Infinity,
    '-.INF': -Infinity,
  }),
);
const isNull = (s: string) => s === '' || (s.length <= 4 && NULLS.has(s));
const isBool = (s: string) => s.length <= 5 && BOOLS.has(s);
const isFloat = (s: string) => (s.length <= 5 && SPECIAL_FLOATS.has(s)) || isGoFloat(s);
const toInt = (s: string) => goInt(s.replace(/_/g, ''));
const toFloat = (s: string) => SPECIAL_FLOATS.get(s) ?? parseFloat(s.replace(/_/g, ''));
const nullType = new jsyaml.Type('tag:yaml.org,2002:null', { kind: 'scalar', resolve: isNull, construct: () => null });
const boolType = new jsyaml.Type('tag:yaml.org,2002:bool', {
  kind: 'scalar',
  resolve: isBool,
  construct: (s: string) => BOOLS.get(s),
});
const intType = new jsyaml.Type('tag:yaml.org,2002:int', { kind: 'scalar', resolve: isGoInt, construct: toInt });
const floatType = new jsyaml.Type('tag:yaml.org,2002:float', { kind: 'scalar', resolve: isFloat, construct: toFloat });

/** A plain scalar's value, resolved as the schema below resolves it (for the block reader, yaml-block.ts). */
export function plainScalar(s: string): unknown {
  if (isNull(s)) return null;
  if (isBool(s)) return BOOLS.get(s);
  if (isGoInt(s)) return toInt(s);
  if (isFloat(s)) return toFloat(s);
  return s;
}

/** `<<` merge keys, which go-yaml v2 applies like js-yaml's loader does for this tag. */
const mergeType = new jsyaml.Type('tag:yaml.org,2002:merge', { kind: 'scalar', resolve: (s: string) => s === '<<' });

/**
 * Plain scalars resolve in go-yaml's order: null, bool, int, float, else string. Timestamps stay
 * strings (go-yaml v2 returns them as strings when decoding into interface{}), and `<<` merges.
 */
const KUBECTL_SCHEMA = jsyaml.FAILSAFE_SCHEMA.extend({ implicit: [nullType, boolType, intType, floatType, mergeType] });

/** A key that appears twice in one mapping: kubectl keeps the last value, silently. */
export interface DuplicateKey {
  readonly key: string;
  /** The 1-based line of the later occurrence, whose value is kept. */
  readonly line: number;
}

/** A document's value, the 1-based line its content starts on, and its duplicated keys. */
export interface YamlDocument {
  readonly value: unknown;
  readonly line: number;
  readonly duplicates: readonly DuplicateKey[];
}

/** Thrown with the 1-based line of the fault. */
export class YamlSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

/**
 * Every document of a multi-document YAML (or JSON) text, with the line each starts on. A key
 * repeated in one mapping keeps its last value, as kubectl's reader does (sigs.k8s.io/yaml decodes
 * without go-yaml's strict mode; kubernetes#14791), and is listed in the document's `duplicates`.
 */
export function parseYamlDocuments(text: string): YamlDocument[] {
  // Generated manifests and exports are plain block YAML, read without the general parser.
  const block = readBlockDocuments(text, plainScalar);
  if (block) return block;
  try {
    return load(text, false);
  } catch (e) {
    // The rare slow path: find every repeated key, then read with the last value kept.
    if (e instanceof YamlSyntaxError && /duplicated mapping key/.test(e.message)) return withDuplicates(text);
    throw e;
  }
}

function load(text: string, lastKeyWins: boolean): YamlDocument[] {
  const lines: number[] = [];
  let depth = 0;
  const values: unknown[] = [];
  try {
    jsyaml.loadAll(text, v => values.push(v), {
      schema: KUBECTL_SCHEMA,
      json: lastKeyWins,
      listener(event, state) {
        if (event === 'open') {
          if (depth === 0) lines.push(state.line + 1);
          depth++;
        } else {
          depth--;
        }
      },
    });
  } catch (e) {
    if (e instanceof jsyaml.YAMLException) {
      throw new YamlSyntaxError(e.reason || e.message.split('\n')[0], (e.mark?.line ?? 0) + 1);
    }
    throw e;
  }
  return values.map((value, i) => ({ value, line: lines[i] ?? 1, duplicates: [] }));
}

function withDuplicates(text: string): YamlDocument[] {
  const docs = load(text, true);
  const { parseAllDocuments } = require('yaml') as typeof import('yaml');
  const textLines = text.split('\n');
  const found: DuplicateKey[] = [];
  for (const d of parseAllDocuments(text) as Array<{
    errors: Array<{ code: string; linePos?: Array<{ line: number }> }>;
  }>)
    for (const err of d.errors)
      if (err.code === 'DUPLICATE_KEY' && err.linePos) {
        const line = err.linePos[0].line;
        found.push({ key: (textLines[line - 1] ?? '').trim().replace(/^-\s*/, '').split(':')[0], line });
      }
  // Each duplicate belongs to the last document that starts at or before its line.
  return docs.map((doc, i) => ({
    ...doc,
    duplicates: found.filter(f => f.line >= doc.line && (i + 1 >= docs.length || f.line < docs[i + 1].line)),
  }));
}
