import { spawnSync, SpawnSyncReturns } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';

const ROOT = path.join(__dirname, '..', '..');
const CDK8S = path.join(ROOT, 'node_modules', '.bin', 'cdk8s');
const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;

/** A validation plugin of this package, as a user declares it in cdk8s.yaml. */
export interface PluginDeclaration {
  readonly class: string;
  readonly properties?: object;
}

/**
 * Runs the real `cdk8s synth` in a throwaway project whose app writes the given objects as plain
 * ApiObjects, with this package's validation plugins declared under `validations:` (loaded from the
 * built package, as `npm test` builds it first). `files` are written into the project first.
 */
export function synthProject(
  objects: object[],
  validations: PluginDeclaration[],
  files: Record<string, string> = {},
  onOutput?: (projectDir: string) => void,
): SpawnSyncReturns<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-project-'));
  try {
    for (const [file, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), content);
    }
    fs.writeFileSync(path.join(dir, 'objects.json'), JSON.stringify(objects));
    fs.writeFileSync(
      path.join(dir, 'app.js'),
      [
        "const fs = require('fs');",
        "const { App, Chart, ApiObject } = require('cdk8s');",
        'const app = new App();',
        "const chart = new Chart(app, 'app');",
        "JSON.parse(fs.readFileSync('objects.json', 'utf8')).forEach((o, i) => new ApiObject(chart, 'o' + i, o));",
        'app.synth();',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(dir, 'cdk8s.yaml'),
      stringify({
        language: 'typescript',
        app: 'node app.js',
        output: 'dist',
        validations: validations.map(v => ({ package: ROOT, version: VERSION, ...v })),
      }),
    );
    const result = spawnSync(CDK8S, ['synth'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules') },
    });
    // The project's folder (its output in dist/), for a test to read before it is removed.
    onOutput?.(dir);
    return result;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
