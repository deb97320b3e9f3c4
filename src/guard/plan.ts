// What an upgrade will do before it runs: which workloads restart and why, how many pods, how
// long and with how many GPUs, which objects a pruning sync deletes, and the guard's refusals.
// Read from YAML only (the live export or a previous synth, and the new synth): the times are the
// budgets the manifests carry (terminationGracePeriodSeconds, the startup probe), not guesses.
import type { GuardOptions, GuardResult } from './diff';
import { guardResult, runGuard, storedPair } from './engine';
import { semanticEqual } from './equal';
import { arr, KubeObject, mirroredAlias } from './normalize';
import { lwsRestartInputs, lwsRollout, lwsStartup } from './lws-plan';
import { describe, isObject } from './object';
import { appName, isCacheFill, isContentNamed, isGpuClaimTemplate } from './remedy';
import { movedSuccessor } from './moved-kinds';
import { minorOf } from './rules';
import { claimFate, serverOwned } from './warnings';
import {
  autoscaled,
  drainOf,
  kindKey,
  LWS,
  num,
  podSpecs,
  Range,
  rangeText,
  replicasOf,
  STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON,
  startupOf,
  templateOf,
  unitGpus,
  claimCounts,
  type ClaimCounts,
  unitOf,
} from './workload';

export type { Range } from './workload';
export { rangeText } from './workload';

/** How a workload's pods are replaced (its update strategy). */
export type RolloutMode =
  | 'rolling' // replaced in steps, `podsPerStep` at a time
  | 'on-delete' // nothing restarts until the pods are deleted
  | 'recreate' // every pod stops, then the new ones start
  | 'next-run' // a CronJob: the next Job it creates uses the new template
  | 'in-place' // a bare Pod: the kubelet restarts the changed containers
  | 'new' // created by this change
  | 'none'; // nothing restarts

/** One workload in the plan. */
export interface WorkloadPlan {
  readonly object: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** The pod template (or a field that restarts pods) changed. */
  readonly restarts: boolean;
  readonly mode: RolloutMode;
  /** The changed pod template fields, as paths under the template (`containers[vllm].image`). */
  readonly changes: readonly string[];
  /** Pods (or, for a LeaderWorkerSet, groups) that are replaced; a range under an autoscaler. */
  readonly pods: Range;
  /** What `pods` counts: `pod` or `group` (a LeaderWorkerSet's leader and workers). */
  readonly unit: 'pod' | 'group';
  /** Replaced together in one step. */
  readonly perStep: number;
  /** terminationGracePeriodSeconds: the longest a pod takes to stop. */
  readonly drainSeconds: number;
  /** The startup probe's budget (initialDelaySeconds + periodSeconds × failureThreshold); 0 without one. */
  readonly startupSeconds: number;
  /** The rollout's longest duration, steps × (drain + startup) as the strategy sequences them. */
  readonly seconds: Range;
  readonly gpusPerPod: number;
  /** GPUs the workload holds before and after. */
  readonly gpus: Range;
  /** The most GPUs it holds during the rollout (surge pods beside the old ones). */
  readonly gpusDuringRollout: Range;
  /** One sentence a reviewer reads: how the rollout goes. */
  readonly note: string;
}

/** An object a pruning sync deletes (in `before`, not in `after`). */
export interface PrunedObject {
  readonly object: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly gpus: Range;
  /** The workload in `after` that takes over its pods (same app.kubernetes.io/name), if any. */
  readonly replacedBy?: string;
  /** Seconds without serving pods when it is deleted before its replacement is Ready; undefined if none. */
  readonly outageSeconds?: number;
  readonly note: string;
}

export interface PlanResult {
  readonly workloads: readonly WorkloadPlan[];
  readonly pruned: readonly PrunedObject[];
  readonly guard: GuardResult;
  /** Workloads that restart (mode other than none). */
  readonly restarting: number;
}

/** An `IntOrString` of a strategy (a count or a percentage of `total`), rounded as the controller rounds. */
function intOrPercent(v: unknown, total: number, d: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  const m = typeof v === 'string' ? /^(\d+)%$/.exec(v) : null;
  if (!m) return d;
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

const isScript = (v: unknown) => typeof v === 'string' && v.includes('\n');
/** Lines removed plus lines added (as multisets: a moved line counts twice, an inserted one once). */
const lineDiff = (a: string, b: string) => {
  const count = new Map<string, number>();
  for (const l of a.split('\n')) count.set(l, (count.get(l) ?? 0) + 1);
  for (const l of b.split('\n')) count.set(l, (count.get(l) ?? 0) - 1);
  let n = 0;
  for (const v of count.values()) n += Math.abs(v);
  return n;
};

/** A list item's name: its `name`, or its `metadata.name` (claim templates). @internal */
export const itemName = (i: unknown): string | undefined =>
  isObject(i)
    ? typeof i.name === 'string'
      ? i.name
      : isObject(i.metadata) && typeof i.metadata.name === 'string'
        ? i.metadata.name
        : undefined
    : undefined;

/**
 * The changed leaves between two templates: list items with a name are named (`containers[vllm]`),
 * a multi-line string is an embedded script, and each changed field is one entry (the mirrored
 * `serviceAccount` alias is not one).
 */
export function changedPaths(b: unknown, a: unknown, at: string, out: string[], key = ''): void {
  if (semanticEqual(b, a, key)) return;
  if (isObject(b) && isObject(a)) {
    for (const k of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort())
      if (!mirroredAlias(k, b, a)) changedPaths(b[k], a[k], at ? `${at}.${k}` : k, out, k);
    return;
  }
  if (Array.isArray(b) && Array.isArray(a)) {
    const named = [...b, ...a].every(i => itemName(i) !== undefined);
    if (named) {
      const names = [...new Set([...b, ...a].map(i => itemName(i)!))];
      for (const n of names)
        changedPaths(
          b.find(i => itemName(i) === n),
          a.find(i => itemName(i) === n),
          `${at}[${n}]`,
          out,
        );
      return;
    }
    if (b.length === a.length) {
      b.forEach((x, i) => changedPaths(x, a[i], `${at}[${i}]`, out));
      return;
    }
  }
  if (isScript(b) && isScript(a))
    out.push(`${at} (embedded script: ${lineDiff(b as string, a as string)} line(s) differ)`);
  else if (isScript(b) || isScript(a)) out.push(`${at} (embedded script)`);
  else out.push(at);
}

/** The startup budget of one replica: its longest startup probe; a LeaderWorkerSet group's as lwsStartup reads it. */
const startupFor = (o: KubeObject) => (kindKey(o) === LWS ? lwsStartup(o) : Math.max(...podSpecs(o).map(startupOf)));
const idOf = (o: KubeObject) => `${kindKey(o)}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const minutes = (s: number) => (s < 90 ? `${s} s` : `${Math.round(s / 6) / 10} min`);

/** The plan of one workload that is in both sets. */
function planWorkload(
  before: KubeObject,
  after: KubeObject,
  scalers: Map<string, Range>,
  minor: number | undefined,
  pair: { b: KubeObject; a: KubeObject } | undefined,
  claims: ClaimCounts,
): WorkloadPlan | undefined {
  const k = kindKey(after);
  if (templateOf(after) === undefined) return undefined;
  const { b, a } = pair ?? storedPair(before, after, minor);
  const changes: string[] = [];
  // A LeaderWorkerSet's revision is its leaderWorkerTemplate and networkConfig, as stored; the
  // annotations its controller copies onto the leader pods restart the groups too.
  if (k === LWS) changedPaths(lwsRestartInputs(b), lwsRestartInputs(a), '', changes);
  else changedPaths(templateOf(b), templateOf(a), '', changes);
  const drain = drainOf(a);
  const startup = startupFor(a);
  const replicas = replicasOf(after, before, scalers);
  const unit = unitOf(a);
  const perUnitGpus = unitGpus(a, claims);
  const gpus = { min: replicas.min * perUnitGpus, max: replicas.max * perUnitGpus };
  const base = {
    object: describe(after),
    kind: after.kind,
    namespace: after.metadata.namespace ?? before.metadata.namespace,
    name: after.metadata.name,
    changes,
    unit,
    drainSeconds: drain,
    startupSeconds: startup,
    gpusPerPod: perUnitGpus,
    gpus,
  } as const;
  const none = (note: string, mode: RolloutMode = 'none'): WorkloadPlan => ({
    ...base,
    restarts: false,
    mode,
    pods: { min: 0, max: 0 },
    perStep: 0,
    seconds: { min: 0, max: 0 },
    gpusDuringRollout: gpus,
    note,
  });
  if (changes.length === 0) return none('the pod template is unchanged: no pod restarts');
  const step = drain + startup;
  const budget = `${minutes(drain)} drain + ${startup ? `${minutes(startup)} startup budget` : 'no startup probe (startup not counted)'}`;
  // Steps of `perStep` over `pods`, each a drain then a startup; `surge` extra units beside the old ones.
  const rolling = (
    pods: Range,
    perStep: number,
    surge: number,
    how: string,
    steps = (n: number) => Math.ceil(n / Math.max(perStep, 1)),
  ): WorkloadPlan => {
    const seconds = { min: steps(pods.min) * step, max: steps(pods.max) * step };
    return {
      ...base,
      restarts: true,
      mode: 'rolling',
      pods,
      perStep,
      seconds,
      gpusDuringRollout: { min: gpus.min + surge * perUnitGpus, max: gpus.max + surge * perUnitGpus },
      note: `${how}: ${rangeText(pods)} ${unit}(s), ${perStep} at a time, each ${budget}: up to ${rangeText(seconds, minutes)}`,
    };
  };
  switch (k) {
    case 'apps/StatefulSet': {
      const strategy = a.spec?.updateStrategy ?? {};
      if (strategy.type === 'OnDelete')
        return {
          ...none(
            `updateStrategy OnDelete: no pod restarts until its pods are deleted; deleting all ${rangeText(replicas)} together restarts them at once in ${minutes(step)} (${budget})`,
            'on-delete',
          ),
          restarts: true,
          pods: replicas,
          perStep: replicas.max,
          seconds: { min: step, max: step },
        };
      // Pods with an ordinal at or above the partition are updated (StatefulSetUpdateStrategy).
      const partition = num(strategy.rollingUpdate?.partition, 0);
      const pods = { min: Math.max(replicas.min - partition, 0), max: Math.max(replicas.max - partition, 0) };
      // maxUnavailable (the MaxUnavailableStatefulSet feature, on by default from 1.35) replaces several
      // at once; otherwise one ordinal at a time, highest first. A pod is deleted before its
      // replacement starts: no surge.
      const maxUnavailable = intOrPercent(strategy.rollingUpdate?.maxUnavailable, replicas.max, 1, false) || 1;
      const gate = (minor ?? 0) >= STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON;
      const parallel = a.spec?.podManagementPolicy === 'Parallel' && maxUnavailable > 1 && gate;
      return rolling(
        pods,
        parallel ? maxUnavailable : 1,
        0,
        parallel
          ? `RollingUpdate, maxUnavailable ${maxUnavailable}`
          : `RollingUpdate, one ordinal at a time from the highest (each waits for the previous to be Ready)${maxUnavailable > 1 && !gate ? `: maxUnavailable ${maxUnavailable} needs the MaxUnavailableStatefulSet feature gate before 1.${STATEFULSET_MAX_UNAVAILABLE_DEFAULT_ON}` : ''}`,
      );
    }
    case 'apps/Deployment': {
      const strategy = a.spec?.strategy ?? {};
      if (strategy.type === 'Recreate') {
        return {
          ...base,
          restarts: true,
          mode: 'recreate',
          pods: replicas,
          perStep: replicas.max,
          seconds: { min: step, max: step },
          gpusDuringRollout: gpus,
          note: `Recreate: all ${rangeText(replicas)} pod(s) stop, then the new ones start: no pod serves for ${minutes(step)} (${budget})`,
        };
      }
      // RollingUpdate defaults 25%/25% (maxSurge rounds up, maxUnavailable down; deployment/util).
      const surge = intOrPercent(strategy.rollingUpdate?.maxSurge, replicas.max, 0, true) || 0;
      const unavailable = intOrPercent(strategy.rollingUpdate?.maxUnavailable, replicas.max, 0, false) || 0;
      const surgeN = strategy.rollingUpdate?.maxSurge === undefined ? Math.ceil(replicas.max / 4) : surge;
      const unavailN =
        strategy.rollingUpdate?.maxUnavailable === undefined ? Math.floor(replicas.max / 4) : unavailable;
      // maxSurge bounds the pods that are not terminating (deployment/util FilterActivePods): an old pod
      // in its grace period still holds its GPUs while its replacement starts. When the drains outlast
      // the startups, every old pod can be terminating beside a whole new set: twice the replicas.
      // Observed on the real Deployment controller (test/cluster/seed-001.test.ts).
      const planned = rolling(
        replicas,
        Math.max(surgeN + unavailN, 1),
        surgeN,
        `RollingUpdate, maxSurge ${surgeN}, maxUnavailable ${unavailN}`,
      );
      return {
        ...planned,
        gpusDuringRollout: {
          min: planned.gpusDuringRollout.min,
          max: Math.max(planned.gpusDuringRollout.max, 2 * gpus.max),
        },
        note: `${planned.note}; old pods hold their GPUs until their drain ends, beside the new ones`,
      };
    }
    case 'apps/DaemonSet': {
      const strategy = a.spec?.updateStrategy ?? {};
      if (strategy.type === 'OnDelete')
        return {
          ...none('updateStrategy OnDelete: no pod restarts until its pods are deleted', 'on-delete'),
          restarts: true,
        };
      return rolling(replicas, 1, 0, 'RollingUpdate, one node at a time (one pod per matching node; counted as 1)');
    }
    case LWS: {
      const r = lwsRollout(b, a, replicas, minor, claims);
      return { ...rolling(r.groups, r.perStep, r.surge, r.how, r.steps), gpusDuringRollout: r.gpusDuringRollout };
    }
    case 'batch/CronJob':
      return none('a CronJob: running Jobs keep their template; the next Job it creates uses the new one', 'next-run');
    case 'batch/Job':
      return none('a Job template cannot change once created (see the guard findings)');
    case '/Pod':
      return {
        ...none('a bare Pod: the kubelet restarts the containers whose image changed, in place', 'in-place'),
        restarts: true,
        pods: { min: 1, max: 1 },
        perStep: 1,
        seconds: { min: startup, max: startup },
      };
    default:
      return rolling(replicas, 1, 0, 'replaced');
  }
}

/**
 * The plan of an update from `before` (a live export or the last applied manifests) to `after`.
 * Throws GuardInputError as the guard does.
 */
export function plan(
  before: readonly KubeObject[],
  after: readonly KubeObject[],
  options: GuardOptions = {},
): PlanResult {
  // A workload is planned as soon as the guard has compared it, from the pair the guard made: the
  // normalized copies are then dropped at once rather than held for every object until the end.
  const early = new Map<KubeObject, { old: KubeObject; plan: WorkloadPlan | undefined }>();
  let scalersOf: Map<string, Range> | undefined;
  // Claim templates are content-named, so one map of both sides never mixes two templates.
  const claims = claimCounts([...before, ...after]);
  const guard = runGuard(before, after, options, (old, o, pair, minor) => {
    scalersOf ??= autoscaled([...before, ...after]);
    if (templateOf(o) !== undefined) early.set(o, { old, plan: planWorkload(old, o, scalersOf, minor, pair, claims) });
  });
  const scalers = scalersOf ?? autoscaled([...before, ...after]);
  const afterScalers = autoscaled(after);
  const byId = new Map<string, KubeObject>();
  const byName = new Map<string, KubeObject[]>();
  for (const o of before) {
    byId.set(idOf(o), o);
    const l = byName.get(o.metadata.name);
    if (l) l.push(o);
    else byName.set(o.metadata.name, [o]);
  }
  // A manifest without a namespace matches the object of any namespace (as the guard matches).
  const find = (o: KubeObject) =>
    byId.get(idOf(o)) ??
    (o.metadata.namespace === undefined
      ? byName.get(o.metadata.name)?.find(c => kindKey(c) === kindKey(o))
      : byName.get(o.metadata.name)?.find(c => kindKey(c) === kindKey(o) && c.metadata.namespace === undefined));
  const matched = new Set<KubeObject>();
  const workloads: WorkloadPlan[] = [];
  const created: KubeObject[] = [];
  // Content-named objects the change creates: what replaces a pruned one (contentNamedNote).
  const createdContent: KubeObject[] = [];
  // Every object the change creates: the successor of one whose kind moved group (movedSuccessor).
  const createdAny: KubeObject[] = [];
  for (const o of after) {
    const old = find(o);
    if (old) matched.add(old);
    if (!old) createdAny.push(o);
    if (!old && isContentNamed(o)) createdContent.push(o);
    if (templateOf(o) === undefined) continue;
    if (!old) {
      created.push(o);
      const replicas = replicasOf(o, undefined, afterScalers);
      const per = unitGpus(o, claims);
      const startup = startupFor(o);
      const gpus = { min: replicas.min * per, max: replicas.max * per };
      workloads.push({
        object: describe(o),
        kind: o.kind,
        namespace: o.metadata.namespace,
        name: o.metadata.name,
        restarts: false,
        mode: 'new',
        changes: [],
        pods: replicas,
        unit: unitOf(o),
        perStep: replicas.max,
        drainSeconds: drainOf(o),
        startupSeconds: startup,
        seconds: { min: startup, max: startup },
        gpusPerPod: per,
        gpus: { min: 0, max: 0 },
        gpusDuringRollout: gpus,
        note: `new: ${rangeText(replicas)} ${unitOf(o)}(s) start, each within ${startup ? minutes(startup) : 'an unknown time (no startup probe)'}, needing ${rangeText(gpus)} GPU(s) more`,
      });
      continue;
    }
    // The plan matches by identity and the guard by name; where they chose different objects, the
    // guard's pair is made again (storedPair reads only its arguments) for the plan's match.
    const e = early.get(o);
    const minor = minorOf(guard.serverVersion);
    const p =
      e?.old === old
        ? e.plan
        : planWorkload(old, o, scalers, minor, e ? storedPair(e.old, o, minor) : undefined, claims);
    if (p) workloads.push(p);
  }
  // Claims a StatefulSet made from its templates (`<template>-<sts>-<ordinal>`) are in no manifest.
  const templateClaims = new Set<string>();
  for (const o of [...before, ...after])
    if (kindKey(o) === 'apps/StatefulSet')
      for (const t of arr(o.spec?.volumeClaimTemplates))
        templateClaims.add(`${o.metadata.namespace ?? ''}/${t?.metadata?.name}-${o.metadata.name}`);
  const fromTemplate = (o: KubeObject) =>
    o.kind === 'PersistentVolumeClaim' &&
    templateClaims.has(`${o.metadata.namespace ?? ''}/${o.metadata.name.replace(/-\d+$/, '')}`);
  const pruned: PrunedObject[] = [];
  for (const o of before) {
    if (matched.has(o) || serverOwned(o) || fromTemplate(o)) continue;
    const specs = templateOf(o) === undefined ? [] : podSpecs(o);
    const replicas = replicasOf(o, o, scalers);
    const per = unitGpus(o, claims);
    const gpus = { min: replicas.min * per, max: replicas.max * per };
    const app = appName(o);
    const replacement =
      specs.length > 0 && app
        ? created.find(c => appName(c) === app && (c.metadata.namespace ?? '') === (o.metadata.namespace ?? ''))
        : undefined;
    const startup = replacement ? startupFor(replacement) : undefined;
    const successor = movedSuccessor(o, createdAny);
    const note = isContentNamed(o)
      ? contentNamedNote(o, createdContent)
      : successor
        ? `moved to ${successor.apiVersion} (the guard's kind-moved warning): install that group's CRD before this sync; a pruning sync deletes the old object, which nothing reads once the new CRD is installed`
        : replacement
          ? `replaced by ${describe(replacement)}: a pruning sync deletes it while the new pods start, so nothing serves for up to ${startup ? minutes(startup) : 'an unknown time (no startup probe on the new pods)'} (the new pods' startup budget) unless the old one is kept until the new one is Ready (Argo CD PruneLast=true, or prune in a later sync)`
          : specs.length > 0
            ? `a pruning sync deletes it and its pods${per ? `, freeing ${rangeText(gpus)} GPU(s)` : ''}; kubectl apply without --prune leaves it running`
            : 'a pruning sync deletes it; kubectl apply without --prune leaves it';
    const fate = claimFate(o).trim();
    pruned.push({
      object: describe(o),
      kind: o.kind,
      namespace: o.metadata.namespace,
      name: o.metadata.name,
      gpus,
      replacedBy: replacement ? describe(replacement) : undefined,
      outageSeconds: replacement ? startup : undefined,
      note: fate ? `${note}. ${fate}` : note,
    });
  }
  // Each object once: a pruned object's removal warning says what its PRUNED entry says.
  const listed = new Set(pruned.map(o => o.object));
  const shown = guard.findings.filter(f => !(f.code === 'object-removed' && listed.has(f.object)));
  return {
    workloads,
    pruned,
    guard: shown.length === guard.findings.length ? guard : guardResult(shown, guard),
    restarting: workloads.filter(w => w.restarts).length,
  };
}

/**
 * A content-named object's name ends in `-<hash>` (`<model>-fill-<hash>`, `<workload>-<script>-<hash>`): the
 * one that replaces it has the same kind, namespace and name before the hash.
 */
function contentNamedNote(old: KubeObject, created: readonly KubeObject[]): string {
  const stem = (o: KubeObject) => o.metadata.name.replace(/-[a-z0-9]+$/, '');
  const next = created.find(
    c =>
      c.kind === old.kind &&
      isContentNamed(c) &&
      (c.metadata.namespace ?? '') === (old.metadata.namespace ?? '') &&
      stem(c) === stem(old),
  );
  if (isCacheFill(old))
    return next
      ? `a fill Job, named by a hash of what it fills: ${describe(next)} replaces it (for the same revision it finds the cache complete and exits at once); a pruning sync deletes this one, and the filled cache stays on its claim`
      : 'a fill Job no service waits for any more: a pruning sync deletes it; the filled cache stays on its claim';
  if (isGpuClaimTemplate(old))
    return next
      ? `a GPU claim template, named by a hash of its request (its spec is immutable): ${describe(next)} holds the new request, which the changed pods claim from; a pruning sync deletes this one, and running pods keep the claims made from it`
      : 'a GPU claim template no pod template names any more: a pruning sync deletes it, and running pods keep the claims made from it';
  return next
    ? `a runtime script, named by a hash of its content: ${describe(next)} holds the new version, which the changed pods mount; a pruning sync deletes this one, and pods still running keep their mounted copy`
    : 'a runtime script no pod template mounts any more: a pruning sync deletes it, and pods still running keep their mounted copy';
}
