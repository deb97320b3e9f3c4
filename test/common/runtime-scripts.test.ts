import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import {
  GpuTrainingStatefulSet,
  ModelCache,
  Reload,
  RotatingGpuSecret,
  SglangInferenceService,
  VllmInferenceService,
} from '../../src';
import { RuntimeScript, scriptConfigMapName, sourcedCommand } from '../../src/common/runtime-scripts';
import { hubDownloadScript } from '../../src/inference/engine';
import { launchScript } from '../../src/training/launch';
import { reloadScript } from '../../src/secrets/sidecar';
import { SHELLS, Shell } from '../support/shells';

const MODEL = 'Qwen/Qwen2.5-7B-Instruct';
const scriptMaps = (objects: any[]) =>
  objects.filter(
    o => o.kind === 'ConfigMap' && o.metadata.labels?.['app.kubernetes.io/component'] === 'runtime-script',
  );

describe('scripts shipped once per workload in an immutable, content-named ConfigMap', () => {
  function build(namespaces: string[]) {
    const app = Testing.app();
    for (const namespace of namespaces) {
      const chart = new Chart(app, namespace, { namespace });
      const vllm = new VllmInferenceService(chart, 'a', {
        name: 'a',
        modelId: MODEL,
        loraAdapters: [{ name: 'sql', modelId: 'org/sql-lora' }],
      });
      new SglangInferenceService(chart, 'b', {
        name: 'b',
        modelId: MODEL,
        modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      });
      const trainer = new GpuTrainingStatefulSet(chart, 't', {
        name: 't',
        image: 'i',
        gpusPerPod: 1,
        args: ['train.py'],
      });
      const secret = new RotatingGpuSecret(chart, 's', { name: 'creds' });
      secret.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.httpPost('http://localhost:8080/reload') });
      expect(vllm.downloadScript).toBeDefined();
    }
    return app.charts.flatMap(c => c.toJson());
  }

  test('one ConfigMap per script and workload, named after it: immutable, its data the script, its name a hash of it', () => {
    const objects = build(['one', 'two']);
    const maps = scriptMaps(objects);
    const fill = objects.find(o => o.kind === 'Job').metadata.name;
    const expected: Array<[string, RuntimeScript]> = [
      [scriptConfigMapName(hubDownloadScript(), 'a'), hubDownloadScript()],
      [scriptConfigMapName(hubDownloadScript(), 'b'), hubDownloadScript()],
      // The fill Job's own, named as the Job: a Job shared by identical fills belongs to no one workload.
      [fill, hubDownloadScript()],
      [scriptConfigMapName(launchScript(), 't'), launchScript()],
      [scriptConfigMapName(reloadScript(), 't'), reloadScript()],
    ];
    for (const namespace of ['one', 'two']) {
      const here = maps.filter(m => m.metadata.namespace === namespace);
      expect(here.map(m => m.metadata.name).sort()).toEqual(expected.map(([n]) => n).sort());
      for (const [name, script] of expected) {
        const m = here.find(x => x.metadata.name === name);
        expect(m.immutable).toBe(true);
        expect(m.data).toEqual({ [script.file]: script.content });
        // Before the fill Jobs (wave -1) under Argo CD, whose pods mount the download; pruned last, once the
        // workloads are healthy, so a pod the old template still makes finds its script.
        expect(m.metadata.annotations).toEqual({
          'argocd.argoproj.io/sync-wave': '-2',
          'argocd.argoproj.io/sync-options': 'PruneLast=true',
        });
      }
    }
    expect(maps).toHaveLength(10);
    expect(scriptConfigMapName(launchScript(), 't')).toMatch(/^t-launch-[0-9a-f]{10}$/);
  });

  test('a changed script is a new ConfigMap name', () => {
    const s = hubDownloadScript();
    expect(scriptConfigMapName({ ...s, content: `${s.content}\n` }, 'a')).not.toBe(scriptConfigMapName(s, 'a'));
    expect(scriptConfigMapName(s, 'llama-v2')).toMatch(/^llama-v2-hub-download-[0-9a-f]{10}$/);
  });

  test('every container that runs a script mounts it read-only; the pod has one volume per script', () => {
    const objects = build(['one']);
    const pods = objects
      .filter(o => o.spec?.template?.spec)
      .map(o => ({ where: `${o.kind}/${o.metadata.name}`, spec: o.spec.template.spec }));
    let runners = 0;
    for (const { where, spec } of pods) {
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        const argv: string[] = [...(c.command ?? []), ...(c.args ?? [])];
        const ran = argv.map(a => /^(?:\. )?\/opt\/cdk8s-gpu\/([a-z-]+)\//.exec(a)?.[1]).find(Boolean);
        if (!ran) continue;
        runners++;
        const volume = `cdk8s-gpu-${ran}`;
        const mount = c.volumeMounts.find((m: any) => m.name === volume);
        expect({ at: `${where} ${c.name}`, mount }).toEqual({
          at: `${where} ${c.name}`,
          mount: { name: volume, mountPath: `/opt/cdk8s-gpu/${ran}`, readOnly: true },
        });
        const volumes = spec.volumes.filter((v: any) => v.name === volume);
        expect(volumes).toHaveLength(1);
        expect(volumes[0].configMap.defaultMode).toBe(0o444);
        expect(scriptMaps(objects).map(m => m.metadata.name)).toContain(volumes[0].configMap.name);
      }
    }
    // vLLM: download + adapter; SGLang on a shared cache: wait (its fill Job too); the trainer and its sidecar.
    expect(runners).toBeGreaterThanOrEqual(6);
  });

  test("the scripts' volume names and mount root are reserved: a user volume or Secret mount there is refused", () => {
    const trainer = (volumes: object[]) => () =>
      new GpuTrainingStatefulSet(new Chart(Testing.app(), 'c'), 't', {
        name: 't',
        image: 'i',
        gpusPerPod: 1,
        args: ['train.py'],
        volumes: volumes as any,
      });
    expect(trainer([{ volume: { name: 'cdk8s-gpu-launch', emptyDir: {} } }])).toThrow(
      'GpuTrainingStatefulSet \'t\': volumes[0].volume.name must not start with cdk8s-gpu-: the library names the volumes of its runtime scripts so (got "cdk8s-gpu-launch")',
    );
    for (const mountPath of ['/opt/cdk8s-gpu/launch', '/opt/cdk8s-gpu', '/opt'])
      expect(trainer([{ volume: { name: 'data', emptyDir: {} }, mountPath }])).toThrow(
        `GpuTrainingStatefulSet 't': volumes[0].mountPath must not be /opt/cdk8s-gpu, under it or above it: the library mounts its runtime scripts there (got "${mountPath}")`,
      );
    expect(trainer([{ volume: { name: 'data', emptyDir: {} }, mountPath: '/opt/data' }])).not.toThrow();
    const chart = new Chart(Testing.app(), 'c');
    const svc = new VllmInferenceService(chart, 'a', { name: 'a', modelId: MODEL });
    expect(() =>
      new RotatingGpuSecret(chart, 's', { name: 'creds' }).mountInto(svc, {
        path: '/opt/cdk8s-gpu/reload-sidecar',
        onRotation: Reload.httpPost('http://localhost:8000/reload'),
      }),
    ).toThrow(/RotatingGpuSecret 's': path must not be \/opt\/cdk8s-gpu, under it or above it/);
  });
});

describe.each((Object.keys(SHELLS) as Shell[]).filter(s => SHELLS[s]))('a sourced script under %s', shell => {
  // `sh -c '. <file>' argv0 args...` must behave as `sh -c <content> argv0 args...` did: $0, "$@", exit codes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sourced-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'probe.sh');
  fs.writeFileSync(file, 'printf "%s|" "$0" "$#" "$@"; [ "$1" = fail ] && exit 3; exit 0\n');
  const run = (argv: string[]) => {
    const prefix = shell === 'busybox' ? ['sh'] : [];
    return spawnSync(SHELLS[shell]!, [...prefix, ...argv], { encoding: 'utf8' });
  };
  const args = ['two words', '$HOME', '*', ''];
  const content = fs.readFileSync(file, 'utf8');

  test('$0 and "$@" are the inline script\'s', () => {
    const sourced = sourcedCommand({ name: 'probe', file: 'probe.sh', content }, 'argv0').slice(1);
    sourced[1] = `. ${file}`;
    const a = run([...sourced, ...args]);
    const b = run(['-c', content, 'argv0', ...args]);
    expect(a.stdout).toBe('argv0|4|two words|$HOME|*||');
    expect(a.stdout).toBe(b.stdout);
    expect(a.status).toBe(0);
  });

  test("the script's exit code is the shell's", () => {
    expect(run(['-c', `. ${file}`, 'argv0', 'fail']).status).toBe(3);
  });

  test('the shipped scripts parse', () => {
    for (const s of [launchScript(), reloadScript()]) {
      const f = path.join(dir, s.file);
      fs.writeFileSync(f, s.content);
      execFileSync(SHELLS[shell]!, [...(shell === 'busybox' ? ['sh'] : []), '-n', f]);
    }
  });
});
