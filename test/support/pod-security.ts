// The evaluator lives in src (constructs report the level they meet); tests use the same rules.
export { baselineViolations, restrictedViolations, podSecurityLevel, podSpecsOf } from '../../src/common/pod-security';
export type { Level } from '../../src/common/pod-security';
