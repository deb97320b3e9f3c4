import * as fs from 'fs';
import * as path from 'path';
import { LineCounter, parseAllDocuments } from 'yaml';
import type { KubeObject } from './normalize';

/** Bad guard input: an unreadable path, malformed YAML, or a document that is not an object. */
export class GuardInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuardInputError';
  }
}

/** Parses multi-document YAML (or JSON); `List` objects are expanded into their items. */
export function parseObjects(text: string, source: string): KubeObject[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines });
  const out: KubeObject[] = [];
  if (!Array.isArray(docs)) throw new GuardInputError(`${source}: not YAML`);
  for (const doc of docs) {
    const err = doc.errors[0];
    if (err) {
      const line = err.linePos?.[0]?.line ?? lines.linePos(err.pos[0]).line;
      throw new GuardInputError(`${source}:${line}: malformed YAML: ${err.message.split('\n')[0]}`);
    }
    const value = doc.toJS();
    if (value === null || value === undefined) continue;
    const line = doc.contents ? lines.linePos(doc.contents.range[0]).line : 1;
    const items = value?.kind === 'List' || (typeof value?.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)) ? value.items : [value];
    for (const item of items) {
      if (!item || typeof item !== 'object' || typeof item.apiVersion !== 'string' || typeof item.kind !== 'string' || typeof item.metadata?.name !== 'string') {
        throw new GuardInputError(`${source}:${line}: not a Kubernetes object (needs apiVersion, kind and metadata.name)`);
      }
      out.push(item);
    }
  }
  return out;
}

/**
 * Reads a YAML or JSON file, every .yaml/.yml file in a folder (sorted), or `-` for stdin. Folders
 * skip JSON: `cdk8s synth` writes its construct-metadata.json beside the manifests.
 */
export function loadObjects(input: string, stdin: () => string = () => fs.readFileSync(0, 'utf8')): KubeObject[] {
  if (input === '-') return parseObjects(stdin(), '<stdin>');
  let stat: fs.Stats;
  try {
    stat = fs.statSync(input);
  } catch {
    throw new GuardInputError(`${input}: no such file or directory`);
  }
  const files = stat.isDirectory()
    ? fs.readdirSync(input).filter(f => /\.ya?ml$/.test(f)).sort().map(f => path.join(input, f))
    : [input];
  return files.flatMap(f => {
    let text: string;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch (e) {
      throw new GuardInputError(`${f}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseObjects(text, f);
  });
}
