/**
 * The Kubernetes minors the library supports (1.FLOOR through 1.NEWEST): the output is valid, and every
 * verdict the library gives (Pod Security levels, the guard's rules) holds, at each of them.
 */
export const FLOOR_MINOR = 28;
/** The newest minor whose API definitions and Pod Security Standards the library was checked against. */
export const NEWEST_MINOR = 36;
