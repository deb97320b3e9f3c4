/**
 * What a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, pinned v0.10.0) refuses on update: data for
 * the guard's rule table (rules.ts), read by the same engine as built-in kinds.
 *
 * Source at v0.10.0 (kubernetes-sigs/lws 2161f38): the validating webhook `vleaderworkerset.kb.io`
 * (config/webhook/manifests.yaml), `(*LeaderWorkerSetWebhook).ValidateUpdate` in
 * pkg/webhooks/leaderworkerset_webhook.go:
 * - `spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize` may not change, and the policy may be
 *   neither added nor removed (lws-check.ts, checkSubGroupSize). The policy's type is not compared.
 * - generalValidate, the create checks, run on the new object as well: a change to a mutable field
 *   can fail them (lws-check.ts, checkLwsSpec), e.g. replicas lowered until a percentage
 *   maxUnavailable rounds down to 0 beside maxSurge 0, or a size that subGroupSize no longer divides.
 * - `networkConfig.subdomainPolicy` may not become null; the mutating webhook `mleaderworkerset.kb.io`
 *   runs first on update and defaults it to Shared, so the check never refuses a request and is not
 *   a rule here.
 *
 * Everything else may change, `leaderWorkerTemplate.size` included: the controller stores
 * `leaderWorkerTemplate` and `networkConfig` in each revision (pkg/utils/revision getPatch) and
 * rolls a change to either out group by group (the plan reports it). The vendored CRD
 * (src/validation/crds/lws) has no `x-kubernetes-validations`; a test derives that from it, so a
 * re-vendored CRD with transition rules fails the test rather than passing unguarded.
 */
import { LWS_SUBGROUP_SIZE_PATH } from './lws-check';
import { GuardCheck, type KindRules } from './rules';

const WEBHOOK = 'admission webhook "vleaderworkerset.kb.io" denied the request: ';
const SOURCE = 'kubernetes-sigs/lws v0.10.0 pkg/webhooks/leaderworkerset_webhook.go';

export const LWS_RULES: KindRules = {
  group: 'leaderworkerset.x-k8s.io',
  kind: 'LeaderWorkerSet',
  fields: [
    {
      path: 'spec.leaderWorkerTemplate.subGroupPolicy',
      check: GuardCheck.LWS_SUB_GROUP_SIZE,
      source: `(*LeaderWorkerSetWebhook).ValidateUpdate (${SOURCE})`,
      message: `${WEBHOOK}${LWS_SUBGROUP_SIZE_PATH}: Invalid value: {value}: {detail}`,
      remedy:
        'subGroupSize is fixed for the life of a LeaderWorkerSet: keep the old subGroupPolicy, or create the LeaderWorkerSet under a new name (a new version) and delete the old one once the new one serves; deleting and re-applying it under the same name stops every group',
    },
    {
      path: 'spec',
      check: GuardCheck.LWS_SPEC,
      code: 'invalid-field',
      source: `(*LeaderWorkerSetWebhook).generalValidate, run by ValidateUpdate on the new object (${SOURCE})`,
      message: `${WEBHOOK}{path}: Invalid value: {value}: {detail}`,
      remedy: 'correct the value in the manifest: the webhook refuses it on create as well as on update',
    },
  ],
};
