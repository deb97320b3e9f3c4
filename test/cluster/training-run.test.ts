import { Chart, Duration, Testing } from 'cdk8s';
import { GpuTrainingJob, GpuTrainingJobProps, Reload, RotatingGpuSecret } from '../../src';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, failingContainer, GpuPool, gpusHeld, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * GpuTrainingJob run to its end by the real controllers: the JobSet controller (v0.12.0), the Job
 * controller and kube-scheduler, on KWOK GPU nodes whose simulated kubelets run each pod for a scaled-down
 * time (the `pod-complete` stage's delay stands for the training) or fail its trainer with an exit code
 * (the `pod-container-running-failed` stage). What is shown is the controllers' side of docs/training.md's
 * job model; the containers' side (torchrun, the launch wrapper, signals) is tested with real processes in
 * test/training. KWOK runs init containers to completion and does not model native sidecars: that the
 * kubelet stops a reload sidecar once the trainer has exited rests on the kubelet's documented behaviour.
 *
 * Run at the floor (1.32) and the newest release.
 */

const RUN = Date.now().toString(36);

function output(namespace: string, gpus: GpuPool, props: Partial<GpuTrainingJobProps>) {
  const chart = new Chart(Testing.app(), 'c', { namespace });
  const job = new GpuTrainingJob(chart, 'job', {
    name: 'run',
    image: 'registry.example/trainer:1.0',
    nodes: 2,
    gpusPerPod: 8,
    args: ['train.py'],
    nodeSelector: gpus.nodeSelector,
    ...props,
    pod: { tolerations: gpus.tolerations, ...props.pod },
  });
  return { chart, job };
}

const ends = (cluster: Cluster, namespace: string) =>
  cluster.request('GET', `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${namespace}/jobsets/run`);

/**
 * The JobSet's terminal condition (Completed or Failed), once it has one. Bounded at 180 s: a run with
 * restarts goes through three attempts (each deletes its Jobs in the foreground, then schedules and starts
 * a gang), which took over 90 s on a loaded two-core CI machine with three control planes.
 */
async function terminal(cluster: Cluster, namespace: string): Promise<any> {
  let last: any;
  await waitExplained(cluster, namespace, 'the JobSet to finish', 180, async () => {
    const r = await ends(cluster, namespace);
    last = r.body;
    const done = (r.body?.status?.conditions ?? []).find(
      (c: any) => ['Completed', 'Failed'].includes(c.type) && c.status === 'True',
    );
    return (
      done !== undefined ||
      `restarts ${r.body?.status?.restarts ?? 0}, conditions ${JSON.stringify(r.body?.status?.conditions ?? [])}`
    );
  });
  return last;
}

const conditionOf = (js: any) =>
  (js.status.conditions as any[]).find(c => ['Completed', 'Failed'].includes(c.type) && c.status === 'True');

describeCluster(
  'GpuTrainingJob run to its end by the JobSet, Job and scheduler controllers on KWOK GPU nodes',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'train', nodes: 2 });
    const namespace = (name: string) => place.namespace(name, 'restricted');

    test('pods that succeed: the gang is placed one pod per node, the JobSet completes, the GPUs are freed, and ttlAfterFinished deletes it', async () => {
      const ns = await namespace('complete');
      const { chart, job } = output(ns, place.gpus(), {
        ttlAfterFinished: Duration.seconds(5),
        // Long enough that both pods are seen Running together, however far apart a loaded plane starts them.
        pod: { annotations: { [`pod-complete.${KWOK_STAGE}/delay`]: '15s' } },
      });
      // A rotated credential with a reload command: the reload sidecar is a native sidecar.
      const creds = new RotatingGpuSecret(chart, 'creds', { name: 'hub-token', keys: ['token'] });
      creds.mountInto(job, { path: '/var/run/hub', onRotation: Reload.exec(['/bin/reload']) });
      await applyAll(cluster, Testing.synth(chart));
      // What the rotator writes: pods mount exactly the Secret's keys.
      await cluster.request(
        'PATCH',
        `/api/v1/namespaces/${ns}/secrets/hub-token`,
        { stringData: { token: 't1' } },
        'application/merge-patch+json',
      );

      // 120 s: a CI run once saw no Job within 60 s of the JobSet's creation on the loaded floor plane.
      await waitExplained(cluster, ns, 'both ranks running on the GPU nodes', 120, async () => {
        const pods = await podsOf(cluster, ns);
        const running = pods.filter(p => p.status?.phase === 'Running');
        return running.length === 2 || `${running.length} of 2 running`;
      });
      const placed = await podsOf(cluster, ns);
      expect(new Set(placed.map(p => p.spec.nodeName))).toEqual(new Set(place.gpus().nodes));
      expect(gpusHeld(placed)).toBe(16);
      // The sidecar the API server stored is a native sidecar of the Job's pods.
      expect(placed[0].spec.initContainers.map((c: any) => [c.name, c.restartPolicy])).toEqual([
        ['reload-hub-token-0', 'Always'],
      ]);

      const js = await terminal(cluster, ns);
      expect(conditionOf(js)).toMatchObject({ type: 'Completed', status: 'True' });
      expect(js.status.restarts ?? 0).toBe(0);
      const pods = await podsOf(cluster, ns);
      expect(pods.map(p => p.status.phase)).toEqual(['Succeeded', 'Succeeded']);
      expect(gpusHeld(pods)).toBe(0);
      await waitExplained(cluster, ns, 'ttlAfterFinished to delete the JobSet', 60, async () => {
        const r = await ends(cluster, ns);
        return r.status === 404 || `still there (${r.status})`;
      });
    }, 400_000);

    test('a retriable failure restarts the whole gang, counted, until maxRestarts; then the JobSet is Failed and holds no GPU', async () => {
      const ns = await namespace('restarts');
      const { chart } = output(ns, place.gpus(), {
        maxRestarts: 2,
        // Every attempt's trainers fail with exit code 1 a moment after they start.
        pod: failingContainer('trainer', 1),
      });
      await applyAll(cluster, Testing.synth(chart));
      const js = await terminal(cluster, ns);
      expect(conditionOf(js)).toMatchObject({ type: 'Failed', status: 'True' });
      // Two whole-gang restarts, then the third attempt's failure is final.
      expect(js.status.restarts).toBe(2);
      const pods = await podsOf(cluster, ns);
      expect(gpusHeld(pods)).toBe(0);
    }, 240_000);

    test('a failure rule that fails at once (exit 127: the launcher cannot run) fails the JobSet without a restart', async () => {
      const ns = await namespace('fail-now');
      const { chart } = output(ns, place.gpus(), {
        maxRestarts: 3,
        pod: failingContainer('trainer', 127),
      });
      await applyAll(cluster, Testing.synth(chart));
      const js = await terminal(cluster, ns);
      expect(conditionOf(js)).toMatchObject({ type: 'Failed', status: 'True' });
      expect(js.status.restarts ?? 0).toBe(0);
      // The Job failed through its podFailurePolicy rule, which the JobSet rule read.
      const jobs = await cluster.request('GET', `/apis/batch/v1/namespaces/${ns}/jobs`);
      const failed = jobs.body.items
        .flatMap((j: any) => j.status?.conditions ?? [])
        .find((c: any) => c.type === 'Failed');
      expect(failed).toMatchObject({ reason: 'PodFailurePolicy' });
      expect(failed.message).toMatch(/matching FailJob rule at index 1$/);
    }, 240_000);

    test('activeDeadline fails the Job with DeadlineExceeded, and the JobSet rule fails the run at once', async () => {
      const ns = await namespace('deadline');
      const { chart } = output(ns, place.gpus(), {
        activeDeadline: Duration.seconds(4),
        pod: { annotations: { [`pod-complete.${KWOK_STAGE}/delay`]: '10m' } },
      });
      await applyAll(cluster, Testing.synth(chart));
      const js = await terminal(cluster, ns);
      expect(conditionOf(js)).toMatchObject({ type: 'Failed', status: 'True' });
      expect(js.status.restarts ?? 0).toBe(0);
      const jobs = await cluster.request('GET', `/apis/batch/v1/namespaces/${ns}/jobs`);
      expect(jobs.body.items.flatMap((j: any) => j.status?.conditions ?? []).map((c: any) => c.reason)).toContain(
        'DeadlineExceeded',
      );
    }, 240_000);

    test('suspend: a suspended JobSet makes no pods and holds no GPU until it is resumed', async () => {
      const ns = await namespace('suspend');
      const { chart } = output(ns, place.gpus(), {
        suspend: true,
        pod: { annotations: { [`pod-complete.${KWOK_STAGE}/delay`]: '2s' } },
      });
      const objects = Testing.synth(chart);
      await applyAll(cluster, objects);
      await waitExplained(cluster, ns, 'the suspended JobSet to make its Job', 30, async () => {
        const jobs = await cluster.request('GET', `/apis/batch/v1/namespaces/${ns}/jobs`);
        return jobs.body.items.length === 1 || `${jobs.body.items.length} Jobs`;
      });
      // Long enough for the Job controller to have made pods, were it not suspended.
      await new Promise(r => setTimeout(r, 2000));
      expect(await podsOf(cluster, ns)).toEqual([]);
      const r = await cluster.request(
        'PATCH',
        `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${ns}/jobsets/run`,
        { spec: { suspend: false } },
        'application/merge-patch+json',
      );
      expect(r.status).toBe(200);
      const js = await terminal(cluster, ns);
      expect(conditionOf(js)).toMatchObject({ type: 'Completed', status: 'True' });
    }, 240_000);
  },
  version => [SERVER_VERSIONS[0], SERVER_VERSIONS[SERVER_VERSIONS.length - 1]].includes(version),
);
