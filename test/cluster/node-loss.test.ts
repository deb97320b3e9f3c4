import { Chart, Testing } from 'cdk8s';
import { GpuTrainingJob } from '../../src';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';
import { applyAll, KWOK_STAGE, podsOf, scenario, waitExplained } from './sim';

/**
 * A GPU node lost under a running GpuTrainingJob (issue #35: node loss), with the pod garbage collector,
 * the Job and JobSet controllers and kube-scheduler. The node object goes away (as when a cloud node
 * is reclaimed); after its quarantine (40 s in kube-controller-manager's PodGC) the pod GC fails the
 * rank's pod with the `DisruptionTarget` condition and deletes it. The library's default failure rules
 * (docs/training.md, "When a run fails") make that a restart of the whole gang that does not count
 * against `maxRestarts`: with `maxRestarts: 0`, a counted restart would fail the run.
 */

const RUN = Date.now().toString(36);
const newest = SERVER_VERSIONS[SERVER_VERSIONS.length - 1];

describeCluster(
  'a GPU node lost under a running GpuTrainingJob',
  (cluster: Cluster) => {
    const place = scenario(cluster, RUN, { name: 'lost', nodes: 3 });

    test("the pod GC fails the lost node's rank with DisruptionTarget; the gang restarts on the nodes left, not counted against maxRestarts", async () => {
      const ns = await place.namespace('node-loss', 'restricted');
      const gpus = place.gpus();
      const chart = new Chart(Testing.app(), 'c', { namespace: ns });
      new GpuTrainingJob(chart, 'job', {
        name: 'run',
        image: 'registry.example/trainer:1.0',
        nodes: 2,
        gpusPerPod: 8,
        args: ['train.py'],
        maxRestarts: 0,
        nodeSelector: gpus.nodeSelector,
        // The training outlasts the test: only the lost node ends the first attempt.
        pod: { tolerations: gpus.tolerations, annotations: { [`pod-complete.${KWOK_STAGE}/delay`]: '10m' } },
      });
      await applyAll(cluster, Testing.synth(chart));
      const jobSet = async () =>
        (await cluster.request('GET', `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${ns}/jobsets/run`)).body;
      // 120 s, as training-run's first placement: a loaded floor plane once made no Job within 60 s of a JobSet.
      await waitExplained(cluster, ns, 'the gang running on two nodes', 120, async () => {
        const running = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running');
        return running.length === 2 || `${running.length} running`;
      });
      const first = await podsOf(cluster, ns);
      const lost: string = first[0].spec.nodeName;
      const r = await cluster.request('DELETE', `/api/v1/nodes/${lost}`);
      expect(r.status).toBe(200);

      // Watch the lost rank's pod for the condition the pod GC gives it, and the gang come back.
      const disrupted = new Set<string>();
      await waitExplained(cluster, ns, 'the gang restarted on the nodes left', 180, async () => {
        const pods = await podsOf(cluster, ns);
        for (const p of pods)
          if ((p.status?.conditions ?? []).some((c: any) => c.type === 'DisruptionTarget' && c.status === 'True'))
            disrupted.add(
              `${p.metadata.name} ${p.status.conditions.find((c: any) => c.type === 'DisruptionTarget').reason}`,
            );
        const fresh = pods.filter(p => !first.some(f => f.metadata.uid === p.metadata.uid));
        const running = fresh.filter(p => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);
        const js = await jobSet();
        const failed = (js.status?.conditions ?? []).find((c: any) => c.type === 'Failed' && c.status === 'True');
        if (failed) return `the JobSet failed: ${failed.message}`;
        return running.length === 2 || `${running.length} new ranks running, restarts ${js.status?.restarts ?? 0}`;
      });
      const js = await jobSet();
      // One restart of the gang, none counted; the new ranks on the two nodes left.
      expect([js.status.restarts, js.status.restartsCountTowardsMax ?? 0]).toEqual([1, 0]);
      const nodes = (await podsOf(cluster, ns)).filter(p => p.status?.phase === 'Running').map(p => p.spec.nodeName);
      expect(nodes).not.toContain(lost);
      expect(new Set(nodes).size).toBe(2);
      // Why the first attempt's Job failed: the pod GC's condition, matched by the library's first Job rule.
      const events = (await cluster.request('GET', `/api/v1/namespaces/${ns}/events`)).body.items as any[];
      const jobFailed = events
        .filter(e => e.involvedObject.kind === 'Job' && e.reason === 'PodFailurePolicy')
        .map(e => e.message as string);
      expect(jobFailed).toEqual([expect.stringMatching(/has condition DisruptionTarget matching FailJob rule/)]);
      // When the poll saw the lost rank before the pod GC deleted it, the condition's reason was the pod GC's.
      for (const d of disrupted) expect(d).toMatch(/DeletionByPodGC$/);
    }, 360_000);
  },
  v => v === newest,
);
