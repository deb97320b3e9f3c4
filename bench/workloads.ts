// The workload mix the bench synthesizes with the library. Only inputs live here (the props a user
// writes); every output the bench compares against is derived from the library's own synth at run
// time, so the bench stays right while the constructs change.
import { App, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { library } from './env';

export type Layout = 'one-chart' | 'chart-per-workload';

/** One kind of workload in the mix: a name for the report and how to create one with the library. */
export interface WorkloadKind {
  readonly name: string;
  readonly create: (scope: Construct, i: number) => void;
}

/**
 * Every kind the mix can hold: training, TGI, every other serving engine the library exports
 * (vLLM, SGLang, ... found by their export names, so new engines join without editing the bench),
 * and a rotating Secret mounted into a training job.
 */
export function candidateKinds(): { kinds: WorkloadKind[]; absent: string[] } {
  const gpu = library();
  const kinds: WorkloadKind[] = [
    {
      name: 'training',
      create: (s, i) =>
        new gpu.GpuTrainingStatefulSet(s, `train-${i}`, {
          name: `train-${i}`,
          image: 'nvcr.io/nvidia/pytorch:24.08-py3',
          args: ['train.py'],
          gpusPerPod: 2,
          replicas: 2,
        }),
    },
    {
      name: 'TgiInferenceService',
      create: (s, i) =>
        new gpu.TgiInferenceService(s, `tgi-${i}`, { name: `tgi-${i}`, modelId: 'meta-llama/Llama-3.1-8B-Instruct' }),
    },
  ];
  const absent: string[] = [];
  const exported = gpu as unknown as Record<string, unknown>;
  for (const engine of ['vllm', 'sglang']) {
    const found = Object.keys(exported).filter(
      k => k.toLowerCase().startsWith(engine) && /(Service|Server)$/.test(k) && typeof exported[k] === 'function',
    );
    for (const exportName of found) {
      const Ctor = exported[exportName] as new (s: Construct, id: string, props: object) => unknown;
      kinds.push({
        name: exportName,
        create: (s, i) =>
          new Ctor(s, `${engine}-${i}`, { name: `${engine}-${i}`, modelId: 'Qwen/Qwen2.5-7B-Instruct' }),
      });
    }
    if (found.length === 0) absent.push(`${engine}: not exported by this build`);
  }
  kinds.push({
    name: 'RotatingGpuSecret.mountInto(training)',
    create: (s, i) => {
      const trainer = new gpu.GpuTrainingStatefulSet(s, `job-${i}`, {
        name: `job-${i}`,
        image: 'nvcr.io/nvidia/pytorch:24.08-py3',
        args: ['train.py'],
        gpusPerPod: 1,
        replicas: 1,
      });
      const creds = new gpu.RotatingGpuSecret(s, `creds-${i}`, {
        name: `creds-${i}`,
        rotation: { image: 'myorg/rotator:1.0.0', every: Duration.hours(12) },
      });
      creds.mountInto(trainer, {
        path: '/etc/gpu',
        onRotation: gpu.Reload.exec(['/usr/local/bin/reload-credentials']),
      });
    },
  });
  return { kinds, absent };
}

/** The kinds that synthesize with minimal props (checked once, in the runner, never in a measured process). */
export function usableKinds(): { kinds: WorkloadKind[]; skipped: string[] } {
  const { kinds, absent } = candidateKinds();
  const skipped = [...absent];
  const usable = kinds.filter(k => {
    try {
      const app = new App({ outdir: '/nonexistent' });
      k.create(new Chart(app, 'probe'), 0);
      app.synthYaml();
      return true;
    } catch (e) {
      skipped.push(`${k.name}: refused with minimal props (${(e as Error).message.split('\n')[0]})`);
      return false;
    }
  });
  return { kinds: usable, skipped };
}

/** The named kinds, in the runner's order, for a measured process. */
export function kindsNamed(names: string[]): WorkloadKind[] {
  const all = candidateKinds().kinds;
  return names.map(n => {
    const k = all.find(x => x.name === n);
    if (!k) throw new Error(`bench: unknown workload kind ${n}`);
    return k;
  });
}

/** n workloads cycling through the kinds, in one chart or in one chart each. */
export function buildWithLibrary(app: App, kinds: WorkloadKind[], n: number, layout: Layout): void {
  let shared: Chart | undefined;
  for (let i = 0; i < n; i++) {
    const chart = layout === 'one-chart' ? (shared ??= new Chart(app, 'all')) : new Chart(app, `w${i}`);
    kinds[i % kinds.length].create(chart, i);
  }
}
