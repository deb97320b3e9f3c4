// The LeaderWorkerSet webhook's checks (GuardCheck.LWS_SUB_GROUP_SIZE, GuardCheck.LWS_SPEC), kept
// apart from checks.ts so that the LeaderWorkerSet facts stay in one place with lws-rules.ts.
// Read from kubernetes-sigs/lws v0.10.0 (2161f38) pkg/webhooks/leaderworkerset_webhook.go.
import type { KubeObject } from './normalize';
import { isObject } from './object';
import type { FieldRule } from './rules';

type Emit = (rule: FieldRule, path: string, before: unknown, after: unknown, vars?: Record<string, unknown>) => void;

/** The annotation that needs a subGroupPolicy (v1.SubGroupExclusiveKeyAnnotationKey). */
export const LWS_SUBGROUP_EXCLUSIVE_ANNOTATION = 'leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology';
/** The path the webhook names for subGroupSize (its own spelling: `SubGroupPolicy`, capital S). */
export const LWS_SUBGROUP_SIZE_PATH = 'spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize';
const RU = 'spec.rolloutStrategy.rollingUpdateConfiguration';
const MAX_INT32 = 2147483647;
const PERCENT = /^[0-9]+%$/;
const PERCENT_MSG =
  "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/**
 * What the webhook reads: the object after the CRD's structural defaults (replicas 1, size 1,
 * maxUnavailable 1, maxSurge 0, partition 0) and the mutating webhook `mleaderworkerset.kb.io`
 * ((*LeaderWorkerSetWebhook).Default: a missing rollingUpdateConfiguration becomes {1, 0, 0}).
 */
export function lwsView(o: KubeObject) {
  const t = o.spec?.leaderWorkerTemplate ?? {};
  const ru = isObject(o.spec?.rolloutStrategy?.rollingUpdateConfiguration)
    ? o.spec.rolloutStrategy.rollingUpdateConfiguration
    : {};
  const sg = isObject(t.subGroupPolicy) ? t.subGroupPolicy : undefined;
  return {
    replicas: typeof o.spec?.replicas === 'number' ? o.spec.replicas : 1,
    size: typeof t.size === 'number' ? t.size : 1,
    maxUnavailable: (ru.maxUnavailable ?? 1) as number | string,
    maxSurge: (ru.maxSurge ?? 0) as number | string,
    partition: typeof ru.partition === 'number' ? ru.partition : 0,
    subGroupSize: sg?.subGroupSize as number | undefined,
    subGroupType: (sg?.subGroupPolicyType ?? 'LeaderWorker') as string,
    hasSubGroupPolicy: sg !== undefined,
  };
}

/**
 * intstr.GetScaledValueFromIntOrPercent: an integer as is, `N%` of `total` rounded up or down;
 * undefined where it returns an error (a string without `%`, or not a number before it).
 */
export function scaled(v: unknown, total: number, roundUp: boolean): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string' || !v.endsWith('%')) return undefined;
  const n = /^[+-]?\d+$/.test(v.slice(0, -1)) ? Number(v.slice(0, -1)) : NaN;
  if (!Number.isFinite(n)) return undefined;
  const x = (n * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/**
 * (*LeaderWorkerSetWebhook).ValidateUpdate on `spec.leaderWorkerTemplate.subGroupPolicy`: its
 * subGroupSize may not change (apivalidation.ValidateImmutableField), and the policy may be neither
 * added nor removed. Its subGroupPolicyType is not compared (only the create checks bound it).
 */
export function checkSubGroupSize(rule: FieldRule, bv: unknown, av: unknown, emit: Emit): void {
  const old = isObject(bv) ? bv.subGroupSize : undefined;
  const now = isObject(av) ? av.subGroupSize : undefined;
  const path = 'spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize';
  if (isObject(bv) && isObject(av)) {
    // The webhook dereferences both sizes; a policy without one never passed the create checks.
    if (old !== undefined && now !== undefined && old !== now)
      emit(rule, path, old, now, { value: now, detail: 'field is immutable' });
  } else if (isObject(av)) {
    emit(rule, path, undefined, now, {
      value: now ?? null,
      detail: 'cannot enable subGroupSize after the lws is already created',
    });
  } else if (isObject(bv)) {
    emit(rule, path, old, undefined, { value: old ?? null, detail: 'cannot remove subGroupSize after enabled' });
  }
}

/**
 * generalValidate, which ValidateUpdate runs on the new object too: an update of a mutable field
 * (replicas, size) can make the new object fail a create check, e.g. a percentage maxUnavailable
 * that rounds down to 0 groups beside maxSurge 0, or a size that subGroupSize no longer divides.
 * Each failure is one finding, in the webhook's words; `path` is the field the webhook names.
 * Not modelled: the name check (a name cannot change on update) and spec.replicas' bounds (the
 * CRD schema refuses them first).
 */
export function checkLwsSpec(rule: FieldRule, b: KubeObject, a: KubeObject, emit: Emit): void {
  const n = lwsView(a);
  const o = lwsView(b);
  const fail = (path: string, before: unknown, after: unknown, value: unknown, detail: string, remedy?: string) =>
    emit(remedy ? { ...rule, remedy } : rule, path, before, after, { path, value, detail });
  if (n.size < 1)
    fail('spec.leaderWorkerTemplate.size', o.size, n.size, n.size, 'size must be equal or greater than 1');
  if (n.replicas * n.size > MAX_INT32)
    fail(
      'spec.replicas',
      o.replicas,
      n.replicas,
      n.replicas,
      `the product of replicas and worker replicas must not exceed ${MAX_INT32}`,
    );
  for (const [field, roundUp] of [
    ['maxUnavailable', false],
    ['maxSurge', true],
  ] as const) {
    const v = n[field];
    const path = `${RU}.${field}`;
    // ValidatePositiveIntOrPercent, then IsNotMoreThan100Percent.
    if (typeof v === 'string' && !PERCENT.test(v)) fail(path, o[field], v, v, PERCENT_MSG);
    if (typeof v === 'number' && v < 0) fail(path, o[field], v, v, 'must be greater than or equal to 0');
    if (typeof v === 'string' && PERCENT.test(v) && Number(v.slice(0, -1)) > 100)
      fail(path, o[field], v, v, 'must not be greater than 100%');
    if (scaled(v, n.replicas, roundUp) === undefined) fail(path, o[field], v, v, 'invalid value');
  }
  if (n.partition < 0)
    fail(`${RU}.partition`, o.partition, n.partition, n.partition, 'must be greater than or equal to 0');
  const unavailable = scaled(n.maxUnavailable, n.replicas, false) ?? 0;
  const surge = scaled(n.maxSurge, n.replicas, true) ?? 0;
  if (unavailable === 0 && surge === 0 && n.replicas !== 0)
    fail(
      `${RU}.maxUnavailable`,
      o.maxUnavailable,
      n.maxUnavailable,
      n.maxUnavailable,
      'must not be 0 when `maxSurge` is 0',
      `with ${n.replicas} group(s), maxUnavailable ${JSON.stringify(n.maxUnavailable)} comes to 0 groups (a percentage rounds down) and maxSurge ${JSON.stringify(n.maxSurge)} to 0: set maxUnavailable to a count of at least 1 (or a percentage that is at least one group), or maxSurge above 0`,
    );
  if (n.hasSubGroupPolicy) subGroupChecks(n, o, fail);
  else {
    const annotation = (x: KubeObject) => (x.metadata.annotations as Record<string, string> | undefined)?.[key];
    const key = LWS_SUBGROUP_EXCLUSIVE_ANNOTATION;
    const v = annotation(a);
    const path = `metadata.annotations.${LWS_SUBGROUP_EXCLUSIVE_ANNOTATION}`;
    if (v !== undefined)
      fail(path, annotation(b), v, v, 'cannot have subgroup-exclusive-topology without subGroupSize set');
  }
}

/** validateUpdateSubGroupPolicy: subGroupSize against size (which may change; subGroupSize may not). */
function subGroupChecks(
  n: ReturnType<typeof lwsView>,
  o: ReturnType<typeof lwsView>,
  fail: (path: string, before: unknown, after: unknown, value: unknown, detail: string, remedy?: string) => void,
): void {
  const g = n.subGroupSize;
  // The webhook dereferences subGroupSize and divides by it: a missing or zero one fails there first.
  if (typeof g !== 'number') return;
  const at = (detail: string) =>
    fail(
      LWS_SUBGROUP_SIZE_PATH,
      { size: o.size, subGroupSize: o.subGroupSize },
      { size: n.size, subGroupSize: g },
      g,
      detail,
      `subGroupSize ${g} cannot change after creation: choose a size where size or size - 1 is a multiple of ${g} (and, with LeaderExcluded, size - 1), or create the LeaderWorkerSet under a new name`,
    );
  if (g < 1) {
    at('subGroupSize must be equal or greater than 1');
    return;
  }
  if (n.size % g !== 0 && (n.size - 1) % g !== 0) at('size or size - 1 must be divisible by subGroupSize');
  if (n.size < g) at('subGroupSize cannot be larger than size');
  if (n.subGroupType === 'LeaderExcluded' && (n.size - 1) % g !== 0)
    at('size-1 must be divisible by subGroupSize when using LeaderExcluded');
}
