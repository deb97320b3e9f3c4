import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';

const ROOT = path.join(__dirname, '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** The tsconfig `cdk8s init typescript-app` writes: what a new user compiles the examples with. */
const INIT_TSCONFIG = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'templates', 'typescript-app', 'tsconfig.json');

/** Every complete TypeScript program in the README (a ```ts block with imports). */
const programs = [...README.matchAll(/```ts\n([\s\S]*?)```/g)].map(m => m[1]).filter(code => /^import /m.test(code));

describe('README', () => {
  test('has a quickstart', () => {
    expect(programs.length).toBeGreaterThan(0);
  });

  test('every example compiles under the cdk8s init tsconfig against the built package', () => {
    // One program for all examples: the package's declarations are type-checked once.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-'));
    const files = programs.map((code, i) => {
      const file = path.join(dir, `example-${i}.ts`);
      fs.writeFileSync(file, code);
      return file;
    });
    const { config } = ts.readConfigFile(INIT_TSCONFIG, ts.sys.readFile);
    const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, dir);
    // The user's project resolves `cdk8s-gpu` to the package's compiled declarations (npm test builds lib/ first).
    const program = ts.createProgram(files, {
      ...options, noEmit: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], baseUrl: ROOT,
      paths: { 'cdk8s-gpu': [path.join(ROOT, 'lib', 'index.d.ts')], '*': [path.join(ROOT, 'node_modules', '*')] },
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map(d => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    fs.rmSync(dir, { recursive: true, force: true });
    expect(diagnostics).toEqual([]);
  });

  test('the set-up commands are the two the CI runs', () => {
    expect(README).toContain('npm ci && npm run synth');
    expect(README).toContain('npm ci && npm test');
    expect(fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm ci && npm test$/m);
  });
});
