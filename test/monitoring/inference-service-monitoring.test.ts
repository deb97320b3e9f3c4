import { App, Chart, Duration, Size, Testing } from 'cdk8s';
import {
  Autoscaler,
  InferenceServiceMonitoring,
  ModelCache,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
  WorkloadKind,
} from '../../src';
import { expectCrdValid } from '../support/crd-schema';
import {
  alertOf,
  checkRules,
  constant,
  describePromtool,
  evaluationAtOrAfter,
  fires,
  queriesAsRecordingRules,
  ruleSpec,
  silent,
  testRules,
} from './promtool';
import { dashboardQueries } from '../../src/monitoring/rules';

const NS = 'serving';

function vllmApp() {
  const app = Testing.app();
  const chart = new Chart(app, 'llm', { namespace: NS });
  const svc = new VllmInferenceService(chart, 'llm', {
    name: 'llm',
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    modelSize: Size.gibibytes(15),
    modelCache: ModelCache.sharedClaim({ claimName: 'model-cache' }),
    // Ordinal pod names (`llm-0`) in the series below; the Deployment's are tested in workload-kind.test.ts.
    workloadKind: WorkloadKind.STATEFUL_SET,
    autoscaling: {
      minReplicas: 2,
      maxReplicas: 8,
      autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus-operated.monitoring.svc:9090' }),
    },
    serviceMonitor: true,
  });
  const monitoring = new InferenceServiceMonitoring(chart, 'monitoring', svc, {
    timeToFirstTokenTarget: Duration.seconds(2),
    queueTimeTarget: Duration.seconds(1),
  });
  return { app, chart, svc, monitoring };
}

const { chart, svc, monitoring } = vllmApp();
const spec = ruleSpec(monitoring);
const objects = Testing.synth(chart);
const at = (pod: string, extra = '') => `{namespace="${NS}",pod="${pod}"${extra}}`;

describe('InferenceServiceMonitoring', () => {
  test('emits a PrometheusRule and a dashboard ConfigMap valid against the pinned CRD and API', () => {
    const rule = objects.find((o: any) => o.kind === 'PrometheusRule');
    expectCrdValid([rule]);
    expect(rule.metadata.labels.release).toBe('kube-prometheus-stack');
    const cm = objects.find((o: any) => o.kind === 'ConfigMap' && o.metadata.name === 'llm-dashboard');
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    const dashboard = JSON.parse(cm.data['llm-dashboard.json']);
    expect(dashboard.panels.length).toBeGreaterThan(5);
  });

  test('thresholds are the service budgets: capacity, autoscaling target and window, scrape interval', () => {
    // Shared cache: a new replica is capacity once loaded (the startup budget from modelSize).
    expect(svc.capacitySeconds).toBe(svc.startupBudgetSeconds);
    expect(alertOf(monitoring.alerts, 'GpuServingPodNotReady').forSeconds).toBe(svc.capacitySeconds);
    const load = alertOf(monitoring.alerts, 'GpuServingLoadAboveTarget');
    // Requests in flight (running + waiting) per replica above the autoscaling target (80% of vLLM's 256).
    expect(svc.autoscalingLimits!.targetRequestsInFlight).toBe(204);
    expect(load.expr).toMatch(
      /vllm:num_requests_running\{.*\}\) \+ max by .*vllm:num_requests_waiting\{.*\}\)\) > 204$/,
    );
    expect(load.forSeconds).toBe(svc.capacitySeconds);
    const atMax = alertOf(monitoring.alerts, 'GpuServingReplicasAtMaximum');
    expect(atMax.forSeconds).toBe(svc.autoscalingLimits!.scaleDownStabilizationSeconds);
    expect(atMax.expr).toContain('horizontalpodautoscaler="keda-hpa-llm"');
    expect(alertOf(monitoring.alerts, 'GpuServingMetricsMissing').forSeconds).toBe(3 * svc.scrapeIntervalSeconds);
    for (const r of spec.groups[0].rules) expect(r.annotations.runbook_url).toMatch(/docs\/monitoring\.md#gpuserving/);
  });

  test('engines export different metrics: alerts on a metric an engine lacks are left out', () => {
    const app = new App();
    const c = new Chart(app, 'c', { namespace: NS });
    const tgi = new TgiInferenceService(c, 'tgi', { name: 'tgi', modelId: 'a/b' });
    const sglang = new SglangInferenceService(c, 'sglang', { name: 'sg', modelId: 'a/b' });
    const names = (m: InferenceServiceMonitoring) => m.alerts.map(a => a.alert);
    const tgiAlerts = names(new InferenceServiceMonitoring(c, 'tm', tgi, { queueTimeTarget: Duration.seconds(1) }));
    expect(tgiAlerts).toContain('GpuServingErrors');
    expect(tgiAlerts).toContain('GpuServingQueueTimeHigh');
    expect(tgiAlerts).not.toContain('GpuServingKvCacheSaturated');
    expect(tgiAlerts).not.toContain('GpuServingReplicasAtMaximum');
    const sgAlerts = names(new InferenceServiceMonitoring(c, 'sm', sglang));
    expect(sgAlerts).toContain('GpuServingKvCacheSaturated');
    expect(sgAlerts).not.toContain('GpuServingErrors');
    expect(
      () => new InferenceServiceMonitoring(c, 'bad', tgi, { timeToFirstTokenTarget: Duration.seconds(1) }),
    ).toThrow(
      /InferenceServiceMonitoring 'bad': timeToFirstTokenTarget needs an engine that exports time to first token/,
    );
    expect(() => new InferenceServiceMonitoring(c, 'bad2', tgi, { maxErrorRatio: 2 })).toThrow(
      /maxErrorRatio must be a number above 0 and below 1 \(got 2\)/,
    );
  });
});

describePromtool('serving alerts under promtool', () => {
  test('promtool check rules accepts the synthesized rule group', () => {
    const r = checkRules(spec);
    expect(r.output).toContain('SUCCESS');
    expect(r.ok).toBe(true);
  });

  test('every dashboard query parses', () => {
    const cm = objects.find((o: any) => o.metadata.name === 'llm-dashboard');
    const queries = dashboardQueries(JSON.parse(cm.data['llm-dashboard.json']));
    expect(queries.length).toBeGreaterThan(8);
    const r = checkRules(queriesAsRecordingRules('dashboard', queries));
    expect(r.output).toContain('SUCCESS');
  });

  test('each alert fires just past its derived threshold and stays silent just before and at it', () => {
    const capacity = svc.capacitySeconds;
    const window = svc.autoscalingLimits!.scaleDownStabilizationSeconds;
    const lastMinute = 40;
    const ready = (pod: string, v: number) =>
      constant(`kube_pod_status_ready${at(pod, ',condition="true"')}`, v, lastMinute);
    const queue = (pod: string, v: number, job = 'llm-headless') =>
      constant(`vllm:num_requests_waiting{namespace="${NS}",pod="${pod}",job="${job}"}`, v, lastMinute);
    const running = (pod: string, v: number, job = 'llm-headless') =>
      constant(`vllm:num_requests_running{namespace="${NS}",pod="${pod}",job="${job}"}`, v, lastMinute);
    const hpa = (metric: string, v: number) =>
      constant(`${metric}{namespace="${NS}",horizontalpodautoscaler="keda-hpa-llm"}`, v, lastMinute);
    const histogram = (metric: string, buckets: Record<string, number>) =>
      Object.entries(buckets).map(([le, perMinute]) => ({
        series: `${metric}_bucket{namespace="${NS}",pod="llm-0",le="${le}"}`,
        values: `0+${perMinute}x${lastMinute}`,
      }));
    const podNotReadyAt = evaluationAtOrAfter(capacity);
    const r = testRules(spec, [
      {
        name: 'a replica not Ready past the startup budget; llm-1 is Ready, llm-2 terminates (drains)',
        interval: '1m',
        input_series: [
          ready('llm-0', 0),
          ready('llm-1', 1),
          ready('llm-2', 0),
          constant(`kube_pod_deletion_timestamp${at('llm-2')}`, 0, lastMinute),
          queue('llm-0', 0),
          queue('llm-1', 0),
        ],
        alert_rule_test: [
          silent('GpuServingPodNotReady', podNotReadyAt - 60),
          fires(spec, 'GpuServingPodNotReady', podNotReadyAt, { namespace: NS, pod: 'llm-0', condition: 'true' }),
        ],
      },
      {
        name: 'requests in flight above target per replica for longer than a replica takes to be capacity',
        interval: '1m',
        input_series: [running('llm-0', 200), queue('llm-0', 6), running('llm-1', 200), queue('llm-1', 6)],
        alert_rule_test: [
          silent('GpuServingLoadAboveTarget', evaluationAtOrAfter(capacity) - 60),
          fires(spec, 'GpuServingLoadAboveTarget', evaluationAtOrAfter(capacity), { namespace: NS }),
        ],
      },
      {
        name: 'in flight at target, and one pod scraped twice is counted once (206 and 202 average 204)',
        interval: '1m',
        input_series: [
          running('llm-0', 200),
          running('llm-0', 200, 'kubernetes-pods'),
          queue('llm-0', 6),
          queue('llm-0', 6, 'kubernetes-pods'),
          running('llm-1', 200),
          queue('llm-1', 2),
        ],
        alert_rule_test: [silent('GpuServingLoadAboveTarget', evaluationAtOrAfter(capacity) + 600)],
      },
      {
        name: 'a Ready replica without the queue gauge (llm-1 is not scraped)',
        interval: '1m',
        input_series: [ready('llm-0', 1), ready('llm-1', 1), queue('llm-0', 0)],
        alert_rule_test: [
          silent('GpuServingMetricsMissing', evaluationAtOrAfter(3 * svc.scrapeIntervalSeconds) - 60),
          fires(spec, 'GpuServingMetricsMissing', evaluationAtOrAfter(3 * svc.scrapeIntervalSeconds), {
            namespace: NS,
            pod: 'llm-1',
            condition: 'true',
          }),
        ],
      },
      {
        name: 'replicas pinned at the maximum for a whole scale-down window',
        interval: '1m',
        input_series: [
          hpa('kube_horizontalpodautoscaler_status_current_replicas', 8),
          hpa('kube_horizontalpodautoscaler_spec_max_replicas', 8),
        ],
        alert_rule_test: [
          silent('GpuServingReplicasAtMaximum', evaluationAtOrAfter(window) - 60),
          fires(spec, 'GpuServingReplicasAtMaximum', evaluationAtOrAfter(window), {
            namespace: NS,
            horizontalpodautoscaler: 'keda-hpa-llm',
          }),
        ],
      },
      {
        name: 'one below the maximum: silent',
        interval: '1m',
        input_series: [
          hpa('kube_horizontalpodautoscaler_status_current_replicas', 7),
          hpa('kube_horizontalpodautoscaler_spec_max_replicas', 8),
        ],
        alert_rule_test: [silent('GpuServingReplicasAtMaximum', evaluationAtOrAfter(window) + 600)],
      },
      {
        name: '2% of requests fail (above 1%); the rate has two samples from the first minute',
        interval: '1m',
        input_series: [
          {
            series: `vllm:request_success_total${at('llm-0', ',finished_reason="stop"')}`,
            values: `0+98x${lastMinute}`,
          },
          {
            series: `vllm:request_success_total${at('llm-0', ',finished_reason="error"')}`,
            values: `0+2x${lastMinute}`,
          },
        ],
        alert_rule_test: [
          silent('GpuServingErrors', 60 + 120 - 60),
          fires(spec, 'GpuServingErrors', 60 + 120, { namespace: NS }),
        ],
      },
      {
        name: '1% of requests fail (the threshold): silent',
        interval: '1m',
        input_series: [
          {
            series: `vllm:request_success_total${at('llm-0', ',finished_reason="stop"')}`,
            values: `0+99x${lastMinute}`,
          },
          {
            series: `vllm:request_success_total${at('llm-0', ',finished_reason="error"')}`,
            values: `0+1x${lastMinute}`,
          },
        ],
        alert_rule_test: [silent('GpuServingErrors', 1200)],
      },
      {
        name: 'KV cache above saturation on one replica; at it on the other',
        interval: '1m',
        input_series: [
          constant(`vllm:kv_cache_usage_perc${at('llm-0')}`, 0.96, lastMinute),
          constant(`vllm:kv_cache_usage_perc${at('llm-1')}`, 0.95, lastMinute),
        ],
        alert_rule_test: [
          silent('GpuServingKvCacheSaturated', 60),
          fires(spec, 'GpuServingKvCacheSaturated', 120, { namespace: NS, pod: 'llm-0' }),
        ],
      },
      {
        name: 'TTFT p95 between 2 s and 2.5 s (above the 2 s target); queue time p95 under 0.5 s (below 1 s)',
        interval: '1m',
        input_series: [
          ...histogram('vllm:time_to_first_token_seconds', { '1': 0, '2': 0, '2.5': 10, '+Inf': 10 }),
          ...histogram('vllm:request_queue_time_seconds', { '0.5': 10, '2.5': 10, '+Inf': 10 }),
        ],
        alert_rule_test: [
          silent('GpuServingTimeToFirstTokenHigh', 120),
          fires(spec, 'GpuServingTimeToFirstTokenHigh', 180, { namespace: NS }),
          silent('GpuServingQueueTimeHigh', 1200),
        ],
      },
      {
        name: 'queue time p95 between 1 s and 2.5 s (above the 1 s target); TTFT under 1 s',
        interval: '1m',
        input_series: [
          ...histogram('vllm:time_to_first_token_seconds', { '1': 10, '2': 10, '2.5': 10, '+Inf': 10 }),
          ...histogram('vllm:request_queue_time_seconds', { '0.5': 0, '1': 0, '2.5': 10, '+Inf': 10 }),
        ],
        alert_rule_test: [
          silent('GpuServingTimeToFirstTokenHigh', 1200),
          fires(spec, 'GpuServingQueueTimeHigh', 180, { namespace: NS }),
        ],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
    expect(r.output).toContain('SUCCESS');
  });

  test('a deliberately broken rule fails: a syntax error, and a threshold off by ten minutes', () => {
    const broken = JSON.parse(JSON.stringify(spec));
    broken.groups[0].rules[0].expr = 'sum(rate(vllm:num_requests_waiting[5m])';
    const checked = checkRules(broken);
    expect(checked.ok).toBe(false);
    expect(checked.output).toMatch(/parse error|unclosed left parenthesis/);

    const late = JSON.parse(JSON.stringify(spec));
    const notReady = late.groups[0].rules.find((x: any) => x.alert === 'GpuServingPodNotReady');
    expect(notReady.for).toBe(`${svc.capacitySeconds}s`);
    notReady.for = `${svc.capacitySeconds + 600}s`;
    const r = testRules(late, [
      {
        interval: '1m',
        input_series: [constant(`kube_pod_status_ready${at('llm-0', ',condition="true"')}`, 0, 40)],
        alert_rule_test: [
          fires(late, 'GpuServingPodNotReady', evaluationAtOrAfter(svc.capacitySeconds), {
            namespace: NS,
            pod: 'llm-0',
            condition: 'true',
          }),
        ],
      },
    ]);
    expect(r.ok).toBe(false);
    expect(r.output).toContain('FAILED');
  });
});

describePromtool('autoscaling queries under promtool', () => {
  test("KEDA's default query sums this version's pods once each, in this namespace only", () => {
    const scaled = objects.find((o: any) => o.kind === 'ScaledObject');
    const query: string = scaled.spec.triggers[0].metadata.query;
    const sel = `{namespace="${NS}",pod=~"llm-[0-9]+"}`;
    expect(query).toBe(
      `sum(max by (pod) (vllm:num_requests_running${sel}) + max by (pod) (vllm:num_requests_waiting${sel}))`,
    );
    // The ServiceMonitor scrapes the headless Service only (its per-pod label), never the client
    // Service as well: one target, so one series, per pod.
    const monitor = objects.find((o: any) => o.kind === 'ServiceMonitor');
    const selected = objects.filter(
      (o: any) =>
        o.kind === 'Service' &&
        Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v),
    );
    expect(selected.map((s: any) => s.metadata.name)).toEqual(['llm-headless']);
    const rules = { groups: [{ name: 'autoscaling', rules: [{ record: 'keda:queue', expr: query }] }] };
    expect(checkRules(rules).ok).toBe(true);
    // Each pod runs 10 and has `v` waiting.
    const series = (pod: string, v: number, ns = NS, job = 'llm-headless') => [
      constant(`vllm:num_requests_running{namespace="${ns}",pod="${pod}",job="${job}"}`, 10, 10),
      constant(`vllm:num_requests_waiting{namespace="${ns}",pod="${pod}",job="${job}"}`, v, 10),
    ];
    const r = testRules(rules, [
      {
        name: 'one scrape per pod: 13 + 14; another version and another namespace are not counted',
        interval: '1m',
        input_series: [
          ...series('llm-0', 3),
          ...series('llm-1', 4),
          ...series('llm-v2-0', 100),
          ...series('llm-0', 100, 'other'),
        ],
        promql_expr_test: [{ expr: 'keda:queue', eval_time: '5m', exp_samples: [{ labels: 'keda:queue', value: 27 }] }],
      },
      {
        name: 'a second scrape job of the same pod (e.g. an annotation-based one) is counted once',
        interval: '1m',
        input_series: [...series('llm-0', 3), ...series('llm-0', 3, NS, 'kubernetes-pods'), ...series('llm-1', 4)],
        promql_expr_test: [{ expr: 'keda:queue', eval_time: '5m', exp_samples: [{ labels: 'keda:queue', value: 27 }] }],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test("the HPA's per-pod metric (Prometheus Adapter's default pods query) is one value per pod", () => {
    // prometheus-adapter docs/config.md: metricsQuery `sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)`,
    // with the namespace and pod matchers of the HPA's pods and GroupBy `pod`.
    const perPod = `sum(${svc.queueMetric}{namespace="${NS}",pod=~"llm-0|llm-1"}) by (pod)`;
    const rules = { groups: [{ name: 'hpa', rules: [{ record: 'hpa:queue_per_pod', expr: perPod }] }] };
    const r = testRules(rules, [
      {
        interval: '1m',
        input_series: [
          constant(`vllm:num_requests_waiting{namespace="${NS}",pod="llm-0",job="llm-headless"}`, 3, 10),
          constant(`vllm:num_requests_waiting{namespace="${NS}",pod="llm-1",job="llm-headless"}`, 4, 10),
        ],
        promql_expr_test: [
          {
            expr: 'hpa:queue_per_pod',
            eval_time: '5m',
            exp_samples: [
              { labels: 'hpa:queue_per_pod{pod="llm-0"}', value: 3 },
              { labels: 'hpa:queue_per_pod{pod="llm-1"}', value: 4 },
            ],
          },
        ],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });
});
