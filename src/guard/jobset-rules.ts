/**
 * What a JobSet (jobset.x-k8s.io, pinned v0.12.0) refuses on update: data for the guard's rule table
 * (rules.ts), read by the same engine as built-in kinds.
 *
 * Two sources at v0.12.0 (kubernetes-sigs/jobset f22e565):
 * - The validating webhook `vjobset.kb.io`, `(*jobSetWebhook).ValidateUpdate` in
 *   pkg/webhooks/jobset_webhook.go: `spec.replicatedJobs` and `spec.managedBy` may not change
 *   (apivalidation.ValidateImmutableField). While the old or the new JobSet is suspended, each
 *   replicated Job's pod template may change its labels, annotations, nodeSelector, tolerations
 *   and schedulingGates, which Kueue sets when it admits a suspended JobSet. The ElasticJobSet
 *   feature gate (alpha, off by default) would also let an Indexed Job's parallelism and
 *   completions change; it is not modelled.
 * - The CRD's transition rules (`x-kubernetes-validations: self == oldSelf`, "Value is
 *   immutable") on spec.failurePolicy, spec.network, spec.startupPolicy, spec.successPolicy and
 *   spec.volumeClaimPolicies (the vendored CRD, src/validation/crds/jobset). A test derives them
 *   from the vendored CRD, so this list cannot drift from it.
 *
 * Not modelled: the suspended exemption above. The guard compares manifests, and a manifest
 * change to a pod template of a suspended JobSet is reported although the webhook allows the
 * scheduling directives to change; everything else in a pod template (image, command, env,
 * resources) is refused either way, and is what a manifest change usually touches.
 */
import { GuardCheck, type KindRules } from './rules';

const WEBHOOK = 'admission webhook "vjobset.kb.io" denied the request: ';
const UPDATE = '(*jobSetWebhook).ValidateUpdate (kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go)';
const CEL =
  'x-kubernetes-validations self == oldSelf in the JobSet v0.12.0 CRD, validated by the API server (apiextensions CEL)';

/** The CRD properties whose transition rule makes them immutable, and their schema type. */
export const JOBSET_CEL_IMMUTABLE: ReadonlyArray<[path: string, type: string]> = [
  ['spec.failurePolicy', 'object'],
  ['spec.network', 'object'],
  ['spec.startupPolicy', 'object'],
  ['spec.successPolicy', 'object'],
  ['spec.volumeClaimPolicies', 'array'],
];

export const JOBSET_RULES: KindRules = {
  group: 'jobset.x-k8s.io',
  kind: 'JobSet',
  fields: [
    {
      path: 'spec.replicatedJobs',
      check: GuardCheck.IMMUTABLE,
      source: UPDATE,
      message: `${WEBHOOK}spec.replicatedJobs: Invalid value: {value}: field is immutable`,
    },
    {
      path: 'spec.managedBy',
      check: GuardCheck.IMMUTABLE,
      source: UPDATE,
      message: `${WEBHOOK}spec.managedBy: Invalid value: {value}: field is immutable`,
    },
    ...JOBSET_CEL_IMMUTABLE.map(([path, type]) => ({
      path,
      check: GuardCheck.CEL_SELF_EQUALS_OLD_SELF,
      source: CEL,
      message: `${path}: Invalid value: "${type}": Value is immutable`,
    })),
  ],
};
