// The block reader (src/guard/yaml-block.ts) reads the common shape of manifests and exports
// without js-yaml: what it reads must equal what the js-yaml path reads, value and line, and what
// it does not know it must leave to js-yaml (undefined) rather than guess.
import * as fs from 'fs';
import * as path from 'path';
import * as block from '../../src/guard/yaml-block';
import { parseYamlDocuments, plainScalar } from '../../src/guard/yaml';

/** The js-yaml path's reading of `text` (the block reader switched off). */
function viaJsYaml(text: string): unknown {
  const spy = jest.spyOn(block, 'readBlockDocuments').mockReturnValue(undefined);
  try {
    return parseYamlDocuments(text);
  } finally {
    spy.mockRestore();
  }
}

const READ: Record<string, string> = {
  'kubectl style (lists at the key column), several documents, blank lines between': [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    '  name: p',
    '  labels: {}',
    'spec:',
    '  containers:',
    '  - name: c',
    '    args:',
    '    - --port',
    '    - "8080"',
    '    ports: []',
    '  nodeSelector:',
    '    gpu: "yes"',
    '',
    '---',
    '',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '   name: b',
    'data:',
    '',
    '  k: v',
    '',
  ].join('\n'),
  'js-yaml dump style (indented lists), a leading ---, no newline at the end': [
    '---',
    'a:',
    '    - b: 1',
    '      c:',
    '          - x',
    '          - -1',
    '    -   d: 2',
    'e: last',
  ].join('\n'),
  'YAML 1.1 scalars as go-yaml reads them': [
    'a: yes',
    'b: off',
    'c: 0644',
    'd: 1.10',
    'e: 0x1F',
    'f: 1_000',
    'g: .inf',
    'h: ~',
    'i: null',
    'j:',
    'k: 2026-11-01T10:00:00Z',
    'l: +12',
    'm: 1e3',
    'v: y',
    'o: <<',
    'p: a b  c',
    'q: https://example.com/x.md#anchor',
    'r: a,b[c]{d}',
    'toString: t',
    'constructor: c',
  ].join('\n'),
  'quoted scalars with escapes': [
    `a: 'it''s'`,
    `b: ''`,
    `c: "say \\"hi\\"\\n\\t\\u00e9\\/"`,
    `d: "#not a comment: really"`,
    `e: 'a: b # c'`,
    `f: "é 中文 😀"`,
    `g: "back\\\\slash"`,
  ].join('\n'),
  'literal block scalars: clip, strip, keep, blank and more-indented lines, trailing spaces': [
    'script: |',
    '  #!/bin/sh',
    '  set -e',
    '',
    '    indented',
    '  trailing  ',
    '      ',
    '  end',
    'strip: |-',
    '  a',
    '',
    'keep: |+',
    '  a',
    '',
    '',
    'list:',
    '- |',
    '  x',
    '- y',
    'last: |',
    '    deep',
    '',
  ].join('\n'),
};

READ['plain scalars wrapped over lines, blank lines kept as line breaks'] = [
  'a: the quick brown',
  '  fox jumps',
  '',
  '  over',
  '',
  '',
  '     the dog',
  'b:',
  '- p',
  '  q - r',
  '-  k: r',
  '     s',
  '   m: 1',
].join('\n');

READ['double-quoted scalars wrapped over lines, with escaped line breaks'] = [
  'a: "Threshold 1115s: the time',
  '  a new replica takes"',
  'b:',
  '- "k: v, \\',
  '    w"',
  '- "p',
  '',
  '  q\\u00e9\\t\\/\\\\ \\" r   ',
  '   s"  ',
  'c: 1',
].join('\n');

READ['single-quoted scalars wrapped over lines'] = [
  "a: 'it''s a long",
  "  string''s end  ",
  '',
  "  ''",
  "  '",
  'b: 1',
].join('\n');

const DECLINED: Record<string, string> = {
  'a comment line': 'a: 1\n# note\nb: 2\n',
  'a comment after a value': 'a: 1 # note\n',
  'an anchor and an alias': 'a: &x 1\nb: *x\n',
  'a tag': 'a: !!str 1\n',
  'a folded scalar': 'a: >\n  x\n',
  'an explicit indentation indicator': 'a: |2\n   x\n',
  'a flow mapping with content': 'a: {b: 1}\n',
  'a repeated key': 'a: 1\na: 2\n',
  'a key YAML 1.1 reads as a bool': 'on: 1\n',
  'a quoted key': `'a': 1\n`,
  'a merge key': '<<: {}\n',
  'a mapping in a wrapped plain scalar': 'a: b\n  c: d\n',
  'a comment after a wrapped plain scalar': 'a: b\n  # c\n',
  'a line of a compact mapping that is not an entry': '- k: a\n  b\n',

  'a wrapped double-quoted scalar whose next line is not indented': 'a: "b\nc"\n',
  'a wrapped double-quoted scalar followed by text': 'a: "b\n  c" d\n',
  'a tab': 'a:\t1\n',
  'CRLF line ends': 'a: 1\r\nb: 2\r\n',
  'a byte order mark': '\ufeffa: 1\n',
  'an empty document': 'a: 1\n---\n---\nb: 2\n',
  'a trailing ---': 'a: 1\n---\n',
  'a document that is a list': '- a\n- b\n',
  'a nested list item': 'a:\n- - b\n',
  'bad indentation': 'a:\n    b: 1\n  c: 2\n',
  'a mapping where a scalar stands': 'a: b: c\n',
  'an empty block scalar': 'a: |\nb: 1\n',
  'an empty block scalar at the end': 'a: 1\nb: |\n',
  'non-printable characters': 'a: "\u0007"\n',
  'an escape JSON does not have': 'a: "\\x41"\n',
};

describe('the block reader', () => {
  test.each(Object.entries(READ))('reads %s as js-yaml does', (_, text) => {
    const read = block.readBlockDocuments(text, plainScalar);
    expect(read).toBeDefined();
    expect(read).toEqual(viaJsYaml(text));
  });

  test('reports the line each document starts on', () => {
    const docs = block.readBlockDocuments(
      READ['kubectl style (lists at the key column), several documents, blank lines between'],
      plainScalar,
    );
    expect(docs?.map(d => d.line)).toEqual([1, 18]);
  });

  test.each(Object.entries(DECLINED))('leaves %s to js-yaml', (_, text) => {
    expect(block.readBlockDocuments(text, plainScalar)).toBeUndefined();
  });

  test('what it leaves is read by the js-yaml path (parseYamlDocuments), values and errors alike', () => {
    expect(parseYamlDocuments('a: &x 1\nb: *x\n')[0].value).toEqual({ a: 1, b: 1 });
    expect(parseYamlDocuments('a: 1\na: 2\n')[0]).toMatchObject({
      value: { a: 2 },
      duplicates: [{ key: 'a', line: 2 }],
    });
    expect(() => parseYamlDocuments('a: b: c\n')).toThrow(/line|mapping/);
  });

  // The library's own output, every example app: the shape the reader is for, read without js-yaml
  // and to the same values and lines.
  const snapshots = path.join(__dirname, '..', '..', 'snapshots');
  test.each(fs.readdirSync(snapshots).filter(f => f.endsWith('.yaml')))('reads snapshots/%s as js-yaml does', file => {
    const text = fs.readFileSync(path.join(snapshots, file), 'utf8');
    const read = block.readBlockDocuments(text, plainScalar);
    expect(read).toBeDefined();
    expect(read).toEqual(viaJsYaml(text));
  });
});
