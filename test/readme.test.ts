import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';

const ROOT = path.join(__dirname, '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** The guides: every Markdown file in docs/, read with its path relative to the repository root. */
const GUIDES = fs
  .readdirSync(path.join(ROOT, 'docs'))
  .filter(f => f.endsWith('.md'))
  .sort()
  .map(f => `docs/${f}`);
const DOCS: Record<string, string> = {
  'README.md': README,
  ...Object.fromEntries(GUIDES.map(f => [f, fs.readFileSync(path.join(ROOT, f), 'utf8')])),
};
/** The tsconfig `cdk8s init typescript-app` writes: what a new user compiles the examples with. */
const INIT_TSCONFIG = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'templates', 'typescript-app', 'tsconfig.json');

/** Every complete TypeScript program in a Markdown text (a ```ts block with imports). */
const programsOf = (text: string) =>
  [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map(m => m[1]).filter(code => /^import /m.test(code));

/** Markdown text outside fenced code blocks, where a `[text](target)` is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** Every link target of a Markdown text: `[text](target)`, without a title (code spans are not links). */
const linksOf = (text: string) =>
  [
    ...prose(text)
      .replace(/`[^`\n]*`/g, '')
      .matchAll(/\[[^\]]*\]\(([^)\s]+)[^)]*\)/g),
  ].map(m => m[1]);

/**
 * The anchors GitHub makes for a Markdown file's headings: lower case, punctuation dropped, spaces as dashes, repeats
 * numbered.
 */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n ? `${slug}-${n}` : slug);
  }
  return anchors;
}

describe('README', () => {
  test('is a front door of at most 320 lines', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(320);
  });

  test('has a quickstart', () => {
    expect(programsOf(README).length).toBeGreaterThan(0);
  });

  test('links every guide in docs/', () => {
    const linked = new Set(linksOf(README).map(l => l.split('#')[0]));
    // The performance guide is written separately; it belongs in the README's contents all the same.
    const missing = [...GUIDES, 'docs/performance.md'].filter(f => !linked.has(f));
    expect(missing).toEqual([]);
  });

  test('the set-up commands are the two the CI runs', () => {
    expect(README).toContain('npm ci && npm run synth');
    expect(README).toContain('npm ci && npm test');
    expect(fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm ci && npm test$/m);
  });
});

describe('README and docs/*.md', () => {
  test('every relative link points to an existing file, and every anchor to a heading in it', () => {
    const broken: string[] = [];
    for (const [file, text] of Object.entries(DOCS)) {
      for (const link of linksOf(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: and the like
        const [target, anchor] = link.split('#');
        const resolved = target ? path.normalize(path.join(path.dirname(file), target)) : file;
        const full = path.join(ROOT, resolved);
        if (!fs.existsSync(full)) {
          broken.push(`${file}: ${link} (no ${resolved})`);
        } else if (anchor && resolved.endsWith('.md') && !anchorsOf(fs.readFileSync(full, 'utf8')).has(anchor)) {
          broken.push(`${file}: ${link} (no heading #${anchor} in ${resolved})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test('no link points into src/: the package ships lib/ and docs/, not the sources', () => {
    const intoSrc = Object.entries(DOCS).flatMap(([file, text]) =>
      linksOf(text)
        .filter(link => !/^[a-z][a-z0-9+.-]*:/i.test(link))
        .filter(link => path.normalize(path.join(path.dirname(file), link.split('#')[0])).split(path.sep)[0] === 'src')
        .map(link => `${file}: ${link}`),
    );
    expect(intoSrc).toEqual([]);
  });

  test('every example compiles under the cdk8s init tsconfig against the built package', () => {
    // One program for all examples: the package's declarations are type-checked once.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-'));
    const files = Object.entries(DOCS).flatMap(([doc, text]) =>
      programsOf(text).map((code, i) => {
        const file = path.join(dir, `${doc.replace(/[/.]/g, '_')}-${i}.ts`);
        fs.writeFileSync(file, code);
        return file;
      }),
    );
    expect(files.length).toBeGreaterThan(programsOf(README).length);
    const { config } = ts.readConfigFile(INIT_TSCONFIG, ts.sys.readFile);
    const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, dir);
    // The user's project resolves `cdk8s-gpu` to the package's compiled declarations (npm test builds lib/ first).
    const program = ts.createProgram(files, {
      ...options,
      noEmit: true,
      types: ['node'],
      typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      baseUrl: ROOT,
      paths: { 'cdk8s-gpu': [path.join(ROOT, 'lib', 'index.d.ts')], '*': [path.join(ROOT, 'node_modules', '*')] },
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map(
        d => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      );
    fs.rmSync(dir, { recursive: true, force: true });
    expect(diagnostics).toEqual([]);
  });
});
