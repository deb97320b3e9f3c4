import { spawn } from 'child_process';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet } from '../../src';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, GpuPool, podsOf, scenario, waitExplained } from './sim';
import { KUEUE, quota, workloadsOf, admitted } from './kueue';

/**
 * GpuTrainingStatefulSet's job model on the controllers' side (docs/training.md, "The job model"), with
 * Kueue v0.17.0, the StatefulSet controller, kube-scheduler and KWOK GPU nodes. The container's side (the
 * launch wrapper's one exit 0 per rank after a completed run, its FAILED state) runs with a real torchrun
 * in test/training; here the kubelet's report of that exit is written into the pods' status as a kubelet
 * writes it, and what the docs tell the user to run is run: the construct's `waitForCompletionCommand`
 * (real kubectl) waits for every rank, and deleting the StatefulSet (after completion) or scaling it to 0
 * (after a FAILED run) gives the GPUs and the Kueue quota back, so the next queued job is admitted whole.
 */

const RUN = Date.now().toString(36);
const newest = SERVER_VERSIONS[SERVER_VERSIONS.length - 1];

function trainer(ns: string, gpus: GpuPool, name: string) {
  const chart = new Chart(Testing.app(), 'c', { namespace: ns });
  const sts = new GpuTrainingStatefulSet(chart, name, {
    name,
    image: 'registry.example/trainer:1.0',
    replicas: 2,
    gpusPerPod: 8,
    args: ['train.py'],
    queueName: 'gpus',
    nodeSelector: gpus.nodeSelector,
    pod: { tolerations: gpus.tolerations },
  });
  return { objects: Testing.synth(chart), sts };
}

/** What the kubelet reports once the trainer container exited 0 and was started again (restartPolicy Always). */
async function reportCompletedExit(cluster: Cluster, pod: any): Promise<void> {
  const now = new Date().toISOString();
  const statuses = (pod.status.containerStatuses ?? []).map((c: any) =>
    c.name === 'trainer'
      ? {
          ...c,
          restartCount: (c.restartCount ?? 0) + 1,
          lastState: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } },
        }
      : c,
  );
  const r = await cluster.request(
    'PATCH',
    `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`,
    { status: { containerStatuses: statuses } },
    'application/strategic-merge-patch+json',
  );
  if (r.status >= 300) throw new Error(`status of ${pod.metadata.name}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Runs a documented shell command with the release's kubectl first on PATH; resolves with its exit code. */
function runCommand(cluster: Cluster, command: string, timeoutMs: number): Promise<number | 'still waiting'> {
  const bin = path.dirname(cluster.kubectlPath);
  return new Promise(resolve => {
    const child = spawn('sh', ['-c', command], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: cluster.kubeconfig },
      stdio: 'ignore',
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('still waiting');
    }, timeoutMs);
    child.on('exit', code => {
      clearTimeout(timer);
      resolve(code ?? -1);
    });
  });
}

const ranksOf = async (cluster: Cluster, ns: string, name: string) =>
  podsOf(cluster, ns, `app.kubernetes.io/instance=${name}`);

describeCluster(
  "GpuTrainingStatefulSet's job model on the controllers' side, under Kueue",
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'sts-run', nodes: 2 });

    test('admitted whole; the completion command waits for every rank; deleting or scaling to 0 gives GPUs and quota to the next job', async () => {
      const ns = await place.namespace('sts-run', 'restricted');
      await quota(cluster, ns, 16);
      const gpus = place.gpus();
      const first = trainer(ns, gpus, 'first');
      const second = trainer(ns, gpus, 'second');
      const third = trainer(ns, gpus, 'third');
      await applyAll(cluster, first.objects);
      await waitExplained(cluster, ns, 'the first job admitted, both ranks running', 90, async () => {
        const running = (await ranksOf(cluster, ns, 'first')).filter(p => p.status?.phase === 'Running');
        return running.length === 2 || `${running.length} of 2 running`;
      });
      await applyAll(cluster, second.objects);
      await waitExplained(cluster, ns, 'the second job queued whole: both ranks gated, none placed', 60, async () => {
        const pods = await ranksOf(cluster, ns, 'second');
        const gated = pods.filter(p => (p.spec.schedulingGates ?? []).length > 0 && !p.spec.nodeName);
        return gated.length === 2 || `${pods.length} pods, ${gated.length} gated`;
      });

      // Completion is each rank's one exit 0: with one rank reported, the command still waits.
      const ranks = await ranksOf(cluster, ns, 'first');
      await reportCompletedExit(cluster, ranks[0]);
      expect(await runCommand(cluster, first.sts.waitForCompletionCommand, 5_000)).toBe('still waiting');
      await reportCompletedExit(cluster, ranks[1]);
      expect(await runCommand(cluster, first.sts.waitForCompletionCommand, 30_000)).toBe(0);
      // The pods keep their GPUs until the StatefulSet goes (docs: "Finish a training job").
      expect((await ranksOf(cluster, ns, 'first')).filter(p => p.status?.phase === 'Running')).toHaveLength(2);
      expect((await ranksOf(cluster, ns, 'second')).filter(p => p.spec.nodeName)).toHaveLength(0);
      expect(cluster.kubectl(['delete', 'statefulset', '-n', ns, 'first', '--wait=false']).status).toBe(0);
      await waitExplained(cluster, ns, 'the second job admitted whole once the first is gone', 120, async () => {
        const running = (await ranksOf(cluster, ns, 'second')).filter(p => p.status?.phase === 'Running');
        return running.length === 2 || `${running.length} of 2 running`;
      });

      // A FAILED run keeps its pods (a StatefulSet cannot stop them): scaling to 0 releases the quota.
      await applyAll(cluster, third.objects);
      await waitExplained(cluster, ns, 'the third job queued whole', 60, async () => {
        const pods = await ranksOf(cluster, ns, 'third');
        return pods.filter(p => !p.spec.nodeName).length === 2 || `${pods.length} pods`;
      });
      expect(cluster.kubectl(['scale', 'statefulset', '-n', ns, 'second', '--replicas=0']).status).toBe(0);
      await waitExplained(cluster, ns, 'the third job admitted whole once the second is scaled to 0', 120, async () => {
        const running = (await ranksOf(cluster, ns, 'third')).filter(p => p.status?.phase === 'Running');
        return running.length === 2 || `${running.length} of 2 running`;
      });
      const ws = await workloadsOf(cluster, ns);
      expect(
        ws
          .filter(admitted)
          .map(w => w.metadata.ownerReferences?.[0]?.name ?? w.metadata.name)
          .join(),
      ).toMatch(/third/);
      expect(ws.every(w => w.apiVersion === KUEUE)).toBe(true);
    }, 420_000);
  },
  v => v === newest,
);
