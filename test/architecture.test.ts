import * as fs from 'fs';
import * as path from 'path';

/**
 * The layers of src/, and what each may import. A newcomer can tell from the tree where a fact
 * lives only while the arrows point one way: validation knows nothing of the constructs, the
 * output checks nothing of the constructs, the guard reads YAML and never constructs.
 */
const ALLOWED: Record<string, readonly string[]> = {
  validation: [],
  imports: [],
  checks: ['validation'],
  common: ['checks', 'validation'],
  guard: ['validation', 'common'],
  plugins: ['guard', 'validation', 'checks'],
  training: ['common', 'checks', 'validation', 'imports'],
  inference: ['common', 'checks', 'validation', 'imports'],
  secrets: ['common', 'checks', 'validation', 'workloads.ts'],
  monitoring: ['common', 'checks', 'validation', 'training', 'inference', 'secrets'],
  'workloads.ts': ['training', 'inference'],
  'index.ts': ['*'],
};

const SRC = path.join(__dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The top-level part of src/ a path is in: a folder, or a file directly in src/. */
const layerOf = (file: string) => path.relative(SRC, file).split(path.sep)[0];

/** Every relative module a file imports, requires or names in a type query. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import\(|require\()\s*'(\.[^']*)'/g)].map(m => m[1]);
  return specs.map(s => {
    const p = path.resolve(path.dirname(file), s);
    return fs.existsSync(`${p}.ts`) ? `${p}.ts` : p;
  });
}

describe('the layers of src/', () => {
  const files = sourceFiles(SRC);

  test.each(files.map(f => [path.relative(SRC, f), f]))('%s imports only from the layers below it', (_name, file) => {
    const from = layerOf(file);
    const allowed = ALLOWED[from];
    expect([from, allowed === undefined ? 'a layer not in ALLOWED' : 'known']).toEqual([from, 'known']);
    if (allowed.includes('*')) return;
    const wrong = importsOf(file)
      .map(layerOf)
      .filter(to => to !== from && !allowed.includes(to));
    expect(wrong).toEqual([]);
  });

  test('no source patches a prototype or defines a property on an object it does not own', () => {
    const offending = files.filter(f => {
      const text = fs.readFileSync(f, 'utf8');
      return /\.prototype\.\w+\s*=(?!=)|Object\.defineProperty\(|Reflect\.defineProperty\(|setPrototypeOf\(/.test(text);
    });
    expect(offending.map(f => path.relative(SRC, f))).toEqual([]);
  });

  test('no source reads a private field of cdk8s (props, patches, _additionalAttributes)', () => {
    const offending = files.filter(f =>
      /as unknown as \{ (props|patches|_additionalAttributes)\b|\)\.(patches|_additionalAttributes)\b/.test(
        fs.readFileSync(f, 'utf8'),
      ),
    );
    expect(offending.map(f => path.relative(SRC, f))).toEqual([]);
  });
});
