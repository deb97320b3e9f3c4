import { ApiObject, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, LABEL_WORKLOAD } from '../common/labels';
import { customKind, ManifestObject } from '../common/manifest-object';
import { Validator } from '../validation/validate';

/**
 * The label of the headless Service: the ServiceMonitor finds the per-pod endpoints through it,
 * never through the client Service, which would scrape the same pods a second time.
 */
export const PER_POD_ENDPOINTS_LABEL = 'cdk8s-gpu.io/per-pod-endpoints';
/** Prometheus's default lookback for an instant query (`--query.lookback-delta`). */
const PROMETHEUS_LOOKBACK_SECONDS = 300;
const SERVICE_MONITOR = customKind('monitoring.coreos.com/v1', 'ServiceMonitor');

export interface ServiceMonitorOptions {
  readonly serviceMonitor?: boolean;
  readonly serviceMonitorLabels?: Record<string, string>;
  readonly serviceMonitorInterval?: Duration;
  /** Whether an autoscaler reads the scraped metrics. */
  readonly autoscaled: boolean;
  readonly name: string;
  readonly labels: Record<string, string>;
  /** The headless Service's ports to scrape: the API port, or each rank's. */
  readonly portNames: readonly string[];
  readonly metricsPath: string;
}

/** The ServiceMonitor's scrape interval in seconds: the prop's, else 30 s (prometheus-operator's own default). */
export function scrapeIntervalOf(v: Validator, interval: Duration | undefined): number {
  return interval === undefined ? 30 : v.seconds('serviceMonitorInterval', interval, 1, 3600);
}

/** The prometheus-operator ServiceMonitor of a serving workload, when asked for, and the scrape interval either way. */
export function serviceMonitor(
  scope: Construct,
  v: Validator,
  o: ServiceMonitorOptions,
): { object: ApiObject | undefined; interval: number } {
  const enabled = v.boolean('serviceMonitor', o.serviceMonitor, false);
  const extra = v.labels('serviceMonitorLabels', o.serviceMonitorLabels);
  for (const key of Object.keys(extra)) {
    if ([LABEL_NAME, LABEL_INSTANCE, LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_WORKLOAD].includes(key))
      v.fail(`serviceMonitorLabels.${key}`, 'is set by the construct', extra[key]);
  }
  const interval = scrapeIntervalOf(v, o.serviceMonitorInterval);
  // The autoscaler's query sees a sample only within Prometheus's 5-minute lookback: a longer scrape
  // interval leaves it without a value most of the time (KEDA reads that as 0, an HPA adapter as none).
  if (o.autoscaled && interval >= PROMETHEUS_LOOKBACK_SECONDS) {
    v.fail(
      'serviceMonitorInterval',
      `must be shorter than Prometheus's ${PROMETHEUS_LOOKBACK_SECONDS}s lookback with autoscaling, or the queue gauge has no sample most of the time and the service stays at minReplicas`,
      o.serviceMonitorInterval,
    );
  }
  if (!enabled) {
    if (o.serviceMonitorLabels !== undefined)
      v.fail('serviceMonitorLabels', 'needs serviceMonitor: true', o.serviceMonitorLabels);
    if (o.serviceMonitorInterval !== undefined)
      v.fail('serviceMonitorInterval', 'needs serviceMonitor: true', o.serviceMonitorInterval);
    return { object: undefined, interval };
  }
  const object = new ManifestObject(scope, 'ServiceMonitor', SERVICE_MONITOR, {
    metadata: { name: o.name, labels: { ...o.labels, ...extra } },
    spec: {
      // Labels the library owns: GitOps tools rewrite app.kubernetes.io/instance (see LABEL_WORKLOAD).
      selector: { matchLabels: { [PER_POD_ENDPOINTS_LABEL]: 'true', [LABEL_WORKLOAD]: o.name } },
      endpoints: o.portNames.map(port => ({ port, path: o.metricsPath, interval: `${interval}s` })),
    },
  } as any);
  return { object, interval };
}
