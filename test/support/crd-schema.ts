// The custom-resource validator ships in src; tests use the same one.
export {
  crdErrors,
  crdRulesNotEvaluated,
  expectCrdValid,
  goRegExp,
  isVendoredKind,
  schemaErrors,
  vendoredKinds,
} from '../../src/validation/crd-schema';
export type { CrdSchema } from '../../src/validation/crd-schema';
