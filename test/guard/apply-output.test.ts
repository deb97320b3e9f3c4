// The runbooks' apply commands, run by kubectl 1.32 (client-side dry run against a stand-in API
// server) on what `cdk8s synth` writes with this package's validation plugins configured.
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { stringify } from 'yaml';
import { parseObjects } from '../../src/guard/load';
import { synthProject } from '../support/cdk8s-project';

const ROOT = path.join(__dirname, '..', '..');
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const haveKubectl = kubectl.status === 0;
const objects = parseObjects(fs.readFileSync(path.join(ROOT, 'snapshots', 'llm.k8s.yaml'), 'utf8'), 'llm.k8s.yaml');

/** The `kubectl apply` lines of the docs' shell blocks. */
function applyCommands(): string[] {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'runbooks.md'), 'utf8');
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map(m => m[1]);
  return blocks.flatMap(b => b.split('\n')).filter(l => /^kubectl apply /.test(l.trim()));
}

async function withStub<T>(run: (server: string) => T): Promise<T> {
  const kinds = [...new Map(objects.map(o => [`${o.apiVersion}/${o.kind}`, o])).values()].map(o => ({
    group: o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '',
    version: o.apiVersion.split('/').pop(),
    kind: o.kind,
    namespaced: true,
  }));
  const stub = spawn(process.execPath, [path.join(ROOT, 'test', 'support', 'kube-api-stub.js'), JSON.stringify(kinds)]);
  try {
    const port = await new Promise<string>((resolve, reject) => {
      stub.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
      stub.once('error', reject);
    });
    return run(`http://127.0.0.1:${port}`);
  } finally {
    stub.kill();
  }
}

(haveKubectl ? describe : describe.skip)('the runbooks apply the synthesized output with the plugins on', () => {
  test('cdk8s synth with a validation plugin writes construct-metadata.json; the documented command applies every object', async () => {
    expect(applyCommands()).toEqual(['kubectl apply -f "$(ls dist/*.k8s.yaml | paste -sd, -)"']);
    const baseline = objects.map(o => stringify(o)).join('---\n');
    let folder: string[] = [];
    let documented: ReturnType<typeof spawnSync> | undefined;
    let whole: ReturnType<typeof spawnSync> | undefined;
    await withStub(server => {
      const r = synthProject(
        objects,
        [{ class: 'GuardValidation', properties: { baseline: 'baseline' } }],
        { 'baseline/llm.yaml': baseline },
        dir => {
          folder = fs.readdirSync(path.join(dir, 'dist')).sort();
          const run = (cmd: string) =>
            spawnSync(
              'sh',
              ['-c', cmd.replace(/^kubectl /, `kubectl --server ${server} `) + ' --dry-run=client --validate=false'],
              {
                cwd: dir,
                encoding: 'utf8',
                env: { ...process.env, KUBECONFIG: '/dev/null' },
              },
            );
          documented = run(applyCommands()[0]);
          whole = run('kubectl apply -f dist/');
        },
      );
      expect(r.status).toBe(0);
    });
    // cdk8s-cli sets CDK8S_RECORD_CONSTRUCT_METADATA when validations are configured (lib/cli/cmds/synth.js).
    expect(folder).toEqual(['app.k8s.yaml', 'construct-metadata.json']);
    expect(whole!.status).not.toBe(0);
    expect(String(whole!.stderr)).toMatch(
      /unable to decode "dist\/construct-metadata\.json": Object 'Kind' is missing/,
    );
    expect(String(documented!.stderr)).toBe('');
    expect(documented!.status).toBe(0);
    for (const o of objects)
      expect(String(documented!.stdout)).toMatch(
        new RegExp(`^${o.kind.toLowerCase()}(\\.[a-z0-9.]+)?/${o.metadata.name} created \\(dry run\\)$`, 'm'),
      );
    expect(String(documented!.stdout).trim().split('\n')).toHaveLength(objects.length);
  }, 120_000);
});
