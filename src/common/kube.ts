import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { withApiJson } from './api-json';

// The cdk8s-plus-28 classes of every kind the library creates, synthesizing through the one-pass
// converter (api-json.ts). Instances are the cdk8s-plus classes: `instanceof k8s.KubeService` holds.
export const KubeConfigMap = withApiJson(k8s.KubeConfigMap, 'KubeConfigMapProps');
export const KubeCronJob = withApiJson(k8s.KubeCronJob, 'KubeCronJobProps');
export const KubeHorizontalPodAutoscalerV2 = withApiJson(k8s.KubeHorizontalPodAutoscalerV2, 'KubeHorizontalPodAutoscalerV2Props');
export const KubeJob = withApiJson(k8s.KubeJob, 'KubeJobProps');
export const KubePersistentVolumeClaim = withApiJson(k8s.KubePersistentVolumeClaim, 'KubePersistentVolumeClaimProps');
export const KubePodDisruptionBudget = withApiJson(k8s.KubePodDisruptionBudget, 'KubePodDisruptionBudgetProps');
export const KubeRole = withApiJson(k8s.KubeRole, 'KubeRoleProps');
export const KubeRoleBinding = withApiJson(k8s.KubeRoleBinding, 'KubeRoleBindingProps');
export const KubeSecret = withApiJson(k8s.KubeSecret, 'KubeSecretProps');
export const KubeService = withApiJson(k8s.KubeService, 'KubeServiceProps');
export const KubeServiceAccount = withApiJson(k8s.KubeServiceAccount, 'KubeServiceAccountProps');
export const KubeStatefulSet = withApiJson(k8s.KubeStatefulSet, 'KubeStatefulSetProps');
