// The public API of cdk8s-gpu, and nothing else. test/index.test.ts pins this list.
export { ConfigurationError } from './validation/validate';
export { DisruptionBudget } from './common/disruption';
export { PodSecurityLevel } from './common/security';
export type { GpuWorkload } from './workloads';
export { EnvValue, EnvFrom } from './common/env';
export type { GpuWorkloadProps, PodOptions, WorkloadVolume } from './common/pod-options';
export {
  NetworkAccess,
  NetworkPeer,
  NAMESPACE_NAME_LABEL,
  DEFAULT_MONITORING_NAMESPACE,
} from './common/network-policy';
export type { RestrictedNetworkOptions } from './common/network-policy';
export { StrictSchemaValidation } from './plugins/strict-schema-plugin';
export { checkManifests } from './checks/manifests';
export type { StrictSchemaValidationProps } from './plugins/strict-schema-plugin';

export { GpuTrainingStatefulSet, TrainingUpdateStrategy } from './training/gpu-training-stateful-set';
export type {
  GpuTrainingStatefulSetProps,
  CheckpointStorage,
  SharedCheckpoints,
} from './training/gpu-training-stateful-set';
export { DEFAULT_FAILURE_RULES, GpuTrainingJob, TrainingFailureAction } from './training/gpu-training-job';
export type {
  GpuTrainingJobProps,
  JobCheckpoints,
  TrainingFailureRule,
  TrainingTopology,
} from './training/gpu-training-job';
export type { TrainingPracticeProps } from './training/practice';
export { Rdma } from './common/rdma';
export { DeviceSelector } from './common/device-claim';
export type { DynamicResourceAllocation } from './common/device-claim';
export type { InfinibandOptions, SharedRdmaOptions, SriovRdmaOptions } from './common/rdma';
export type { AdoptedVolumes } from './training/adopt-volumes';

export { TgiInferenceService, TGI_DEFAULT_IMAGE } from './inference/tgi-inference-service';
export type { TgiInferenceServiceProps, SecretKeyRef } from './inference/tgi-inference-service';
export { ModelCache } from './inference/model-cache';
export { KvCacheOffload } from './inference/kv-cache-offload';
export type { LmCacheTiers } from './inference/kv-cache-offload';
export { Disaggregation, KvTransfer, ROLE_LABEL } from './inference/disaggregation';
export { All2AllBackend, ExpertParallel, RankEndpoints } from './inference/expert-parallel';
export type { ExpertParallelOptions } from './inference/expert-parallel';
export type { DisaggregationOptions } from './inference/disaggregation';
export { DISAGG_SIDECAR_IMAGE } from './inference/disagg-sidecar';
export { TgiQuantization, VllmQuantization, SglangQuantization } from './inference/quantization';
export { IpFamily } from './inference/inference-service';
export { WorkloadKind } from './inference/workload-kind';
export type { InferenceService, InferenceServiceProps } from './inference/inference-service';
export type { DownloadResources } from './inference/model-download';
export type { ModelArchitecture } from './inference/model-facts';
export { VllmInferenceService, VLLM_DEFAULT_IMAGE } from './inference/vllm-inference-service';
export type { VllmInferenceServiceProps } from './inference/vllm-inference-service';
export { SglangInferenceService, SGLANG_DEFAULT_IMAGE } from './inference/sglang-inference-service';
export type { SglangInferenceServiceProps } from './inference/sglang-inference-service';
export { Autoscaler } from './inference/autoscaling';
export type { AutoscalingOptions, HpaAutoscalerOptions, KedaAutoscalerOptions } from './inference/autoscaling';
export { InferenceGateway, FailureMode, EPP_DEFAULT_IMAGE, PrefixCacheScoring } from './inference/inference-gateway';
export type {
  InferenceGatewayProps,
  FlowControlOptions,
  GatewayRef,
  InferenceObjectiveSpec,
  ModelRewriteRule,
  ModelRewriteTarget,
} from './inference/inference-gateway';

export { RotatingGpuSecret } from './secrets/rotating-gpu-secret';
export type {
  RotatingGpuSecretProps,
  SecretRotation,
  SecretRotator,
  MountOptions,
} from './secrets/rotating-gpu-secret';
export { SecretType } from './secrets/secret-type';
export { Reload, DEFAULT_RELOAD_IMAGE } from './secrets/reload';
export type {
  ReloadExecOptions,
  ReloadHttpOptions,
  ReloadImageOptions,
  ReloadSignalOptions,
  ReloadSyncOptions,
} from './secrets/reload';

export { guard } from './guard/diff';
export type { Finding, GuardObjectCounts, GuardOptions, GuardResult, Severity } from './guard/diff';
export { loadObjects, parseObjects, GuardInputError } from './guard/load';
export { formatReport } from './guard/report';
export { plan } from './guard/plan-api';
export type { PlanResult, PrunedObject, Range, RolloutMode, WorkloadPlan } from './guard/plan';
export { formatPlan, formatPlanMarkdown, planToJson, PLAN_SCHEMA_VERSION } from './guard/plan-report';
export type { KubeObject } from './guard/normalize';
export { GuardCheck, IMMUTABLE_FIELDS, KueueRunning } from './guard/rules';
export type { FieldRule, KindRules, KueueVersionRange } from './guard/rules';
export { GuardValidation } from './plugins/guard-plugin';
export type { GuardValidationProps, GuardValidationContext } from './plugins/guard-plugin';

export { InferenceServiceMonitoring } from './monitoring/inference-service-monitoring';
export type { InferenceServiceMonitoringProps } from './monitoring/inference-service-monitoring';
export { InferenceGatewayMonitoring, ENDPOINT_PICKER_START_SECONDS } from './monitoring/inference-gateway-monitoring';
export type { InferenceGatewayMonitoringProps } from './monitoring/inference-gateway-monitoring';
export { TrainingMonitoring } from './monitoring/training-monitoring';
export type { TrainingMonitoringProps } from './monitoring/training-monitoring';
export { SecretRotationMonitoring } from './monitoring/secret-rotation-monitoring';
export type { MonitoringProps, AlertRule, DashboardPanel } from './monitoring/rules';
export type { EngineMetrics, CounterSelector } from './inference/engine';
