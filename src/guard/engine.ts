// The guard's comparison: one pass over the objects, linear in their number. Required lazily by
// diff.ts so that importing the library costs nothing until the guard runs.
import { celRules, type CelRule } from './crd';
import type { Finding, GuardOptions, GuardResult } from './diff';
import { semanticEqual, quantityNanos } from './equal';
import { GuardInputError, sourceOf } from './load';
import { arr, clone, isBuiltInGroup, isLiveExport, KubeObject, normalize, StatusFacts, statusFacts } from './normalize';
import { appName, claimNames, claimsAreCaches, claimTemplateNames, isTraining, remedyFor } from './remedy';
import {
  FieldRule,
  GuardCheck,
  kueueVersionOf,
  MIN_KUEUE_VERSION,
  MIN_SERVER_VERSION,
  minorOf,
  rulesFor,
} from './rules';

const groupOf = (o: KubeObject) => {
  const slash = o.apiVersion.indexOf('/');
  return slash < 0 ? '' : o.apiVersion.slice(0, slash);
};
const versionOf = (o: KubeObject) => o.apiVersion.split('/').pop()!;
const describe = (o: KubeObject) =>
  `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
const show = (v: unknown) => (v === undefined ? 'null' : JSON.stringify(v));

function get(obj: any, path: string): unknown {
  let o = obj;
  for (const k of path.split('.')) {
    if (o === undefined || o === null) return undefined;
    o = o[k];
  }
  return o;
}

function set(obj: any, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = isObject(o[k]) ? o[k] : (o[k] = {});
  o[keys[keys.length - 1]] = value;
}

const lastKey = (path: string) => path.slice(path.lastIndexOf('.') + 1);

/** Objects the server or a controller creates: their absence from a manifest means nothing. */
function serverOwned(o: KubeObject): boolean {
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

interface Pair {
  readonly before: KubeObject;
  readonly after: KubeObject;
  readonly b: KubeObject;
  readonly a: KubeObject;
  readonly facts: StatusFacts;
}

/** The parsed `kubectl.kubernetes.io/last-applied-configuration` of a live object, if any. */
function lastAppliedOf(o: KubeObject): any {
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

/** Built-in groups get strategic merge patch from kubectl apply; custom resources JSON merge patch. */
const builtIn = isBuiltInGroup;

/** The object `kubectl apply` of `after` over the live `before` sends to the server's update. */
function applied(kindKey: string, before: KubeObject, after: KubeObject): KubeObject {
  const last = lastAppliedOf(before);
  // Labels and annotations merge as any map: a live one that the last apply did not set (Kueue's
  // default queue name, a `kubectl label`) stays.
  const metaMap = (k: 'labels' | 'annotations') =>
    applyResult(before.metadata[k], after.metadata[k], last?.metadata?.[k], false) as
      Record<string, string> | undefined;
  const metadata = {
    ...after.metadata,
    ...dropUndefined({ labels: metaMap('labels'), annotations: metaMap('annotations') }),
  };
  const o: KubeObject = { ...(applyResult(before, after, last, builtIn(groupOf(after))) as KubeObject), metadata };
  // normalizeClusterIPs (pkg/registry/core/service/strategy.go): a changed clusterIP with the old
  // clusterIPs left in place (the apply kept them) becomes clusterIPs [clusterIP].
  if (kindKey === '/Service' && isObject(o.spec) && isObject(before.spec)) {
    const ip = o.spec.clusterIP;
    if (
      typeof ip === 'string' &&
      ip !== '' &&
      ip !== before.spec.clusterIP &&
      semanticEqual(o.spec.clusterIPs, before.spec.clusterIPs)
    )
      o.spec.clusterIPs = [ip];
  }
  return o;
}

/** Fields the server keeps when a manifest leaves them out, copied from the old object. */
function carryForward(kindKey: string, beforeRaw: KubeObject, b: KubeObject, a: KubeObject): void {
  const live = isLiveExport(beforeRaw);
  const lastApplied = lastAppliedOf(beforeRaw);
  // kubectl apply keeps a live field that the manifest omits unless it applied the field itself.
  const keptByApply = (path: string) => live && (lastApplied === undefined || get(lastApplied, path) === undefined);
  const carry = (path: string, when: boolean) => {
    if (when && get(a, path) === undefined && get(b, path) !== undefined) set(a, path, clone(get(b, path)));
  };
  switch (kindKey) {
    case '/Service': {
      // The Service REST strategy (patchAllocatedValues, initIPFamilyFields) keeps allocated IPs,
      // families and node ports whatever the manifest says, while the type needs them.
      const keep = a.spec?.type !== 'ExternalName' && b.spec?.type !== 'ExternalName';
      for (const p of [
        'spec.clusterIP',
        'spec.clusterIPs',
        'spec.ipFamilies',
        'spec.ipFamilyPolicy',
        'spec.healthCheckNodePort',
      ])
        carry(p, keep);
      const bPorts = arr(b.spec?.ports).filter(isObject);
      for (const p of arr(a.spec?.ports)) {
        if (!isObject(p)) continue;
        const old = bPorts.find(q => q.port === p.port && q.protocol === p.protocol);
        if (
          keep &&
          p.nodePort === undefined &&
          old?.nodePort !== undefined &&
          (a.spec.type === 'NodePort' || a.spec.type === 'LoadBalancer')
        )
          p.nodePort = old.nodePort;
      }
      break;
    }
    case '/PersistentVolumeClaim':
      // Set by the binder and the DefaultStorageClass admission plugin, not by the manifest.
      carry('spec.volumeName', keptByApply('spec.volumeName'));
      carry('spec.storageClassName', keptByApply('spec.storageClassName'));
      break;
    case 'batch/Job':
      // SetDefaults_Job sets completions only when parallelism is unset too; the defaulted value
      // stays when a later manifest sets parallelism alone.
      carry('spec.completions', keptByApply('spec.completions') && beforeRaw.spec?.completions !== undefined);
      break;
    case '/PersistentVolume':
      carry('spec.claimRef', keptByApply('spec.claimRef'));
      break;
    case '/Pod': {
      // Set by the scheduler and by admission (Priority, RuntimeClass, and ServiceAccount, which adds
      // the account's imagePullSecrets).
      for (const p of [
        'spec.nodeName',
        'spec.priority',
        'spec.priorityClassName',
        'spec.preemptionPolicy',
        'spec.runtimeClassName',
        'spec.overhead',
        'spec.imagePullSecrets',
      ])
        carry(p, keptByApply(p));
      // Added by the ServiceAccount admission plugin: the kube-api-access projected volume and its mounts.
      const injected = new Set<string>(
        arr(b.spec?.volumes)
          .filter((v: any) => /^kube-api-access-/.test(v?.name ?? ''))
          .map((v: any) => v.name),
      );
      if (live && injected.size > 0 && isObject(a.spec)) {
        const has = new Set(arr(a.spec.volumes).map((v: any) => v?.name));
        a.spec.volumes = [
          ...arr(a.spec.volumes),
          ...arr(b.spec.volumes).filter((v: any) => injected.has(v.name) && !has.has(v.name)),
        ];
        for (const list of ['initContainers', 'containers']) {
          arr(a.spec[list]).forEach((c: any, i: number) => {
            if (!isObject(c)) return;
            const old = arr(b.spec[list])[i];
            const mounts = arr(old?.volumeMounts).filter(
              (m: any) => injected.has(m?.name) && !arr(c.volumeMounts).some((n: any) => n?.name === m.name),
            );
            if (mounts.length > 0) c.volumeMounts = [...arr(c.volumeMounts), ...mounts];
          });
        }
      }
      // Added by the DefaultTolerationSeconds admission plugin, and by ExtendedResourceToleration
      // (on create and on update, plugin/pkg/admission/extendedresourcetoleration; on in GKE and
      // AKS): `<resource> Exists NoSchedule` for each extended resource the containers request.
      if (live && isObject(a.spec)) {
        const extended = new Set<string>(
          ['initContainers', 'containers']
            .flatMap(l => arr(a.spec[l]))
            .flatMap((c: any) => [
              ...Object.keys(c?.resources?.requests ?? {}),
              ...Object.keys(c?.resources?.limits ?? {}),
            ])
            .filter(r => r.includes('/') && !/(^|\.)kubernetes\.io\//.test(r)),
        );
        const defaultTol = (t: any) =>
          (['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].includes(t?.key) &&
            t?.effect === 'NoExecute') ||
          (extended.has(t?.key) && t?.operator === 'Exists' && t?.effect === 'NoSchedule');
        const add = arr(b.spec?.tolerations).filter(
          (t: any) =>
            defaultTol(t) && !arr(a.spec.tolerations).some((u: any) => u?.key === t.key && u?.effect === t.effect),
        );
        if (add.length > 0) a.spec.tolerations = [...arr(a.spec.tolerations), ...add];
      }
      break;
    }
    default:
      break;
  }
}

/** The changed children of two objects, as two partial objects for the report. */
function changedChildren(bv: any, av: any, except: readonly string[] = []): { keys: string[] } {
  const keys = [...new Set([...Object.keys(isObject(bv) ? bv : {}), ...Object.keys(isObject(av) ? av : {})])]
    .filter(k => !except.includes(k))
    .filter(k => !semanticEqual(bv?.[k], av?.[k], k))
    .sort();
  return { keys };
}

const pick = (o: any, keys: string[]) =>
  isObject(o) ? Object.fromEntries(keys.filter(k => o[k] !== undefined).map(k => [k, o[k]])) : undefined;

function fill(message: string, vars: Record<string, unknown>): string {
  return message.replace(/\{(value|old|detail|path)\}/g, (_m, k) =>
    k === 'value' || k === 'old' ? show(vars[k]) : String(vars[k] ?? ''),
  );
}

const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
const labelOf = (o: KubeObject, key: string): string | undefined => o.metadata.labels?.[key] || undefined;
/** Kueue's webhook checks a StatefulSet it manages: one with a queue name (jobframework.QueueNameForObject). */
const queued = (o: KubeObject) => labelOf(o, KUEUE_QUEUE_LABEL) !== undefined;
/**
 * Kueue's isSuspended: no pod Ready (status.readyReplicas == 0). A manifest baseline has no status:
 * a queued StatefulSet is taken to be running, so a change the webhook may refuse is not missed.
 */
const running = (o: KubeObject) => !isObject(o.status) || (Number(o.status.readyReplicas) || 0) > 0;

/** utilpod.SpecShape's containers: each one's resource requests and ports. */
const containersShape = (list: unknown) =>
  arr(list).map((c: any) => ({ resources: { requests: c?.resources?.requests }, ports: c?.ports }));
const SHAPE_FIELDS = [
  'nodeSelector',
  'affinity',
  'tolerations',
  'runtimeClassName',
  'priority',
  'topologySpreadConstraints',
  'overhead',
  'resourceClaims',
];

/** jobframework.validateImmutablePodGroupPodSpecPath over utilpod.SpecShape: one finding per changed leaf. */
function podShape(rule: FieldRule, bv: any, av: any, emit: Emit): void {
  const base = rule.path;
  for (const list of ['initContainers', 'containers']) {
    const olds = containersShape(bv?.[list]);
    const news = containersShape(av?.[list]);
    if (olds.length !== news.length) {
      emit(rule, `${base}.${list}`, olds, news);
      continue;
    }
    news.forEach((n, i) => {
      const o = olds[i];
      if (!semanticEqual(o.resources.requests, n.resources.requests, 'requests'))
        emit(rule, `${base}.${list}[${i}].resources.requests`, o.resources.requests, n.resources.requests);
      if (!semanticEqual(o.ports, n.ports, 'ports')) emit(rule, `${base}.${list}[${i}].ports`, o.ports, n.ports);
    });
  }
  for (const k of SHAPE_FIELDS) if (!semanticEqual(bv?.[k], av?.[k], k)) emit(rule, `${base}.${k}`, bv?.[k], av?.[k]);
}

type Emit = (rule: FieldRule, path: string, before: unknown, after: unknown, vars?: Record<string, unknown>) => void;

function checkRule(rule: FieldRule, p: Pair, emit: Emit): void {
  const { b, a, facts } = p;
  if (rule.kueue) return checkKueueRule(rule, p, emit);
  const bv = get(b, rule.path);
  const av = get(a, rule.path);
  const key = lastKey(rule.path);
  switch (rule.check) {
    case GuardCheck.IMMUTABLE:
    case GuardCheck.CEL_SELF_EQUALS_OLD_SELF:
      if (rule.check === GuardCheck.CEL_SELF_EQUALS_OLD_SELF && (bv === undefined || av === undefined)) return;
      if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
      return;
    case GuardCheck.IMMUTABLE_ONCE_SET:
      if (bv === undefined || bv === '') return;
      if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
      return;
    case GuardCheck.IMMUTABLE_EXCEPT: {
      let newer = av;
      for (const sub of rule.settableFromNil ?? []) {
        const parent = sub.includes('.') ? sub.slice(0, sub.lastIndexOf('.')) : '';
        if (
          get(bv, sub) === undefined &&
          get(av, sub) !== undefined &&
          (parent === '' || (get(bv, parent) !== undefined && get(av, parent) !== undefined))
        ) {
          newer = clone(newer);
          const holder = parent === '' ? newer : get(newer, parent);
          delete (holder as any)[lastKey(sub)];
        }
      }
      const { keys } = changedChildren(bv, newer, rule.except);
      if (keys.length === 0) return;
      // One finding per changed field (the path a user edits); the message keeps the server's path.
      for (const k of keys) emit(rule, `${rule.path}.${k}`, (bv as any)?.[k], (newer as any)?.[k]);
      return;
    }
    case GuardCheck.POD_GATED_NODE_SELECTOR: {
      if (arr(b.spec?.schedulingGates).length === 0) return;
      const olds = isObject(bv) ? bv : {};
      const news: Record<string, unknown> = isObject(av) ? av : {};
      if (Object.keys(olds).some(k => news[k] !== olds[k])) emit(rule, rule.path, bv, av, { value: av ?? null });
      return;
    }
    case GuardCheck.POD_GATED_NODE_AFFINITY: {
      if (arr(b.spec?.schedulingGates).length === 0) return;
      const oldReq = (bv as any)?.requiredDuringSchedulingIgnoredDuringExecution;
      if (!isObject(oldReq)) return;
      const oldTerms = arr(oldReq.nodeSelectorTerms);
      const newTerms = arr((av as any)?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms);
      const termsPath = `${rule.path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
      if (oldTerms.length > 0 && oldTerms.length !== newTerms.length) {
        emit(rule, termsPath, oldTerms, newTerms, {
          path: termsPath,
          value: newTerms,
          detail: 'no additions/deletions to non-empty NodeSelectorTerms list are allowed',
        });
        return;
      }
      // validateNodeSelectorTermHasOnlyAdditions: the old requirements stay, in order; new ones may follow.
      const onlyAdded = (o: any[], n: any[]) => o.length <= n.length && o.every((x, i) => semanticEqual(x, n[i]));
      oldTerms.forEach((o: any, i: number) => {
        const n = newTerms[i];
        if (
          !onlyAdded(arr(o?.matchExpressions), arr(n?.matchExpressions)) ||
          !onlyAdded(arr(o?.matchFields), arr(n?.matchFields))
        ) {
          emit(rule, `${termsPath}[${i}]`, o, n, {
            path: `${termsPath}[${i}]`,
            value: n,
            detail: 'only additions are allowed (no mutations or deletions)',
          });
        }
      });
      return;
    }
    case GuardCheck.IMMUTABLE_WHEN_ESTABLISHED:
      // apiextensions.IsCRDConditionTrue(old, Established); no status: taken to be established.
      if (isObject(p.before.status) && !facts.crdEstablished) return;
      if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
      return;
    case GuardCheck.NOT_UNSET:
      if (bv !== undefined && av === undefined) emit(rule, rule.reportPath ?? rule.path, bv, av);
      return;
    case GuardCheck.NOT_EMPTIED:
      if (bv !== undefined && bv !== '' && av === '') emit(rule, rule.reportPath ?? rule.path, bv, av);
      return;
    case GuardCheck.IMMUTABLE_WHEN_FLAGGED:
      if (b.immutable !== true) return;
      if (rule.path === 'immutable' ? a.immutable !== true : !semanticEqual(bv, av, key)) emit(rule, rule.path, bv, av);
      return;
    case GuardCheck.POD_SPEC: {
      if (!isObject(bv) || !isObject(av)) return;
      const munged = clone(av) as any;
      for (const list of ['containers', 'initContainers']) {
        arr(munged[list]).forEach((c: any, i: number) => {
          const old = arr((bv as any)[list])[i];
          if (old && isObject(c)) c.image = old.image;
        });
      }
      munged.activeDeadlineSeconds = (bv as any).activeDeadlineSeconds;
      munged.tolerations = (bv as any).tolerations;
      munged.schedulingGates = (bv as any).schedulingGates;
      // A gated pod's nodeSelector and nodeAffinity are checked by their own rules (ValidatePodUpdate's podIsGated).
      if (arr((bv as any).schedulingGates).length > 0) {
        munged.nodeSelector = (bv as any).nodeSelector;
        const oldNA = (bv as any).affinity?.nodeAffinity;
        if (!semanticEqual(oldNA, munged.affinity?.nodeAffinity, 'nodeAffinity')) {
          munged.affinity = { ...(isObject(munged.affinity) ? munged.affinity : {}), nodeAffinity: oldNA };
          if (oldNA === undefined) delete munged.affinity.nodeAffinity;
          if (Object.keys(munged.affinity).length === 0 && (bv as any).affinity === undefined) delete munged.affinity;
        }
      }
      if (
        typeof (bv as any).terminationGracePeriodSeconds === 'number' &&
        (bv as any).terminationGracePeriodSeconds < 0 &&
        munged.terminationGracePeriodSeconds === 1
      ) {
        munged.terminationGracePeriodSeconds = (bv as any).terminationGracePeriodSeconds;
      }
      const { keys } = changedChildren(bv, munged);
      for (const k of keys) emit(rule, `spec.${k}`, (bv as any)[k], (av as any)[k]);
      return;
    }
    case GuardCheck.POD_TOLERATIONS: {
      const olds: any[] = Array.isArray(bv) ? bv : [];
      const news: any[] = Array.isArray(av) ? av : [];
      const strip = (t: any) => ({ ...t, tolerationSeconds: undefined });
      const missing = olds.filter(o => !news.some(n => semanticEqual(strip(o), strip(n))));
      if (missing.length > 0) emit(rule, rule.path, bv, av);
      return;
    }
    case GuardCheck.POD_ACTIVE_DEADLINE:
      if (typeof av === 'number' && typeof bv === 'number' && av > bv)
        emit(rule, rule.path, bv, av, { value: av, detail: 'must be less than or equal to previous value' });
      else if (av === undefined && bv !== undefined)
        emit(rule, rule.path, bv, av, { value: null, detail: 'must not update from a positive integer to nil value' });
      return;
    case GuardCheck.POD_SCHEDULING_GATES: {
      const old = new Set(((bv as any[]) ?? []).map(g => g?.name));
      const added = ((av as any[]) ?? []).find(g => !old.has(g?.name));
      if (added) emit(rule, rule.path, bv, av, { detail: added.name });
      return;
    }
    case GuardCheck.PVC_SPEC: {
      if (!isObject(bv) || !isObject(av)) return;
      const oldSpec = clone(bv) as any;
      const newSpec = clone(av) as any;
      if (!oldSpec.volumeName) oldSpec.volumeName = newSpec.volumeName;
      // validateStorageClassUpgradeFromNil: unset -> set is allowed. A manifest baseline cannot say
      // whether the stored claim is unset: the DefaultStorageClass admission plugin (and, from
      // 1.28, the PV controller's retroactive default) gives it the cluster's default class, and
      // a different class is then refused. Taken to be set, as unknown state is elsewhere.
      if (oldSpec.storageClassName === undefined && newSpec.storageClassName !== undefined) {
        if (!isLiveExport(p.before)) {
          emit(
            {
              ...rule,
              message: `${rule.message} (if the cluster has a default StorageClass other than ${show(newSpec.storageClassName)}: the claim was created without storageClassName, so the server gave it the default class; compare against a live export to know)`,
            },
            'spec.storageClassName',
            undefined,
            newSpec.storageClassName,
          );
        }
        newSpec.storageClassName = undefined;
      }
      // Only a bound claim may change its storage request (the size checks are separate rules).
      const bound = facts.pvcPhase === undefined || facts.pvcPhase === 'Bound';
      if (bound && isObject(newSpec.resources?.requests)) {
        if (oldSpec.resources?.requests?.storage === undefined) delete newSpec.resources.requests.storage;
        else newSpec.resources.requests.storage = oldSpec.resources.requests.storage;
      }
      for (const k of rule.except ?? []) newSpec[k] = oldSpec[k];
      const { keys } = changedChildren(oldSpec, newSpec);
      for (const k of keys) emit(rule, `spec.${k}`, (bv as any)[k], (av as any)[k]);
      return;
    }
    case GuardCheck.PVC_STORAGE_SHRINK:
    case GuardCheck.PVC_STORAGE_ABOVE_CAPACITY: {
      const nb = quantityNanos(bv);
      const na = quantityNanos(av);
      if (nb === undefined || na === undefined || na >= nb) return;
      if (rule.check === GuardCheck.PVC_STORAGE_ABOVE_CAPACITY) {
        // Without a status (a manifest baseline), the capacity is taken to be the old request.
        const capacity = quantityNanos(facts.pvcCapacity) ?? nb;
        if (na > capacity) return;
      }
      emit(rule, rule.path, bv, av);
      return;
    }
    case GuardCheck.JOB_TEMPLATE: {
      let oldT = bv as any;
      const newT = av as any;
      // validatePodTemplateUpdate: AllowMutableSchedulingDirectives for a suspended Job that never started.
      if (b.spec?.suspend === true && !facts.jobStarted && isObject(oldT) && isObject(newT)) {
        oldT = clone(oldT);
        oldT.spec = oldT.spec ?? {};
        const na = newT.spec?.affinity;
        const oa = oldT.spec.affinity;
        if (na === undefined && oa !== undefined) {
          delete oa.nodeAffinity;
          if (Object.keys(oa).length === 0) delete oldT.spec.affinity;
        } else if (na !== undefined && oa === undefined) {
          if (na.nodeAffinity !== undefined) oldT.spec.affinity = { nodeAffinity: na.nodeAffinity };
        } else if (na !== undefined && oa !== undefined) {
          oa.nodeAffinity = na.nodeAffinity;
          if (oa.nodeAffinity === undefined) delete oa.nodeAffinity;
        }
        for (const f of ['nodeSelector', 'tolerations', 'schedulingGates']) oldT.spec[f] = newT.spec?.[f];
        const meta = {
          ...(oldT.metadata ?? {}),
          labels: newT.metadata?.labels,
          annotations: newT.metadata?.annotations,
        };
        for (const k of Object.keys(meta)) if (meta[k] === undefined) delete meta[k];
        if (Object.keys(meta).length > 0) oldT.metadata = meta;
        else delete oldT.metadata;
      }
      if (!semanticEqual(oldT, newT, 'template')) {
        const { keys } = changedChildren(oldT?.spec, newT?.spec);
        const metaChanged = !semanticEqual(oldT?.metadata, newT?.metadata, 'metadata');
        const part = (t: any) => ({ ...(metaChanged ? { metadata: t?.metadata } : {}), spec: pick(t?.spec, keys) });
        emit(rule, rule.path, part(bv), part(av), { value: av });
      }
      return;
    }
    case GuardCheck.JOB_COMPLETIONS: {
      if (semanticEqual(bv, av)) return;
      const indexed = a.spec?.completionMode === 'Indexed';
      if (!indexed) {
        emit(rule, rule.path, bv, av, { value: av ?? null, detail: 'field is immutable' });
        return;
      }
      // validateCompletions (ElasticIndexedJob, on from 1.27): only in tandem with parallelism.
      if (av === undefined) return;
      if (av !== a.spec?.parallelism)
        emit(rule, rule.path, bv, av, { value: av, detail: 'can only be modified in tandem with spec.parallelism' });
      return;
    }
    case GuardCheck.SERVICE_IP_FAMILIES: {
      const os = (bv ?? {}) as any;
      const ns = (av ?? {}) as any;
      if (os.type === 'ExternalName' || ns.type === 'ExternalName') return;
      const oIPs: string[] = os.clusterIPs ?? (os.clusterIP ? [os.clusterIP] : []);
      const nIPs: string[] = ns.clusterIPs ?? (ns.clusterIP ? [ns.clusterIP] : []);
      const oFam: string[] = os.ipFamilies ?? [];
      const nFam: string[] = ns.ipFamilies ?? [];
      for (const i of [0, 1]) {
        // Reported on the field the manifest changed: clusterIP when it sets that one.
        const field =
          i === 0 &&
          typeof p.after.spec?.clusterIP === 'string' &&
          p.after.spec.clusterIP !== '' &&
          p.after.spec.clusterIP !== oIPs[0]
            ? 'spec.clusterIP'
            : `spec.clusterIPs[${i}]`;
        if (oIPs[i] !== undefined && nIPs[i] !== undefined && oIPs[i] !== nIPs[i])
          emit(rule, field, field === 'spec.clusterIP' ? oIPs[0] : oIPs, field === 'spec.clusterIP' ? nIPs[0] : nIPs, {
            path: `spec.clusterIPs[${i}]`,
            value: nIPs,
          });
        if (oFam[i] !== undefined && nFam[i] !== undefined && oFam[i] !== nFam[i])
          emit(rule, `spec.ipFamilies[${i}]`, oFam[i], nFam[i], { path: `spec.ipFamilies[${i}]`, value: nFam[i] });
      }
      // A dual-stack downgrade releases the secondary IP or family only with SingleStack.
      const policy = ns.ipFamilyPolicy;
      if (oIPs.length === 2 && nIPs.length === 1 && policy !== 'SingleStack') {
        emit(
          {
            ...rule,
            message: `spec.ipFamilyPolicy: Invalid value: ${show(policy ?? null)}: must be 'SingleStack' to release the secondary cluster IP`,
          },
          'spec.ipFamilyPolicy',
          os.ipFamilyPolicy,
          policy,
        );
      } else if (oFam.length === 2 && nFam.length === 1 && policy !== 'SingleStack') {
        emit(
          {
            ...rule,
            message: `spec.ipFamilyPolicy: Invalid value: ${show(policy ?? null)}: must be 'SingleStack' to release the secondary IP family`,
          },
          'spec.ipFamilyPolicy',
          os.ipFamilyPolicy,
          policy,
        );
      }
      return;
    }
    case GuardCheck.SERVICE_LOAD_BALANCER_CLASS:
      if (b.spec?.type === 'LoadBalancer' && a.spec?.type === 'LoadBalancer' && !semanticEqual(bv, av))
        emit(rule, rule.path, bv, av, { value: av ?? null });
      return;
    default:
      return;
  }
}

/** A finding's object identity. */
const identity = (o: KubeObject) => ({
  object: describe(o),
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name,
});

/** The rules of Kueue's StatefulSet webhook ((*Webhook).ValidateUpdate, statefulset_webhook.go). */
function checkKueueRule(rule: FieldRule, p: Pair, emit: Emit): void {
  const { before, after, b, a } = p;
  const path = rule.reportPath ?? rule.path;
  const labelChange = () => {
    const old = rule.key ? labelOf(before, rule.key) : undefined;
    // What the apply stores: a live label the last apply did not set stays.
    const now = rule.key ? labelOf(p.a, rule.key) : undefined;
    return { old, now, changed: (old ?? '') !== (now ?? '') };
  };
  // Each branch mirrors the condition in Kueue's source; values print as Go prints them ("" for unset).
  const report = (old: string | undefined, now: string | undefined) =>
    emit(rule, path, old ?? null, now ?? null, { value: now ?? '', old: old ?? '' });
  switch (rule.check) {
    case GuardCheck.KUEUE_LABEL: {
      const { old, now, changed } = labelChange();
      if (changed) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_WEBHOOK_LABEL: {
      // The mutating webhook writes this label on create; apply keeps it unless the manifest sets it.
      let old = rule.key ? (get(b, rule.path) as Record<string, string> | undefined)?.[rule.key] : undefined;
      // A manifest baseline lacks what the mutating webhook wrote on create: the queue name.
      if (old === undefined && !isLiveExport(before) && rule.key === KUEUE_QUEUE_LABEL)
        old = labelOf(before, KUEUE_QUEUE_LABEL);
      const now = rule.key ? (get(a, rule.path) as Record<string, string> | undefined)?.[rule.key] : undefined;
      if (now !== undefined && (old ?? '') !== now) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_LABEL_WHILE_RUNNING: {
      const { old, now, changed } = labelChange();
      if (changed && (running(before) || now === undefined)) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_LABEL_ADDED_WHILE_RUNNING: {
      const { old, now, changed } = labelChange();
      if (changed && ((running(before) && old === undefined) || now === undefined)) report(old, now);
      return;
    }
    default:
      break;
  }
  // The rest only while the new object is managed by Kueue (isManagedByKueue / WorkloadShouldBeSuspended).
  if (!queued(after) && !rule.everyStatefulSet) return;
  const rb = Number(b.spec?.replicas ?? 1);
  const ra = Number(a.spec?.replicas ?? 1);
  switch (rule.check) {
    case GuardCheck.KUEUE_REPLICAS:
      if (rb !== ra) emit(rule, path, rb, ra);
      return;
    case GuardCheck.KUEUE_REPLICAS_TO_OR_FROM_ZERO:
      if (rb !== ra && rb !== 0 && ra !== 0) emit(rule, path, rb, ra);
      return;
    case GuardCheck.KUEUE_SCALE_UP_WHILE_SCALING_DOWN:
      // The update carries the stored status (the registry strategy copies it); only a live export knows it.
      if (rb === 0 && ra > 0 && isObject(before.status) && (Number(before.status.replicas) || 0) > 0)
        emit(rule, path, rb, ra);
      return;
    case GuardCheck.KUEUE_POD_SHAPE:
      podShape(rule, get(b, rule.path), get(a, rule.path), emit);
      return;
    case GuardCheck.KUEUE_POD_RESOURCES: {
      const old = (get(b, rule.path) as any)?.requests;
      const now = (get(a, rule.path) as any)?.requests;
      // SpecShape adds pod-level requests only when spec.resources is set, on either side.
      if ((get(b, rule.path) !== undefined || get(a, rule.path) !== undefined) && !semanticEqual(old, now, 'requests'))
        emit(rule, path, old, now);
      return;
    }
    default:
      return;
  }
}

function duplicateError(side: string, o: KubeObject, first: KubeObject): GuardInputError {
  const where = (x: KubeObject) => {
    const s = sourceOf(x);
    return s ? `${s.file}:${s.line}` : 'an input object';
  };
  return new GuardInputError(
    `${where(o)}: ${describe(o)} appears twice in ${side} (first at ${where(first)}); the API server keeps only one, so the comparison would be a guess`,
  );
}

/** Objects by metadata.name; throws when group, kind, namespace and name repeat on one side. */
function indexByName(objects: readonly KubeObject[], side: string): Map<string, KubeObject[]> {
  const index = new Map<string, KubeObject[]>();
  for (const o of objects) {
    if (
      !isObject(o) ||
      typeof o.apiVersion !== 'string' ||
      typeof o.kind !== 'string' ||
      !isObject(o.metadata) ||
      typeof o.metadata.name !== 'string'
    ) {
      throw new GuardInputError(
        `${side}: ${JSON.stringify(o)?.slice(0, 80)} is not a Kubernetes object (needs apiVersion, kind and metadata.name)`,
      );
    }
    const bucket = index.get(o.metadata.name);
    if (!bucket) {
      index.set(o.metadata.name, [o]);
      continue;
    }
    const first = bucket.find(
      c => c.kind === o.kind && c.metadata.namespace === o.metadata.namespace && groupOf(c) === groupOf(o),
    );
    if (first) throw duplicateError(side, o, first);
    bucket.push(o);
  }
  return index;
}

/** The comparison behind guard(). @internal */
export function runGuard(
  beforeObjects: readonly KubeObject[],
  afterObjects: readonly KubeObject[],
  options: GuardOptions = {},
): GuardResult {
  const serverVersion = options.serverVersion ?? MIN_SERVER_VERSION;
  const minor = minorOf(serverVersion);
  if (minor === undefined || minor < minorOf(MIN_SERVER_VERSION)!) {
    throw new GuardInputError(
      `server version ${JSON.stringify(serverVersion)} is not supported: give 1.NN, ${MIN_SERVER_VERSION} or newer`,
    );
  }
  const kueueVersion = options.kueueVersion ?? MIN_KUEUE_VERSION;
  const kueue = kueueVersionOf(kueueVersion);
  if (kueue === undefined || kueue[0] < kueueVersionOf(MIN_KUEUE_VERSION)![0]) {
    throw new GuardInputError(
      `Kueue version ${JSON.stringify(kueueVersion)} is not supported: give 0.NN or 0.NN.P, ${MIN_KUEUE_VERSION} (the first with a StatefulSet integration) or newer`,
    );
  }
  const rules = rulesFor(minor, kueue);
  const crdRules = celRules([...(options.customResourceDefinitions ?? []), ...beforeObjects, ...afterObjects]);

  // Index `before` by name (short keys, no string building per object), then match group and kind
  // in the small bucket; a manifest without a namespace matches any namespace.
  const index = indexByName(beforeObjects, '--before');
  indexByName(afterObjects, '--after');

  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const matched = new Set<KubeObject>();
  const created: KubeObject[] = [];
  for (const after of afterObjects) {
    const group = groupOf(after);
    const ns = after.metadata.namespace;
    let before: KubeObject | undefined;
    for (const c of index.get(after.metadata.name) ?? []) {
      if (c.kind !== after.kind || groupOf(c) !== group || matched.has(c)) continue;
      if (ns === undefined || c.metadata.namespace === undefined || c.metadata.namespace === ns) {
        before = c;
        break;
      }
    }
    if (!before) {
      created.push(after);
      continue;
    }
    matched.add(before);
    const kindKey = `${groupOf(after)}/${after.kind}`;
    let kindRules = [...(rules.get(kindKey) ?? []), ...celRulesFor(crdRules, kindKey, after)];
    // Kueue's webhook rules apply to a StatefulSet that has, or had, a queue name.
    // Some releases check replicas on every StatefulSet (everyStatefulSet).
    if (kindKey === 'apps/StatefulSet' && !queued(before) && !queued(after))
      kindRules = kindRules.filter(r => r.kueue === undefined || r.everyStatefulSet);
    if (after.kind === 'StatefulSet' && groupOf(after) === 'apps') onDeleteReplicas(before, after, warnings);
    if (kindRules.length === 0) continue;
    // Most objects of a large export are mutable Secrets and ConfigMaps: nothing to compare.
    if (
      (kindKey === '/ConfigMap' || (kindKey === '/Secret' && (before.type || 'Opaque') === (after.type || 'Opaque'))) &&
      before.immutable !== true
    )
      continue;
    const b = normalize(before);
    // A live baseline: compare with what the apply stores, not with the bare manifest (fields that
    // controllers and webhooks wrote, such as Kueue's nodeSelector on an admitted Job, stay).
    // A manifest baseline: the stored object is that manifest with the server's defaults, and the
    // manifest is its last-applied configuration; a default the next manifest omits stays.
    const merged = isLiveExport(before)
      ? applied(kindKey, before, after)
      : { ...(applyResult(b, after, before, builtIn(groupOf(after))) as KubeObject), metadata: after.metadata };
    const a = normalize(merged);
    carryForward(kindKey, before, b, a);
    const pair: Pair = { before, after, b, a, facts: statusFacts(before) };
    let remedy: string | undefined;
    // The object as the manifest names it; its namespace is the one it matched in, if it names none.
    const namespace = after.metadata.namespace ?? before.metadata.namespace;
    const emit: Emit = (rule, path, bv, av, vars = {}) => {
      remedy ??= remedyFor(before);
      errors.push({
        severity: 'error',
        code: 'immutable-field',
        ...identity(after),
        namespace,
        path,
        before: bv,
        after: av,
        message: fill(rule.message, { value: av ?? null, path, ...vars }),
        remedy,
        source: rule.source,
      });
    };
    for (const rule of kindRules) checkRule(rule, pair, emit);
    // ValidateStatefulSetSpec: the apply keeps the server-defaulted rollingUpdate of a StatefulSet
    // whose manifest moves to OnDelete (the field has no retainKeys), and the update is refused.
    if (
      kindKey === 'apps/StatefulSet' &&
      merged.spec?.updateStrategy?.type === 'OnDelete' &&
      merged.spec.updateStrategy.rollingUpdate != null
    ) {
      remedy ??= remedyFor(before);
      errors.push({
        severity: 'error',
        code: 'invalid-field',
        ...identity(after),
        namespace,
        path: 'spec.updateStrategy.rollingUpdate',
        before: before.spec?.updateStrategy ?? null,
        after: after.spec?.updateStrategy ?? null,
        message: `spec.updateStrategy.rollingUpdate: Invalid value: ${JSON.stringify(merged.spec.updateStrategy.rollingUpdate)}: only allowed for updateStrategy 'RollingUpdate' (kubectl apply keeps the defaulted rollingUpdate of the live object)`,
        remedy:
          'write `rollingUpdate: null` under `updateStrategy` in the manifest: kubectl apply then removes the defaulted field in the same update',
        source: 'ValidateStatefulSetSpec (pkg/apis/apps/validation/validation.go)',
      });
    }
  }

  removedWarnings(beforeObjects, afterObjects, matched, created, warnings);
  serverSideApplyWarnings(beforeObjects, matched, warnings);
  const findings = [...errors, ...warnings];
  const result = { findings, errors: errors.length, warnings: warnings.length } as GuardResult;
  // Read like any field, but kept out of the enumerable shape so that code written against the
  // first GuardResult ({ findings, errors, warnings }) keeps comparing equal. The object is the
  // guard's own, made just above.
  // eslint-disable-next-line no-restricted-syntax
  Object.defineProperties(result, {
    serverVersion: { value: `1.${minor}`, enumerable: false },
    kueueVersion: { value: kueueVersion.replace(/^v/, ''), enumerable: false },
    objects: { value: { before: beforeObjects.length, after: afterObjects.length }, enumerable: false },
  });
  return result;
}

function celRulesFor(crdRules: Map<string, Map<string, CelRule[]>>, kindKey: string, o: KubeObject): CelRule[] {
  const byVersion = crdRules.get(kindKey);
  if (!byVersion) return [];
  return byVersion.get(versionOf(o)) ?? [...byVersion.values()][0] ?? [];
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

const WORLD_SIZE_ENV = new Set(['WORLD_SIZE', 'NNODES', 'PET_NNODES']);

/**
 * An OnDelete StatefulSet that changes `replicas` starts new pods with the new world size while the
 * old pods keep the old one until deleted: a distributed job of mixed sizes that hangs or diverges.
 */
/**
 * The guard computes the new object as client-side `kubectl apply` would (three-way merge with the
 * last-applied annotation). An object last written by server-side apply (Flux, `kubectl apply
 * --server-side`) has no such annotation: its manager removes the fields it owned and the manifest
 * dropped, which the guard does not model. Say so rather than pass in silence.
 */
function serverSideApplyWarnings(before: readonly KubeObject[], matched: Set<KubeObject>, out: Finding[]): void {
  for (const o of before) {
    if (!matched.has(o) || lastAppliedOf(o) !== undefined) continue;
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

function onDeleteReplicas(before: KubeObject, after: KubeObject, out: Finding[]): void {
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

/**
 * Objects in `before` and not in `after` stay in the cluster: kubectl apply does not delete them.
 * A StatefulSet replaced by a new version (same app.kubernetes.io/name) keeps its pods, GPUs and
 * claims; the new one starts with new, empty claims unless they adopt the old volumes.
 */
function removedWarnings(
  before: readonly KubeObject[],
  after: readonly KubeObject[],
  matched: Set<KubeObject>,
  created: KubeObject[],
  out: Finding[],
): void {
  const isSts = (o: KubeObject) => groupOf(o) === 'apps' && o.kind === 'StatefulSet';
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
  const removed = before.filter(o => !matched.has(o) && !serverOwned(o) && !fromTemplate(o));
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
    const gpus = gpuCount(old);
    const running = gpus > 0 ? ` with its pods and their ${gpus} GPU(s)` : '';
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
        message: `StatefulSet ${replacement.metadata.name} replaces ${old.metadata.name}: kubectl apply does not delete ${old.metadata.name}, which keeps running${running} until it is deleted.${claimNote}${othersNote}`,
        remedy:
          caches || claimTemplateNames(old).length === 0 || adopted
            ? `once ${replacement.metadata.name} is ready, delete the old version: ${deleteOld}`
            : `to start from the old data, set adoptVolumes on the new version and follow the README's adoption runbook; otherwise delete the old version once the new one is ready (${deleteOld}) and the old claims when their data is no longer needed`,
        source: undefined,
      });
      continue;
    }
    const claimNote =
      claims.length === 0
        ? ''
        : claimsAreCaches(old)
          ? ` Its claims (${claims.join(', ')}) stay with it; deleting it deletes them (whenDeleted: Delete).`
          : ` Its claims (${claims.join(', ')}) stay with it, and stay with their data when it is deleted (Retain).`;
    out.push({
      severity: 'warning',
      code: 'object-removed',
      ...identity(old),
      path: '',
      before: old.metadata.name,
      after: undefined,
      message: `${describe(old)} is in the old set but not in the new one: kubectl apply does not delete it, so it ${STAYS[old.kind] ?? 'stays in the cluster'}${running}; a renamed object leaves the old one behind.${claimNote}`,
      remedy: `if it is meant to go, delete it (kubectl delete ${old.kind.toLowerCase()} ${old.metadata.name}${ns}) or apply with --prune; if it was renamed by mistake, restore its name`,
      source: undefined,
    });
  }
}

function gpuCount(o: KubeObject): number {
  const pod =
    o.kind === 'Pod'
      ? o.spec
      : o.kind === 'CronJob'
        ? o.spec?.jobTemplate?.spec?.template?.spec
        : o.spec?.template?.spec;
  if (!isObject(pod)) return 0;
  const perPod = arr(pod.containers).reduce(
    (n: number, c: any) => n + (Number(c?.resources?.limits?.['nvidia.com/gpu'] ?? 0) || 0),
    0,
  );
  const replicas =
    o.kind === 'StatefulSet' || o.kind === 'Deployment' || o.kind === 'ReplicaSet'
      ? typeof o.spec?.replicas === 'number'
        ? o.spec.replicas
        : 1
      : o.kind === 'Job'
        ? typeof o.spec?.parallelism === 'number'
          ? o.spec.parallelism
          : 1
        : 1;
  return perPod * replicas;
}
