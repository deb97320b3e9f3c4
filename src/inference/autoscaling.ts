import { ApiObject, Duration, Lazy } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { KIND, ManifestObject } from '../common/manifest-object';
import { podNamePattern } from '../common/names';
import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { BatchLimit } from './engine';

/**
 * The HPA's own ceiling on stabilization windows (kubernetes `pkg/apis/autoscaling/validation`:
 * `stabilizationWindowSeconds` at most 3600); KEDA passes its behavior to the same HPA.
 */
export const MAX_STABILIZATION_SECONDS = 3600;
/** The HPA's ceiling on a scaling policy's `periodSeconds` (same validation: at most 1800). */
export const MAX_POLICY_PERIOD_SECONDS = 1800;
/**
 * The share of the batch limit a replica runs at the target: a full batch then reads as 125 %, so
 * the fleet grows before requests queue, and a steady load settles with a fifth of headroom.
 */
export const TARGET_BATCH_SHARE = 0.8;
/** Added to the startup budget for the default scale-down window: a minute of steady load. */
const STABILIZATION_MARGIN_SECONDS = 60;
/** KEDA's fallback: failed queries in a row (polls of 30 s) before it holds the replicas. */
const FALLBACK_FAILURES = 3;
/**
 * KEDA's polling interval (ScaledObject `pollingInterval`, default 30 s, which the construct keeps): a queue that
 * builds up at zero replicas is seen at most this late.
 */
export const KEDA_POLLING_SECONDS = 30;

/**
 * Requests for the service waiting outside it, in an Endpoint Picker's flow-control queue: KEDA counts them with the
 * requests in flight (the picker holds back what the engines would otherwise queue), and they wake a service at zero.
 */
export interface QueuedRequests {
  /** A PromQL query of one value (no labels): the requests waiting. */
  readonly query: string;
}

/** Options of `Autoscaler.hpa()`. */
export interface HpaAutoscalerOptions {
  /**
   * The metric name the custom metrics API serves: the requests in flight (running + waiting) per
   * pod, which a Prometheus Adapter rule computes from the engine's two gauges (docs/serving.md).
   * @default - `<engine>_requests_in_flight`, e.g. `vllm_requests_in_flight`
   */
  readonly metricName?: string;
}

/** Options of `Autoscaler.keda()`. */
export interface KedaAutoscalerOptions {
  /** The Prometheus server KEDA queries, e.g. `http://prometheus-operated.monitoring.svc:9090`. */
  readonly serverAddress: string;
  /**
   * The PromQL query: the requests in flight (running + waiting) of this version's pods, summed;
   * KEDA divides it by all replicas, loading ones included, so a replica still loading counts as
   * capacity. An empty result is an error (`ignoreNullValues: false`), so the fallback holds the
   * replicas instead of reading no series as no load.
   * @default - `inFlightQuery()` of the engine's running and waiting gauges; needs the chart's namespace
   */
  readonly query?: string;
  /**
   * A `TriggerAuthentication` for a Prometheus that needs credentials.
   * @default - none
   */
  readonly authenticationRef?: string;
}

/** What scales a serving construct. */
export class Autoscaler {
  /**
   * An `autoscaling/v2` HorizontalPodAutoscaler on a Pods metric: needs a custom metrics adapter
   * (e.g. Prometheus Adapter) serving the engine's queue gauge per pod.
   */
  static hpa(o: HpaAutoscalerOptions = {}): Autoscaler {
    return new Autoscaler('hpa', o, undefined);
  }

  /** A KEDA `ScaledObject` with a Prometheus trigger: needs KEDA (v2.x) and a Prometheus. */
  static keda(o: KedaAutoscalerOptions): Autoscaler {
    return new Autoscaler('keda', undefined, o);
  }

  /** @internal Whether it can take a service to zero replicas and back (KEDA activates; an HPA stops at 1). */
  get _scalesToZero(): boolean {
    return this.kind === 'keda';
  }

  private constructor(
    private readonly kind: 'hpa' | 'keda',
    private readonly hpaOptions: HpaAutoscalerOptions | undefined,
    private readonly kedaOptions: KedaAutoscalerOptions | undefined,
  ) {}

  /** @internal */
  _create(scope: Construct, c: AutoscalerContext): { hpa?: ApiObject; scaledObject?: ApiObject } {
    const v = c.v;
    const behavior = scalingBehavior(c.capacitySeconds, c.scaleDownSeconds);
    if (this.kind === 'hpa') {
      v.knownProps('autoscaling.autoscaler', this.hpaOptions, ['metricName']);
      const metricName = this.hpaOptions?.metricName ?? `${c.engine}_requests_in_flight`;
      // The HPA's metric name is a path segment of the custom metrics API.
      if (
        typeof metricName !== 'string' ||
        metricName.length === 0 ||
        /[/%]/.test(metricName) ||
        metricName === '.' ||
        metricName === '..'
      ) {
        v.fail('autoscaling.autoscaler metricName', 'must be a metric name without "/" or "%"', metricName);
      }
      const hpa = new ManifestObject(scope, 'Autoscaler', KIND.HorizontalPodAutoscaler, {
        metadata: { name: c.name, labels: c.labels },
        spec: {
          scaleTargetRef: c.scaleTarget,
          minReplicas: c.minReplicas,
          maxReplicas: c.maxReplicas,
          metrics: [
            {
              type: 'Pods',
              pods: {
                metric: { name: metricName },
                target: { type: 'AverageValue', averageValue: k8s.Quantity.fromNumber(c.target) },
              },
            },
          ],
          behavior,
        },
      });
      return { hpa };
    }
    const o = this.kedaOptions as KedaAutoscalerOptions;
    v.plainObject('autoscaling.autoscaler', o);
    v.knownProps('autoscaling.autoscaler', o, ['serverAddress', 'query', 'authenticationRef']);
    if (typeof o.serverAddress !== 'string' || !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(o.serverAddress)) {
      v.fail('autoscaling.autoscaler serverAddress', 'must be an http(s) URL of a Prometheus server', o.serverAddress);
    }
    let query = o.query;
    if (query === undefined) {
      if (!c.namespace) {
        v.fail(
          'autoscaling.autoscaler query',
          'is needed when the chart has no namespace: the default query selects pods by namespace, or it would count pods of the same name in every namespace',
          undefined,
        );
      }
      query = inFlightQuery(
        c.metrics,
        c.namespace!,
        podNamePattern(c.scaleTarget.kind, c.scaleTarget.name),
        c.servingPodsPerReplica,
      );
    } else if (typeof query !== 'string' || query.trim() === '') {
      v.fail('autoscaling.autoscaler query', 'must be a non-empty PromQL query', query);
    }
    if (o.authenticationRef !== undefined)
      v.dnsSubdomain('autoscaling.autoscaler authenticationRef', o.authenticationRef);
    const toZero = c.minReplicas === 0;
    // One trigger: the HPA scales on the largest of its metrics, not their sum, so requests held in a picker's queue
    // must add to those in flight in one value. A queue with no series (none has waited yet) adds 0; in flight with
    // none is 0 only at zero replicas, where no pod has series.
    const demand = () => {
      const queued = c.queued?.() ?? [];
      if (queued.length === 0) return query;
      const inFlight = toZero ? `(${query} or vector(0))` : `(${query})`;
      return [inFlight, ...queued.map(q => `(${q.query} or vector(0))`)].join(' + ');
    };
    const trigger = () => ({
      type: 'prometheus',
      metadata: {
        serverAddress: o.serverAddress,
        query: demand(),
        threshold: String(c.target),
        ignoreNullValues: String(toZero),
      },
      ...(o.authenticationRef !== undefined ? { authenticationRef: { name: o.authenticationRef } } : {}),
    });
    const scaledObject = new ApiObject(scope, 'Autoscaler', {
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: { name: c.name, labels: c.labels },
      spec: {
        scaleTargetRef: c.scaleTarget,
        minReplicaCount: c.minReplicas,
        maxReplicaCount: c.maxReplicas,
        // keda-docs reference/scaledobject-spec.md: the wait after the last active poll before scaling to zero, the
        // scale-down window as from any other count; and after the object is made, so the first replica is not
        // stopped while it loads (initialCooldownPeriod defaults to 0).
        ...(toZero ? { cooldownPeriod: c.scaleDownSeconds, initialCooldownPeriod: c.scaleDownSeconds } : {}),
        // keda-docs reference/scaledobject-spec.md: after this many failed polls, hold the current count when
        // above minReplicas (currentReplicasIfHigher), instead of scaling on no data. At zero KEDA only logs the
        // failure (scale_scaledobjects.go): a service at zero stays there until its queries answer.
        fallback: {
          failureThreshold: FALLBACK_FAILURES,
          replicas: Math.max(1, c.minReplicas),
          behavior: 'currentReplicasIfHigher',
        },
        advanced: { horizontalPodAutoscalerConfig: { behavior } },
        // keda-docs scalers/prometheus.md: the default ignoreNullValues (true) reads an empty result as 0, so an
        // unscraped service would sit at minReplicas; false makes it an error, and the fallback holds. At zero
        // replicas no pod has series, and that empty result is the truth.
        triggers: Lazy.any({ produce: () => [trigger()] }),
      },
    });
    return { scaledObject };
  }
}

/**
 * The requests in flight (running + waiting) of the pods matching `podPattern`, summed: each pod
 * counted once (`max by (pod)`), however many scrape jobs collect it. A pod of several data-parallel
 * engines reads as its busiest, whose load the per-engine target is set against. Where `servingPods`
 * pods of each replica serve (a group's workers too), the sum is divided by them: one value per
 * replica, the average of its pods' busiest engines.
 */
export function inFlightQuery(
  metrics: InFlightMetrics,
  namespace: string,
  podPattern: string,
  servingPods = 1,
): string {
  const perPod = (metric: string) => `max by (pod) (${metric}{namespace="${namespace}",pod=~"${podPattern}"})`;
  const sum = `sum(${perPod(metrics.running)} + ${perPod(metrics.waiting)})`;
  return servingPods > 1 ? `${sum} / ${servingPods}` : sum;
}

/** The engine's gauges of running and waiting requests. */
export interface InFlightMetrics {
  readonly running: string;
  readonly waiting: string;
}

/**
 * The HPA behavior of a fleet whose new replicas take `capacitySeconds` to serve. Scale-up at most
 * doubles the replicas per period of twice that time (once to load, once for the new replicas to
 * absorb the queue that built up meanwhile), so a burst does not ask for every replica on the
 * strength of a queue the replicas already loading will serve. Where the HPA's 1800 s ceiling
 * clips the period (a capacity delay over 900 s) the share shrinks with it, but the doubling then
 * compounds and a burst can reach maxReplicas before settling. Scale-down waits a window longer
 * than a new replica takes to serve and removes one replica a minute (a StatefulSet removes its
 * highest ordinal, whatever its load). docs/serving.md shows the resulting traces.
 */
export function scalingBehavior(
  capacitySeconds: number,
  scaleDownSeconds: number,
): k8s.HorizontalPodAutoscalerBehaviorV2 {
  const period = Math.min(MAX_POLICY_PERIOD_SECONDS, 2 * capacitySeconds);
  const percent = Math.max(1, Math.round((100 * period) / (2 * capacitySeconds)));
  return {
    scaleUp: {
      stabilizationWindowSeconds: 0,
      selectPolicy: 'Max',
      policies: [{ type: 'Percent', value: percent, periodSeconds: Math.max(1, period) }],
    },
    scaleDown: {
      stabilizationWindowSeconds: scaleDownSeconds,
      policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }],
    },
  };
}

/** Scaling on the requests in flight: how many replicas, and when to add one. */
export interface AutoscalingOptions {
  /**
   * The fewest replicas. 0 scales to zero when idle: `Autoscaler.keda()` only, and an `InferenceGateway` with
   * `flowControl` must route to the service, so the first request waits in the picker's queue through the cold
   * start (a model load: minutes) and that queue wakes KEDA.
   * @default 1
   */
  readonly minReplicas?: number;
  /** The most replicas. */
  readonly maxReplicas: number;
  /**
   * Requests in flight (running + waiting, the engine's two gauges) per replica that the autoscaler
   * holds the fleet at. The queue alone reads zero whenever a batch has a free slot, so a fleet
   * scaled on it shrinks until requests wait, then overshoots.
   * @default - 80% of the engine's batch limit: the construct's batch prop (vLLM `maxNumSeqs`, TGI
   * `maxConcurrentRequests`, SGLang `maxRunningRequests`) or the engine's default (vLLM 256, TGI
   * 128; SGLang sizes it from the KV cache at start, so it needs one of the two props)
   */
  readonly targetRequestsInFlight?: number;
  /**
   * How long the load must stay low before a replica is removed. Must be longer than a new
   * replica takes to be capacity: the startup budget, plus the download at the assumed 25 MB/s
   * when the cache is per replica and `modelSize` is given; a shorter window would remove
   * replicas while their replacements still load. At most 3600 s (the HPA's limit).
   * @default - that time + 60 s
   */
  readonly scaleDownStabilization?: Duration;
  /**
   * What scales: an HPA on a custom metric, or KEDA.
   * @default Autoscaler.hpa()
   */
  readonly autoscaler?: Autoscaler;
}

/** @internal */
export interface AutoscalerContext {
  readonly v: Validator;
  /** The autoscaler's name. */
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly namespace: string | undefined;
  /**
   * The scaled workload: a Deployment or StatefulSet, or a LeaderWorkerSet, whose scale subresource
   * counts groups (its leaders are the pods the metric is read from).
   */
  readonly scaleTarget: { readonly apiVersion: string; readonly kind: string; readonly name: string };
  /** The pods of a replica that serve and report their load: a group's workers too, where they serve. */
  readonly servingPodsPerReplica?: number;
  /** The engine's name, for the default HPA metric name. */
  readonly engine: string;
  readonly metrics: InFlightMetrics;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly target: number;
  readonly capacitySeconds: number;
  readonly scaleDownSeconds: number;
  /** Requests queued for the service in pickers' flow control, known once a gateway routes to it (at synth). */
  readonly queued?: () => readonly QueuedRequests[];
}

/**
 * @internal The validated options, the scale-down window checked against the time until a new
 * replica is capacity (`capacity.what` says of what it is made, for messages).
 */
export function resolveAutoscaling(
  v: Validator,
  o: AutoscalingOptions,
  capacity: { seconds: number; what: string },
  batch: { limit: BatchLimit; value: unknown },
) {
  if (o && typeof o === 'object' && 'targetQueueDepth' in o) {
    v.fail(
      'autoscaling.targetQueueDepth',
      'is replaced by targetRequestsInFlight: the queue alone reads zero while batches have free slots, so the fleet shrinks until requests wait and then overshoots',
      (o as Record<string, unknown>).targetQueueDepth,
    );
  }
  v.knownProps('autoscaling', o, [
    'minReplicas',
    'maxReplicas',
    'targetRequestsInFlight',
    'scaleDownStabilization',
    'autoscaler',
  ]);
  const minReplicas = v.wholeNumber('autoscaling.minReplicas', o.minReplicas ?? 1, 0);
  const maxReplicas = v.wholeNumber('autoscaling.maxReplicas', o.maxReplicas, 1);
  if (maxReplicas < minReplicas)
    v.fail('autoscaling.maxReplicas', `must be at least minReplicas (${minReplicas})`, maxReplicas);
  const target = targetInFlight(v, o.targetRequestsInFlight, batch);
  if (capacity.seconds + 1 > MAX_STABILIZATION_SECONDS) {
    v.fail(
      'autoscaling',
      `needs a scale-down window longer than a new replica takes to be capacity, ${capacity.what} = ${capacity.seconds}s, but the HPA allows at most ${MAX_STABILIZATION_SECONDS}s: use ModelCache.sharedClaim() so new replicas skip the download, lower maxModelLoadTime/modelSize, or scale by hand`,
      `${capacity.seconds}s`,
    );
  }
  const scaleDownSeconds =
    o.scaleDownStabilization === undefined
      ? Math.min(MAX_STABILIZATION_SECONDS, capacity.seconds + STABILIZATION_MARGIN_SECONDS)
      : v.seconds('autoscaling.scaleDownStabilization', o.scaleDownStabilization, 0, MAX_STABILIZATION_SECONDS);
  if (scaleDownSeconds <= capacity.seconds) {
    v.fail(
      'autoscaling.scaleDownStabilization',
      `must be longer than a new replica takes to be capacity, ${capacity.what} = ${capacity.seconds}s, or replicas are removed while their replacements still load the model`,
      o.scaleDownStabilization,
    );
  }
  const autoscaler = o.autoscaler ?? Autoscaler.hpa();
  if (!(autoscaler instanceof Autoscaler))
    v.fail('autoscaling.autoscaler', 'must be made with Autoscaler.hpa() or Autoscaler.keda()', autoscaler);
  if (minReplicas === 0 && !autoscaler._scalesToZero)
    v.fail(
      'autoscaling.minReplicas',
      'must be at least 1 with Autoscaler.hpa(): an HPA never scales to zero (HPAScaleToZero is alpha, and needs an object or external metric); use Autoscaler.keda()',
      minReplicas,
    );
  return { minReplicas, maxReplicas, target, scaleDownSeconds, autoscaler };
}

/**
 * @internal The requests in flight per replica a replica runs at the target: a share of the batch
 * limit (the construct's prop, else the engine's default); undefined when the engine sizes it at start.
 */
export function derivedInFlightTarget(batch: { limit: BatchLimit; value: unknown }): number | undefined {
  const limit = typeof batch.value === 'number' ? batch.value : batch.limit.default;
  return limit === undefined ? undefined : Math.max(1, Math.floor(limit * TARGET_BATCH_SHARE));
}

/** The target per replica: given, or derived from the batch limit. */
function targetInFlight(v: Validator, given: number | undefined, batch: { limit: BatchLimit; value: unknown }): number {
  if (given !== undefined) return v.wholeNumber('autoscaling.targetRequestsInFlight', given, 1);
  const derived = derivedInFlightTarget(batch);
  if (derived === undefined) {
    v.fail(
      'autoscaling.targetRequestsInFlight',
      `is needed, or ${batch.limit.prop}: ${batch.limit.why}, so the construct cannot derive a target from it`,
      undefined,
    );
  }
  return derived;
}
