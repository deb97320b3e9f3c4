/** The value of `app.kubernetes.io/managed-by` on everything this library creates. */
export const MANAGED_BY = 'cdk8s-gpu';

export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_INSTANCE = 'app.kubernetes.io/instance';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
/**
 * The component of a shared model cache's fill Jobs. Their names hash what they fill, so a bump
 * replaces one by another on purpose: the guard and the plan read this to say so.
 */
export const CACHE_FILL_COMPONENT = 'model-cache-fill';
/** Argo CD applies lower waves first and waits for them to be healthy (a Job: complete) before the next. */
export const ARGOCD_SYNC_WAVE = 'argocd.argoproj.io/sync-wave';
/** Argo CD's per-object sync options, e.g. `PruneLast=true`: pruned after every wave is synced and healthy. */
export const ARGOCD_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
/**
 * The Argo CD annotations of a content-named object that pods mount or claim from (a runtime script,
 * a GPU claim template): synced before the fill Jobs (wave -1) and the workloads, and pruned last,
 * so the pods of a previous version keep what they use while they drain.
 */
export const PREREQUISITE_ANNOTATIONS: Readonly<Record<string, string>> = {
  [ARGOCD_SYNC_WAVE]: '-2',
  [ARGOCD_SYNC_OPTIONS]: 'PruneLast=true',
};
/** The component of the ConfigMaps that ship the library's runtime scripts, also named by a content hash. */
export const RUNTIME_SCRIPT_COMPONENT = 'runtime-script';
/** The component of a workload's GPU ResourceClaimTemplates, named by a hash of their request. */
export const GPU_CLAIM_COMPONENT = 'gpu-claim';
/**
 * The versioned workload an object belongs to, on objects that other objects select (a headless
 * Service a ServiceMonitor finds). The library owns it: Argo CD's label tracking (its default
 * before 3.0) rewrites `app.kubernetes.io/instance` on every object it syncs, so a selector on
 * that label would find nothing once Argo CD applied the manifests.
 */
export const LABEL_WORKLOAD = 'cdk8s-gpu.io/workload';

/** What a workload's labels are made of. */
export interface WorkloadIdentity {
  /** The base name shared by every version, e.g. `onnx-trainer`. */
  readonly name: string;
  /** The versioned name, e.g. `onnx-trainer-v2`: one per StatefulSet. */
  readonly instance: string;
  /** What the workload does, e.g. `training` or `inference`. */
  readonly component: string;
}

/**
 * The selector of a workload: explicit labels only, never one derived from a construct path
 * (cdk8s-plus's `cdk8s.io/metadata.addr`), so renaming a construct id changes no immutable field.
 */
export function selectorLabels(id: WorkloadIdentity): Record<string, string> {
  return {
    [LABEL_NAME]: id.name,
    [LABEL_INSTANCE]: id.instance,
    [LABEL_COMPONENT]: id.component,
  };
}

/** Every pod of a workload, whatever its component (a group's leaders and workers): its name and instance. */
export function instanceSelector(id: Pick<WorkloadIdentity, 'name' | 'instance'>): Record<string, string> {
  return { [LABEL_NAME]: id.name, [LABEL_INSTANCE]: id.instance };
}

/** A workload's labels and the selector built from them. */
export function labelSet(id: WorkloadIdentity): { labels: Record<string, string>; selector: Record<string, string> } {
  return { labels: workloadLabels(id), selector: selectorLabels(id) };
}

/** The labels every object of a workload carries: the selector plus `managed-by`. */
export function workloadLabels(id: WorkloadIdentity): Record<string, string> {
  return { ...selectorLabels(id), [LABEL_MANAGED_BY]: MANAGED_BY };
}

/**
 * A label selector for `labels`: `{}` (every object) when there are none. The API server drops an empty
 * `matchLabels` when it stores a selector, so a manifest that sends one differs from the stored object
 * on every server-side apply: the generation rises and GitOps tools see a change that is not there.
 */
export function labelSelector(labels: Record<string, string>): { matchLabels?: Record<string, string> } {
  return Object.keys(labels).length === 0 ? {} : { matchLabels: labels };
}
