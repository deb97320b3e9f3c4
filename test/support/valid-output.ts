import { expectCrdValid, isVendoredKind } from './crd-schema';
import { expectStrictlyValid } from './strict-schema';

/**
 * The Jobs a JobSet makes, as batch/v1 Jobs built from its replicated Job templates, so the pod
 * templates inside a custom resource are also checked strictly against the built-in 1.28 and 1.36
 * API (the vendored CRD carries the Job schema of the Kubernetes release JobSet builds against).
 */
export function embeddedJobs(objects: any[]): any[] {
  return objects
    .filter(o => o?.apiVersion === 'jobset.x-k8s.io/v1alpha2' && o.kind === 'JobSet')
    .flatMap(js =>
      (js.spec?.replicatedJobs ?? []).map((r: any) => ({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { ...(r.template?.metadata ?? {}), name: `${js.metadata.name}-${r.name}-0` },
        spec: r.template?.spec,
      })),
    );
}

/**
 * The pods a LeaderWorkerSet makes, as core/v1 Pods built from its leader and worker templates, so
 * the pod templates inside it are also checked strictly against the built-in 1.28 and 1.36 API.
 */
export function embeddedGroupPods(objects: any[]): any[] {
  return objects
    .filter(o => o?.apiVersion === 'leaderworkerset.x-k8s.io/v1' && o.kind === 'LeaderWorkerSet')
    .flatMap(set => {
      const t = set.spec?.leaderWorkerTemplate ?? {};
      return [
        ['0', t.leaderTemplate ?? t.workerTemplate],
        ['0-1', t.workerTemplate],
      ].map(([suffix, template]) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { ...(template?.metadata ?? {}), name: `${set.metadata.name}-${suffix}` },
        spec: template?.spec,
      }));
    });
}

/**
 * Checks a whole output: built-in kinds strictly against Kubernetes 1.28 and 1.36, custom resources
 * against their vendored CRDs, and the Jobs of every JobSet and the pods of every LeaderWorkerSet
 * strictly as built-in kinds.
 */
export function expectValidOutput(objects: any[]): void {
  const custom = objects.filter(o => isVendoredKind(o.apiVersion, o.kind));
  expectCrdValid(custom);
  expectStrictlyValid([
    ...objects.filter(o => !custom.includes(o)),
    ...embeddedJobs(custom),
    ...embeddedGroupPods(custom),
  ]);
}
