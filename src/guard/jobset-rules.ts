/**
 * What a JobSet (jobset.x-k8s.io, pinned v0.12.0) refuses on update: data for the guard's rule table
 * (rules.ts), read by the same engine as built-in kinds.
 *
 * Two sources at v0.12.0 (kubernetes-sigs/jobset f22e565):
 * - The validating webhook `vjobset.kb.io`, `(*jobSetWebhook).ValidateUpdate` in
 *   pkg/webhooks/jobset_webhook.go: `spec.replicatedJobs` and `spec.managedBy` may not change
 *   (apivalidation.ValidateImmutableField). While the old OR the new JobSet has `spec.suspend:
 *   true`, each replicated Job that keeps its name may change its pod template's labels,
 *   annotations, nodeSelector, tolerations and schedulingGates (what Kueue writes when it admits a
 *   suspended JobSet): the webhook copies the old values into the new spec before comparing
 *   (jobset-check.ts, JOBSET_SUSPENDED_MUTABLE). Nothing else is exempt: not affinity (which a
 *   batch/v1 Job's exemption has), not the Job template's own metadata, not the image. The
 *   ElasticJobSet feature gate (alpha, off by default) would also let an Indexed Job's parallelism
 *   and completions change; it is not modelled.
 * - The CRD's transition rules (`x-kubernetes-validations: self == oldSelf`, "Value is
 *   immutable") on spec.failurePolicy, spec.network, spec.startupPolicy, spec.successPolicy and
 *   spec.volumeClaimPolicies (the vendored CRD, src/validation/crds/jobset). A test derives them
 *   from the vendored CRD, so this list cannot drift from it.
 *
 * Whether a JobSet is suspended is read from a live export (`kubectl get -o yaml`). From a manifest
 * baseline it is the manifest's `suspend`, except for a JobSet queued in Kueue, which Kueue
 * suspends and resumes: it is taken to be running unless the new manifest sets `suspend: true`.
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
      check: GuardCheck.JOBSET_REPLICATED_JOBS,
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
