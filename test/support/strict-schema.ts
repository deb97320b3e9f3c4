// The strict validator ships in src (the StrictSchemaValidation plugin); tests use the same one.
export { expectStrictlyValid, strictErrors } from '../../src/validation/strict-schema';
export type { KubeVersion } from '../../src/validation/strict-schema';
