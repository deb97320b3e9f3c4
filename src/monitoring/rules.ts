import { ApiObject, Chart, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { customKind, KIND, ManifestObject } from '../common/manifest-object';
import { podNamePattern } from '../common/names';
import { Validator } from '../validation/validate';
import { DCGM } from './metric-facts';

/** Where the runbooks live: the project's docs on GitHub (package.json `homepage`, its repository). */
export const DEFAULT_RUNBOOK_BASE_URL = 'https://github.com/cdk8s-gpu/cdk8s-gpu/blob/main/docs/monitoring.md';
/**
 * kube-prometheus-stack's Prometheus selects PrometheusRules labelled `release: <helm release>`
 * (`prometheus.prometheusSpec.ruleSelectorNilUsesHelmValues: true`, its default); the release is
 * commonly named after the chart.
 */
export const DEFAULT_RULE_LABELS: Readonly<Record<string, string>> = { release: 'kube-prometheus-stack' };
/**
 * Grafana's dashboard sidecar loads ConfigMaps with this label (kube-prometheus-stack values:
 * `grafana.sidecar.dashboards.label: grafana_dashboard`, `labelValue: "1"`).
 */
export const DEFAULT_DASHBOARD_LABELS: Readonly<Record<string, string>> = { grafana_dashboard: '1' };

/** What every monitoring construct accepts. */
export interface MonitoringProps {
  /**
   * Labels of the PrometheusRule, which the Prometheus rule selector matches.
   * @default { release: 'kube-prometheus-stack' } - kube-prometheus-stack's selector for a release of that name
   */
  readonly ruleLabels?: Record<string, string>;
  /**
   * Labels of the dashboard ConfigMap, which Grafana's dashboard sidecar matches.
   * @default { grafana_dashboard: '1' } - kube-prometheus-stack's sidecar default
   */
  readonly dashboardLabels?: Record<string, string>;
  /**
   * Emit the Grafana dashboard ConfigMap.
   * @default true
   */
  readonly dashboard?: boolean;
  /**
   * The page whose sections (one per alert, anchored by the alert's name in lower case) the
   * alerts' `runbook_url` points to.
   * @default - docs/monitoring.md of this project on GitHub
   */
  readonly runbookBaseUrl?: string;
}

export const MONITORING_PROP_KEYS: ReadonlyArray<keyof MonitoringProps> = [
  'ruleLabels',
  'dashboardLabels',
  'dashboard',
  'runbookBaseUrl',
];

/** One alert, as data: what it watches, its threshold and where the threshold comes from. */
export interface AlertRule {
  /** The alert's name, the same for every instance (labels tell instances apart). */
  readonly alert: string;
  readonly expr: string;
  /** How long the condition must hold, in seconds (0: at once). */
  readonly forSeconds: number;
  readonly severity: 'critical' | 'warning';
  readonly summary: string;
  /** What the threshold is and which prop or budget it comes from. */
  readonly description: string;
}

/** The API JSON of a PrometheusRule. */
interface PrometheusRuleProps {
  readonly metadata: { name: string; labels: Record<string, string> };
  readonly spec: { groups: unknown };
}

/** A panel of a dashboard: a time series of PromQL queries. */
export interface DashboardPanel {
  readonly title: string;
  readonly description: string;
  readonly unit?: string;
  readonly queries: ReadonlyArray<{ readonly expr: string; readonly legend: string }>;
}

/** PromQL: a selector of `metric` with the given matchers (empty ones dropped). */
export function selector(metric: string, ...matchers: Array<string | undefined>): string {
  const m = matchers.filter((x): x is string => x !== undefined && x !== '');
  return m.length ? `${metric}{${m.join(',')}}` : metric;
}

/** A PromQL string literal. */
export function quote(value: string): string {
  return JSON.stringify(value);
}

/**
 * The namespace matcher of the watched construct's chart, or none when the chart has no namespace.
 * The rules may live elsewhere (a monitoring chart): they select the workload's namespace.
 */
export function namespaceMatcher(scope: Construct): string | undefined {
  const ns = Chart.of(scope).namespace;
  return ns ? `namespace=${quote(ns)}` : undefined;
}

/**
 * A DCGM exporter gauge aggregated per pod, whichever way Prometheus labels the pod: the exporter
 * attaches `namespace` and `pod`, which stay so with `honorLabels: true` and become
 * `exported_namespace` and `exported_pod` otherwise (they clash with the target's own labels).
 */
export function dcgmPerPod(
  aggregation: 'avg' | 'sum',
  metric: string,
  scope: Construct,
  workloadName: string,
  kind = 'StatefulSet',
) {
  return dcgmPerPodMatching(aggregation, metric, scope, podNamePattern(kind, workloadName));
}

/**
 * The two GPU panels of a trainer's dashboard: utilization (`idle` says what 0 on every pod means
 * for this backend) and memory, per pod whose name matches the regular expression `pods`.
 */
export function trainerGpuPanels(scope: Construct, pods: string, idle: string): DashboardPanel[] {
  return [
    {
      title: 'GPU utilization',
      description: `${DCGM.gpuUtil} from the DCGM exporter: 0 on every ${idle}.`,
      unit: 'percent',
      queries: [{ expr: dcgmPerPodMatching('avg', DCGM.gpuUtil, scope, pods), legend: '{{pod}}' }],
    },
    {
      title: 'GPU memory used',
      description: `${DCGM.framebufferUsed} (MiB) from the DCGM exporter.`,
      unit: 'decmbytes',
      queries: [{ expr: dcgmPerPodMatching('sum', DCGM.framebufferUsed, scope, pods), legend: '{{pod}}' }],
    },
  ];
}

/** {@link dcgmPerPod} for the pods whose names match the regular expression `pods`. */
export function dcgmPerPodMatching(aggregation: 'avg' | 'sum', metric: string, scope: Construct, pods: string) {
  const ns = Chart.of(scope).namespace;
  const honored = selector(metric, ns ? `namespace=${quote(ns)}` : undefined, `pod=~${quote(pods)}`);
  const exported = selector(metric, ns ? `exported_namespace=${quote(ns)}` : undefined, `exported_pod=~${quote(pods)}`);
  return (
    `${aggregation} by (pod) (${honored}) or ` +
    `${aggregation} by (pod) (label_replace(${exported}, "pod", "$1", "exported_pod", "(.+)"))`
  );
}

/** The pods of a workload (a StatefulSet's `<name>-<ordinal>`, a Deployment's `<name>-<hash>-<suffix>`). */
export function podMatcher(workloadName: string, kind = 'StatefulSet'): string {
  return `pod=~${quote(podNamePattern(kind, workloadName))}`;
}

/** A rate window of at least four scrapes (Prometheus docs: range at least 4x the scrape interval), 60 s at least. */
export function rateWindowSeconds(scrapeIntervalSeconds: number): number {
  return Math.max(60, 4 * scrapeIntervalSeconds);
}

/** The resolved shared props. */
export interface ResolvedMonitoring {
  readonly ruleLabels: Record<string, string>;
  readonly dashboardLabels: Record<string, string>;
  readonly dashboard: boolean;
  readonly runbookBaseUrl: string;
}

export function resolveMonitoring(v: Validator, props: MonitoringProps): ResolvedMonitoring {
  const runbookBaseUrl = props.runbookBaseUrl ?? DEFAULT_RUNBOOK_BASE_URL;
  if (typeof runbookBaseUrl !== 'string' || !/^https?:\/\/\S+$/.test(runbookBaseUrl) || runbookBaseUrl.includes('#'))
    v.fail('runbookBaseUrl', 'must be an http(s) URL without a fragment', runbookBaseUrl);
  return {
    ruleLabels: props.ruleLabels === undefined ? { ...DEFAULT_RULE_LABELS } : v.labels('ruleLabels', props.ruleLabels),
    dashboardLabels:
      props.dashboardLabels === undefined
        ? { ...DEFAULT_DASHBOARD_LABELS }
        : v.labels('dashboardLabels', props.dashboardLabels),
    dashboard: v.boolean('dashboard', props.dashboard, true),
    runbookBaseUrl,
  };
}

/** The runbook section of an alert: docs/monitoring.md has a heading named after each alert. */
export function runbookUrl(base: string, alert: string): string {
  return `${base}#${alert.toLowerCase()}`;
}

/** Seconds as a Prometheus duration (`600s`). */
export function duration(seconds: number): string {
  return `${seconds}s`;
}

/** The rule group of a PrometheusRule's spec, as the prometheus-operator CRD and promtool read it. */
export function ruleGroup(
  name: string,
  rules: () => readonly AlertRule[],
  labels: Record<string, string>,
  runbookBase: string,
) {
  return {
    name,
    rules: rules().map(r => ({
      alert: r.alert,
      expr: r.expr,
      ...(r.forSeconds > 0 ? { for: duration(r.forSeconds) } : {}),
      labels: { severity: r.severity, ...labels },
      annotations: { summary: r.summary, description: r.description, runbook_url: runbookUrl(runbookBase, r.alert) },
    })),
  };
}

/**
 * A `monitoring.coreos.com/v1` PrometheusRule with one group. The rules are made when the object
 * is synthesized, so budgets that grow after the construct (a reload timeout added by a later
 * `mountInto`) are those of the final app.
 */
export function prometheusRule(
  scope: Construct,
  o: {
    name: string;
    labels: Record<string, string>;
    group: string;
    rules: () => readonly AlertRule[];
    ruleLabels: Record<string, string>;
    runbookBase: string;
  },
): ApiObject {
  const spec = { groups: Lazy.any({ produce: () => [ruleGroup(o.group, o.rules, o.ruleLabels, o.runbookBase)] }) };
  return new ManifestObject(
    scope,
    'Rules',
    customKind<PrometheusRuleProps>('monitoring.coreos.com/v1', 'PrometheusRule'),
    {
      metadata: { name: o.name, labels: o.labels },
      spec,
    },
  );
}

/** A Grafana dashboard (JSON model, schema 39) of time-series panels, two to a row. */
export function dashboardJson(o: { uid: string; title: string; tags: string[]; panels: readonly DashboardPanel[] }) {
  return {
    uid: o.uid,
    title: o.title,
    tags: o.tags,
    schemaVersion: 39,
    editable: true,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [{ name: 'datasource', label: 'Prometheus', type: 'datasource', query: 'prometheus' }],
    },
    panels: o.panels.map((p, i) => ({
      id: i + 1,
      type: 'timeseries',
      title: p.title,
      description: p.description,
      datasource: { type: 'prometheus', uid: '${datasource}' },
      gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
      fieldConfig: { defaults: { unit: p.unit ?? 'short' }, overrides: [] },
      targets: p.queries.map((q, j) => ({
        refId: String.fromCharCode(65 + j),
        datasource: { type: 'prometheus', uid: '${datasource}' },
        expr: q.expr,
        legendFormat: q.legend,
      })),
    })),
  };
}

/** A dashboard as a ConfigMap for Grafana's sidecar: one key, `<name>.json`. */
export function dashboardConfigMap(
  scope: Construct,
  o: { name: string; labels: Record<string, string>; dashboard: ReturnType<typeof dashboardJson> },
): ApiObject {
  return new ManifestObject(scope, 'Dashboard', KIND.ConfigMap, {
    metadata: { name: o.name, labels: o.labels },
    data: { [`${o.name}.json`]: JSON.stringify(o.dashboard, undefined, 1) },
  });
}

/** Every PromQL query of a dashboard JSON, for checks. */
export function dashboardQueries(dashboard: ReturnType<typeof dashboardJson>): string[] {
  return dashboard.panels.flatMap(p => p.targets.map(t => t.expr));
}
