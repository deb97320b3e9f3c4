import * as fs from 'fs';
import * as path from 'path';
import type { KubeObject } from './normalize';

/**
 * Bad guard input: an unreadable or empty path, malformed YAML, a document kubectl would reject,
 * or an object that appears twice. The message is one line naming the file and line.
 */
export class GuardInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuardInputError';
  }
}

/** Where an object was read from, for reports and duplicate errors. */
export interface ObjectSource {
  readonly file: string;
  readonly line: number;
}

const SOURCES = new WeakMap<object, ObjectSource>();
const DUPLICATES = new WeakMap<object, ReadonlyArray<{ key: string; line: number }>>();

/** Keys repeated in the document an object was read from (kubectl keeps the last value). @internal */
export function duplicateKeysOf(o: object): ReadonlyArray<{ key: string; line: number }> {
  return DUPLICATES.get(o) ?? [];
}

/** The file and line an object was read from, if the guard read it. @internal */
export function sourceOf(o: object): ObjectSource | undefined {
  return SOURCES.get(o);
}

const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'list' : typeof v);

/** What checkStrings reads from the engine's modules, loaded once when the first object is checked. */
let checkModules: {
  isLiveExport: (o: KubeObject) => boolean;
  firstDecodeError: typeof import('./decode').firstDecodeError;
};
const checkers = () =>
  (checkModules ??= {
    isLiveExport: (require('./normalize') as typeof import('./normalize')).isLiveExport,
    firstDecodeError: (require('./decode') as typeof import('./decode')).firstDecodeError,
  });

/**
 * String fields where YAML 1.1 turns an unquoted `yes`, `0644`, `1.10` or `true` into a bool or a
 * number, which the API server refuses to decode ("cannot unmarshal bool into Go struct field ...
 * of type string"). kubectl applies nothing from such a file, so neither does the guard.
 */
function checkStrings(o: KubeObject, source: string, line: number): void {
  const where = () => `${source}:${line}`;
  const fail = (p: string, v: unknown) => {
    throw new GuardInputError(
      `${where()}: ${o.kind}/${o.metadata.name}: ${p} must be a string, got ${typeName(v)} ${JSON.stringify(v)} (YAML 1.1 reads it so; quote it). kubectl rejects this file`,
    );
  };
  const stringMap = (m: unknown, p: string) => {
    if (m === undefined || m === null) return;
    if (!isObject(m)) return fail(p, m);
    // null is accepted (a patch deletes the key; a decoder leaves the zero value).
    for (const [k, v] of Object.entries(m)) if (typeof v !== 'string' && v !== null) fail(`${p}.${k}`, v);
  };
  for (const f of ['namespace', 'generateName'])
    if (o.metadata[f] !== undefined && typeof o.metadata[f] !== 'string') fail(`metadata.${f}`, o.metadata[f]);
  stringMap(o.metadata.labels, 'metadata.labels');
  stringMap(o.metadata.annotations, 'metadata.annotations');
  if (o.apiVersion === 'v1' && (o.kind === 'ConfigMap' || o.kind === 'Secret')) {
    for (const f of ['data', 'stringData', 'binaryData']) stringMap(o[f], f);
  }
  const podSpecs: Array<[any, string]> = [];
  const spec = o.spec;
  if (o.kind === 'Pod') podSpecs.push([spec, 'spec']);
  if (isObject(spec?.template)) {
    podSpecs.push([spec.template.spec, 'spec.template.spec']);
    stringMap(spec.template.metadata?.labels, 'spec.template.metadata.labels');
    stringMap(spec.template.metadata?.annotations, 'spec.template.metadata.annotations');
  }
  if (isObject(spec?.jobTemplate?.spec?.template))
    podSpecs.push([spec.jobTemplate.spec.template.spec, 'spec.jobTemplate.spec.template.spec']);
  for (const [pod, p] of podSpecs) {
    if (!isObject(pod)) continue;
    stringMap(pod.nodeSelector, `${p}.nodeSelector`);
    for (const list of ['initContainers', 'containers']) {
      (Array.isArray(pod[list]) ? pod[list] : []).forEach((c: any, i: number) => {
        if (!isObject(c)) return;
        const cp = `${p}.${list}[${i}]`;
        for (const f of ['name', 'image']) if (c[f] !== undefined && typeof c[f] !== 'string') fail(`${cp}.${f}`, c[f]);
        for (const f of ['command', 'args'])
          (Array.isArray(c[f]) ? c[f] : []).forEach(
            (a: unknown, j: number) => typeof a !== 'string' && fail(`${cp}.${f}[${j}]`, a),
          );
        (Array.isArray(c.env) ? c.env : []).forEach((e: any, j: number) => {
          if (isObject(e) && e.value !== undefined && e.value !== null && typeof e.value !== 'string')
            fail(`${cp}.env[${j}].value`, e.value);
        });
      });
    }
  }
  // Every other field of a built-in kind, from its schema: a selector's `v: 1.10`, a Service's
  // `app: on`, `serviceName: no`, and a quoted number in an integer field (`replicas: "3"`).
  // What the API server wrote (a live export) decoded there already: only manifests are walked.
  const { isLiveExport, firstDecodeError } = checkers();
  if (isLiveExport(o)) return;
  const wrong = firstDecodeError(o);
  if (!wrong) return;
  if (wrong.expected === 'string') fail(wrong.path, wrong.value);
  const article = wrong.expected === 'integer' ? 'an' : 'a';
  const hint =
    typeof wrong.value === 'string'
      ? 'written in quotes; unquote it'
      : typeof wrong.value === 'boolean'
        ? 'YAML 1.1 reads yes/no/on/off so'
        : 'not a whole number';
  throw new GuardInputError(
    `${where()}: ${o.kind}/${o.metadata.name}: ${wrong.path} must be ${article} ${wrong.expected}, got ${typeName(wrong.value)} ${JSON.stringify(wrong.value)} (${hint}); the API server cannot decode it, so kubectl applies nothing from this file`,
  );
}

/**
 * One JSON document (`kubectl get -o json`), read with JSON.parse: JSON is YAML whose scalars carry
 * their types, so it reads as kubectl reads it, several times faster. Undefined when the text is
 * not one JSON object (YAML, or JSON followed by more), which the YAML reader then takes; a
 * repeated key keeps its last value as in YAML, but is not listed as a duplicate.
 */
function parseJson(text: string): Array<{ value: unknown; line: number; duplicates: [] }> | undefined {
  const start = text.search(/\S/);
  if (start < 0 || text[start] !== '{') return undefined;
  try {
    return [{ value: JSON.parse(text), line: text.slice(0, start).split('\n').length, duplicates: [] }];
  } catch {
    return undefined;
  }
}

/** The fields that name an object, which must be strings. */
const IDENTITY = ['apiVersion', 'kind', 'metadata.name'] as const;

/**
 * Parses multi-document YAML (or JSON) as kubectl does; `List` objects are expanded into their
 * items. Throws GuardInputError naming `source` and the line for anything kubectl would reject.
 */
export function parseObjects(text: string, source: string): KubeObject[] {
  // Loaded here, not at the top: `require('cdk8s-gpu')` must not pay for a YAML parser.
  const { parseYamlDocuments, YamlSyntaxError } = require('./yaml') as typeof import('./yaml');
  let docs: ReturnType<typeof parseYamlDocuments>;
  try {
    docs = parseJson(text) ?? parseYamlDocuments(text);
  } catch (e) {
    if (e instanceof YamlSyntaxError) throw new GuardInputError(`${source}:${e.line}: malformed YAML: ${e.message}`);
    throw e;
  }
  const out: KubeObject[] = [];
  for (const { value, line, duplicates } of docs) {
    if (value === null || value === undefined) continue;
    const isList =
      isObject(value) && typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items);
    const items: unknown[] = isList ? (value as any).items : [value];
    for (const item of items) {
      for (const field of IDENTITY) {
        const v = !isObject(item)
          ? undefined
          : field !== 'metadata.name'
            ? item[field]
            : isObject(item.metadata)
              ? item.metadata.name
              : undefined;
        if (v !== undefined && v !== null && typeof v !== 'string') {
          throw new GuardInputError(
            `${source}:${line}: ${field} must be a string, got ${typeName(v)} ${JSON.stringify(v)} (YAML 1.1 reads it so; quote it). kubectl rejects this file`,
          );
        }
      }
      if (
        !isObject(item) ||
        typeof item.apiVersion !== 'string' ||
        typeof item.kind !== 'string' ||
        !isObject(item.metadata) ||
        typeof item.metadata.name !== 'string' ||
        item.metadata.name === ''
      ) {
        throw new GuardInputError(
          `${source}:${line}: not a Kubernetes object (needs apiVersion, kind and metadata.name)`,
        );
      }
      checkStrings(item as KubeObject, source, line);
      SOURCES.set(item, { file: source, line });
      if (duplicates.length > 0) DUPLICATES.set(item, duplicates);
      out.push(item as KubeObject);
    }
  }
  return out;
}

/** Every .yaml/.yml file under a folder, any case, subfolders included, in a stable order. */
function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/i.test(entry.name)) out.push(p);
  }
  return out;
}

/**
 * Reads a YAML or JSON file, every .yaml/.yml file in a folder and its subfolders, or `-` for
 * stdin. Folders skip JSON: `cdk8s synth` writes its construct-metadata.json beside the manifests.
 * An empty input (no files, no objects) is an error: a guard that read nothing must not pass.
 */
export function loadObjects(input: string, stdin: () => string = () => fs.readFileSync(0, 'utf8')): KubeObject[] {
  if (input === '-') {
    const objects = parseObjects(stdin(), '<stdin>');
    if (objects.length === 0) throw new GuardInputError('<stdin>: no Kubernetes objects read (empty input)');
    return objects;
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(input);
  } catch {
    throw new GuardInputError(`${input}: no such file or directory`);
  }
  const files = stat.isDirectory() ? yamlFiles(input) : [input];
  if (files.length === 0) throw new GuardInputError(`${input}: no .yaml or .yml files in this folder`);
  const objects = files.flatMap(f => {
    let text: string;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch (e) {
      throw new GuardInputError(`${f}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseObjects(text, f);
  });
  if (objects.length === 0) throw new GuardInputError(`${input}: no Kubernetes objects read (the YAML is empty)`);
  return objects;
}
