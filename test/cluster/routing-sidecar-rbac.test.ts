import { Chart, Testing } from 'cdk8s';
import { Disaggregation, InferenceGateway, VllmInferenceService } from '../../src';
import { vendoredCrds } from './crds';
import { Cluster, describeCluster, SERVER_VERSIONS } from './kube';

/**
 * The routing sidecar of a disaggregated service reads its InferencePool and the pool's pods through the API (its
 * SSRF protection, llm-d-router v0.10.0 pkg/sidecar/proxy/allowlist.go: list/watch of the pool by name, then of
 * pods by the pool's selector). The server's authorizer judges the account the construct makes: those reads in the
 * pool's namespace, and nothing else.
 */

const RUN = Date.now().toString(36);

describeCluster(
  "a disaggregated service's routing sidecar on a real API server",
  (cluster: Cluster) => {
    const ns = `sidecar-rbac-${RUN}`;
    beforeAll(async () => {
      await cluster.installCrds(vendoredCrds());
      await cluster.namespace(ns, 'restricted');
      await cluster.namespace(`${ns}-other`, 'restricted');
    }, 240_000);
    afterAll(() => cluster.close());

    /** What the server's authorizer answers for the sidecar's account (a SubjectAccessReview). */
    const allowed = async (user: string, verb: string, resource: string, group: string, namespace: string) => {
      const r = await cluster.create({
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user, groups: ['system:serviceaccounts'], resourceAttributes: { namespace, verb, group, resource } },
      });
      if (r.status !== 201) throw new Error(`SubjectAccessReview: ${r.status} ${JSON.stringify(r.body)}`);
      return `${verb} ${resource} in ${namespace}: ${r.body.status.allowed === true}`;
    };

    test('the sidecar account reads the pool and its pods in the namespace, and may do nothing else', async () => {
      const chart = new Chart(Testing.app(), 'c', { namespace: ns });
      const llm = new VllmInferenceService(chart, 'llm', {
        name: 'llm',
        modelId: 'Qwen/Qwen2.5-7B-Instruct',
        disaggregation: Disaggregation.nixl(),
      });
      new InferenceGateway(chart, 'gw', { name: 'llm', services: [llm], gateway: { name: 'edge' } });
      const objects = Testing.synth(chart);
      const refused: string[] = [];
      for (const o of objects) {
        const r = await cluster.apply(o);
        if (r.status >= 300)
          refused.push(`${o.kind}/${o.metadata.name}: ${r.status} ${JSON.stringify(r.body?.message)}`);
      }
      expect(refused).toEqual([]);
      const user = `system:serviceaccount:${ns}:${llm.sidecarServiceAccountName}`;
      const pools = ['inferencepools', 'inference.networking.k8s.io'] as const;
      const pods = ['pods', ''] as const;
      const answers = [
        await allowed(user, 'list', ...pools, ns),
        await allowed(user, 'watch', ...pools, ns),
        await allowed(user, 'list', ...pods, ns),
        await allowed(user, 'watch', ...pods, ns),
        await allowed(user, 'create', ...pods, ns),
        await allowed(user, 'list', 'secrets', '', ns),
        await allowed(user, 'list', ...pods, `${ns}-other`),
      ];
      expect(answers).toEqual([
        `list inferencepools in ${ns}: true`,
        `watch inferencepools in ${ns}: true`,
        `list pods in ${ns}: true`,
        `watch pods in ${ns}: true`,
        `create pods in ${ns}: false`,
        `list secrets in ${ns}: false`,
        `list pods in ${ns}-other: false`,
      ]);
    }, 120_000);
  },
  // The floor and the newest release: RBAC's authorizer is the same in between.
  v => v === SERVER_VERSIONS[0] || v === SERVER_VERSIONS[SERVER_VERSIONS.length - 1],
);
