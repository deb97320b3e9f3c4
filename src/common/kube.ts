import { ApiObject, GroupVersionKind } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { K8S_JSON_SHAPES } from './k8s-json-shapes';
import { synthesizeFast } from './synth-json';

/** A `k8s.Kube*` class of cdk8s-plus-28. */
interface KubeClass<T extends ApiObject> {
  new (...args: any[]): T;
  readonly GVK: GroupVersionKind;
}

/**
 * The same class, synthesizing in one walk (synth-json.ts) to the same JSON. With a JsonPatch
 * escape hatch, or a value only cdk8s can resolve, it synthesizes through the original, which
 * patches before converting.
 */
function withFastSynth<C extends KubeClass<ApiObject>>(Base: C, props: string): C {
  if (!K8S_JSON_SHAPES[props]) throw new Error(`no API JSON shape for ${props}; add it to scripts/gen-k8s-json-shapes.js`);
  const Fast = class extends Base {
    toJson(): any {
      const body = patchesOf(this).length === 0 ? synthesizeFast(this, props) : undefined;
      return body === undefined ? super.toJson() : { ...Base.GVK, ...body };
    }
  };
  // Errors and the API reference name the class as cdk8s-plus does.
  Object.defineProperty(Fast, 'name', { value: Base.name });
  return Fast;
}

/** The JsonPatch escape hatches added to an object (cdk8s keeps them private). */
export function patchesOf(obj: ApiObject): unknown[] {
  return (obj as unknown as { patches: unknown[] }).patches;
}

// The cdk8s-plus-28 classes of every kind the library creates. Instances are the cdk8s-plus
// classes (their prototypes are in the chain), and synthesize the same JSON.
export const KubeConfigMap = withFastSynth(k8s.KubeConfigMap, 'KubeConfigMapProps');
export const KubeCronJob = withFastSynth(k8s.KubeCronJob, 'KubeCronJobProps');
export const KubeHorizontalPodAutoscalerV2 = withFastSynth(k8s.KubeHorizontalPodAutoscalerV2, 'KubeHorizontalPodAutoscalerV2Props');
export const KubeJob = withFastSynth(k8s.KubeJob, 'KubeJobProps');
export const KubePersistentVolumeClaim = withFastSynth(k8s.KubePersistentVolumeClaim, 'KubePersistentVolumeClaimProps');
export const KubePodDisruptionBudget = withFastSynth(k8s.KubePodDisruptionBudget, 'KubePodDisruptionBudgetProps');
export const KubeRole = withFastSynth(k8s.KubeRole, 'KubeRoleProps');
export const KubeRoleBinding = withFastSynth(k8s.KubeRoleBinding, 'KubeRoleBindingProps');
export const KubeSecret = withFastSynth(k8s.KubeSecret, 'KubeSecretProps');
export const KubeService = withFastSynth(k8s.KubeService, 'KubeServiceProps');
export const KubeServiceAccount = withFastSynth(k8s.KubeServiceAccount, 'KubeServiceAccountProps');
export const KubeStatefulSet = withFastSynth(k8s.KubeStatefulSet, 'KubeStatefulSetProps');
