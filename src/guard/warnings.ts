// The guard's warnings: objects a change leaves behind or replaces, OnDelete world-size changes,
// and objects last written by server-side apply.
import { lastAppliedOf, serverSideApplied } from './apply';
import { duplicateKeysOf, sourceOf } from './load';
import type { Finding } from './diff';
import { arr, KubeObject } from './normalize';
import { movedSuccessor } from './moved-kinds';
import { describe, groupOf, identity } from './object';
import { appName, claimNames, claimsAreCaches, claimTemplateNames, isContentNamed, isTraining } from './remedy';
import { autoscaled, claimCounts, gpuRange, rangeText } from './workload';

/** Objects the server or a controller creates: their absence from a manifest means nothing. */
export function serverOwned(o: KubeObject): boolean {
  if (Array.isArray(o.metadata.ownerReferences) && o.metadata.ownerReferences.length > 0) return true;
  if (['Event', 'Endpoints', 'EndpointSlice', 'ControllerRevision', 'Lease'].includes(o.kind)) return true;
  if (o.kind === 'ConfigMap' && o.metadata.name === 'kube-root-ca.crt') return true;
  // Dynamically provisioned volumes: the provisioner made them for a claim.
  if (
    o.kind === 'PersistentVolume' &&
    (o.metadata.annotations as Record<string, string> | undefined)?.['pv.kubernetes.io/provisioned-by']
  )
    return true;
  if (o.kind === 'ServiceAccount' && o.metadata.name === 'default') return true;
  if (o.kind === 'Service' && o.metadata.name === 'kubernetes' && o.metadata.namespace === 'default') return true;
  return false;
}

/** What an object left behind goes on doing, by kind. */
const STAYS: Record<string, string> = {
  StatefulSet: 'keeps running',
  Deployment: 'keeps running',
  DaemonSet: 'keeps running',
  ReplicaSet: 'keeps running',
  Pod: 'keeps running',
  Job: 'stays (running to completion if it has not finished, then kept with its pods until deleted)',
  CronJob: 'keeps scheduling Jobs',
  Service: 'keeps routing to the pods it selects',
  PersistentVolumeClaim: 'stays with its volume and data',
};

/**
 * Warnings, most consequential first: an outage, then a replaced workload holding GPUs and claims, then
 * changes that do less than they seem, then leftovers. A reviewer reads the first one.
 */
const CONSEQUENCE: readonly string[] = [
  'pods-refused',
  'serving-version-gap',
  'statefulset-replaced',
  'ondelete-replicas',
  'server-side-apply',
  'service-stays-headless',
  'duplicate-key',
  'kind-moved',
  'object-removed',
];

/** The warnings in the order a reviewer should read them (stable within a code). */
export function byConsequence(warnings: readonly Finding[]): Finding[] {
  const rank = (f: Finding) => {
    const at = CONSEQUENCE.indexOf(f.code);
    // A code not ranked here still comes before the leftovers.
    return at < 0 ? CONSEQUENCE.length - 1.5 : at;
  };
  return warnings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(x => x.f);
}

const WORLD_SIZE_ENV = new Set(['WORLD_SIZE', 'NNODES', 'PET_NNODES']);

/**
 * An OnDelete StatefulSet that changes `replicas` starts new pods with the new world size while the
 * old pods keep the old one until deleted: a distributed job of mixed sizes that hangs or diverges.
 */
/**
 * An object last written by server-side apply (Flux, `kubectl apply --server-side`) has no
 * last-applied annotation: the guard models the apply from the fields its Apply managers own
 * (serverSideApplied). When their managedFields list no fields (a sanitized export), it cannot:
 * say so rather than pass in silence.
 */
export function serverSideApplyWarnings(before: readonly KubeObject[], matched: Set<KubeObject>, out: Finding[]): void {
  for (const o of before) {
    // Modelled from the managers' managedFields when they list fields; warned about when they do not.
    if (!matched.has(o) || lastAppliedOf(o) !== undefined || serverSideApplied(o) !== undefined) continue;
    const managers = arr((o.metadata as Record<string, unknown>).managedFields)
      .filter((f: any) => f?.operation === 'Apply')
      .map((f: any) => String(f?.manager ?? '?'));
    if (managers.length === 0) continue;
    out.push({
      severity: 'warning',
      code: 'server-side-apply',
      ...identity(o),
      path: 'metadata.managedFields',
      before: managers.join(', '),
      after: null,
      message: `last written by server-side apply (${[...new Set(managers)].join(', ')}): fields that manager owns and the new manifest drops are removed on apply, which the guard does not model; it compared as client-side kubectl apply would, keeping them`,
      remedy:
        "check that no field was dropped from this object's manifest, or compare against a kubectl apply --server-side --dry-run=server of the new manifest",
      source: undefined,
    });
  }
}

export function onDeleteReplicas(before: KubeObject, after: KubeObject, out: Finding[]): void {
  if (after.spec?.updateStrategy?.type !== 'OnDelete' && before.spec?.updateStrategy?.type !== 'OnDelete') return;
  const rb = before.spec?.replicas ?? 1;
  const ra = after.spec?.replicas ?? 1;
  if (rb === ra) return;
  const env = arr(after.spec?.template?.spec?.containers).flatMap((c: any) => arr(c?.env));
  if (!isTraining(after) && !env.some((e: any) => WORLD_SIZE_ENV.has(e?.name))) return;
  out.push({
    severity: 'warning',
    code: 'ondelete-replicas',
    ...identity(after),
    path: 'spec.replicas',
    before: rb,
    after: ra,
    message: `replicas ${rb} -> ${ra} on an OnDelete StatefulSet: new pods start with world size ${ra}, the ${Math.min(rb, ra)} running pods keep ${rb} until they are deleted, and a job of mixed world sizes hangs at rendezvous or trains wrong`,
    remedy: `stop the job and delete all its pods together once the change is applied (kubectl delete pod -l app.kubernetes.io/instance=${after.metadata.labels?.['app.kubernetes.io/instance'] ?? after.metadata.name}), so every pod restarts with world size ${ra} from the last checkpoint`,
    source: undefined,
  });
}

const isSts = (o: KubeObject) => groupOf(o) === 'apps' && o.kind === 'StatefulSet';

/**
 * Objects in `before` and not in `after` stay in the cluster under kubectl apply without --prune; a pruning sync
 * (Argo CD with pruning, Flux with prune: true, kubectl apply --prune) deletes them at once.
 * A StatefulSet replaced by a new version (same app.kubernetes.io/name) keeps its pods, GPUs and
 * claims; the new one starts with new, empty claims unless they adopt the old volumes.
 */
export function removedWarnings(
  before: readonly KubeObject[],
  after: readonly KubeObject[],
  matched: Set<KubeObject>,
  created: KubeObject[],
  out: Finding[],
): void {
  // An autoscaled StatefulSet has no replicas in its manifest: its HPA or ScaledObject gives the range.
  const scalers = autoscaled(before);
  const claimGpus = claimCounts(before);
  const newByApp = new Map<string, KubeObject[]>();
  for (const c of created) {
    const app = appName(c);
    if (!isSts(c) || !app) continue;
    const list = newByApp.get(app);
    if (list) list.push(c);
    else newByApp.set(app, [c]);
  }
  const boundClaims = new Set<string>();
  for (const o of after)
    if (o.kind === 'PersistentVolumeClaim' && o.spec?.volumeName)
      boundClaims.add(`${o.metadata.namespace ?? ''}/${o.metadata.name}`);

  // Claims a StatefulSet controller created from its templates (`<template>-<sts>-<ordinal>`) are
  // never in a manifest; with Retain they carry no ownerReference, so they are recognised by name.
  const templateClaims = new Set<string>();
  for (const o of [...before, ...after]) {
    if (!isSts(o)) continue;
    for (const t of claimTemplateNames(o)) templateClaims.add(`${o.metadata.namespace ?? ''}/${t}-${o.metadata.name}`);
  }
  const fromTemplate = (o: KubeObject) =>
    o.kind === 'PersistentVolumeClaim' &&
    templateClaims.has(`${o.metadata.namespace ?? ''}/${o.metadata.name.replace(/-\d+$/, '')}`);
  // A moved kind's old object has its own warning (kind-moved).
  const removed = before.filter(
    o => !matched.has(o) && !serverOwned(o) && !fromTemplate(o) && !movedSuccessor(o, created),
  );
  // The objects of a replaced version (same app.kubernetes.io/instance) are reported with it.
  const INSTANCE = 'app.kubernetes.io/instance';
  const instanceKey = (o: KubeObject) =>
    o.metadata.labels?.[INSTANCE] ? `${o.metadata.namespace ?? ''}/${o.metadata.labels[INSTANCE]}` : undefined;
  const replacements = new Map<KubeObject, KubeObject>();
  const companions = new Map<string, KubeObject[]>();
  for (const old of removed) {
    const app = appName(old);
    const replacement = isSts(old) && app ? newByApp.get(app)?.[0] : undefined;
    const key = instanceKey(old);
    if (replacement && key) {
      replacements.set(old, replacement);
      companions.set(key, []);
    }
  }
  for (const old of removed) {
    const key = instanceKey(old);
    if (!replacements.has(old) && key && companions.has(key)) companions.get(key)!.push(old);
  }

  for (const old of removed) {
    const replacement = replacements.get(old);
    const key = instanceKey(old);
    if (!replacement && key && companions.get(key)?.includes(old)) continue;
    // Named by a hash of what it holds (a fill Job, a runtime script): a change is a new object by
    // design, and the old one's work (a filled cache, a running pod's mounted copy) stays.
    if (isContentNamed(old)) continue;
    const gpus = gpuRange(old, scalers, claimGpus);
    const running = gpus.max > 0 ? ` with its pods and their ${rangeText(gpus)} GPU(s)` : '';
    const claims = isSts(old) ? claimNames(old) : [];
    const ns = old.metadata.namespace ? ` -n ${old.metadata.namespace}` : '';
    if (replacement) {
      const others = companions.get(key!) ?? [];
      const newClaims = claimNames(replacement);
      const adopted =
        newClaims.length > 0 && newClaims.every(n => boundClaims.has(`${replacement.metadata.namespace ?? ''}/${n}`));
      const caches = claimsAreCaches(old);
      const claimNote =
        claimTemplateNames(old).length === 0
          ? ''
          : adopted
            ? ` Its claims (${claims.join(', ')}) are adopted by the new version's pre-bound claims: follow the adoption runbook to move the volumes.`
            : caches
              ? ` ${replacement.metadata.name} gets new, empty model-cache claims (${newClaims.join(', ') || 'none'}) and downloads the model again; the old cache claims (${claims.join(', ')}) are deleted with ${old.metadata.name} (whenDeleted: Delete).`
              : ` ${replacement.metadata.name}'s claims (${newClaims.join(', ') || 'none'}) start empty, and the old claims (${claims.join(', ')}) stay behind with the data.`;
      const othersNote = others.length > 0 ? ` The old version's ${others.map(describe).join(', ')} stay too.` : '';
      const kinds = [...new Set(['statefulset', ...others.map(o => o.kind.toLowerCase())])].join(',');
      const deleteOld =
        others.length > 0
          ? `kubectl delete ${kinds} -l ${INSTANCE}=${old.metadata.labels![INSTANCE]}${ns}`
          : `kubectl delete statefulset ${old.metadata.name}${ns}`;
      out.push({
        severity: 'warning',
        code: 'statefulset-replaced',
        ...identity(old),
        path: 'spec.volumeClaimTemplates',
        before: old.metadata.name,
        after: replacement.metadata.name,
        message: `StatefulSet ${replacement.metadata.name} replaces ${old.metadata.name}: kubectl apply without --prune does not delete ${old.metadata.name}, which keeps running${running} until it is deleted (a pruning sync, such as Argo CD with pruning or Flux with prune: true, deletes it at once).${claimNote}${othersNote}`,
        remedy:
          caches || claimTemplateNames(old).length === 0 || adopted
            ? `once ${replacement.metadata.name} is ready, delete the old version: ${deleteOld}`
            : `to start from the old data, set adoptVolumes on the new version and follow the adoption runbook in docs/runbooks.md; otherwise delete the old version once the new one is ready (${deleteOld}) and the old claims when their data is no longer needed`,
        source: undefined,
      });
      continue;
    }
    const claimNote = claimFate(old);
    out.push({
      severity: 'warning',
      code: 'object-removed',
      ...identity(old),
      path: '',
      before: old.metadata.name,
      after: undefined,
      message: `${describe(old)} is in the old set but not in the new one: kubectl apply without --prune does not delete it (a pruning sync does), so it ${STAYS[old.kind] ?? 'stays in the cluster'}${running}; a renamed object leaves the old one behind.${claimNote}`,
      remedy: `if it is meant to go, delete it (kubectl delete ${old.kind.toLowerCase()} ${old.metadata.name}${ns}) or apply with --prune; if it was renamed by mistake, restore its name`,
      source: undefined,
    });
  }
}

/** What happens to a removed StatefulSet's claims (a sentence with a leading space), or `''`. */
export function claimFate(old: KubeObject): string {
  const claims = isSts(old) ? claimNames(old) : [];
  if (claims.length === 0) return '';
  return claimsAreCaches(old)
    ? ` Its claims (${claims.join(', ')}) stay with it; deleting it deletes them (whenDeleted: Delete).`
    : ` Its claims (${claims.join(', ')}) stay with it, and stay with their data when it is deleted (Retain).`;
}

/**
 * A key written twice in one mapping of a new manifest: kubectl keeps the last value without a
 * word (sigs.k8s.io/yaml reads without go-yaml's strict mode; kubernetes#14791), so the first is
 * silently lost (a second `image:`, a label overridden).
 */
export function duplicateKeyWarnings(after: readonly KubeObject[], out: Finding[]): void {
  for (const o of after) {
    const dups = duplicateKeysOf(o);
    if (dups.length === 0) continue;
    const file = sourceOf(o)?.file ?? 'the manifest';
    out.push({
      severity: 'warning',
      code: 'duplicate-key',
      ...identity(o),
      path: dups.map(d => d.key).join(', '),
      before: null,
      after: dups.map(d => `${file}:${d.line}`),
      message: `${dups.map(d => `"${d.key}" (${file}:${d.line})`).join(', ')} appear${dups.length === 1 ? 's' : ''} twice in one mapping: kubectl keeps the last value and drops the earlier one without a word`,
      remedy: 'remove the earlier key, or merge the two values into one, so the manifest says what is applied',
      source: undefined,
    });
  }
}
