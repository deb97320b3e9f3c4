import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { FailureMode, InferenceGateway } from '../inference/inference-gateway';
import { Validator } from '../validation/validate';
import { DEFAULT_MAX_ERROR_RATIO } from './inference-service-monitoring';
import { EPP_COLD_START_DROPS, EPP_METRICS, EPP_SERVER_ERROR_CODE, KSM } from './metric-facts';
import {
  AlertRule,
  dashboardConfigMap,
  dashboardJson,
  DashboardPanel,
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

/**
 * How long a new picker pod takes to be Ready once its old one is gone: the image pull and start, and the first
 * sync of its pool and pods (the readiness probe asks every 2 s). The picker is one small static binary; a minute
 * holds a slow pull.
 */
export const ENDPOINT_PICKER_START_SECONDS = 60;

/** Alerts and a dashboard for an `InferenceGateway`. */
export interface InferenceGatewayMonitoringProps extends MonitoringProps {
  /**
   * The share of requests that may end in an error at the picker (refused: no endpoint, shed while saturated; or
   * failed by the model server) before the error alert fires.
   * @default 0.01
   */
  readonly maxErrorRatio?: number;
}

/**
 * Alert rules (a PrometheusRule) and a Grafana dashboard (a ConfigMap) for an `InferenceGateway`, from the
 * Endpoint Picker's own metrics (`llm_d_epp_*`, llm-d-router v0.10.0) and kube-state-metrics, with thresholds from
 * the gateway's timing: the picker's grace period and start (a `Recreate` update leaves no picker for that long),
 * the pool's longest replica start, and the picker's scrape interval. Scrape the picker (the gateway's
 * `serviceMonitor`, or its pods' `prometheus.io` annotations) or these alerts see nothing, which one of them says.
 */
export class InferenceGatewayMonitoring extends Construct {
  /** The alerts, as data (what each watches, its threshold and its source). */
  readonly alerts: readonly AlertRule[];
  /** The dashboard's panels and queries, as data. */
  readonly panels: readonly DashboardPanel[];
  readonly prometheusRule: ApiObject;
  /** The dashboard ConfigMap, unless `dashboard: false`. */
  readonly dashboard?: ApiObject;

  constructor(scope: Construct, id: string, gateway: InferenceGateway, props: InferenceGatewayMonitoringProps = {}) {
    super(scope, id);
    const v = new Validator('InferenceGatewayMonitoring', id);
    if (!(gateway instanceof InferenceGateway)) v.fail('gateway', 'must be an InferenceGateway', gateway);
    v.knownProps('', props, [...MONITORING_PROP_KEYS, 'maxErrorRatio']);
    const shared = resolveMonitoring(v, props);
    const maxErrorRatio = v.fraction('maxErrorRatio', props.maxErrorRatio, DEFAULT_MAX_ERROR_RATIO);

    const pool = gateway.poolName;
    const epp = gateway.endpointPickerName;
    const ns = namespaceMatcher(gateway);
    const pickerPods = podMatcher(epp, 'Deployment');
    const scrape = gateway.scrapeIntervalSeconds;
    const window = rateWindowSeconds(scrape);
    const w = `[${window}s]`;
    const available = selector(KSM.deploymentAvailable, ns, `deployment=${quote(epp)}`);
    const ready = `max by (namespace, name) (${selector(EPP_METRICS.readyEndpoints, ns, pickerPods, `name=${quote(pool)}`)})`;
    const rateOf = (metric: string) => `sum by (namespace) (rate(${selector(metric, ns, pickerPods)}${w}))`;
    // Every request is either routed (counted in requests; a non-200 answer then adds a ModelServerError) or refused
    // by the picker (an error of another code): those two make the whole. `or` keeps the sum when one is absent
    // (no request routed since the picker started, every one refused).
    const errors = selector(EPP_METRICS.requestErrors, ns, pickerPods);
    const refused = selector(EPP_METRICS.requestErrors, ns, pickerPods, `error_code!=${quote(EPP_SERVER_ERROR_CODE)}`);
    const all = `sum by (namespace) (rate(${selector(EPP_METRICS.requests, ns, pickerPods)}${w}) or rate(${refused}${w}))`;
    const errorShare = `sum by (namespace) (rate(${errors}${w})) / ${all}`;
    // A Recreate update stops the old picker (drain, then its open streams) before the new one starts.
    const pickerGap = gateway.endpointPickerGracePeriodSeconds + ENDPOINT_PICKER_START_SECONDS;
    const failOpen = gateway.failureMode === FailureMode.FAIL_OPEN;
    const capacity = gateway.endpointCapacitySeconds;
    const noEndpointSeconds = gateway.scalesToZero ? gateway.flowControlRequestTtlSeconds! : capacity;

    const queued = `sum by (namespace) (${selector(EPP_METRICS.flowControlQueue, ns, pickerPods, `inference_pool=${quote(pool)}`)})`;
    this.alerts = [
      {
        alert: 'InferencePickerUnavailable',
        expr: `${available} < 1`,
        forSeconds: pickerGap,
        severity: failOpen ? 'warning' : 'critical',
        summary: `The Endpoint Picker of ${pool} has had no available replica for ${pickerGap}s.`,
        description: `Threshold ${pickerGap}s: the picker's grace period (${gateway.endpointPickerGracePeriodSeconds}s, its drain plus the longest request) and ${ENDPOINT_PICKER_START_SECONDS}s to start, the longest a Recreate update leaves the pool without one. ${failOpen ? 'failureMode FailOpen: the gateway sends requests to any ready pod meanwhile, without load-aware picking, priorities or rewrites.' : 'failureMode FailClose: the gateway refuses every request meanwhile.'}`,
      },
      {
        alert: 'InferencePoolNoReadyEndpoints',
        // A pool scaled to zero has no endpoint while idle, by design: only requests waiting for one past the
        // queue's TTL (the construct's cold start and then some) make it an outage.
        expr: gateway.scalesToZero ? `(${ready} == 0) and on (namespace) (${queued} > 0)` : `${ready} == 0`,
        forSeconds: noEndpointSeconds,
        severity: 'critical',
        summary: `The pool ${pool} has had no endpoint with fresh metrics for ${noEndpointSeconds}s${gateway.scalesToZero ? ' while requests wait for one' : ''}: the picker has nowhere to send a request.`,
        description: gateway.scalesToZero
          ? `${EPP_METRICS.readyEndpoints} (the pool's endpoints whose metrics the picker scraped within its staleness threshold, 2 s by default) 0 while the picker's queue holds requests, for ${noEndpointSeconds}s, the queue's TTL: longer than the construct's cold start (KEDA's poll, scheduling and the image pull, the replica's capacity delay), so the pool did not wake. Queued requests are refused at the TTL (503, rejected-no-endpoints).`
          : `${EPP_METRICS.readyEndpoints} (the pool's endpoints whose metrics the picker scraped within its staleness threshold, 2 s by default) 0 for ${noEndpointSeconds}s, the longest a replica of the pool's services takes to be capacity (its startup budget, and the download where the cache is per replica): not a rollout or a cold start; the servers are down, or the picker cannot scrape their metrics. Requests are refused (503).`,
      },
      {
        alert: 'InferencePickerMetricsMissing',
        expr: `(sum by (namespace) (${available}) >= 1) unless on (namespace) count by (namespace) (${selector(EPP_METRICS.readyEndpoints, ns, pickerPods)})`,
        forSeconds: 3 * scrape,
        severity: 'warning',
        summary: `The Endpoint Picker of ${pool} runs but its ${EPP_METRICS.readyEndpoints} series is missing: it is not scraped.`,
        description: `Three scrape intervals (${scrape}s each) with an available picker and no series from it: set serviceMonitor on the InferenceGateway, or scrape its pods by their prometheus.io annotations; the other alerts of ${pool} are blind meanwhile.`,
      },
      {
        alert: 'InferencePickerErrors',
        expr: `${errorShare} > ${maxErrorRatio}`,
        forSeconds: window,
        severity: 'critical',
        summary: `More than ${maxErrorRatio * 100}% of ${pool}'s requests end in an error at the Endpoint Picker.`,
        description: `${EPP_METRICS.requestErrors} (refused by the picker: no endpoint, shed while saturated, by error_code; or ${EPP_SERVER_ERROR_CODE}: a routed request the model server answered with a status other than 200, 4xx and 429 included) over every request (${EPP_METRICS.requests}, routed, plus those refused), above maxErrorRatio ${maxErrorRatio} over ${window}s (four scrape intervals) for as long.`,
      },
    ];
    if (gateway.scalesToZero) {
      const dropped = selector(
        EPP_METRICS.flowControlRequests,
        ns,
        pickerPods,
        `inference_pool=${quote(pool)}`,
        `outcome=~${quote(EPP_COLD_START_DROPS.join('|'))}`,
      );
      // The counter's series start at their first drop (WithLabelValues().Inc()): increase() reads a new series as
      // 0, so a series new within the window counts with its value. Only drops while the pool had no endpoint:
      // a saturated pool's own evictions are InferencePickerErrors'.
      const drops = `sum by (namespace) (increase(${dropped}${w}) or (${dropped} unless ${dropped} offset ${window}s))`;
      const noEndpoint = `max by (namespace) (max_over_time(${selector(EPP_METRICS.readyEndpoints, ns, pickerPods, `name=${quote(pool)}`)}${w})) == 0`;
      this.alerts = [
        ...this.alerts,
        {
          alert: 'InferencePoolColdStartDrops',
          expr: `(${drops} > 0) and on (namespace) (${noEndpoint})`,
          forSeconds: 0,
          severity: 'warning',
          summary: `Requests for ${pool} were dropped while the pool had no endpoint: it did not wake from zero in time.`,
          description: `${EPP_METRICS.flowControlRequests} with outcome ${EPP_COLD_START_DROPS.join(', ')} over ${window}s while the picker had no endpoint: a request waited the queue's TTL (${gateway.flowControlRequestTtlSeconds}s, longer than the construct's cold start), found the queue full, or was given up by its client or the gateway (a stream idle timeout shorter than the TTL). A replica started slower than modelled, or KEDA did not see the queue.`,
        },
      ];
    }

    const labels = {
      [LABEL_NAME]: pool,
      [LABEL_INSTANCE]: epp,
      [LABEL_COMPONENT]: 'monitoring',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    this.prometheusRule = prometheusRule(this, {
      name: `${epp}-routing`,
      labels: { ...labels, ...shared.ruleLabels },
      group: `${pool}.routing`,
      rules: () => this.alerts,
      ruleLabels: { inferencepool: pool },
      runbookBase: shared.runbookBaseUrl,
    });

    this.panels = [
      {
        title: 'Ready endpoints',
        description: `${EPP_METRICS.readyEndpoints}: the pool's endpoints whose metrics the picker scraped within its staleness threshold; available picker replicas.`,
        queries: [
          { expr: ready, legend: 'endpoints' },
          { expr: available, legend: 'pickers available' },
        ],
      },
      {
        title: 'Requests',
        description: `Routed (${EPP_METRICS.requests}) and ended in an error (${EPP_METRICS.requestErrors}, by error_code), per second.`,
        unit: 'reqps',
        queries: [
          { expr: rateOf(EPP_METRICS.requests), legend: 'routed' },
          {
            expr: `sum by (error_code) (rate(${selector(EPP_METRICS.requestErrors, ns, pickerPods)}${w}))`,
            legend: '{{error_code}}',
          },
        ],
      },
      {
        title: 'Scheduling latency (p99)',
        description: `${EPP_METRICS.schedulingSeconds}: the picker's time to choose an endpoint per request.`,
        unit: 's',
        queries: [
          {
            expr: `histogram_quantile(0.99, sum by (le) (rate(${selector(`${EPP_METRICS.schedulingSeconds}_bucket`, ns, pickerPods)}${w})))`,
            legend: 'p99',
          },
        ],
      },
      {
        title: 'Pool load',
        description: `${EPP_METRICS.averageQueue} and ${EPP_METRICS.averageKvCache}: the averages over the pool's servers the picker scores by (not updated while it has no endpoint: the last value stays).`,
        queries: [
          {
            expr: `max by (name) (${selector(EPP_METRICS.averageQueue, ns, pickerPods, `name=${quote(pool)}`)})`,
            legend: 'queue',
          },
          {
            expr: `max by (name) (${selector(EPP_METRICS.averageKvCache, ns, pickerPods, `name=${quote(pool)}`)})`,
            legend: 'KV cache',
          },
        ],
      },
    ];
    if (gateway.flowControlRequestTtlSeconds !== undefined) {
      const inPool = `inference_pool=${quote(pool)}`;
      this.panels = [
        ...this.panels,
        {
          title: 'Flow-control queue',
          description: `${EPP_METRICS.flowControlQueue} by priority, and the requests flow control finished by outcome (a request waits at most ${gateway.flowControlRequestTtlSeconds}s, then EvictedTTL).`,
          queries: [
            {
              expr: `sum by (priority) (${selector(EPP_METRICS.flowControlQueue, ns, pickerPods, inPool)})`,
              legend: 'queued, priority {{priority}}',
            },
            {
              expr: `sum by (outcome) (rate(${selector(EPP_METRICS.flowControlRequests, ns, pickerPods, inPool)}${w}))`,
              legend: '{{outcome}} /s',
            },
          ],
        },
      ];
    }
    if (shared.dashboard) {
      const namespace = Chart.of(gateway).namespace;
      this.dashboard = dashboardConfigMap(this, {
        name: `${epp}-dashboard`,
        labels: { ...labels, ...shared.dashboardLabels },
        dashboard: dashboardJson({
          uid: `cdk8s-gpu-${namespace ?? 'default'}-${epp}`.slice(0, 40),
          title: `Routing: ${pool}${namespace ? ` (${namespace})` : ''}`,
          tags: ['cdk8s-gpu', 'routing'],
          panels: this.panels,
        }),
      });
    }
  }
}
