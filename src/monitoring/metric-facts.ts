import { EPP_FLOW_CONTROL_QUEUE } from '../inference/endpoint-picker';

/**
 * The metrics alerts and dashboards read from exporters other than the engines (whose metrics are
 * engine facts, src/inference/engines/*.ts), each with the exporter that provides it.
 */

/**
 * kube-state-metrics (v2, docs/metrics/workload/*.md): every series carries `namespace`, pods
 * `pod`, containers `container`, StatefulSets `statefulset`, HPAs `horizontalpodautoscaler`,
 * CronJobs `cronjob`, Jobs `job_name`.
 */
export const KSM = {
  /** Gauge per `condition` (true, false, unknown): 1 for the pod's Ready condition status (pod-metrics.md). */
  podReady: 'kube_pod_status_ready',
  /** Gauge: the pod's deletion timestamp, unix seconds, present while it terminates (pod-metrics.md). */
  podDeletionTimestamp: 'kube_pod_deletion_timestamp',
  /** Counter: restarts of a container (pod-metrics.md). */
  containerRestarts: 'kube_pod_container_status_restarts_total',
  /** Gauge per `reason`: 1 while the container waits for that reason, e.g. CrashLoopBackOff (pod-metrics.md). */
  containerWaitingReason: 'kube_pod_container_status_waiting_reason',
  /**
   * Gauge per `reason`: 1 for the reason of the container's last termination, e.g. Completed, Error
   * (pod-metrics.md).
   */
  containerLastTerminatedReason: 'kube_pod_container_status_last_terminated_reason',
  /** Gauge: 1 while the container runs (pod-metrics.md). */
  containerRunning: 'kube_pod_container_status_running',
  /** Gauge: Ready replicas of a StatefulSet (statefulset-metrics.md). */
  statefulSetReplicasReady: 'kube_statefulset_status_replicas_ready',
  /** Gauge: the StatefulSet's creation time, unix seconds (statefulset-metrics.md). */
  statefulSetCreated: 'kube_statefulset_created',
  /** Gauge: the HPA's current replicas (horizontalpodautoscaler-metrics.md). */
  hpaCurrentReplicas: 'kube_horizontalpodautoscaler_status_current_replicas',
  /** Gauge: the HPA's maxReplicas (horizontalpodautoscaler-metrics.md). */
  hpaMaxReplicas: 'kube_horizontalpodautoscaler_spec_max_replicas',
  /** Gauge: when the CronJob last completed a Job successfully, unix seconds (cronjob-metrics.md). */
  cronJobLastSuccess: 'kube_cronjob_status_last_successful_time',
  /** Gauge: pods of the Job that reached phase Succeeded (job-metrics.md). */
  jobSucceeded: 'kube_job_status_succeeded',
  /**
   * Gauge: pods of the Job that reached phase Failed; once the Job has failed, per `reason` of its
   * Failed condition, 1 for it (BackoffLimitExceeded, DeadlineExceeded, Evicted) (job-metrics.md,
   * internal/store/job.go jobFailureReasons).
   */
  jobFailed: 'kube_job_status_failed',
  /** Gauge per `condition` (true, false, unknown): 1 for the status of the Job's Failed condition (job-metrics.md). */
  jobFailedCondition: 'kube_job_failed',
  /** Gauge per `condition`: 1 for the status of the Job's Complete condition (job-metrics.md). */
  jobCompleteCondition: 'kube_job_complete',
  /** Gauge: the Job's creation time, unix seconds; a Job re-created under its name gets a new one (job-metrics.md). */
  jobCreated: 'kube_job_created',
  /**
   * Gauge: the Job's `status.startTime`, unix seconds, from which `activeDeadlineSeconds` counts
   * (job-metrics.md).
   */
  jobStartTime: 'kube_job_status_start_time',
  /** Gauge: the Job's active (pending or running) pods (job-metrics.md). */
  jobActive: 'kube_job_status_active',
  /** Gauge per `phase`: 1 for the pod's phase (pod-metrics.md). */
  podPhase: 'kube_pod_status_phase',
  /** Gauge per `reason`: 1 while the container is terminated for that reason, e.g. Completed (pod-metrics.md). */
  containerTerminatedReason: 'kube_pod_container_status_terminated_reason',
  /** Gauge: the Deployment's available replicas, Ready for at least minReadySeconds (deployment-metrics.md). */
  deploymentAvailable: 'kube_deployment_status_replicas_available',
} as const;

/**
 * The Endpoint Picker of llm-d-router v0.10.0 (pkg/epp/metrics/llm_d_router_metrics.go, subsystem `llm_d_epp`).
 * GIE v1.5.0's names (`inference_pool_*`, `inference_objective_*`, `inference_extension_*`) are still emitted
 * beside them by v0.10.0, deprecated (docs/metrics.md): these are the ones that stay.
 */
export const EPP_METRICS = {
  /**
   * Gauge per pool (`name`): the pool's endpoints whose metrics the picker scraped within its staleness threshold,
   * 2 s by default (pkg/epp/datalayer/logger/logger.go; was `inference_pool_ready_pods`). Every replica emits it,
   * standbys too (`haPopulateNonLeaderDatastore`, on by default).
   */
  readyEndpoints: 'llm_d_epp_ready_endpoints',
  /**
   * Counter: requests the picker scheduled to an endpoint (pkg/epp/handlers/server.go records it once a request is
   * routed), by `model_name`, `target_model_name`, `fairness_id`, `priority`.
   */
  requests: 'llm_d_epp_request_total',
  /**
   * Counter: requests that ended in an error, with `error_code` besides the request labels: the picker's own code
   * for one it refused (no endpoint, shed while saturated), or `ModelServerError` for a routed request whatever
   * non-200 status the server answered (pkg/epp/handlers/server.go), which `requests` has counted already.
   */
  requestErrors: 'llm_d_epp_request_error_total',
  /** Histogram (unlabelled): the picker's time to choose an endpoint, 0.1 ms to 100 ms buckets. */
  schedulingSeconds: 'llm_d_epp_scheduler_e2e_duration_seconds',
  /** Gauge per pool (`name`): the average queue of its model servers, as the picker scraped them. */
  averageQueue: 'llm_d_epp_average_queue_size',
  /** Gauge per pool (`name`): the average KV-cache utilization (0 to 1) of its model servers. */
  averageKvCache: 'llm_d_epp_average_kv_cache_utilization',
  /** Gauge: requests held in the flow-control queue, by `priority` and `inference_pool` (with flow control on). */
  flowControlQueue: EPP_FLOW_CONTROL_QUEUE,
  /**
   * Counter: requests flow control finished, by `outcome` (`Dispatched`, `RejectedCapacity`, `RejectedNoEndpoints`,
   * `EvictedTTL`, `EvictedContextCancelled`, ...: pkg/epp/flowcontrol/types/outcomes.go), `priority`, `inference_pool`.
   */
  flowControlRequests: 'llm_d_epp_flow_control_requests_total',
} as const;

/** Flow-control outcomes of a request refused for want of an endpoint or of time (flowcontrol/types/outcomes.go). */
export const EPP_COLD_START_DROPS = ['EvictedTTL', 'RejectedNoEndpoints', 'EvictedContextCancelled'];

/** The `error_code` of a routed request the model server answered with a non-200 status (pkg/common/error/error.go). */
export const EPP_SERVER_ERROR_CODE = 'ModelServerError';

/**
 * NVIDIA DCGM exporter (etc/default-counters.csv): per GPU, with the `pod`, `namespace` and
 * `container` of the pod using it when the exporter maps devices to pods (its Kubernetes mode).
 */
export const DCGM = {
  /** Gauge: GPU utilization in percent (DCGM_FI_DEV_GPU_UTIL). */
  gpuUtil: 'DCGM_FI_DEV_GPU_UTIL',
  /** Gauge: framebuffer memory used, MiB (DCGM_FI_DEV_FB_USED). */
  framebufferUsed: 'DCGM_FI_DEV_FB_USED',
} as const;

/**
 * The kubelet's longest crash-loop back-off (`MaxContainerBackOff`, 300 s, "the max backoff period
 * for container restarts"; 10 s doubling up to it): a container that keeps failing is restarted at
 * least this often, unless the cluster changes it (KEP-4603's kubelet setting).
 */
export const KUBELET_MAX_BACKOFF_SECONDS = 300;

/**
 * torchrun's rendezvous join timeout (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py,
 * `RendezvousTimeout` join default 600 s, the `join_timeout` key of `--rdzv-conf`): ranks that wait
 * longer for the rest of the gang give up with RendezvousTimeoutError.
 */
export const RENDEZVOUS_JOIN_TIMEOUT_SECONDS = 600;

/**
 * KEDA names the HPA it creates for a ScaledObject `keda-hpa-<scaledobject>`
 * (pkg/scaling/resolver: getHPAName / keda.sh docs "ScaledObject specification").
 */
export const KEDA_HPA_PREFIX = 'keda-hpa-';
