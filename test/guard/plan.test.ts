import * as fs from 'fs';
import * as path from 'path';
import { Size, Testing } from 'cdk8s';
import { Autoscaler, ModelCache, VllmInferenceService } from '../../src';
import { main } from '../../src/guard/cli';
import { parseObjects } from '../../src/guard/load';
import type { KubeObject } from '../../src/guard/normalize';
import { plan } from '../../src/guard/plan';
import { formatPlan, formatPlanMarkdown, planToJson } from '../../src/guard/plan-report';
import { testChart } from '../support/synth';

const SNAPSHOTS = path.join(__dirname, '..', '..', 'snapshots');
const snapshotText = (f: string) => fs.readFileSync(path.join(SNAPSHOTS, f), 'utf8');
const read = (text: string, name = 'x.yaml') => parseObjects(text, name);
const EXAMPLES = fs.readdirSync(SNAPSHOTS).filter(f => f.endsWith('.k8s.yaml'));

/**
 * The llm example after a vLLM image bump, as the construct synthesizes it: every use of the image
 * changes, and the cache-fill Job, whose name hashes its pod spec, gets a new name.
 */
function imageBump(text: string): string {
  const job = /name: (\S+-fill-[0-9a-f]{10})$/m.exec(text)![1];
  return text
    .replace(/vllm\/vllm-openai:v0\.31\.0/g, 'vllm/vllm-openai:v0.32.0')
    .split(job)
    .join(job.replace(/[0-9a-f]{10}$/, '0123456789'));
}

/** A line of the training launch wrapper, in the ConfigMap each training StatefulSet mounts it from. */
const WRAPPER = fs
  .readFileSync(path.join(__dirname, '..', '..', 'src', 'training', 'launch.sh'), 'utf8')
  .split('\n')
  .find(l => l.startsWith('# cdk8s-gpu training launch wrapper'))!;

describe('plan: a shipped script change (a library upgrade edits the training launch wrapper)', () => {
  const beforeText = EXAMPLES.map(snapshotText).join('\n---\n');
  // As the construct ships it: the ConfigMap's data changes, and with it the hash in its name, which each
  // StatefulSet's volume names.
  const afterText = beforeText
    .split('\n')
    .map(l => (l.trimStart() === WRAPPER ? `${l}\n${l.slice(0, l.length - WRAPPER.length)}# wrapper 0.2` : l))
    .join('\n')
    .replace(/(-launch-)[0-9a-f]{10}\b/g, '$10123456789');
  const p = plan(read(beforeText), read(afterText));
  const withScript = read(beforeText).filter(
    o => o.kind === 'StatefulSet' && JSON.stringify(o).includes('/opt/cdk8s-gpu/launch/launch.sh'),
  );

  test('every workload that runs the script is listed as restarting, naming the ConfigMap it mounts', () => {
    expect(withScript.length).toBeGreaterThanOrEqual(3);
    const restarting = p.workloads.filter(w => w.restarts).map(w => w.object);
    expect(restarting.sort()).toEqual(
      withScript
        .map(o => `StatefulSet/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`)
        .sort(),
    );
    for (const w of p.workloads.filter(x => x.restarts))
      expect(w.changes).toEqual(['spec.volumes[cdk8s-gpu-launch].configMap.name']);
  });

  test('the old ConfigMaps are pruned as replaced runtime scripts, each once', () => {
    expect(p.pruned.map(o => o.kind)).toEqual(withScript.map(() => 'ConfigMap'));
    for (const o of p.pruned)
      expect(o.note).toMatch(
        /^a runtime script, named by a hash of its content: ConfigMap\/\S+-launch-0123456789 holds/,
      );
    expect(p.guard.findings).toEqual([]);
  });

  test('with the time (drain + startup, all pods of an OnDelete job at once) and the GPUs', () => {
    const trainer = p.workloads.find(w => w.name === 'onnx-trainer-v2')!;
    expect(trainer).toMatchObject({
      mode: 'on-delete',
      pods: { min: 3, max: 3 },
      drainSeconds: 300,
      gpusPerPod: 2,
      gpus: { min: 6, max: 6 },
      gpusDuringRollout: { min: 6, max: 6 },
    });
    expect(trainer.seconds.max).toBe(300 + trainer.startupSeconds);
    expect(trainer.note).toMatch(/no pod restarts until its pods are deleted/);
    const pretrain = p.workloads.find(w => w.name === 'llm-pretrain')!;
    expect(pretrain.gpus.max).toBe(pretrain.pods.max * 8);
  });

  test('the serving workloads, whose template is unchanged, restart nothing', () => {
    for (const name of ['llm', 'tgi', 'chat']) {
      expect(p.workloads.find(w => w.name === name)).toMatchObject({ restarts: false, mode: 'none' });
    }
    expect(formatPlan(p)).toMatch(/plan: [1-9]\d* workload\(s\) restart/);
  });
});

describe('plan: a serving fleet rolled by a template change', () => {
  const before = snapshotText('llm.k8s.yaml');
  const after = imageBump(before);
  const p = plan(read(before), read(after));
  const llm = p.workloads.find(w => w.name === 'llm')!;

  test('an autoscaled Deployment replaces its 2-8 replicas one surge pod at a time, with the startup budget', () => {
    // startupProbe: periodSeconds 10 x failureThreshold 47; terminationGracePeriodSeconds 120.
    expect(llm).toMatchObject({
      kind: 'Deployment',
      restarts: true,
      mode: 'rolling',
      changes: expect.arrayContaining(['spec.containers[vllm].image', 'spec.initContainers[model-cache-wait].image']),
      pods: { min: 2, max: 8 },
      perStep: 1,
      drainSeconds: 120,
      startupSeconds: 470,
      seconds: { min: 2 * 590, max: 8 * 590 },
      gpus: { min: 2, max: 8 },
      // maxSurge 1: one pod more than the replicas while the new one loads; and old pods hold their GPUs
      // through their drain beside the new ones (seen on the real controller): up to twice the replicas.
      gpusDuringRollout: { min: 3, max: 16 },
    });
    expect(llm.note).toMatch(/maxSurge 1, maxUnavailable 0/);
    expect(formatPlan(p)).toMatch(/gpus: {3}2–8 GPU\(s\) \(1 per pod\), 3–16 during the rollout/);
  });

  test('the renamed fill Job is new, and the old one is pruned', () => {
    expect(p.workloads.find(w => w.kind === 'Job')).toMatchObject({ mode: 'new', gpus: { min: 0, max: 0 } });
    // The Job and its download script's ConfigMap, named as the Job.
    expect(p.pruned.map(o => o.kind).sort()).toEqual(['ConfigMap', 'Job']);
    expect(p.pruned.find(o => o.kind === 'ConfigMap')!.note).toMatch(/^a runtime script, named by a hash/);
  });

  test('a live export gives the replicas the autoscaler chose', () => {
    const live = read(before).map(o =>
      o.kind === 'Deployment'
        ? { ...o, spec: { ...o.spec, replicas: 5 }, status: { replicas: 5, readyReplicas: 5 } }
        : o,
    );
    const q = plan(live, read(after));
    expect(q.workloads.find(w => w.name === 'llm')!.pods).toEqual({ min: 5, max: 5 });
  });

  test('Markdown and JSON carry the same facts', () => {
    const md = formatPlanMarkdown(p);
    expect(md).toMatch(/^### cdk8s-gpu plan/);
    expect(md).toContain(
      '| `Deployment/serving/llm` | rolling | 2–8 | 19.7 min–78.7 min | 2–8 (3–16) | spec.containers[vllm].image; ',
    );
    const json = planToJson(p) as any;
    expect(json.workloads.find((w: any) => w.name === 'llm').seconds).toEqual({ min: 1180, max: 4720 });
    expect(json.guard.schemaVersion).toBe(2);
  });
});

function llmService(version: number): KubeObject[] {
  const chart = testChart('serving');
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    version,
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    gpusPerReplica: 2,
    replicas: 3,
    hfTokenSecret: { name: 'hf-token', key: 'token' },
    modelSize: Size.gibibytes(15),
    modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
  });
  return Testing.synth(chart) as KubeObject[];
}

describe('plan: a one-step version bump under a pruning sync', () => {
  const p = plan(llmService(1), llmService(2));

  test('names the deleted objects and the outage window (the new pods startup budget)', () => {
    // A shared cache: the serving workload is a Deployment.
    const sts = p.pruned.find(o => o.kind === 'Deployment')!;
    const created = p.workloads.find(w => w.mode === 'new' && w.kind === 'Deployment')!;
    expect(sts.replacedBy).toBe(created.object);
    expect(sts.gpus).toEqual({ min: 6, max: 6 });
    expect(sts.outageSeconds).toBe(created.startupSeconds);
    expect(created.startupSeconds).toBeGreaterThan(0);
    expect(sts.note).toMatch(/nothing serves for up to \d+(\.\d)? (s|min)/);
    expect(sts.note).toMatch(/PruneLast=true/);
    // The old version's other objects go too.
    expect(p.pruned.length).toBeGreaterThan(1);
    expect(created.gpusDuringRollout).toEqual({ min: 6, max: 6 });
  });

  test('the Markdown comment lists them under a pruning heading', () => {
    expect(formatPlanMarkdown(p)).toMatch(
      /#### Deleted by a pruning sync\n\n(- .*\n)*- `Deployment\/serving\/llm-v1`: replaced by Deployment\/serving\/llm-v2/,
    );
  });
});

describe('plan: an allowed change that restarts nothing', () => {
  test('replicas and a Service label change restart no pod; exit 0', () => {
    const before = snapshotText('production.k8s.yaml');
    const after = before.replace(/^ {2}replicas: 4$/m, '  replicas: 6');
    expect(after).not.toBe(before);
    const p = plan(read(before), read(after));
    expect(p.restarting).toBe(0);
    expect(p.workloads.every(w => !w.restarts)).toBe(true);
    expect(formatPlan(p)).toMatch(/plan: 0 workload\(s\) restart, 0 new, 0 object\(s\) deleted/);
    expect(formatPlanMarkdown(p)).toContain('No pod restarts.');
    // The production app's PrometheusRule is compared without its CRD: each format says so.
    const unchecked = 'no CRD for monitoring.coreos.com/PrometheusRule: their transition rules';
    expect(formatPlan(p)).toContain(`guard: ${unchecked}`);
    expect(formatPlanMarkdown(p)).toContain(`- **not checked**: ${unchecked}`);
    expect((planToJson(p) as any).guard.uncheckedKinds).toEqual(['monitoring.coreos.com/PrometheusRule']);
  });
});

describe('cdk8s-gpu plan CLI', () => {
  const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'plan-'));
  const b = path.join(dir, 'before.yaml');
  const a = path.join(dir, 'after.yaml');
  fs.writeFileSync(b, snapshotText('llm.k8s.yaml'));
  fs.writeFileSync(a, imageBump(snapshotText('llm.k8s.yaml')));
  const run = (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = main(
      args,
      s => out.push(s),
      s => err.push(s),
    );
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  test('text, json and markdown; exit 0 without forbidden changes', () => {
    expect(run('plan', '--before', b, '--after', a)).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^NEW Job\/serving\/\S+-fill-0123456789\n(.*\n)*RESTARTS Deployment\/serving\/llm\n/),
    });
    expect(JSON.parse(run('plan', '--before', b, '--after', a, '--format', 'json').out).restarting).toBe(1);
    expect(JSON.parse(run('plan', '--before', b, '--after', a, '--json').out).restarting).toBe(1);
    expect(run('plan', '--before', b, '--after', a, '--format', 'markdown').out).toMatch(/^### cdk8s-gpu plan/);
  });

  test('exit 1 when the guard refuses a change, with its remedy in the plan', () => {
    const refused = path.join(dir, 'refused.yaml');
    // The fill Job's pod template changed under the same name: the API server refuses it.
    fs.writeFileSync(refused, snapshotText('llm.k8s.yaml').replace('restartPolicy: OnFailure', 'restartPolicy: Never'));
    const r = run('plan', '--before', b, '--after', refused);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FORBIDDEN Job\/serving\/\S+ spec\.template/);
    expect(r.out).toMatch(/remedy: /);
  });

  test('exit 2 for bad input or usage, naming the plan', () => {
    expect(run('plan', '--before', b)).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^cdk8s-gpu plan: --before and --after are required\. usage: cdk8s-gpu plan/),
    });
    expect(run('plan', '--before', b, '--after', a, '--format', 'html')).toMatchObject({ code: 2 });
    expect(run('guard', '--before', b, '--after', a, '--format', 'json')).toMatchObject({ code: 2 });
    expect(run('plan', '--before', path.join(dir, 'none'), '--after', a)).toMatchObject({
      code: 2,
      err: expect.stringMatching(/no such file/),
    });
  });
});

describe('GPU counts of an autoscaled workload', () => {
  test('the replaced-StatefulSet warning counts 2–8 GPUs for a service of 2–8 replicas, not 1', () => {
    const before = autoscaledStatefulSet();
    const after = before.map(o =>
      o.kind === 'StatefulSet' ? { ...o, metadata: { ...o.metadata, name: 'llm-v2' } } : o,
    );
    const p = plan(before, after);
    const w = p.guard.findings.find(f => f.code === 'statefulset-replaced')!;
    expect(w.message).toContain('with its pods and their 2–8 GPU(s)');
    expect(p.pruned.find(o => o.kind === 'StatefulSet')).toMatchObject({
      gpus: { min: 2, max: 8 },
      replacedBy: 'StatefulSet/serving/llm-v2',
    });
  });

  test('a renamed Deployment is pruned with the GPUs of its 2–8 replicas', () => {
    const before = read(snapshotText('llm.k8s.yaml'));
    const after = before.map(o =>
      o.kind === 'Deployment' ? { ...o, metadata: { ...o.metadata, name: 'llm-v2' } } : o,
    );
    expect(plan(before, after).pruned.find(o => o.kind === 'Deployment')).toMatchObject({
      gpus: { min: 2, max: 8 },
      replacedBy: 'Deployment/serving/llm-v2',
    });
  });
});

/** The llm example's service on per-replica claims: a StatefulSet, autoscaled 2–8. */
function autoscaledStatefulSet(): KubeObject[] {
  const chart = testChart('serving');
  new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    gpusPerReplica: 1,
    hfTokenSecret: { name: 'hf-token', key: 'token' },
    modelSize: Size.gibibytes(15),
    modelCache: ModelCache.persistentClaim({ size: Size.gibibytes(40) }),
    autoscaling: {
      minReplicas: 2,
      maxReplicas: 8,
      targetRequestsInFlight: 200,
      autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
    },
  });
  return Testing.synth(chart) as KubeObject[];
}

describe('the validation plugin logs the plan', () => {
  test('GuardValidation reports the restarting workloads after cdk8s synth', async () => {
    const { GuardValidation } = require('../../src') as typeof import('../../src');
    const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'plan-plugin-'));
    fs.writeFileSync(path.join(dir, 'base.yaml'), snapshotText('llm.k8s.yaml'));
    const manifest = path.join(dir, 'app.k8s.yaml');
    fs.writeFileSync(manifest, imageBump(snapshotText('llm.k8s.yaml')));
    const logs: string[] = [];
    let status = '';
    await new GuardValidation({ baseline: path.join(dir, 'base.yaml') }).validate({
      manifests: [manifest],
      report: { addViolation: () => undefined, submit: s => (status = s) },
      logger: { log: m => logs.push(m) },
    });
    expect(status).toBe('success');
    expect(logs.join('\n')).toMatch(
      /^RESTARTS Deployment\/serving\/llm\n {2}RollingUpdate, maxSurge 1, maxUnavailable 0/m,
    );
    expect(logs.join('\n')).toMatch(/plan: 1 workload\(s\) restart/);
  });
});

describe('rollout sequencing by kind and strategy', () => {
  const podSpec = (image: string) => ({
    terminationGracePeriodSeconds: 60,
    containers: [
      {
        name: 'c',
        image,
        resources: { limits: { 'nvidia.com/gpu': 2 } },
        startupProbe: {
          httpGet: { path: '/', port: 80 },
          initialDelaySeconds: 30,
          periodSeconds: 10,
          failureThreshold: 9,
        },
      },
    ],
  });
  const deploy = (image: string, strategy?: object) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', namespace: 'n' },
    spec: {
      replicas: 4,
      selector: { matchLabels: { a: 'b' } },
      ...(strategy ? { strategy } : {}),
      template: { metadata: { labels: { a: 'b' } }, spec: podSpec(image) },
    },
  });
  test('a Deployment: 25%/25% by default (1 surge + 1 unavailable of 4: 2 steps), the surge pod and the draining old pods hold GPUs', () => {
    const w = plan([deploy('i:1')] as KubeObject[], [deploy('i:2')] as KubeObject[]).workloads[0];
    // step = 60 s drain + 30 + 10 x 9 = 180 s
    expect(w).toMatchObject({ mode: 'rolling', perStep: 2, startupSeconds: 120, seconds: { min: 360, max: 360 } });
    // 4 x 2 GPUs, 1 surge pod: 10 while each drain ends before the next startup; 16 while all four old pods
    // drain beside four new ones.
    expect(w.gpusDuringRollout).toEqual({ min: 10, max: 16 });
  });
  test('a Deployment with Recreate: every pod stops, then all start; no surge', () => {
    const w = plan(
      [deploy('i:1', { type: 'Recreate' })] as KubeObject[],
      [deploy('i:2', { type: 'Recreate' })] as KubeObject[],
    ).workloads[0];
    expect(w).toMatchObject({
      mode: 'recreate',
      seconds: { min: 180, max: 180 },
      gpusDuringRollout: { min: 8, max: 8 },
    });
  });
  test('a LeaderWorkerSet rolls group by group; GPUs count the leader and the workers', () => {
    const lws = (image: string) => ({
      apiVersion: 'leaderworkerset.x-k8s.io/v1',
      kind: 'LeaderWorkerSet',
      metadata: { name: 'big', namespace: 'n' },
      spec: { replicas: 3, leaderWorkerTemplate: { size: 4, workerTemplate: { spec: podSpec(image) } } },
    });
    const w = plan([lws('i:1')] as KubeObject[], [lws('i:2')] as KubeObject[]).workloads[0];
    expect(w).toMatchObject({
      unit: 'group',
      pods: { min: 3, max: 3 },
      perStep: 1,
      gpusPerPod: 8,
      gpus: { min: 24, max: 24 },
    });
    expect(w.seconds.max).toBe(3 * 180);
  });
  const sts = (image: string, spec: object) => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 's', namespace: 'n' },
    spec: {
      serviceName: 's',
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: podSpec(image) },
      ...spec,
    },
  });
  test('a StatefulSet with a partition restarts only the ordinals at or above it', () => {
    const spec = { replicas: 5, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 3 } } };
    const w = plan([sts('i:1', spec)] as KubeObject[], [sts('i:2', spec)] as KubeObject[]).workloads[0];
    expect(w).toMatchObject({ pods: { min: 2, max: 2 }, perStep: 1, seconds: { min: 360, max: 360 } });
  });
  test('a Parallel StatefulSet with maxUnavailable replaces several at once only from 1.35 (MaxUnavailableStatefulSet)', () => {
    const spec = {
      replicas: 4,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } },
    };
    const at = (serverVersion: string) =>
      plan([sts('i:1', spec)] as KubeObject[], [sts('i:2', spec)] as KubeObject[], { serverVersion }).workloads[0];
    expect(at('1.35')).toMatchObject({ perStep: 2, seconds: { min: 360, max: 360 } });
    expect(at('1.34')).toMatchObject({ perStep: 1, seconds: { min: 720, max: 720 } });
    expect(at('1.34').note).toMatch(/maxUnavailable 2 needs the MaxUnavailableStatefulSet feature gate before 1\.35/);
  });
});

describe('plan: a new workload without a startup probe', () => {
  test('the Markdown table says its time is unknown, as the note does, not 0 s', () => {
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'fill', namespace: 'serving' },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'fill', image: 'img:1' }] } } },
    };
    const p = plan([], [job]);
    const created = p.workloads.find(w => w.object === 'Job/serving/fill')!;
    expect(created).toMatchObject({ mode: 'new', startupSeconds: 0 });
    expect(created.note).toMatch(/an unknown time \(no startup probe\)/);
    const md = formatPlanMarkdown(p);
    expect(md).toContain('| `Job/serving/fill` | new | 1 | unknown (no startup probe) |');
    expect(md).not.toMatch(/\| `Job\/serving\/fill` \| new \| 1 \| 0 s \|/);
  });
});
