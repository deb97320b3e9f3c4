import { ApiObject, Duration } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { KIND, ManifestObject } from '../common/manifest-object';
import { Construct } from 'constructs';
import { Validator } from '../validation/validate';
import { kedaPodTotalQuery } from './autoscaling-query';

/**
 * The HPA's own ceiling on stabilization windows (kubernetes `pkg/apis/autoscaling/validation`:
 * `stabilizationWindowSeconds` at most 3600); KEDA passes its behavior to the same HPA.
 */
export const MAX_STABILIZATION_SECONDS = 3600;
/** Requests waiting per replica before another replica is added. */
export const DEFAULT_TARGET_QUEUE_DEPTH = 5;
/** Added to the startup budget for the default scale-down window: a minute of steady load. */
const STABILIZATION_MARGIN_SECONDS = 60;

/** Options of `Autoscaler.hpa()`. */
export interface HpaAutoscalerOptions {
  /**
   * The metric name the custom metrics API serves. Metric names with `:` (vLLM, SGLang) are best
   * renamed by the Prometheus Adapter (`name: { matches: "^vllm:(.*)$", as: "vllm_${1}" }`).
   * @default - the engine's queue metric with `:` replaced by `_`, e.g. `vllm_num_requests_waiting`
   */
  readonly metricName?: string;
}

/** Options of `Autoscaler.keda()`. */
export interface KedaAutoscalerOptions {
  /** The Prometheus server KEDA queries, e.g. `http://prometheus-operated.monitoring.svc:9090`. */
  readonly serverAddress: string;
  /**
   * The PromQL query: the total queue of this version's pods (KEDA divides it by the replicas).
   * @default - `sum(max by (pod) (<queue metric>{namespace="<ns>",pod=~"<statefulset>-[0-9]+"}))`, each pod
   * counted once however many jobs scrape it; needs the chart's namespace
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

  private constructor(
    private readonly kind: 'hpa' | 'keda',
    private readonly hpaOptions: HpaAutoscalerOptions | undefined,
    private readonly kedaOptions: KedaAutoscalerOptions | undefined,
  ) {}

  /** @internal */
  _create(scope: Construct, c: AutoscalerContext): { hpa?: ApiObject; scaledObject?: ApiObject } {
    const v = c.v;
    const behavior: k8s.HorizontalPodAutoscalerBehaviorV2 = {
      // One replica per minute down: a StatefulSet removes its highest ordinal, whatever its load.
      scaleDown: {
        stabilizationWindowSeconds: c.scaleDownSeconds,
        policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }],
      },
    };
    if (this.kind === 'hpa') {
      v.knownProps('autoscaling.autoscaler', this.hpaOptions, ['metricName']);
      const metricName = this.hpaOptions?.metricName ?? c.queueMetric.replace(/:/g, '_');
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
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: c.name },
          minReplicas: c.minReplicas,
          maxReplicas: c.maxReplicas,
          metrics: [
            {
              type: 'Pods',
              pods: {
                metric: { name: metricName },
                target: { type: 'AverageValue', averageValue: k8s.Quantity.fromNumber(c.targetQueueDepth) },
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
      query = kedaPodTotalQuery([c.queueMetric], c.namespace!, c.name);
    } else if (typeof query !== 'string' || query.trim() === '') {
      v.fail('autoscaling.autoscaler query', 'must be a non-empty PromQL query', query);
    }
    if (o.authenticationRef !== undefined)
      v.dnsSubdomain('autoscaling.autoscaler authenticationRef', o.authenticationRef);
    const scaledObject = new ApiObject(scope, 'Autoscaler', {
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: { name: c.name, labels: c.labels },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: c.name },
        minReplicaCount: c.minReplicas,
        maxReplicaCount: c.maxReplicas,
        advanced: { horizontalPodAutoscalerConfig: { behavior } },
        triggers: [
          {
            type: 'prometheus',
            metadata: { serverAddress: o.serverAddress, query, threshold: String(c.targetQueueDepth) },
            ...(o.authenticationRef !== undefined ? { authenticationRef: { name: o.authenticationRef } } : {}),
          },
        ],
      },
    });
    return { scaledObject };
  }
}

/** Scaling on the engine's queue: how many replicas, and when to add one. */
export interface AutoscalingOptions {
  /**
   * The fewest replicas. At least 1: scaling to zero would make the next request wait for a
   * model load (minutes).
   * @default 1
   */
  readonly minReplicas?: number;
  /** The most replicas. */
  readonly maxReplicas: number;
  /**
   * Requests waiting per replica (the engine's queue gauge) above which a replica is added.
   * @default 5 - a few requests queued behind a full batch; lower scales earlier
   */
  readonly targetQueueDepth?: number;
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
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly namespace: string | undefined;
  readonly queueMetric: string;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly targetQueueDepth: number;
  readonly scaleDownSeconds: number;
}

/**
 * @internal The validated options, the scale-down window checked against the time until a new
 * replica is capacity (`capacity.what` says of what it is made, for messages).
 */
export function resolveAutoscaling(v: Validator, o: AutoscalingOptions, capacity: { seconds: number; what: string }) {
  v.knownProps('autoscaling', o, [
    'minReplicas',
    'maxReplicas',
    'targetQueueDepth',
    'scaleDownStabilization',
    'autoscaler',
  ]);
  const minReplicas = v.wholeNumber('autoscaling.minReplicas', o.minReplicas ?? 1, 1);
  const maxReplicas = v.wholeNumber('autoscaling.maxReplicas', o.maxReplicas, 1);
  if (maxReplicas < minReplicas)
    v.fail('autoscaling.maxReplicas', `must be at least minReplicas (${minReplicas})`, maxReplicas);
  const targetQueueDepth = v.wholeNumber(
    'autoscaling.targetQueueDepth',
    o.targetQueueDepth ?? DEFAULT_TARGET_QUEUE_DEPTH,
    1,
  );
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
  return { minReplicas, maxReplicas, targetQueueDepth, scaleDownSeconds, autoscaler };
}
