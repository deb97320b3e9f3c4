// Kueue's label and annotation keys, one home for the constructs that set them and the guard that
// models Kueue's webhooks (kubernetes-sigs/kueue pkg/controller/constants).
import { Validator } from '../validation/validate';

/** The LocalQueue a workload is admitted through. */
export const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
/** The WorkloadPriorityClass of a workload. */
export const KUEUE_PRIORITY_LABEL = 'kueue.x-k8s.io/priority-class';
/** A job's maximum execution time in seconds (constants.MaxExecTimeSecondsLabel). */
export const KUEUE_MAX_EXEC_TIME_LABEL = 'kueue.x-k8s.io/max-exec-time-seconds';
/** The Workload made beforehand that a job is admitted through (constants.PrebuiltWorkloadLabel). */
export const KUEUE_PREBUILT_WORKLOAD_LABEL = 'kueue.x-k8s.io/prebuilt-workload-name';
/** Turns workload slicing on for a job (workloadslicing.EnabledAnnotationKey; value "true"). */
export const KUEUE_ELASTIC_JOB_ANNOTATION = 'kueue.x-k8s.io/elastic-job';
/** Gates that hold a workload's admission (constants.AdmissionGatedByAnnotation). */
export const KUEUE_ADMISSION_GATED_BY_ANNOTATION = 'kueue.x-k8s.io/admission-gated-by';
/** A batch Job's minimum parallelism under partial admission (job.JobMinParallelismAnnotation). */
export const KUEUE_JOB_MIN_PARALLELISM_ANNOTATION = 'kueue.x-k8s.io/job-min-parallelism';
/** A batch Job whose completions follow its parallelism (job.JobCompletionsEqualParallelismAnnotation). */
export const KUEUE_JOB_SYNC_COMPLETIONS_ANNOTATION = 'kueue.x-k8s.io/job-completions-equal-parallelism';
/** The pod group of a plain-pod or StatefulSet workload (set by Kueue's webhook). */
export const KUEUE_POD_GROUP_LABEL = 'kueue.x-k8s.io/pod-group-name';
/**
 * Kueue's topology-aware scheduling annotations on a pod template (apis/kueue/v1alpha1
 * tas_types.go: PodSetRequiredTopologyAnnotation, PodSetPreferredTopologyAnnotation,
 * PodSetUnconstrainedTopologyAnnotation).
 */
export const KUEUE_TAS_ANNOTATIONS = [
  'kueue.x-k8s.io/podset-required-topology',
  'kueue.x-k8s.io/podset-preferred-topology',
  'kueue.x-k8s.io/podset-unconstrained-topology',
] as const;
/** Every key of Kueue's own. */
export const KUEUE_PREFIX = 'kueue.x-k8s.io/';
/**
 * The oldest Kueue whose StatefulSet integration the library supports: the
 * `kueue.x-k8s.io/pod-group-serving` annotation exists from v0.10.0 (kueue#3684); on v0.9 rolling
 * updates of a StatefulSet stall (kueue#3690).
 */
export const MIN_STATEFULSET_KUEUE_VERSION = '0.10';

/** A LocalQueue name (a DNS subdomain) that is also a label value (at most 63 characters). */
export function kueueQueueName(v: Validator, value: string): string {
  const name = v.dnsSubdomain('queueName', value);
  if (name.length > 63) v.fail('queueName', 'must be at most 63 characters, because it is a label value', value);
  return name;
}
