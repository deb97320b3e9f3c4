/**
 * The Kubernetes minors the library supports (1.FLOOR through 1.NEWEST): the output is valid, and every
 * verdict the library gives (Pod Security levels, the guard's rules) holds, at each of them.
 *
 * The floor is the oldest minor the major managed services still run in December 2026 (EKS, GKE, AKS
 * and OpenShift's mapping; docs/design.md, "The Kubernetes floor", has the calendars): 1.32.
 */
export const FLOOR_MINOR = 32;
/** The newest minor whose API definitions and Pod Security Standards the library was checked against. */
export const NEWEST_MINOR = 36;

/** The releases whose OpenAPI definitions ship with the library (src/validation/schemas): the floor and the newest. */
export type KubeVersion = '1.32.0' | '1.36.0';
/** The floor's API definitions: what every object is checked against first. */
export const FLOOR_API: KubeVersion = '1.32.0';
/** The newest API definitions the library ships. */
export const NEWEST_API: KubeVersion = '1.36.0';

/**
 * Built-in API group versions that the floor does not serve, by the first minor that serves them by
 * default: an object of one is checked against the shipped API definitions from that minor on, and
 * `cdk8s-gpu guard` refuses it for an older server. `resource.k8s.io/v1`: Dynamic Resource
 * Allocation, GA in 1.34 (KEP-4381).
 */
export const API_SINCE_MINOR: Readonly<Record<string, number>> = { 'resource.k8s.io/v1': 34 };
/** Dynamic Resource Allocation's GA API, which the GPU claim templates use. */
export const DRA_API = 'resource.k8s.io/v1';

const minorOfApi = (v: KubeVersion) => Number(v.split('.')[1]);

/** The shipped API definitions an object of `apiVersion` must be valid against: the floor's unless it is newer. */
export function apisFor(apiVersion: string, versions: readonly KubeVersion[]): KubeVersion[] {
  const since = API_SINCE_MINOR[apiVersion];
  return since === undefined ? [...versions] : versions.filter(v => minorOfApi(v) >= since);
}

/** The oldest shipped API definitions an object of `apiVersion` is checked against. */
export function oldestApiFor(apiVersion: string): KubeVersion {
  return apisFor(apiVersion, [FLOOR_API, NEWEST_API])[0] ?? NEWEST_API;
}
