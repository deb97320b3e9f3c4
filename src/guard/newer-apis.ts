// What a server older than an API needs refuses or silently drops: the guard's answer for output
// that uses Dynamic Resource Allocation (resource.k8s.io/v1, on by default from 1.34) on 1.32 or 1.33.
import type { Finding } from './diff';
import type { KubeObject } from './normalize';
import { identity, isObject } from './object';
import { API_SINCE_MINOR, DRA_API } from '../validation/kube-versions';

/**
 * The first minor whose API server keeps a pod's `resourceClaims`: DynamicResourceAllocation is on by
 * default (GA), as `resource.k8s.io/v1` is served.
 */
export const POD_CLAIMS_KEPT_FROM = API_SINCE_MINOR[DRA_API];

const REMEDY_DRA =
  'target a Kubernetes 1.34 or newer cluster (--server-version), or give the pods their GPUs through the device plugin (drop dynamicResourceAllocation)';

/** Every pod spec inside an object that has `resourceClaims`, with its path. */
function podClaimPaths(x: unknown, at: string, out: string[]): void {
  if (Array.isArray(x)) {
    x.forEach((item, i) => podClaimPaths(item, `${at}[${i}]`, out));
    return;
  }
  if (!isObject(x)) return;
  if (
    Array.isArray((x as any).containers) &&
    Array.isArray((x as any).resourceClaims) &&
    (x as any).resourceClaims.length
  )
    out.push(`${at}.resourceClaims`);
  for (const [k, v] of Object.entries(x))
    if (k !== 'metadata' && k !== 'status') podClaimPaths(v, at ? `${at}.${k}` : k, out);
}

/**
 * Errors for each object in `after` that a server of `minor` does not serve, and each pod template
 * whose resource claims it drops. Both fail the same way: the pods would start without their devices
 * (or the apply stops at `no matches for kind`).
 */
export function newerApiErrors(after: readonly KubeObject[], minor: number): Finding[] {
  const out: Finding[] = [];
  for (const o of after) {
    const since = API_SINCE_MINOR[o.apiVersion];
    if (since !== undefined && minor < since) {
      out.push({
        severity: 'error',
        code: 'api-not-served',
        ...identity(o),
        path: '',
        before: null,
        after: null,
        message: `Kubernetes 1.${minor} does not serve ${o.apiVersion} (served by default from 1.${since}): the apply fails with no matches for kind "${o.kind}" in version "${o.apiVersion}"`,
        remedy: REMEDY_DRA,
        source:
          'pkg/features/kube_features.go DynamicResourceAllocation (beta and off by default in 1.32 and 1.33, GA from 1.34); resource.k8s.io/v1 from 1.34 (KEP-4381)',
      });
    }
    if (minor >= POD_CLAIMS_KEPT_FROM) continue;
    const paths: string[] = [];
    podClaimPaths(o.spec, 'spec', paths);
    for (const path of paths)
      out.push({
        severity: 'error',
        code: 'claims-dropped',
        ...identity(o),
        path,
        before: null,
        after: null,
        message: `${path}: Kubernetes 1.${minor} drops a pod's resourceClaims and its containers' resources.claims while the DynamicResourceAllocation feature gate is off (its default before 1.${POD_CLAIMS_KEPT_FROM}), so the apply succeeds and the pods start without the devices they claim`,
        remedy: REMEDY_DRA,
        source:
          'pkg/api/pod/util.go dropDisabledDynamicResourceAllocationFields; pkg/features/kube_features.go DynamicResourceAllocation',
      });
  }
  return out;
}
