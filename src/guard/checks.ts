// How each kind of rule (GuardCheck) compares the old and the new object: one function per check.
import { schemaAt, withDefaults } from './crd';
import { semanticEqual, quantityNanos } from './equal';
import { checkReplicatedJobs, jobSetSuspended } from './jobset-check';
import { checkLwsSpec, checkSubGroupSize } from './lws-check';
import { arr, clone, isLiveExport, KubeObject, mirroredAlias, StatusFacts } from './normalize';
import { get, isObject, lastKey, shortShow, show } from './object';
import { FieldRule, GuardCheck, KueueRunning } from './rules';

export interface Pair {
  readonly before: KubeObject;
  readonly after: KubeObject;
  readonly b: KubeObject;
  readonly a: KubeObject;
  readonly facts: StatusFacts;
  /**
   * The structural schema (openAPIV3Schema) of a custom resource's version: from a CRD in the input
   * or the options, else the vendored CRD of a kind the guard has rules for (JobSet); undefined for
   * built-in kinds and other custom resources without one.
   */
  readonly schema?: unknown;
}

/** The changed children of two objects, as two partial objects for the report. */
function changedChildren(bv: any, av: any, except: readonly string[] = []): { keys: string[] } {
  const keys = [...new Set([...Object.keys(isObject(bv) ? bv : {}), ...Object.keys(isObject(av) ? av : {})])]
    .filter(k => !except.includes(k) && !mirroredAlias(k, bv, av))
    .filter(k => !semanticEqual(bv?.[k], av?.[k], k))
    .sort();
  return { keys };
}

const pick = (o: any, keys: string[]) =>
  isObject(o) ? Object.fromEntries(keys.filter(k => o[k] !== undefined).map(k => [k, o[k]])) : undefined;

/**
 * A rule's message with its values: the server quotes a whole value (a JobSet's replicatedJobs, scripts
 * and all), the report only its start and length, as the changed fields are listed above it.
 */
export function fill(message: string, vars: Record<string, unknown>): string {
  return message.replace(/\{(value|old|detail|path)\}/g, (_m, k) =>
    k === 'value' || k === 'old' ? shortShow(vars[k]) : String(vars[k] ?? ''),
  );
}

import { KUEUE_ELASTIC_JOB_ANNOTATION, KUEUE_QUEUE_LABEL } from '../common/kueue';

export { KUEUE_QUEUE_LABEL };
const labelOf = (o: KubeObject, key: string): string | undefined => o.metadata.labels?.[key] || undefined;
const annotationOf = (o: KubeObject, key: string): string | undefined =>
  (o.metadata.annotations as Record<string, string> | undefined)?.[key];
/** strconv.ParseBool: true for 1, t, T, TRUE, true, True; anything else (or an error) is false. */
const goBool = (v: string | undefined) => v !== undefined && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v);
/** Kueue's webhooks check an object it manages: one with a queue name (jobframework.QueueNameForObject). */
export const queued = (o: KubeObject) => labelOf(o, KUEUE_QUEUE_LABEL) !== undefined;
/**
 * Kueue's isSuspended: no pod Ready (status.readyReplicas == 0). A manifest baseline has no status:
 * a queued object is taken to be running, so a change the webhook may refuse is not missed. A live
 * object whose controller has not written a status yet has no Ready pod.
 */
const running = (o: KubeObject) =>
  isObject(o.status) || isLiveExport(o) ? (Number(o.status?.readyReplicas) || 0) > 0 : true;

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

export type Emit = (
  rule: FieldRule,
  path: string,
  before: unknown,
  after: unknown,
  vars?: Record<string, unknown>,
) => void;

type CheckFn = (c: CheckContext) => void;

/** What a check reads: the rule, the pair, the old and new values at its path and where to report. */
interface CheckContext {
  readonly rule: FieldRule;
  readonly p: Pair;
  readonly b: KubeObject;
  readonly a: KubeObject;
  readonly facts: StatusFacts;
  readonly bv: unknown;
  readonly av: unknown;
  readonly key: string;
  readonly emit: Emit;
}

const immutable: CheckFn = ({ rule, p, b, a, bv: oldValue, av: newValue, key, emit }) => {
  let bv = oldValue;
  let av = newValue;
  // A rule read from a CRD carries its schema; the guard's own (JobSet's) read it from the object's CRD.
  const schema = (rule as { schema?: unknown }).schema ?? schemaAt(p.schema, rule.path);
  if (rule.check === GuardCheck.CEL_SELF_EQUALS_OLD_SELF && schema !== undefined) {
    // The server defaults both objects from the structural schema before the transition rule runs.
    const parent = rule.path.includes('.') ? rule.path.slice(0, rule.path.lastIndexOf('.')) : '';
    bv = withDefaults(bv, schema, parent === '' || get(b, parent) !== undefined);
    av = withDefaults(av, schema, parent === '' || get(a, parent) !== undefined);
  }
  if (rule.check === GuardCheck.CEL_SELF_EQUALS_OLD_SELF && (bv === undefined || av === undefined)) return;
  if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
  return;
};
const storageNotBelow: CheckFn = ({ rule, facts, bv, av, emit }) => {
  const nb = quantityNanos(bv);
  const na = quantityNanos(av);
  if (nb === undefined || na === undefined || na >= nb) return;
  // Without a status (a manifest baseline), the capacity is taken to be the old request.
  const capacity = quantityNanos(facts.pvcCapacity) ?? nb;
  if (na > capacity) return;
  emit(rule, rule.path, bv, av);
  return;
};

/** How each check compares the old and the new value at the rule's path (GuardCheck -> its comparison). */
const CHECKS: Partial<Record<GuardCheck, CheckFn>> = {
  [GuardCheck.IMMUTABLE]: immutable,
  [GuardCheck.CEL_SELF_EQUALS_OLD_SELF]: immutable,
  [GuardCheck.IMMUTABLE_ONCE_SET]: ({ rule, bv, av, key, emit }) => {
    if (bv === undefined || bv === '') return;
    if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
    return;
  },
  [GuardCheck.IMMUTABLE_EXCEPT]: ({ rule, bv, av, emit }) => {
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
  },
  [GuardCheck.POD_GATED_NODE_SELECTOR]: ({ rule, b, bv, av, emit }) => {
    if (arr(b.spec?.schedulingGates).length === 0) return;
    const olds = isObject(bv) ? bv : {};
    const news: Record<string, unknown> = isObject(av) ? av : {};
    if (Object.keys(olds).some(k => news[k] !== olds[k])) emit(rule, rule.path, bv, av, { value: av ?? null });
    return;
  },
  [GuardCheck.POD_GATED_NODE_AFFINITY]: ({ rule, b, bv, av, emit }) => {
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
  },
  [GuardCheck.IMMUTABLE_WHEN_ESTABLISHED]: ({ rule, p, facts, bv, av, key, emit }) => {
    // apiextensions.IsCRDConditionTrue(old, Established); no status: taken to be established.
    if (isObject(p.before.status) && !facts.crdEstablished) return;
    if (!semanticEqual(bv, av, key)) emit(rule, rule.reportPath ?? rule.path, bv, av);
    return;
  },
  [GuardCheck.NOT_UNSET]: ({ rule, bv, av, emit }) => {
    if (bv !== undefined && av === undefined) emit(rule, rule.reportPath ?? rule.path, bv, av);
    return;
  },
  [GuardCheck.NOT_EMPTIED]: ({ rule, bv, av, emit }) => {
    if (bv !== undefined && bv !== '' && av === '') emit(rule, rule.reportPath ?? rule.path, bv, av);
    return;
  },
  [GuardCheck.IMMUTABLE_WHEN_FLAGGED]: ({ rule, b, a, bv, av, key, emit }) => {
    if (b.immutable !== true) return;
    if (rule.path === 'immutable' ? a.immutable !== true : !semanticEqual(bv, av, key)) emit(rule, rule.path, bv, av);
    return;
  },
  [GuardCheck.POD_SPEC]: ({ rule, bv, av, emit }) => {
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
  },
  [GuardCheck.POD_TOLERATIONS]: ({ rule, bv, av, emit }) => {
    const olds: any[] = Array.isArray(bv) ? bv : [];
    const news: any[] = Array.isArray(av) ? av : [];
    const strip = (t: any) => ({ ...t, tolerationSeconds: undefined });
    const missing = olds.filter(o => !news.some(n => semanticEqual(strip(o), strip(n))));
    if (missing.length > 0) emit(rule, rule.path, bv, av);
    return;
  },
  [GuardCheck.POD_ACTIVE_DEADLINE]: ({ rule, bv, av, emit }) => {
    if (typeof av === 'number' && typeof bv === 'number' && av > bv)
      emit(rule, rule.path, bv, av, { value: av, detail: 'must be less than or equal to previous value' });
    else if (av === undefined && bv !== undefined)
      emit(rule, rule.path, bv, av, { value: null, detail: 'must not update from a positive integer to nil value' });
    return;
  },
  [GuardCheck.POD_SCHEDULING_GATES]: ({ rule, bv, av, emit }) => {
    const old = new Set(((bv as any[]) ?? []).map(g => g?.name));
    const added = ((av as any[]) ?? []).find(g => !old.has(g?.name));
    if (added) emit(rule, rule.path, bv, av, { detail: added.name });
    return;
  },
  [GuardCheck.PVC_SPEC]: ({ rule, p, facts, bv, av, emit }) => {
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
  },
  [GuardCheck.PVC_STORAGE_ABOVE_CAPACITY]: storageNotBelow,
  [GuardCheck.JOB_TEMPLATE]: ({ rule, b, facts, bv, av, emit }) => {
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
  },
  [GuardCheck.JOBSET_REPLICATED_JOBS]: ({ rule, p, bv, av, emit }) => checkReplicatedJobs(rule, p, bv, av, emit),
  [GuardCheck.LWS_SUB_GROUP_SIZE]: ({ rule, bv, av, emit }) => checkSubGroupSize(rule, bv, av, emit),
  [GuardCheck.LWS_SPEC]: ({ rule, b, a, emit }) => checkLwsSpec(rule, b, a, emit),
  [GuardCheck.JOB_COMPLETIONS]: ({ rule, a, bv, av, emit }) => {
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
  },
  [GuardCheck.SERVICE_IP_FAMILIES]: ({ rule, p, bv, av, emit }) => {
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
  },
  [GuardCheck.SERVICE_HEADLESS_TYPE]: ({ rule, b, a, bv, av, emit }) => {
    const type = a.spec?.type;
    if ((type !== 'NodePort' && type !== 'LoadBalancer') || !Array.isArray(av) || av[0] !== 'None') return;
    emit(rule, 'spec.type', b.spec?.type ?? 'ClusterIP', type, { detail: type, value: 'None', old: bv });
  },
  [GuardCheck.CRD_STORED_VERSIONS]: ({ rule, p, av, emit }) => {
    const old = p.before;
    const stored: unknown[] = isObject(old.status)
      ? arr(old.status.storedVersions)
      : arr(old.spec?.versions)
          .filter((v: any) => v?.storage === true)
          .map((v: any) => v.name);
    const names = new Set(arr(av).map((v: any) => v?.name));
    stored.forEach((v, i) => {
      if (typeof v === 'string' && !names.has(v)) emit(rule, 'spec.versions', v, [...names], { detail: i, value: v });
    });
  },
  [GuardCheck.SERVICE_LOAD_BALANCER_CLASS]: ({ rule, b, a, bv, av, emit }) => {
    if (b.spec?.type === 'LoadBalancer' && a.spec?.type === 'LoadBalancer' && !semanticEqual(bv, av))
      emit(rule, rule.path, bv, av, { value: av ?? null });
    return;
  },
};

export function checkRule(rule: FieldRule, p: Pair, emit: Emit): void {
  if (rule.kueue) return checkKueueRule(rule, p, emit);
  const bv = get(p.b, rule.path);
  const av = get(p.a, rule.path);
  CHECKS[rule.check]?.({ rule, p, b: p.b, a: p.a, facts: p.facts, bv, av, key: lastKey(rule.path), emit });
}

/**
 * Kueue's notion of running for the rule (KueueRunning): a Ready pod on the old object, or the new
 * object not suspended (read as the JobSet rules read `suspend`: jobSetSuspended).
 */
function kueueRunning(rule: FieldRule, p: Pair): boolean {
  if (rule.kueueRunning === KueueRunning.NOT_SUSPENDED) return !jobSetSuspended(p.before, p.after, p.b, p.a).new;
  return running(p.before);
}

const PRIORITY_ADDED = 'WorkloadPriorityClass cannot be added to a non-suspended workload';
const PRIORITY_REMOVED = 'WorkloadPriorityClass cannot be removed from a workload';

/** The rules of Kueue's webhooks (kueue-rules.ts), each branch mirroring the condition in Kueue's source. */
function checkKueueRule(rule: FieldRule, p: Pair, emit: Emit): void {
  const { before, after, b, a } = p;
  const path = rule.reportPath ?? rule.path;
  const labelChange = () => {
    const old = rule.key ? labelOf(before, rule.key) : undefined;
    // What the apply stores: a live label the last apply did not set stays.
    const now = rule.key ? labelOf(p.a, rule.key) : undefined;
    return { old, now, changed: (old ?? '') !== (now ?? '') };
  };
  // Values print as Go prints them ("" for unset).
  const report = (old: string | undefined, now: string | undefined, detail?: string) =>
    emit(rule, path, old ?? null, now ?? null, { value: now ?? '', old: old ?? '', detail });
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
      if (changed && (kueueRunning(rule, p) || now === undefined)) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_LABEL_ADDED_WHILE_RUNNING: {
      const { old, now, changed } = labelChange();
      if (changed && now === undefined) report(old, now, PRIORITY_REMOVED);
      else if (changed && old === undefined && kueueRunning(rule, p)) report(old, now, PRIORITY_ADDED);
      return;
    }
    case GuardCheck.KUEUE_LABEL_UNLESS_SUSPENDED: {
      const { old, now, changed } = labelChange();
      if (changed && kueueRunning(rule, p)) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_TEMPLATE_QUEUE_LABEL: {
      // The old template's label as stored; a manifest baseline lacks what the webhook wrote: the queue name.
      const templateLabel = (o: KubeObject) => (get(o, rule.path) as Record<string, string> | undefined)?.[rule.key!];
      const old = templateLabel(b) ?? (isLiveExport(before) ? undefined : labelOf(before, KUEUE_QUEUE_LABEL));
      // (*Webhook).Default runs first on update: a queued StatefulSet's template gets its queue name.
      const now = labelOf(a, KUEUE_QUEUE_LABEL) ?? templateLabel(a);
      if (now !== undefined && (old ?? '') !== now) report(old, now);
      return;
    }
    case GuardCheck.KUEUE_ELASTIC_JOB: {
      const elastic = (o: KubeObject) => annotationOf(o, rule.key!) === 'true';
      if (elastic(before) !== elastic(a)) emit(rule, path, elastic(before), elastic(a), { value: elastic(a) });
      return;
    }
    case GuardCheck.KUEUE_ADMISSION_GATES: {
      const old = annotationOf(before, rule.key!) ?? '';
      const now = annotationOf(a, rule.key!) ?? '';
      const gates = (v: string) => (v.trim() === '' ? [] : v.split(',').map(g => g.trim()));
      if (old === '' && now !== '') report(old, now, 'cannot add admission gate after creation');
      else if (old !== '' && gates(now).some(g => !gates(old).includes(g)))
        report(old, now, 'can only remove gates, not add new ones');
      return;
    }
    case GuardCheck.KUEUE_PREBUILT_WORKLOAD: {
      // PrebuiltWorkloadNameFor: the annotation of the key, when set, else the label.
      const name = (o: KubeObject) => annotationOf(o, rule.key!) || labelOf(o, rule.key!) || '';
      if (!kueueRunning(rule, p) || annotationOf(before, KUEUE_ELASTIC_JOB_ANNOTATION) === 'true') return;
      const [old, now] = [name(before), name(a)];
      const at = annotationOf(a, rule.key!) ? `metadata.annotations[${rule.key}]` : `metadata.labels[${rule.key}]`;
      if (old !== now) emit(rule, at, old, now, { value: now, old });
      return;
    }
    case GuardCheck.KUEUE_PARTIAL_ADMISSION: {
      // The old Job's own spec.suspend (not Kueue's stopping state); parallelism unset is 1.
      if (annotationOf(before, rule.key!) === undefined || jobSetSuspended(before, after, b, a).old) return;
      const [pb, pa] = [Number(b.spec?.parallelism ?? 1), Number(a.spec?.parallelism ?? 1)];
      if (pb !== pa) emit(rule, path, pb, pa);
      return;
    }
    case GuardCheck.KUEUE_SYNC_COMPLETIONS: {
      const suspended = jobSetSuspended(before, after, b, a);
      const sync = (o: KubeObject) => goBool(annotationOf(o, rule.key!));
      if (suspended.old === suspended.new && !suspended.new && sync(before) !== sync(a))
        emit(rule, path, sync(before), sync(a));
      return;
    }
    case GuardCheck.KUEUE_LABEL_UNLESS_BOTH_SUSPENDED: {
      const { old, now, changed } = labelChange();
      const suspended = jobSetSuspended(before, after, b, a);
      if (changed && !(suspended.old && suspended.new)) report(old, now);
      return;
    }
    default:
      break;
  }
  // The rest only while the new object is managed by Kueue (isManagedByKueue / WorkloadShouldBeSuspended).
  if (!queued(after) && !rule.everyObject) return;
  // A pod template's spec is compared only where both objects have the template (validateImmutablePodTemplateSpec).
  const holder = rule.path.slice(0, rule.path.lastIndexOf('.'));
  const bothHold = get(b, holder) !== undefined && get(a, holder) !== undefined;
  // A count the webhooks read with its API default of 1 when absent (replicas, parallelism, group size).
  const counts = (at: string) => [Number(get(b, at) ?? 1), Number(get(a, at) ?? 1)];
  switch (rule.check) {
    case GuardCheck.KUEUE_COUNT: {
      const [rb, ra] = counts(rule.path);
      if (rb !== ra) emit(rule, path, rb, ra);
      return;
    }
    case GuardCheck.KUEUE_REPLICAS_TO_OR_FROM_ZERO: {
      const [rb, ra] = counts('spec.replicas');
      if (rb !== ra && rb !== 0 && ra !== 0) emit(rule, path, rb, ra);
      return;
    }
    case GuardCheck.KUEUE_SCALE_UP_WHILE_SCALING_DOWN: {
      const [rb, ra] = counts('spec.replicas');
      // The update carries the stored status (the registry strategy copies it); only a live export knows it.
      if (rb === 0 && ra > 0 && isObject(before.status) && (Number(before.status.replicas) || 0) > 0)
        emit(rule, path, rb, ra);
      return;
    }
    case GuardCheck.KUEUE_PRESENCE: {
      const bv = get(b, rule.path);
      const av = get(a, rule.path);
      if ((bv === undefined) !== (av === undefined)) emit(rule, path, bv ?? null, av ?? null);
      return;
    }
    case GuardCheck.KUEUE_POD_SHAPE:
      if (bothHold) podShape(rule, get(b, rule.path), get(a, rule.path), emit);
      return;
    case GuardCheck.KUEUE_POD_RESOURCES: {
      if (!bothHold) return;
      const old = (get(b, rule.path) as any)?.requests;
      const now = (get(a, rule.path) as any)?.requests;
      // SpecShape adds pod-level requests only when spec.resources is set: set on one side only
      // (even empty) is a change (a nil interface against a nil ResourceList), else the requests compare.
      const [hadIt, hasIt] = [get(b, rule.path) !== undefined, get(a, rule.path) !== undefined];
      if (hadIt !== hasIt || (hadIt && !semanticEqual(old, now, 'requests'))) emit(rule, path, old, now);
      return;
    }
    default:
      return;
  }
}
