import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { kindOf, ManifestKind } from '../common/manifest-object';
import * as jobset from '../imports/jobset';

/**
 * A replicated Job of a JobSet as the library composes it: the generated JobSet types
 * (src/imports/jobset.ts, from the vendored v0.12.0 CRD), with the Job spec typed as the built-in
 * batch/v1 JobSpec of cdk8s-plus-32 (quantities, IntOrString), like every built-in kind.
 */
export type TypedReplicatedJob = Omit<jobset.JobSetSpecReplicatedJobs, 'template'> & {
  readonly template: {
    readonly metadata?: jobset.JobSetSpecReplicatedJobsTemplateMetadata;
    readonly spec: k8s.JobSpec;
  };
};

/** A JobSet spec as the library composes it. */
export type TypedJobSetSpec = Omit<jobset.JobSetSpec, 'replicatedJobs'> & {
  readonly replicatedJobs: TypedReplicatedJob[];
};

/** A JobSet as the library composes it. */
export interface TypedJobSet {
  readonly metadata?: k8s.ObjectMeta;
  readonly spec: TypedJobSetSpec;
}

/** The JobSet API version and kind (jobset.x-k8s.io/v1alpha2, the version v0.12.0 serves). */
export const JOB_SET_GVK = { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet' };

/**
 * Converts a typed JobSet to its API JSON: the generated converter for the JobSet's own fields and
 * cdk8s-plus-32's converter for each embedded Job spec. The object is checked against the vendored
 * CRD in tests and after a JsonPatch (ManifestObject), strictly, as built-in kinds are.
 */
export function toJson_TypedJobSet(props: TypedJobSet | undefined): Record<string, unknown> | undefined {
  if (props === undefined) return undefined;
  return jobset.toJson_JobSetProps({
    metadata: props.metadata,
    spec: {
      ...props.spec,
      replicatedJobs: props.spec.replicatedJobs.map(r => ({
        ...r,
        template: { ...r.template, spec: k8s.toJson_JobSpec(r.template.spec) },
      })),
    },
  });
}

/** The JobSet kind the library makes. */
export const JOB_SET: ManifestKind<TypedJobSet> = kindOf<TypedJobSet>(JOB_SET_GVK, toJson_TypedJobSet);

export {
  JobSetSpecFailurePolicyRulesAction as JobSetFailureAction,
  JobSetSpecSuccessPolicyOperator as JobSetSuccessOperator,
} from '../imports/jobset';
