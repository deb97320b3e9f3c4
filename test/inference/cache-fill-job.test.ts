import * as fs from 'fs';
import { Chart, Size, Testing } from 'cdk8s';
import { InferenceServiceProps, ModelCache, VllmInferenceService, WorkloadKind } from '../../src';
import { podSecurityLevel, restrictedViolations } from '../support/pod-security';
import { envOf, findOne, synthValid } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';
import * as hd from '../support/hub-download';
import { StandInHub } from '../support/stand-in-hub';
import { BASE, ENGINES } from './support';

const SHARED = { modelCache: ModelCache.sharedClaim({ claimName: 'models' }) };
const TOKEN = { hfTokenSecret: { name: 'hf', key: 'token' } };

function synth(make: (chart: Chart) => void, namespace = 'serving') {
  const chart = new Chart(Testing.app(), 'c', { namespace });
  make(chart);
  const objects = synthValid(chart);
  expectValidOutput(objects);
  return { chart, objects, jobs: objects.filter(o => o.kind === 'Job') };
}

const initOf = (workload: any): any[] => workload.spec.template.spec.initContainers ?? [];

describe.each(ENGINES)('$construct on a shared ReadWriteMany cache', e => {
  const one = (props: Partial<InferenceServiceProps> = {}) => {
    let svc: any;
    const out = synth(chart => (svc = e.make(chart, 'svc', { ...BASE, ...SHARED, ...TOKEN, ...props })));
    return { ...out, svc, job: findOne(out.objects, 'Job'), workload: findOne(out.objects, svc.workloadKind) };
  };

  test('a CPU-only fill Job runs the download: same image, command and env as the init download was, the credentials, no GPU', () => {
    const { job, svc, workload } = one();
    const pod = job.spec.template.spec;
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0];
    expect(c.name).toBe('model-download');
    expect(c.image).toBe(e.image);
    // The same script and arguments as the init download of a per-replica cache.
    const perReplica = initOf(findOne(synth(ch => e.make(ch, 'svc', { ...BASE, ...TOKEN })).objects, 'StatefulSet'));
    expect(c.command).toEqual(perReplica.find(x => x.name === 'model-download').command);
    expect(envOf(c).HF_TOKEN).toEqual({ secretKeyRef: { name: 'hf', key: 'token' } });
    expect(envOf(c).HF_HUB_OFFLINE).toBeUndefined();
    // No GPU: not requested or limited, no GPU tolerations or node selection.
    expect(Object.keys({ ...c.resources.requests, ...c.resources.limits }).sort()).toEqual(['cpu', 'memory']);
    expect(pod.tolerations).toBeUndefined();
    expect(pod.affinity).toBeUndefined();
    expect(pod.nodeSelector).toBeUndefined();
    // The cache it fills is the service's claim.
    expect(pod.volumes).toContainEqual({ name: 'model-cache', persistentVolumeClaim: { claimName: 'models' } });
    expect(job.metadata.name).toBe(svc.cacheFillJobName);
    expect(svc.cacheFillJob).toBeDefined();
    // The serving pods keep the GPU.
    expect(JSON.stringify(workload.spec.template.spec.containers)).toContain('nvidia.com/gpu');
  });

  test("the Job asks for what a download does (1 CPU, 2 GiB), not the server's, unless downloadResources says", () => {
    const resources = (props: Partial<InferenceServiceProps> = {}) =>
      one(props).job.spec.template.spec.containers[0].resources;
    expect(resources()).toEqual({ requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } });
    expect(resources({ downloadResources: { cpu: 3 } })).toEqual({
      requests: { cpu: '3', memory: '2Gi' },
      limits: { memory: '2Gi' },
    });
    expect(resources({ downloadResources: { memory: Size.gibibytes(6) } })).toEqual({
      requests: { cpu: '1', memory: '6Gi' },
      limits: { memory: '6Gi' },
    });
    // The serving pod's wait keeps the server's resources: an init container's request hides under them.
    const wait = initOf(one().workload).find(c => c.name === 'model-cache-wait');
    expect(wait.resources.requests.memory).not.toBe('2Gi');
  });

  test('the Job: sync wave -1 for Argo CD, retries that resume, the download deadline, never deleted by a TTL', () => {
    const { job } = one();
    expect(job.metadata.annotations).toEqual({ 'argocd.argoproj.io/sync-wave': '-1' });
    expect(job.spec.backoffLimit).toBeGreaterThan(0);
    expect(job.spec.template.spec.restartPolicy).toBe('OnFailure');
    expect(job.spec.activeDeadlineSeconds).toBe(21600);
    expect(job.spec.ttlSecondsAfterFinished).toBeUndefined();
    expect(job.metadata.labels['app.kubernetes.io/component']).toBe('model-cache-fill');
    // The download's own deadline, when set, is the Job's.
    const set = one({ env: { DOWNLOAD_DEADLINE_SECONDS: '7200' } });
    expect(set.job.spec.activeDeadlineSeconds).toBe(7200);
  });

  test("the Job's Pod Security level is the serving pod's (one UID per shared cache); restricted where the engine runs non-root", () => {
    const { job, svc } = one(e.nonRoot);
    expect(restrictedViolations(job.spec.template.spec)).toEqual([]);
    expect(podSecurityLevel(job.spec.template.spec)).toBe('restricted');
    expect(job.spec.template.spec.securityContext.runAsUser).toBe(svc._securityUid);
    const byDefault = one();
    expect(podSecurityLevel(byDefault.job.spec.template.spec)).toBe(byDefault.svc.podSecurityLevel);
  });

  test('serving pods do not download: model-cache-wait runs offline, without credentials, with a deadline from the startup budget', () => {
    const { workload, svc, job } = one({ modelSize: Size.gibibytes(15) });
    const init = initOf(workload);
    expect(init.map(c => c.name)).toEqual(['model-cache-wait']);
    const wait = init[0];
    const env = envOf(wait);
    expect(env.HF_HUB_OFFLINE).toBe('1');
    expect(env.HF_TOKEN).toBeUndefined();
    expect(env.MODEL_CACHE_FILL_JOB).toBe(job.metadata.name);
    // 15 GiB at 25 MB/s (645 s) plus the startup budget: the fill's expected time, then the load.
    expect(Number(env.MODEL_CACHE_WAIT_SECONDS)).toBe(645 + svc.startupBudgetSeconds);
    expect(JSON.stringify(workload)).not.toContain('"name":"HF_TOKEN"');
    // The same script: its wait mode reads the marker the Job's download writes.
    expect(wait.command).toEqual(job.spec.template.spec.containers[0].command);
  });

  test('a Deployment by default, whose progress deadline allows the wait, the load and a drain', () => {
    const { workload, svc } = one({ modelSize: Size.gibibytes(15) });
    expect(svc.workloadKind).toBe(WorkloadKind.DEPLOYMENT);
    const wait = Number(envOf(initOf(workload)[0]).MODEL_CACHE_WAIT_SECONDS);
    expect(workload.spec.progressDeadlineSeconds).toBe(wait + svc.capacitySeconds + svc.terminationGracePeriodSeconds);
  });
});

describe('one fill per claim, engine, model and revision', () => {
  const vllm = (chart: Chart, id: string, props: Partial<InferenceServiceProps> = {}) =>
    new VllmInferenceService(chart, id, { ...BASE, ...SHARED, ...props });

  test('two versions (or two services) of one model on one claim share one Job', () => {
    let a: any;
    let b: any;
    let c: any;
    const { jobs, objects } = synth(chart => {
      a = vllm(chart, 'v1', { version: 1 });
      b = vllm(chart, 'v2', { version: 2 });
      c = vllm(chart, 'other', { name: 'other' });
    });
    expect(jobs).toHaveLength(1);
    expect(new Set([a.cacheFillJobName, b.cacheFillJobName, c.cacheFillJobName])).toEqual(
      new Set([jobs[0].metadata.name]),
    );
    for (const w of objects.filter(o => o.kind === 'Deployment'))
      expect(envOf(initOf(w)[0]).MODEL_CACHE_FILL_JOB).toBe(jobs[0].metadata.name);
  });

  test('another revision, claim or namespace is another Job', () => {
    const { jobs } = synth(chart => {
      vllm(chart, 'a');
      vllm(chart, 'b', { name: 'b', revision: 'v2.0' });
      vllm(chart, 'c', { name: 'c', modelCache: ModelCache.sharedClaim({ claimName: 'other' }) });
    });
    expect(jobs).toHaveLength(3);
    expect(new Set(jobs.map(j => j.metadata.name)).size).toBe(3);
    const app = Testing.app();
    vllm(new Chart(app, 'x', { namespace: 'x' }), 'a');
    vllm(new Chart(app, 'y', { namespace: 'y' }), 'a');
    const out = app.charts.flatMap(ch => Testing.synth(ch)).filter(o => o.kind === 'Job');
    expect(out.map(j => j.metadata.namespace).sort()).toEqual(['x', 'y']);
  });

  test('the name: <model>-fill-<hash>, a DNS label of at most 63 characters, the hash changing with the pod spec', () => {
    const name = (props: Partial<InferenceServiceProps>) =>
      synth(chart => vllm(chart, 'a', props)).jobs[0].metadata.name as string;
    expect(name({})).toMatch(/^qwen-qwen2-5-7b-instruct-fill-[0-9a-f]{10}$/);
    const long = name({ modelId: `org/${'x'.repeat(90)}` });
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    // A changed image (an immutable Job template) is a new Job, not an update the API server refuses.
    expect(name({ image: 'vllm/vllm-openai:v0.30.0' })).not.toBe(name({}));
  });

  test('no Job for a per-replica claim, an emptyDir or a model on a volume', () => {
    for (const props of [{}, { modelCache: ModelCache.emptyDir() }, { modelId: '/models/llama', ...SHARED }] as Array<
      Partial<InferenceServiceProps>
    >) {
      const chart = new Chart(Testing.app(), 'c');
      new VllmInferenceService(chart, 'a', { ...BASE, ...props });
      expect(Testing.synth(chart).filter(o => o.kind === 'Job')).toEqual([]);
    }
  });

  test('LoRA adapters on a shared cache: each filled by a Job of its own; the pod waits for it and links it offline', () => {
    let svc: any;
    const { jobs, objects } = synth(chart => {
      svc = vllm(chart, 'a', {
        loraAdapters: [{ name: 'sql', modelId: 'org/sql-lora', revision: 'v1' }],
      } as any);
    });
    expect(jobs).toHaveLength(2);
    const adapterJob = jobs.find(j => j.metadata.name !== svc.cacheFillJobName);
    const cmd = adapterJob.spec.template.spec.containers[0].command;
    expect(cmd.slice(2)).toEqual(['vllm', 'org/sql-lora', 'v1']);
    const init = initOf(findOne(objects, 'Deployment'));
    expect(init.map(c => c.name)).toEqual(['model-cache-wait', 'model-cache-wait-lora-0']);
    const wait = init[1];
    expect(wait.command.slice(2)).toEqual(['vllm', 'org/sql-lora', 'v1', '/data/lora/llm/sql', '16']);
    expect(envOf(wait).MODEL_CACHE_FILL_JOB).toBe(adapterJob.metadata.name);
    expect(envOf(wait).HF_HUB_OFFLINE).toBe('1');
  });
});

// The wait mode, run for real: the Job's download fills a scratch cache from a stand-in hub, and the
// serving pod's model-cache-wait (as synthesized) passes only once the marker is there, with no request.
jest.setTimeout(60_000);
for (const version of hd.HUB_VERSIONS) {
  if (!hd.hubInstalled(version)) {
    hd.missingVenvTest(version);
    continue;
  }
  describe(`model-cache-wait under huggingface_hub ${version}`, () => {
    let hub: StandInHub;
    let data: string;
    hd.hubPerTest((h, d) => ((hub = h), (data = d)));

    const containers = (props: Partial<InferenceServiceProps> = {}) => {
      const { objects } = synth(chart => new VllmInferenceService(chart, 'a', { ...BASE, ...SHARED, ...props }));
      const wait = initOf(findOne(objects, 'Deployment'))[0];
      return { fill: findOne(objects, 'Job').spec.template.spec.containers[0], wait };
    };
    const waitFor = (wait: any, seconds: string, at: StandInHub | string = hub) =>
      hd.runContainer(version, wait, data, at, {
        filler: 'llm-6d4cf56db6-x2v9k',
        env: { MODEL_CACHE_WAIT_SECONDS: seconds, MODEL_CACHE_WAIT_POLL_SECONDS: '0.2' },
      });

    test('before the fill it waits, makes no request, and fails at its deadline naming the Job', async () => {
      const { wait } = containers({ modelId: 'org/model' });
      const r = await waitFor(wait, '1');
      expect(r.status).not.toBe(0);
      expect(r.output).toMatch(/not complete in the cache after 1 s: see kubectl logs job\/org-model-fill-/);
      expect(hub.requests).toEqual([]);
    });

    test('started before the fill, it passes once the Job completes, with no request of its own; the server then opens the files offline', async () => {
      const { fill, wait } = containers({ modelId: 'org/model' });
      const waiting = waitFor(wait, '40');
      const filled = await hd.runContainer(version, fill, data, hub, { filler: 'org-model-fill-abc12' });
      expect(filled.status).toBe(0);
      const requestsOfFill = hub.requests.length;
      const r = await waiting;
      expect(r.status).toBe(0);
      expect(r.output).toMatch(/filled by org-model-fill-/);
      expect(hub.requests.length).toBe(requestsOfFill);
      const opened = await hd.openOffline(version, data, ['config.json', 'tokenizer.json']);
      expect(opened['config.json']).toBe(hub.files['config.json'].content.toString('base64'));
      // A later start passes at once, even with no hub at all.
      expect((await waitFor(wait, '1', 'http://127.0.0.1:9')).status).toBe(0);
    });

    test('a half-filled cache (a ref, files, no marker) is not taken for complete', async () => {
      const { fill, wait } = containers({ modelId: 'org/model' });
      expect((await hd.runContainer(version, fill, data, hub)).status).toBe(0);
      const c = hd.cacheOf(data);
      fs.rmSync(`${data}/hub/.cdk8s-gpu/complete`, { recursive: true, force: true });
      expect(c.ref()).toBe(hub.sha);
      const r = await waitFor(wait, '1');
      expect(r.status).not.toBe(0);
    });
  });
}
