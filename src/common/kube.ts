import { ApiObject, GroupVersionKind, JsonPatch } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { K8S_JSON_SHAPES } from './k8s-json-shapes';
import { synthesizeFast } from './synth-json';

/** A `k8s.Kube*` class of cdk8s-plus-28. */
interface KubeClass<T extends ApiObject> {
  new (...args: any[]): T;
  readonly GVK: GroupVersionKind;
}

/**
 * The same class, synthesizing in one walk (synth-json.ts) to the same JSON (a value only cdk8s
 * can resolve takes the original's path), and making the JsonPatch escape hatch safe. cdk8s-plus
 * applies a patch to the typed props *before* converting them to API JSON, so a patched
 * `targetPort: 8080` or `maxUnavailable: 0` (a plain number where an IntOrString belongs) vanished,
 * a quantity became `null`, and a misspelled field was dropped without a word. Here patches apply
 * to the API JSON, as users read it in the output, and the patched object is checked strictly
 * against the Kubernetes 1.28 API: synth fails naming the object and what is wrong.
 */
function withFastSynth<C extends KubeClass<ApiObject>>(Base: C, props: string): C {
  if (!K8S_JSON_SHAPES[props]) throw new Error(`no API JSON shape for ${props}; add it to scripts/gen-k8s-json-shapes.js`);
  const Fast = class extends Base {
    toJson(): any {
      const patches = patchesOf(this) as JsonPatch[];
      if (patches.length === 0) {
        return synthesizeFast(this, props, Base.GVK) ?? super.toJson();
      }
      const saved = patches.splice(0);
      let json: any;
      try {
        json = this.toJson();
      } finally {
        patches.push(...saved);
      }
      json = JsonPatch.apply(json, ...saved);
      const who = `${json.kind}/${json.metadata?.name}`;
      const { strictErrors } = require('../validation/strict-schema') as typeof import('../validation/strict-schema');
      const errors = [...checkPatched(this, json), ...strictErrors(json, '1.28.0')];
      if (errors.length > 0) throw new Error(`${who} is invalid after a JsonPatch escape hatch: ${errors.join('; ')}`);
      return json;
    }
  };
  // Errors and the API reference name the class as cdk8s-plus does.
  Object.defineProperty(Fast, 'name', { value: Base.name });
  FAST_CLASSES.add(Fast);
  return Fast;
}

const FAST_CLASSES = new WeakSet<object>();

/**
 * Whether an object is one of the library's own, unpatched: its props are then plain typed data
 * (no `Lazy`, nothing only cdk8s resolves) in the API's field names, and can be read without
 * synthesizing it. Anything else (a cdk8s-plus L2 object, a user's ApiObject, a patched object)
 * is known only from its `toJson()`.
 */
export function propsAreItsJson(obj: ApiObject): boolean {
  for (let p = Object.getPrototypeOf(obj); p; p = Object.getPrototypeOf(p)) {
    if (FAST_CLASSES.has(p.constructor)) return patchesOf(obj).length === 0;
  }
  return false;
}

/** Checks beyond the schema a kind needs after a patch (e.g. quantity syntax): errors, or none. */
const PATCH_CHECKS = new WeakMap<object, (json: any) => string[]>();

/** Registers the checks a class (and its subclasses) needs after a patch, beyond the schema. */
export function checkAfterPatch(cls: abstract new (...args: any[]) => ApiObject, check: (json: any) => string[]): void {
  PATCH_CHECKS.set(cls.prototype, check);
}

function checkPatched(obj: ApiObject, json: any): string[] {
  for (let p = Object.getPrototypeOf(obj); p; p = Object.getPrototypeOf(p)) {
    const check = PATCH_CHECKS.get(p);
    if (check) return check(json);
  }
  return [];
}

/** The JsonPatch escape hatches added to an object (cdk8s keeps them private). */
function patchesOf(obj: ApiObject): unknown[] {
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
