export { ConfigurationError } from './common/validate';
export { DisruptionBudget } from './common/disruption';
export { PodSecurityLevel } from './common/security';
export {
  GpuTrainingStatefulSet, GpuTrainingStatefulSetProps, CheckpointStorage, TrainingUpdateStrategy,
} from './training/gpu-training-stateful-set';
export { AdoptedVolumes } from './training/adopt-volumes';
export {
  TgiInferenceService, TgiInferenceServiceProps, SecretKeyRef, TGI_DEFAULT_IMAGE,
} from './inference/tgi-inference-service';
export { ModelCache } from './inference/model-cache';
export { TgiQuantization } from './inference/quantization';
export {
  RotatingGpuSecret, RotatingGpuSecretProps, SecretRotation, MountOptions,
} from './secrets/rotating-gpu-secret';
export { Reload, ReloadExecOptions, ReloadSignalOptions, DEFAULT_RELOAD_IMAGE } from './secrets/reload';
export { IGpuWorkload } from './common/pod-template';
export { guard, Finding, GuardResult, Severity } from './guard/diff';
export { loadObjects, parseObjects, GuardInputError } from './guard/load';
export { formatReport } from './guard/report';
export { KubeObject } from './guard/normalize';
export { IMMUTABLE_FIELDS, FieldRule, KindRules } from './guard/rules';
export { GuardValidation, GuardValidationProps, GuardValidationContext } from './guard/validation-plugin';
