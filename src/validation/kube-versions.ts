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
