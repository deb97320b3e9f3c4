import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';

const ROOT = path.join(__dirname, '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  test('the quickstart compiles against the library', () => {
    const block = /```ts\n([\s\S]*?)```/.exec(README);
    expect(block).not.toBeNull();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-'));
    const file = path.join(dir, 'quickstart.ts');
    fs.writeFileSync(file, block![1].replace(/from 'cdk8s-gpu'/g, `from ${JSON.stringify(path.join(ROOT, 'src'))}`));
    const program = ts.createProgram([file], {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS, skipLibCheck: true,
      types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], baseUrl: ROOT,
      paths: { '*': [path.join(ROOT, 'node_modules', '*')] },
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map(d => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
  });

  test('the set-up commands are the two the CI runs', () => {
    expect(README).toContain('npm ci && npm run synth');
    expect(README).toContain('npm ci && npm test');
    expect(fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm ci && npm test$/m);
  });
});
