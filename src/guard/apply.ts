// What `kubectl apply` stores: its three-way merge of the manifest over the live object, with the
// last-applied annotation deciding what is deleted (kubectl's CreateThreeWayMergePatch).
import { clone, isBuiltInGroup, KubeObject } from './normalize';
import { groupOf, isObject } from './object';

/** The parsed `kubectl.kubernetes.io/last-applied-configuration` of a live object, if any. */
export function lastAppliedOf(o: KubeObject): any {
  const raw = (o.metadata.annotations as Record<string, string> | undefined)?.[
    'kubectl.kubernetes.io/last-applied-configuration'
  ];
  if (!raw) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/**
 * patchMergeKey of the built-in types' lists (k8s.io/api core/v1 types.go `patchStrategy:"merge"`):
 * strategic merge patch merges these lists item by item; every other list is replaced whole.
 */
const MERGE_KEYS: Record<string, (items: any[]) => string> = {
  containers: () => 'name',
  initContainers: () => 'name',
  ephemeralContainers: () => 'name',
  volumes: () => 'name',
  env: () => 'name',
  imagePullSecrets: () => 'name',
  resourceClaims: () => 'name',
  schedulingGates: () => 'name',
  volumeMounts: () => 'mountPath',
  volumeDevices: () => 'devicePath',
  hostAliases: () => 'ip',
  topologySpreadConstraints: () => 'topologyKey',
  // ContainerPort merges on containerPort, ServicePort on port.
  ports: items => (items.some(i => isObject(i) && i.containerPort !== undefined) ? 'containerPort' : 'port'),
};

/**
 * The items of a manifest's merge-keyed lists that lack their key, by path (`spec.template.spec.
 * containers[0].env[4]`) with the key: kubectl apply cannot compute its strategic merge patch for such a
 * list ("does not contain declared merge key") and sends nothing (server-side apply merges such an
 * item). Where the server does not validate the list itself (a 1.32 StatefulSet's pod template, for
 * one) nothing else would have stopped the update.
 */
export function missingMergeKeys(manifest: unknown, at = '', key = ''): Array<{ path: string; key: string }> {
  if (Array.isArray(manifest)) {
    const mk = MERGE_KEYS[key]?.(manifest);
    return manifest.flatMap((item, i) => [
      ...(mk !== undefined && isObject(item) && (item[mk] === undefined || item[mk] === null)
        ? [{ path: `${at}[${i}]`, key: mk }]
        : []),
      ...missingMergeKeys(item, `${at}[${i}]`),
    ]);
  }
  if (!isObject(manifest)) return [];
  return Object.entries(manifest).flatMap(([k, v]) => missingMergeKeys(v, at ? `${at}.${k}` : k, k));
}

/**
 * What `kubectl apply` of `manifest` over `live` stores (its three-way merge, kubectl's
 * CreateThreeWayMergePatch): the manifest's values, and every live field the manifest leaves out
 * unless the last apply set it (only fields in last-applied are deleted). Without a
 * last-applied annotation nothing is deleted. Built-in kinds merge the lists that have a patch
 * merge key item by item (strategic merge patch); custom resources get a JSON merge patch, whose
 * lists are replaced whole.
 */
export function applyResult(
  live: unknown,
  manifest: unknown,
  lastApplied: unknown,
  strategic: boolean,
  key = '',
): unknown {
  if (manifest === undefined) return lastApplied !== undefined ? undefined : clone(live);
  if (isObject(live) && isObject(manifest)) {
    const out: Record<string, unknown> = {};
    const la = isObject(lastApplied) ? lastApplied : undefined;
    for (const k of Object.keys(live)) {
      if (manifest[k] !== undefined) continue;
      // A field the last apply set and the manifest no longer has is deleted; a field nobody applied stays.
      if (la === undefined && lastApplied !== undefined) continue;
      if (la?.[k] !== undefined) continue;
      out[k] = clone(live[k]);
    }
    for (const k of Object.keys(manifest)) {
      out[k] = manifest[k] === null ? null : applyResult(live[k], manifest[k], la?.[k], strategic, k);
    }
    return out;
  }
  if (strategic && Array.isArray(live) && Array.isArray(manifest) && MERGE_KEYS[key]) {
    const mk = MERGE_KEYS[key]([...manifest, ...live]);
    const byKey = (list: unknown, v: unknown) =>
      Array.isArray(list) ? list.find(i => isObject(i) && i[mk] === v) : undefined;
    if (manifest.every(i => isObject(i) && i[mk] !== undefined)) {
      const merged = manifest.map(m => applyResult(byKey(live, m[mk]), m, byKey(lastApplied, m[mk]), strategic, ''));
      // Live items the manifest does not name stay unless the last apply had them, where they
      // were among the manifest's items, which keep the manifest's order ($setElementOrder).
      const out: unknown[] = [];
      let next = 0;
      for (const l of live) {
        const at = isObject(l) ? manifest.findIndex(m => m[mk] === l[mk]) : -1;
        if (at >= 0) {
          while (next <= at) out.push(merged[next++]);
        } else if (isObject(l) && byKey(lastApplied, l[mk]) === undefined) {
          out.push(clone(l));
        }
      }
      while (next < merged.length) out.push(merged[next++]);
      return out;
    }
  }
  return clone(manifest);
}

function dropUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The object `kubectl apply` of `after` over the live `before` sends to the server's update. */
export function applied(before: KubeObject, after: KubeObject, minor?: number): KubeObject {
  const last = lastAppliedOf(before) ?? serverSideApplied(before);
  // Labels and annotations merge as any map: a live one that the last apply did not set (Kueue's
  // default queue name, a `kubectl label`) stays.
  const metaMap = (k: 'labels' | 'annotations') =>
    applyResult(before.metadata[k], after.metadata[k], last?.metadata?.[k], false) as
      Record<string, string> | undefined;
  const metadata = {
    ...after.metadata,
    ...dropUndefined({ labels: metaMap('labels'), annotations: metaMap('annotations') }),
  };
  const o: KubeObject = {
    ...(applyResult(before, after, last, isBuiltInGroup(groupOf(after), minor)) as KubeObject),
    metadata,
  };
  return o;
}

const sameIPs = (a: unknown, b: unknown) =>
  (Array.isArray(a) ? a : []).length === (Array.isArray(b) ? b : []).length &&
  (Array.isArray(a) ? a : []).every((x, i) => x === (b as unknown[])[i]);

/**
 * What the Service REST storage does to an update before validating it (beginUpdate in
 * pkg/registry/core/service/storage/storage.go): patchAllocatedValues keeps the allocated
 * clusterIP and clusterIPs a manifest leaves out (while neither side is ExternalName), then
 * normalizeClusterIPs makes clusterIPs follow a changed clusterIP when clusterIPs were left as
 * they were. So a manifest that sets only `clusterIP` to a new address changes clusterIPs[0] (and
 * is refused), and one that drops `clusterIP: None` from a headless Service keeps it headless.
 * `oldSpec` is the stored spec (clusterIPs filled in, as defaultOnRead does); `spec` is changed in place.
 */
export function serviceUpdate(oldSpec: Record<string, any>, spec: Record<string, any>): void {
  const needsClusterIP = (s: Record<string, any>) => s.type !== 'ExternalName';
  const len = (x: unknown) => (Array.isArray(x) ? x.length : 0);
  if (needsClusterIP(oldSpec) && needsClusterIP(spec)) {
    if (spec.clusterIP === undefined || spec.clusterIP === '' || spec.clusterIP === null)
      spec.clusterIP = oldSpec.clusterIP;
    if (len(spec.clusterIPs) === 0 && len(oldSpec.clusterIPs) > 0) spec.clusterIPs = oldSpec.clusterIPs;
  }
  // normalizeClusterIPs, the update branch.
  if (len(oldSpec.clusterIPs) > 0 && len(spec.clusterIPs) === 0 && oldSpec.clusterIP === spec.clusterIP)
    spec.clusterIPs = oldSpec.clusterIPs;
  if ((oldSpec.clusterIP ?? '') !== (spec.clusterIP ?? '') && sameIPs(oldSpec.clusterIPs, spec.clusterIPs)) {
    if (oldSpec.clusterIP && !spec.clusterIP) delete spec.clusterIPs;
    else spec.clusterIPs = [spec.clusterIP];
  }
  for (const k of ['clusterIP', 'clusterIPs']) if (spec[k] === undefined) delete spec[k];
}

/**
 * The fields that server-side apply managers (managedFields entries with operation `Apply`, such
 * as Flux's kustomize-controller or `kubectl apply --server-side`) own, as a skeleton object in the
 * shape of a last-applied configuration: a next apply by that manager removes the fields it owns
 * and the new manifest drops, and keeps every other live field, which is what the three-way merge
 * does with a last-applied configuration. Fields another manager also owns are not removed by the
 * server, so they are left out. Undefined when no Apply entry lists fields. @internal
 */
export function serverSideApplied(o: KubeObject): any {
  const entries = (Array.isArray(o.metadata.managedFields) ? o.metadata.managedFields : []).filter(
    (f: any) => f?.fieldsType === 'FieldsV1' && isObject(f.fieldsV1),
  );
  const applied = entries.filter((f: any) => f.operation === 'Apply' && Object.keys(f.fieldsV1).length > 0);
  if (applied.length === 0) return undefined;
  const others = entries.filter((f: any) => f.operation !== 'Apply').map((f: any) => fieldsToSkeleton(f.fieldsV1));
  let owned: any = {};
  for (const f of applied) owned = mergeSkeleton(owned, fieldsToSkeleton(f.fieldsV1));
  for (const other of others) owned = withoutShared(owned, other);
  return owned;
}

/** managedFields' FieldsV1 (`f:name`, `k:{"name":"c"}`, `v:"x"`) as a skeleton: `true` at owned leaves. */
function fieldsToSkeleton(node: Record<string, any>): any {
  const keys = Object.keys(node).filter(k => k !== '.');
  if (keys.length === 0) return true;
  if (keys.some(k => k.startsWith('k:') || k.startsWith('v:'))) {
    const items: unknown[] = [];
    for (const k of keys) {
      try {
        if (k.startsWith('k:')) {
          const child = fieldsToSkeleton(node[k]);
          items.push({ ...(isObject(child) ? child : {}), ...JSON.parse(k.slice(2)) });
        } else if (k.startsWith('v:')) items.push(JSON.parse(k.slice(2)));
      } catch {
        // A key that is not JSON: the item cannot be named, so it is not taken as owned.
      }
    }
    return items;
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k.startsWith('f:')) out[k.slice(2)] = fieldsToSkeleton(node[k]);
  return out;
}

function mergeSkeleton(a: any, b: any): any {
  if (isObject(a) && isObject(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const k of Object.keys(b)) out[k] = k in a ? mergeSkeleton(a[k], b[k]) : b[k];
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  return b;
}

/** `owned` without the leaves `other` also owns (objects only; lists stay as they are). */
function withoutShared(owned: any, other: any): any {
  if (!isObject(owned) || !isObject(other)) return owned;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(owned)) {
    if (other[k] === true && owned[k] === true) continue;
    out[k] = other[k] === undefined ? owned[k] : withoutShared(owned[k], other[k]);
  }
  return out;
}
