/**
 * A model of the horizontal pod autoscaler driving a serving fleet, to check the library's autoscaling
 * policy against load traces. The controller half follows kubernetes `pkg/controller/podautoscaler`:
 * every sync (15 s, `--horizontal-pod-autoscaler-sync-period`) a recommendation from the metric
 * (replica_calculator.go: `ceil(usage / target)` for an external AverageValue metric, the form KEDA
 * serves, with the 10 % tolerance `--horizontal-pod-autoscaler-tolerance` around the current count),
 * then the behavior: the stabilization windows (horizontal.go `stabilizeRecommendationWithBehaviors`:
 * the lowest recommendation of the scale-up window, the highest of the scale-down window) and the
 * scale policies (`calculateScaleUpLimitWithScalingRules` / `...ScaleDownLimit...`: relative to the
 * replicas at the start of each policy's period, the most permissive policy with `selectPolicy: Max`),
 * clamped to min/max.
 *
 * The fleet half is a fluid model of an LLM server: each replica runs up to `batchLimit` requests at
 * once, each request takes `serviceSeconds`, requests beyond the batch wait, and a waiting request
 * is abandoned by its client after `clientTimeoutSeconds`. A new replica serves `capacitySeconds`
 * after the autoscaler asked for it (download and model load); a removed replica stops at once.
 */

export interface ScalingPolicy {
  readonly type: 'Pods' | 'Percent';
  readonly value: number;
  readonly periodSeconds: number;
}

export interface ScalingRules {
  readonly stabilizationWindowSeconds?: number;
  readonly selectPolicy?: 'Max' | 'Min' | 'Disabled';
  readonly policies?: readonly ScalingPolicy[];
}

export interface Behavior {
  readonly scaleUp?: ScalingRules;
  readonly scaleDown?: ScalingRules;
}

/** kubernetes' defaults for a behavior field left out (pkg/apis/autoscaling/v2/defaults.go). */
const DEFAULT_SCALE_UP: Required<ScalingRules> = {
  stabilizationWindowSeconds: 0,
  selectPolicy: 'Max',
  policies: [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ],
};
const DEFAULT_SCALE_DOWN: Required<ScalingRules> = {
  stabilizationWindowSeconds: 300,
  selectPolicy: 'Max',
  policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }],
};

export const SYNC_SECONDS = 15;
export const TOLERANCE = 0.1;

export interface Simulation {
  readonly behavior: Behavior;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  /** The autoscaler's target per replica, in the signal's unit. */
  readonly target: number;
  /** What the metric counts: requests in flight (running + waiting), or waiting only. */
  readonly signal: 'inFlight' | 'waiting';
  readonly capacitySeconds: number;
  readonly batchLimit: number;
  readonly serviceSeconds: number;
  readonly clientTimeoutSeconds: number;
  /** The offered load at time t, in replicas' worth (1 = what one replica's full batch serves). */
  readonly load: (t: number) => number;
  readonly durationSeconds: number;
  readonly initialReplicas: number;
  /**
   * How the HPA reads the metric: `external` (KEDA's trigger, `AverageValue`: the sum over the
   * spec's replicas, loading ones included) or `pods` (an HPA Pods metric: the average over pods
   * that report it, replica_calculator.go `calcPlainMetricReplicas`).
   * @default 'external'
   */
  readonly metric?: 'external' | 'pods';
  /**
   * The first part of `capacitySeconds` a new pod spends Pending (an init container downloading):
   * the Pods metric leaves such pods out (`groupPods` ignores Pending pods); after it, the pod runs
   * but reports nothing until it serves (a missing metric: 0 on a scale-up, the target on a scale-down).
   * @default 0
   */
  readonly pendingSeconds?: number;
}

export interface Sample {
  readonly t: number;
  /** Replicas asked for (the scale target's spec). */
  readonly replicas: number;
  /** Replicas serving. */
  readonly ready: number;
  readonly inFlight: number;
  readonly waiting: number;
}

export interface Outcome {
  readonly samples: Sample[];
  /** Requests abandoned by their clients after waiting too long. */
  readonly abandoned: number;
  /** Requests offered. */
  readonly offered: number;
}

export function simulate(s: Simulation): Outcome {
  const up = { ...DEFAULT_SCALE_UP, ...s.behavior.scaleUp };
  const down = { ...DEFAULT_SCALE_DOWN, ...s.behavior.scaleDown };
  // Times at which each replica became (or becomes) capacity, newest last: scale-down removes the newest.
  const readyAt: number[] = Array.from({ length: s.initialReplicas }, () => 0);
  const recommendations: { t: number; r: number }[] = [];
  const events: { t: number; delta: number }[] = [];
  let running = 0;
  // Waiting requests by arrival second, so the oldest are served first and abandoned on time.
  let waiting: { t: number; n: number }[] = [];
  let abandoned = 0;
  let offered = 0;
  const samples: Sample[] = [];
  for (let t = 0; t < s.durationSeconds; t++) {
    const ready = readyAt.filter(r => r <= t).length;
    running = Math.min(running, ready * s.batchLimit);
    running -= running / s.serviceSeconds;
    const arrivals = (s.load(t) * s.batchLimit) / s.serviceSeconds;
    offered += arrivals;
    waiting.push({ t, n: arrivals });
    waiting = waiting.filter(w => {
      if (t - w.t < s.clientTimeoutSeconds) return true;
      abandoned += w.n;
      return false;
    });
    let free = ready * s.batchLimit - running;
    for (const w of waiting) {
      const admitted = Math.min(free, w.n);
      w.n -= admitted;
      running += admitted;
      free -= admitted;
      if (free <= 0) break;
    }
    waiting = waiting.filter(w => w.n > 1e-9);
    const queued = waiting.reduce((a, w) => a + w.n, 0);
    if (t % SYNC_SECONDS === 0) {
      const current = readyAt.length;
      const usage = s.signal === 'inFlight' ? running + queued : queued;
      const raw =
        s.metric === 'pods'
          ? podsRecommendation(
              s,
              current,
              usage,
              ready,
              readyAt.filter(r => r > t && r - (s.pendingSeconds ?? 0) <= t).length,
            )
          : externalRecommendation(s, current, usage);
      recommendations.push({ t, r: raw });
      const desired = normalize(t, current, raw, recommendations, events, up, down, s);
      if (desired > current) for (let i = current; i < desired; i++) readyAt.push(t + s.capacitySeconds);
      if (desired < current) readyAt.splice(desired);
      if (desired !== current) events.push({ t, delta: desired - current });
    }
    if (t % 60 === 0) {
      samples.push({
        t,
        replicas: readyAt.length,
        ready: readyAt.filter(r => r <= t).length,
        inFlight: running + queued,
        waiting: queued,
      });
    }
  }
  return { samples, abandoned, offered };
}

/** replica_calculator.go `GetExternalPerPodMetricReplicas`: the sum over the target's replicas. */
function externalRecommendation(s: Simulation, current: number, usage: number): number {
  const ratio = usage / (s.target * current);
  return Math.abs(ratio - 1) <= TOLERANCE ? current : Math.ceil(usage / s.target);
}

/**
 * replica_calculator.go `calcPlainMetricReplicas`: the ready pods report an even share of the load;
 * pods running but not serving report nothing (0 on a scale-up, the target on a scale-down);
 * Pending pods are left out.
 */
function podsRecommendation(s: Simulation, current: number, usage: number, ready: number, missing: number): number {
  if (ready === 0) return current; // no metrics: the HPA keeps the count
  const ratio = usage / (s.target * ready);
  const within = (r: number) => Math.abs(r - 1) <= TOLERANCE;
  if (missing === 0) return within(ratio) ? current : Math.ceil(ratio * ready);
  const filled = usage + (ratio < 1 ? missing * s.target : 0);
  const n = ready + missing;
  const newRatio = filled / (s.target * n);
  if (within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1)) return current;
  const next = Math.ceil(newRatio * n);
  if ((newRatio < 1 && next > current) || (newRatio > 1 && next < current)) return current;
  return next;
}

function normalize(
  t: number,
  current: number,
  raw: number,
  recommendations: { t: number; r: number }[],
  events: { t: number; delta: number }[],
  up: Required<ScalingRules>,
  down: Required<ScalingRules>,
  s: Simulation,
): number {
  let upRec = raw;
  let downRec = raw;
  for (const rec of recommendations) {
    if (rec.t > t - up.stabilizationWindowSeconds) upRec = Math.min(upRec, rec.r);
    if (rec.t > t - down.stabilizationWindowSeconds) downRec = Math.max(downRec, rec.r);
  }
  let desired = Math.min(Math.max(current, upRec), downRec);
  if (desired > current) {
    const limits = up.policies.map(p => {
      const added = events.filter(e => e.t > t - p.periodSeconds && e.delta > 0).reduce((a, e) => a + e.delta, 0);
      const start = current - added;
      return p.type === 'Pods' ? start + p.value : Math.ceil(start * (1 + p.value / 100));
    });
    const limit = up.selectPolicy === 'Min' ? Math.min(...limits) : Math.max(...limits);
    desired = Math.min(desired, limit, s.maxReplicas);
  } else if (desired < current) {
    const limits = down.policies.map(p => {
      const removed = events.filter(e => e.t > t - p.periodSeconds && e.delta < 0).reduce((a, e) => a - e.delta, 0);
      const start = current + removed;
      return p.type === 'Pods' ? start - p.value : Math.ceil(start * (1 - p.value / 100));
    });
    const limit = down.selectPolicy === 'Min' ? Math.max(...limits) : Math.min(...limits);
    desired = Math.max(desired, limit, s.minReplicas);
  }
  return Math.max(s.minReplicas, Math.min(s.maxReplicas, desired));
}

/** How many times the replica count changed direction (up then down, or down then up). */
export function reversals(samples: Sample[]): number {
  let last = 0;
  let n = 0;
  for (let i = 1; i < samples.length; i++) {
    const d = Math.sign(samples[i].replicas - samples[i - 1].replicas);
    if (d !== 0) {
      if (last !== 0 && d !== last) n++;
      last = d;
    }
  }
  return n;
}
