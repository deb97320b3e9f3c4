import { ApiObject, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { CounterSelector } from '../inference/engine';
import { InferenceService, ServingWorkload } from '../inference/inference-service';
import { Validator } from '../validation/validate';
import { DCGM, KEDA_HPA_PREFIX, KSM } from './metric-facts';
import {
  AlertRule,
  dashboardConfigMap,
  dashboardJson,
  DashboardPanel,
  dcgmPerPod,
  MONITORING_PROP_KEYS,
  MonitoringProps,
  namespaceMatcher,
  podMatcher,
  prometheusRule,
  quote,
  rateWindowSeconds,
  resolveMonitoring,
  selector,
} from './rules';

/** The share of failed requests above which the error alert fires, by default. */
export const DEFAULT_MAX_ERROR_RATIO = 0.01;
/** The KV-cache usage above which the saturation alert fires, by default. */
export const DEFAULT_KV_CACHE_SATURATION = 0.95;
/** The latency quantile the latency targets are checked at, by default. */
export const DEFAULT_LATENCY_QUANTILE = 0.95;

/** Alerts and a dashboard for a serving construct. */
export interface InferenceServiceMonitoringProps extends MonitoringProps {
  /**
   * The time-to-first-token target at `latencyQuantile` (engines with a TTFT histogram: vLLM,
   * SGLang). A service-level objective, which no budget of the construct implies.
   * @default - no TTFT alert
   */
  readonly timeToFirstTokenTarget?: Duration;
  /**
   * The queue-time target at `latencyQuantile` (engines with a queue-time histogram: all three).
   * @default - no queue-time alert
   */
  readonly queueTimeTarget?: Duration;
  /**
   * The quantile the latency targets apply to, above 0 and below 1.
   * @default 0.95
   */
  readonly latencyQuantile?: number;
  /**
   * The share of requests that may fail on the server's side (engines that count failures: vLLM, TGI).
   * @default 0.01
   */
  readonly maxErrorRatio?: number;
  /**
   * KV-cache usage (0 to 1) above which a replica is saturated: new requests queue or preempt
   * running ones (engines that export it: vLLM, SGLang).
   * @default 0.95
   */
  readonly kvCacheSaturation?: number;
}

const OWN_KEYS: ReadonlyArray<keyof InferenceServiceMonitoringProps> = [
  'timeToFirstTokenTarget',
  'queueTimeTarget',
  'latencyQuantile',
  'maxErrorRatio',
  'kvCacheSaturation',
];

/**
 * Alert rules (a PrometheusRule) and a Grafana dashboard (a ConfigMap) for an `InferenceService`,
 * whose thresholds are the service's own budgets: the startup budget and download time, the
 * autoscaling target, bounds and scale-down window, and the scrape interval.
 */
export class InferenceServiceMonitoring extends Construct {
  /** The alerts, as data (what each watches, its threshold and its source). */
  readonly alerts: readonly AlertRule[];
  /** The dashboard's panels and queries, as data. */
  readonly panels: readonly DashboardPanel[];
  /** The PrometheusRule. */
  readonly prometheusRule: ApiObject;
  /** The dashboard ConfigMap, unless `dashboard: false`. */
  readonly dashboard?: ApiObject;

  constructor(scope: Construct, id: string, service: InferenceService, props: InferenceServiceMonitoringProps = {}) {
    super(scope, id);
    const v = new Validator('InferenceServiceMonitoring', id);
    if (!(service instanceof ServingWorkload))
      v.fail('service', 'must be a VllmInferenceService, SglangInferenceService or TgiInferenceService', service);
    v.knownProps('', props, [...MONITORING_PROP_KEYS, ...OWN_KEYS]);
    const shared = resolveMonitoring(v, props);
    const quantile = v.fraction('latencyQuantile', props.latencyQuantile, DEFAULT_LATENCY_QUANTILE);
    const maxErrorRatio = v.fraction('maxErrorRatio', props.maxErrorRatio, DEFAULT_MAX_ERROR_RATIO);
    const saturation = v.fraction('kvCacheSaturation', props.kvCacheSaturation, DEFAULT_KV_CACHE_SATURATION);
    const ttftTarget =
      props.timeToFirstTokenTarget === undefined
        ? undefined
        : v.seconds('timeToFirstTokenTarget', props.timeToFirstTokenTarget, 0.001);
    const queueTarget =
      props.queueTimeTarget === undefined ? undefined : v.seconds('queueTimeTarget', props.queueTimeTarget, 0.001);
    const m = service.engineMetrics;
    if (ttftTarget !== undefined && m.timeToFirstToken === undefined)
      v.fail('timeToFirstTokenTarget', 'needs an engine that exports time to first token (vLLM, SGLang)', ttftTarget);

    const name = service.workloadName;
    const ns = namespaceMatcher(service);
    const pods = podMatcher(name, service.workloadKind);
    const window = rateWindowSeconds(service.scrapeIntervalSeconds);
    const w = `[${window}s]`;
    const limits = service.autoscalingLimits;
    const target = service.targetRequestsInFlight;
    const capacity = service.capacitySeconds;
    const perPod = (metric: string) => `max by (namespace, pod) (${selector(metric, ns, pods)})`;
    // Running + waiting per pod (each pod once, however many jobs scrape it), averaged over the pods.
    const inFlightPerReplica = `avg by (namespace) (${perPod(m.running)} + ${perPod(service.queueMetric)})`;
    const counterRate = (c: CounterSelector) =>
      `sum by (namespace) (rate(${selector(c.name, ns, pods, c.matchers)}${w}))`;
    const quantileOf = (histogram: string) =>
      `histogram_quantile(${quantile}, sum by (namespace, le) (rate(${selector(`${histogram}_bucket`, ns, pods)}${w})))`;
    const q = Math.round(quantile * 100);
    const autoscaledBy = service.scaledObject ? 'KEDA' : service.horizontalPodAutoscaler ? 'the HPA' : undefined;
    const hpaName = service.scaledObject ? `${KEDA_HPA_PREFIX}${name}` : name;

    const alerts: AlertRule[] = [
      {
        alert: 'GpuServingPodNotReady',
        // A terminating pod is not Ready while it drains: it is not starting.
        expr:
          `(${selector(KSM.podReady, ns, pods, 'condition="true"')} == 0) unless on (namespace, pod) ` +
          selector(KSM.podDeletionTimestamp, ns, pods),
        forSeconds: capacity,
        severity: 'warning',
        summary: `A replica of ${name} has not been Ready for ${capacity}s.`,
        description: `Threshold ${capacity}s: the time a new (or restarted) replica takes to be capacity (startup budget ${service.startupBudgetSeconds}s for model load and warm-up, plus the download when the cache is per replica and modelSize is declared). Past it the startup probe has restarted the server, or the download or scheduling is stuck.`,
      },
      ...(target !== undefined
        ? [
            {
              alert: 'GpuServingLoadAboveTarget',
              expr: `${inFlightPerReplica} > ${target}`,
              forSeconds: capacity,
              severity: 'warning' as const,
              summary: `${name} has more than ${target} requests in flight per replica.`,
              description: `Threshold ${target} requests in flight per replica (${m.running} + ${service.queueMetric}), ${limits ? 'autoscaling.targetRequestsInFlight' : "80% of the engine's batch limit"}, held for ${capacity}s: longer than a new replica takes to be capacity, so ${autoscaledBy ? `${autoscaledBy} could have added one` : 'a replica added by hand could have helped'} by now.`,
            },
          ]
        : []),
      {
        alert: 'GpuServingMetricsMissing',
        expr:
          `(${selector(KSM.podReady, ns, pods, 'condition="true"')} == 1) unless on (namespace, pod) ` +
          selector(service.queueMetric, ns, pods),
        forSeconds: 3 * service.scrapeIntervalSeconds,
        severity: 'warning',
        summary: `A Ready replica of ${name} has no ${service.queueMetric} series: it is not scraped.`,
        description: `Three scrape intervals (${service.scrapeIntervalSeconds}s each) without the queue gauge from a Ready pod: the autoscaler and these alerts are blind to it (${autoscaledBy ? `${autoscaledBy} reads it as no load` : 'no autoscaler, but the alerts still read it'}).`,
      },
    ];
    if (limits) {
      const hpa = [ns, `horizontalpodautoscaler=${quote(hpaName)}`];
      alerts.push({
        alert: 'GpuServingReplicasAtMaximum',
        expr: `${selector(KSM.hpaCurrentReplicas, ...hpa)} >= on (namespace, horizontalpodautoscaler) ${selector(KSM.hpaMaxReplicas, ...hpa)}`,
        forSeconds: limits.scaleDownStabilizationSeconds,
        severity: 'warning',
        summary: `${name} has run at its autoscaling maximum (${limits.maxReplicas}) for a whole scale-down window.`,
        description: `The HPA ${hpaName} held maxReplicas ${limits.maxReplicas} for ${limits.scaleDownStabilizationSeconds}s, the scale-down stabilization window: the load never dropped enough to remove a replica, and more would have been added if allowed.`,
      });
    }
    if (m.requests) {
      alerts.push({
        alert: 'GpuServingErrors',
        expr: `${counterRate(m.requests.failed)} / ${counterRate(m.requests.total)} > ${maxErrorRatio}`,
        forSeconds: window,
        severity: 'critical',
        summary: `More than ${maxErrorRatio * 100}% of ${name}'s requests fail on the server's side.`,
        description: `Failed (${selector(m.requests.failed.name, m.requests.failed.matchers)}) over all (${m.requests.total.name}) above maxErrorRatio ${maxErrorRatio}, over ${window}s (four scrape intervals) for as long.`,
      });
    }
    if (m.kvCacheUsage) {
      alerts.push({
        alert: 'GpuServingKvCacheSaturated',
        expr: `${perPod(m.kvCacheUsage)} > ${saturation}`,
        forSeconds: window,
        severity: 'warning',
        summary: `A replica of ${name} has its KV cache more than ${saturation * 100}% full.`,
        description: `${m.kvCacheUsage} above kvCacheSaturation ${saturation} for ${window}s (four scrape intervals): new requests wait for cache blocks or preempt running ones.`,
      });
    }
    if (ttftTarget !== undefined && m.timeToFirstToken) {
      alerts.push({
        alert: 'GpuServingTimeToFirstTokenHigh',
        expr: `${quantileOf(m.timeToFirstToken)} > ${ttftTarget}`,
        forSeconds: window,
        severity: 'warning',
        summary: `${name}'s p${q} time to first token is above ${ttftTarget}s.`,
        description: `p${q} of ${m.timeToFirstToken} over ${window}s above timeToFirstTokenTarget ${ttftTarget}s, for as long.`,
      });
    }
    if (queueTarget !== undefined && m.queueTime) {
      alerts.push({
        alert: 'GpuServingQueueTimeHigh',
        expr: `${quantileOf(m.queueTime)} > ${queueTarget}`,
        forSeconds: window,
        severity: 'warning',
        summary: `${name}'s p${q} queue time is above ${queueTarget}s.`,
        description: `p${q} of ${m.queueTime} over ${window}s above queueTimeTarget ${queueTarget}s, for as long.`,
      });
    }
    this.alerts = alerts;

    const labels = {
      [LABEL_NAME]: service.serviceName,
      [LABEL_INSTANCE]: name,
      [LABEL_COMPONENT]: 'monitoring',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    this.prometheusRule = prometheusRule(this, {
      name,
      labels: { ...labels, ...shared.ruleLabels },
      group: `${name}.serving`,
      rules: () => this.alerts,
      // The workload's kind as kube-state-metrics labels it (`statefulset`, `deployment`).
      ruleLabels: { [service.workloadKind.toLowerCase()]: name },
      runbookBase: shared.runbookBaseUrl,
    });

    const panels: DashboardPanel[] = [
      {
        title: 'Replicas Ready',
        description: 'Ready replicas; with autoscaling, the HPA current and maximum replicas too.',
        queries: [
          {
            expr: `sum by (namespace) (${selector(KSM.podReady, ns, pods, 'condition="true"')})`,
            legend: 'ready {{namespace}}',
          },
          ...(limits
            ? [
                {
                  expr: selector(KSM.hpaCurrentReplicas, ns, `horizontalpodautoscaler=${quote(hpaName)}`),
                  legend: 'current',
                },
                { expr: selector(KSM.hpaMaxReplicas, ns, `horizontalpodautoscaler=${quote(hpaName)}`), legend: 'max' },
              ]
            : []),
        ],
      },
      {
        title: 'Requests in flight per replica',
        description: `${m.running} + ${service.queueMetric}, the autoscaling signal${target !== undefined ? `; the target is ${target} per replica` : ''}.`,
        queries: [
          { expr: `${perPod(m.running)} + ${perPod(service.queueMetric)}`, legend: '{{pod}}' },
          { expr: inFlightPerReplica, legend: 'average {{namespace}}' },
          ...(target !== undefined ? [{ expr: `vector(${target})`, legend: 'target' }] : []),
        ],
      },
      {
        title: 'Waiting requests',
        description: `${service.queueMetric}: requests no batch slot has taken yet.`,
        queries: [{ expr: perPod(service.queueMetric), legend: '{{pod}}' }],
      },
      {
        title: 'Running requests',
        description: `${m.running}: the batch each replica is working on.`,
        queries: [{ expr: perPod(m.running), legend: '{{pod}}' }],
      },
      ...(m.kvCacheUsage
        ? [
            {
              title: 'KV-cache usage',
              description: `${m.kvCacheUsage}; saturation at ${saturation}.`,
              unit: 'percentunit',
              queries: [{ expr: perPod(m.kvCacheUsage), legend: '{{pod}}' }],
            },
          ]
        : []),
      ...(m.timeToFirstToken
        ? [
            {
              title: `Time to first token (p${q})`,
              description: `${m.timeToFirstToken}.`,
              unit: 's',
              queries: [{ expr: quantileOf(m.timeToFirstToken), legend: 'p' + q }],
            },
          ]
        : []),
      ...(m.queueTime
        ? [
            {
              title: `Queue time (p${q})`,
              description: `${m.queueTime}.`,
              unit: 's',
              queries: [{ expr: quantileOf(m.queueTime), legend: 'p' + q }],
            },
          ]
        : []),
      ...(m.requests
        ? [
            {
              title: 'Failed requests',
              description: 'The share of requests that failed on the server side.',
              unit: 'percentunit',
              queries: [
                { expr: `${counterRate(m.requests.failed)} / ${counterRate(m.requests.total)}`, legend: 'failed' },
              ],
            },
          ]
        : []),
      {
        title: 'Restarts',
        description:
          'Container restarts per replica: the startup probe restarts a server still loading past its budget.',
        queries: [
          {
            expr: `sum by (pod) (increase(${selector(KSM.containerRestarts, ns, pods)}[1h]))`,
            legend: '{{pod}}',
          },
        ],
      },
      {
        title: 'GPU utilization',
        description: `${DCGM.gpuUtil} from the DCGM exporter, per pod.`,
        unit: 'percent',
        queries: [{ expr: dcgmPerPod('avg', DCGM.gpuUtil, service, name, service.workloadKind), legend: '{{pod}}' }],
      },
    ];
    this.panels = panels;
    if (shared.dashboard) {
      this.dashboard = dashboardConfigMap(this, {
        name: `${name}-dashboard`,
        labels: { ...labels, ...shared.dashboardLabels },
        dashboard: dashboardJson({
          uid: `cdk8s-gpu-${Chart.of(service).namespace ?? 'default'}-${name}`.slice(0, 40),
          title: `Serving: ${name}${Chart.of(service).namespace ? ` (${Chart.of(service).namespace})` : ''}`,
          tags: ['cdk8s-gpu', 'serving'],
          panels,
        }),
      });
    }
  }
}
