// The public API of cdk8s-gpu, and nothing else. test/index.test.ts pins this list.
export { ConfigurationError } from './validation/validate';
export { DisruptionBudget } from './common/disruption';
export { PodSecurityLevel } from './common/security';
export type { IGpuWorkload } from './common/pod-template';
export { EnvValue, EnvFrom } from './common/env';
export type { GpuWorkloadProps, PodOptions, WorkloadVolume } from './common/pod-options';
export { StrictSchemaValidation } from './plugins/strict-schema-plugin';
export { checkManifests } from './checks/manifests';
export type { StrictSchemaValidationProps } from './plugins/strict-schema-plugin';

export { GpuTrainingStatefulSet, TrainingUpdateStrategy } from './training/gpu-training-stateful-set';
export type {
  GpuTrainingStatefulSetProps,
  CheckpointStorage,
  SharedCheckpoints,
} from './training/gpu-training-stateful-set';
export { Rdma } from './training/rdma';
export type { InfinibandOptions, SharedRdmaOptions, SriovRdmaOptions } from './training/rdma';
export type { AdoptedVolumes } from './training/adopt-volumes';

export { TgiInferenceService, TGI_DEFAULT_IMAGE } from './inference/tgi-inference-service';
export type { TgiInferenceServiceProps, SecretKeyRef } from './inference/tgi-inference-service';
export { ModelCache } from './inference/model-cache';
export { TgiQuantization, VllmQuantization, SglangQuantization } from './inference/quantization';
export { InferenceService, IpFamily } from './inference/inference-service';
export type { InferenceServiceProps } from './inference/inference-service';
export { VllmInferenceService, VLLM_DEFAULT_IMAGE } from './inference/vllm-inference-service';
export type { VllmInferenceServiceProps } from './inference/vllm-inference-service';
export { SglangInferenceService, SGLANG_DEFAULT_IMAGE } from './inference/sglang-inference-service';
export type { SglangInferenceServiceProps } from './inference/sglang-inference-service';
export { Autoscaler } from './inference/autoscaling';
export type { AutoscalingOptions, HpaAutoscalerOptions, KedaAutoscalerOptions } from './inference/autoscaling';

export { RotatingGpuSecret } from './secrets/rotating-gpu-secret';
export type {
  RotatingGpuSecretProps,
  SecretRotation,
  SecretRotator,
  MountOptions,
} from './secrets/rotating-gpu-secret';
export { Reload, DEFAULT_RELOAD_IMAGE } from './secrets/reload';
export type { ReloadExecOptions, ReloadHttpOptions, ReloadSignalOptions } from './secrets/reload';

export { guard } from './guard/diff';
export type { Finding, GuardObjectCounts, GuardOptions, GuardResult, Severity } from './guard/diff';
export { loadObjects, parseObjects, GuardInputError } from './guard/load';
export { formatReport } from './guard/report';
export { plan } from './guard/plan-api';
export type { PlanResult, PrunedObject, Range, RolloutMode, WorkloadPlan } from './guard/plan';
export { formatPlan, formatPlanMarkdown, planToJson, PLAN_SCHEMA_VERSION } from './guard/plan-report';
export type { KubeObject } from './guard/normalize';
export { GuardCheck, IMMUTABLE_FIELDS } from './guard/rules';
export type { FieldRule, KindRules, KueueVersionRange } from './guard/rules';
export { GuardValidation } from './plugins/guard-plugin';
export type { GuardValidationProps, GuardValidationContext } from './plugins/guard-plugin';
