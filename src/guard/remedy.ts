import { CACHE_FILL_COMPONENT, GPU_CLAIM_COMPONENT, RUNTIME_SCRIPT_COMPONENT } from '../common/labels';
import { claimNameFor } from '../common/names';
// What to do about a finding, fitted to the object: this library's training StatefulSets keep
// checkpoints (claims with Retain, adoption runbook), its serving StatefulSets keep model caches
// that can be downloaded again (claims with Delete retention, no adoptVolumes).
import type { KubeObject } from './normalize';

const LABEL_NAME = 'app.kubernetes.io/name';
const LABEL_COMPONENT = 'app.kubernetes.io/component';
const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
const MANAGED_BY = 'cdk8s-gpu';

const ns = (o: KubeObject) => (o.metadata.namespace ? ` -n ${o.metadata.namespace}` : '');
export const isOurs = (o: KubeObject) => o.metadata.labels?.[LABEL_MANAGED_BY] === MANAGED_BY;
export const appName = (o: KubeObject) => o.metadata.labels?.[LABEL_NAME];

/** Claim templates whose claims are deleted with the StatefulSet: caches, not data. */
export function claimsAreCaches(sts: KubeObject): boolean {
  return sts.spec?.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete';
}

/** A shared model cache's fill Job: named by a hash of what it fills, so replaced, never renamed by mistake. */
export function isCacheFill(o: KubeObject): boolean {
  return o.kind === 'Job' && o.metadata.labels?.[LABEL_COMPONENT] === CACHE_FILL_COMPONENT;
}

/** A ConfigMap holding one of the library's runtime scripts: named by a hash of its content. */
export function isRuntimeScript(o: KubeObject): boolean {
  return o.kind === 'ConfigMap' && o.metadata.labels?.[LABEL_COMPONENT] === RUNTIME_SCRIPT_COMPONENT;
}

/** A workload's GPU ResourceClaimTemplate: named by a hash of its request, since its spec is immutable. */
export function isGpuClaimTemplate(o: KubeObject): boolean {
  return o.kind === 'ResourceClaimTemplate' && o.metadata.labels?.[LABEL_COMPONENT] === GPU_CLAIM_COMPONENT;
}

/** An object the library names by a hash of its content: a new version is a new object by design. */
export const isContentNamed = (o: KubeObject) => isCacheFill(o) || isRuntimeScript(o) || isGpuClaimTemplate(o);

export function isTraining(o: KubeObject): boolean {
  return o.metadata.labels?.[LABEL_COMPONENT] === 'training';
}

export function claimTemplateNames(sts: KubeObject): string[] {
  return (Array.isArray(sts.spec?.volumeClaimTemplates) ? sts.spec.volumeClaimTemplates : []).map((t: any) =>
    String(t?.metadata?.name),
  );
}

export function claimNames(sts: KubeObject): string[] {
  const replicas = typeof sts.spec?.replicas === 'number' ? sts.spec.replicas : 1;
  return claimTemplateNames(sts).flatMap(c =>
    Array.from({ length: replicas }, (_x, i) => claimNameFor(c, sts.metadata.name, i)),
  );
}

/** The remedy for a change the server refuses on this (old) object. */
export function remedyFor(o: KubeObject): string {
  const kind = o.kind;
  const name = o.metadata.name;
  if (isOurs(o) && kind === 'StatefulSet') {
    const bump = `bump \`version\` on the cdk8s-gpu construct for ${LABEL_NAME}=${appName(o)}: the new StatefulSet is created beside the old one under a new name.`;
    if (claimTemplateNames(o).length === 0)
      return `${bump} Delete the old StatefulSet once the new one is ready (kubectl delete statefulset ${name}${ns(o)}).`;
    if (claimsAreCaches(o)) {
      return `${bump} Its model-cache claims are new and empty, so the new pods download the model again; the old cache claims are deleted with the old StatefulSet (whenDeleted: Delete). Nothing needs adopting.`;
    }
    return `${bump} Its claims are new and empty; to keep the data (checkpoints), set adoptVolumes on the new version and follow the adoption runbook in docs/runbooks.md.`;
  }
  switch (kind) {
    case 'StatefulSet':
      // The usual way round an immutable StatefulSet field: the pods and claims outlive the object.
      return `delete the StatefulSet but not its pods (kubectl delete statefulset ${name}${ns(o)} --cascade=orphan), then apply: the new one adopts the running pods its selector matches and, under the same name, reuses the same claims with their data; changed claim templates apply only to claims created later.`;
    case 'PersistentVolumeClaim':
      return `a claim cannot be changed this way: create a claim under a new name (and copy the data), or delete and re-create it (kubectl delete pvc ${name}${ns(o)}); with a Delete reclaim policy that deletes the volume and its data.`;
    case 'Pod':
      return `delete the pod and create it again (kubectl delete pod ${name}${ns(o)}), or change the controller that owns it.`;
    case 'Job':
      return `a Job cannot be changed once created: delete it (kubectl delete job ${name}${ns(o)}; its pods go with it) and apply again, or give the new Job a new name.`;
    case 'Service':
      return `leave the allocated value out of the manifest (or copy it from the cluster), or delete and re-create the Service (kubectl delete service ${name}${ns(o)}); clients see a new address.`;
    case 'Secret':
    case 'ConfigMap':
      return `create the object under a new name and point the pods at it, or delete and re-create it (kubectl delete ${kind.toLowerCase()} ${name}${ns(o)}); mounted copies update only in pods that still reference it.`;
    default:
      return `give the object a new name (a new version), or delete it and apply again (kubectl delete ${kind.toLowerCase()} ${name}${ns(o)}); deleting a workload or claim loses what it holds.`;
  }
}
