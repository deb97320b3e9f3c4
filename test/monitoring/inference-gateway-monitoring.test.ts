import { Chart, Testing } from 'cdk8s';
import {
  Autoscaler,
  ENDPOINT_PICKER_START_SECONDS,
  FailureMode,
  InferenceGateway,
  InferenceGatewayMonitoring,
  InferenceGatewayProps,
  VllmInferenceService,
} from '../../src';
import { dashboardQueries } from '../../src/monitoring/rules';
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

const NS = 'serving';
/** A pod of the picker's Deployment, and one of another Deployment whose name it prefixes. */
const PICKER_POD = 'qwen-pool-epp-5d8f7c9b6-x7k2q';
const OTHER_POD = 'qwen-pool-epp-cnry-5d8f7c9b6-x7k2q';

function build(gatewayProps: Partial<InferenceGatewayProps> = {}) {
  const chart = new Chart(Testing.app(), 'c', { namespace: NS });
  const svc = new VllmInferenceService(chart, 'v1', {
    name: 'qwen',
    modelId: 'Qwen/Qwen2.5-7B-Instruct',
    version: 1,
    image: 'vllm/vllm-openai:v0.31.0',
  });
  const gateway = new InferenceGateway(chart, 'gw', {
    name: 'qwen-pool',
    services: [svc],
    gateway: { name: 'igw' },
    serviceMonitor: true,
    ...gatewayProps,
  });
  const monitoring = new InferenceGatewayMonitoring(chart, 'mon', gateway);
  return { chart, svc, gateway, monitoring, objects: Testing.synth(chart) };
}

const { svc, gateway, monitoring, objects } = build();
const spec = ruleSpec(monitoring);
const at = (pod: string, extra = '') => `{namespace="${NS}",pod="${pod}"${extra}}`;

describe('InferenceGatewayMonitoring', () => {
  test("the picker is scraped by a ServiceMonitor that selects its Service by the library's labels", () => {
    const monitor = objects.find(o => o.kind === 'ServiceMonitor');
    const service = objects.find(o => o.kind === 'Service' && o.metadata.name === 'qwen-pool-epp');
    expect(monitor.spec.endpoints).toEqual([{ port: 'http-metrics', path: '/metrics', interval: '30s' }]);
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) expect(service.metadata.labels[k]).toBe(v);
    expect(Object.keys(monitor.spec.selector.matchLabels)).not.toContain('app.kubernetes.io/instance');
    expect(service.spec.ports.find((p: any) => p.name === 'http-metrics').port).toBe(9090);
    // One scrape path: with the ServiceMonitor, no annotations a second scrape config would also follow; without
    // it, the annotations.
    const pickerOf = (o: any[]) => o.find(x => x.kind === 'Deployment' && x.metadata.name === 'qwen-pool-epp');
    expect(pickerOf(objects).spec.template.metadata.annotations).toBeUndefined();
    expect(pickerOf(build({ serviceMonitor: false }).objects).spec.template.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9090',
      'prometheus.io/path': '/metrics',
    });
    expectCrdValid(objects.filter(o => ['ServiceMonitor', 'PrometheusRule'].includes(o.kind)));
  });

  test("the thresholds come from the gateway's timing: the picker's Recreate gap and the pool's replica start", () => {
    const unavailable = alertOf(monitoring.alerts, 'InferencePickerUnavailable');
    expect(gateway.endpointPickerGracePeriodSeconds).toBe(30 + svc.terminationGracePeriodSeconds);
    expect(unavailable.forSeconds).toBe(gateway.endpointPickerGracePeriodSeconds + ENDPOINT_PICKER_START_SECONDS);
    // FailOpen keeps traffic flowing without the picker: a warning; FailClose refuses it: critical.
    expect(unavailable.severity).toBe('warning');
    const closed = build({ failureMode: FailureMode.FAIL_CLOSE }).monitoring;
    expect(alertOf(closed.alerts, 'InferencePickerUnavailable').severity).toBe('critical');
    expect(alertOf(monitoring.alerts, 'InferencePoolNoReadyEndpoints').forSeconds).toBe(svc.capacitySeconds);
    expect(alertOf(monitoring.alerts, 'InferencePickerMetricsMissing').forSeconds).toBe(3 * 30);
    // Only llm-d-router's names: the deprecated GIE ones are not read.
    const exprs = monitoring.alerts.map(a => a.expr).join('\n');
    expect(exprs).toMatch(/llm_d_epp_ready_endpoints/);
    expect(exprs).not.toMatch(/inference_pool_|inference_objective_|inference_extension_/);
  });

  test("with flow control, a panel of the picker's queue and its outcomes, in this pool only", () => {
    const titles = (m: InferenceGatewayMonitoring) => m.panels.map(p => p.title);
    expect(titles(monitoring)).not.toContain('Flow-control queue');
    const flow = build({ flowControl: {} }).monitoring;
    const panel = flow.panels.find(p => p.title === 'Flow-control queue')!;
    expect(panel.queries.map(q => q.expr)).toEqual([
      expect.stringMatching(
        /^sum by \(priority\) \(llm_d_epp_flow_control_queue_size\{.*inference_pool="qwen-pool"\}\)$/,
      ),
      expect.stringMatching(
        /^sum by \(outcome\) \(rate\(llm_d_epp_flow_control_requests_total\{.*inference_pool="qwen-pool"\}\[120s\]\)\)$/,
      ),
    ]);
  });

  test('a prop outside its range is refused', () => {
    const chart = new Chart(Testing.app(), 'x', { namespace: NS });
    const svc2 = new VllmInferenceService(chart, 'v1', { name: 'qwen', modelId: 'Qwen/Qwen2.5-7B-Instruct' });
    const gw = new InferenceGateway(chart, 'gw', { name: 'qwen-pool', services: [svc2], gateway: { name: 'igw' } });
    expect(() => new InferenceGatewayMonitoring(chart, 'm', gw, { maxErrorRatio: 1 })).toThrow(
      "InferenceGatewayMonitoring 'm': maxErrorRatio must be a number above 0 and below 1 (got 1)",
    );
    expect(() => new InferenceGatewayMonitoring(chart, 'n', svc2 as any)).toThrow(
      "InferenceGatewayMonitoring 'n': gateway must be an InferenceGateway",
    );
  });
});

describePromtool('InferenceGatewayMonitoring under promtool', () => {
  test('the rules and the dashboard queries parse', () => {
    const r = checkRules(spec);
    expect(r.output).toContain('SUCCESS');
    const dashboard = JSON.parse(
      objects.find(o => o.kind === 'ConfigMap' && /dashboard/.test(o.metadata.name)).data[
        'qwen-pool-epp-dashboard.json'
      ],
    );
    const q = checkRules(queriesAsRecordingRules('dashboard', dashboardQueries(dashboard)));
    expect(q.output).toContain('SUCCESS');
    const flow = build({ flowControl: {} }).monitoring;
    const f = checkRules(
      queriesAsRecordingRules(
        'flow',
        flow.panels.flatMap(p => p.queries.map(x => x.expr)),
      ),
    );
    expect(f.output).toContain('SUCCESS');
  });

  test('each alert fires on the series that mean it, at its threshold, and not on a neighbour', () => {
    const gap = evaluationAtOrAfter(alertOf(monitoring.alerts, 'InferencePickerUnavailable').forSeconds);
    const capacity = evaluationAtOrAfter(svc.capacitySeconds);
    const minutes = Math.ceil(Math.max(gap, capacity) / 60) + 3;
    const available = (deployment: string, value: number) =>
      constant(
        `kube_deployment_status_replicas_available{namespace="${NS}",deployment="${deployment}"}`,
        value,
        minutes,
      );
    const readyEndpoints = (pod: string, pool: string, value: number) =>
      constant(`llm_d_epp_ready_endpoints${at(pod, `,name="${pool}"`)}`, value, minutes);
    const counter = (metric: string, perMinute: number, extra = '') => ({
      series: `${metric}${at(PICKER_POD, extra)}`,
      values: `0+${perMinute}x${minutes}`,
    });
    const r = testRules(spec, [
      {
        name: 'no picker for longer than a Recreate update takes; another Deployment is not it',
        interval: '1m',
        input_series: [available('qwen-pool-epp', 0), available('other-epp', 0)],
        alert_rule_test: [
          silent('InferencePickerUnavailable', gap - 60),
          fires(spec, 'InferencePickerUnavailable', gap, { namespace: NS, deployment: 'qwen-pool-epp' }),
        ],
      },
      {
        name: "no Ready endpoint past a replica's start; another pool's picker and a prefixed Deployment are not counted",
        interval: '1m',
        input_series: [
          available('qwen-pool-epp', 1),
          readyEndpoints(PICKER_POD, 'qwen-pool', 0),
          readyEndpoints(OTHER_POD, 'qwen-pool', 0),
          readyEndpoints(PICKER_POD, 'other-pool', 0),
        ],
        alert_rule_test: [
          silent('InferencePoolNoReadyEndpoints', capacity - 60),
          fires(spec, 'InferencePoolNoReadyEndpoints', capacity, { namespace: NS, name: 'qwen-pool' }),
          silent('InferencePickerMetricsMissing', capacity),
        ],
      },
      {
        name: 'a picker running unscraped',
        interval: '1m',
        input_series: [available('qwen-pool-epp', 1), readyEndpoints(OTHER_POD, 'qwen-pool', 2)],
        alert_rule_test: [fires(spec, 'InferencePickerMetricsMissing', evaluationAtOrAfter(90), { namespace: NS })],
      },
      {
        name: '60 routed and 6 refused a minute (9 %) fire; none refused does not',
        interval: '1m',
        input_series: [
          counter('llm_d_epp_request_total', 60, ',model_name="qwen"'),
          counter('llm_d_epp_request_error_total', 6, ',model_name="qwen",error_code="ServiceUnavailable"'),
        ],
        alert_rule_test: [fires(spec, 'InferencePickerErrors', 180, { namespace: NS })],
      },
      {
        name: 'every request refused since the picker started: no routed series at all',
        interval: '1m',
        input_series: [
          counter('llm_d_epp_request_error_total', 6, ',model_name="qwen",error_code="ServiceUnavailable"'),
        ],
        alert_rule_test: [fires(spec, 'InferencePickerErrors', 180, { namespace: NS })],
      },
      {
        name: "a model server's errors are routed requests: 6 of 60 is 10 %, not 6 of 66",
        interval: '1m',
        input_series: [
          counter('llm_d_epp_request_total', 60, ',model_name="qwen"'),
          counter('llm_d_epp_request_error_total', 6, ',model_name="qwen",error_code="ModelServerError"'),
        ],
        alert_rule_test: [fires(spec, 'InferencePickerErrors', 180, { namespace: NS })],
        promql_expr_test: [
          {
            expr: alertOf(monitoring.alerts, 'InferencePickerErrors').expr.replace(/ > [0-9.]+$/, ''),
            eval_time: '5m',
            exp_samples: [{ labels: `{namespace="${NS}"}`, value: 0.1 }],
          },
        ],
      },
      {
        name: 'traffic without errors',
        interval: '1m',
        input_series: [
          counter('llm_d_epp_request_total', 60, ',model_name="qwen"'),
          counter('llm_d_epp_request_error_total', 0, ',model_name="qwen",error_code="ServiceUnavailable"'),
        ],
        alert_rule_test: [silent('InferencePickerErrors', 180)],
      },
    ]);
    if (!r.ok) console.log(r.output);
    expect(r.ok).toBe(true);
  });
});

describePromtool('InferenceGatewayMonitoring of a pool that scales to zero, under promtool', () => {
  const chart = new Chart(Testing.app(), 'z', { namespace: NS });
  const zero = new VllmInferenceService(chart, 'v1', {
    name: 'qwen',
    modelId: 'Qwen/Qwen2.5-7B-Instruct',
    autoscaling: {
      minReplicas: 0,
      maxReplicas: 2,
      autoscaler: Autoscaler.keda({ serverAddress: 'http://prometheus.monitoring.svc:9090' }),
    },
  });
  const gw = new InferenceGateway(chart, 'gw', {
    name: 'qwen-pool',
    services: [zero],
    gateway: { name: 'igw' },
    serviceMonitor: true,
    flowControl: {},
  });
  const mon = new InferenceGatewayMonitoring(chart, 'mon', gw);
  const zspec = ruleSpec(mon);
  // At zero the outage is requests waiting past the queue's TTL, not a replica's start.
  const ttl = evaluationAtOrAfter(gw.flowControlRequestTtlSeconds!);
  const minutes = Math.ceil(ttl / 60) + 3;
  const ready = (value: number) =>
    constant(`llm_d_epp_ready_endpoints${at(PICKER_POD, ',name="qwen-pool"')}`, value, minutes);
  const queue = (value: number) =>
    constant(
      `llm_d_epp_flow_control_queue_size${at(PICKER_POD, ',inference_pool="qwen-pool",priority="0",fairness_id="x"')}`,
      value,
      minutes,
    );

  test("KEDA's wake query parses, and an idle pool at zero is no outage; one that keeps requests waiting is", () => {
    const scaled = Testing.synth(chart).find(o => o.kind === 'ScaledObject');
    const wake = scaled.spec.triggers[0].metadata.query;
    expect(checkRules(queriesAsRecordingRules('wake', [wake])).output).toContain('SUCCESS');
    const r = testRules(zspec, [
      {
        name: 'idle at zero: no endpoint, nothing waits',
        interval: '1m',
        input_series: [ready(0), queue(0)],
        alert_rule_test: [silent('InferencePoolNoReadyEndpoints', ttl + 60)],
      },
      {
        name: 'requests wait and no endpoint comes',
        interval: '1m',
        input_series: [ready(0), queue(3)],
        alert_rule_test: [
          silent('InferencePoolNoReadyEndpoints', ttl - 60),
          fires(zspec, 'InferencePoolNoReadyEndpoints', ttl, { namespace: NS, name: 'qwen-pool' }),
        ],
        // At zero: in flight has no series (0), the queue's 3 waiting requests are the demand.
        promql_expr_test: [{ expr: wake, eval_time: '5m', exp_samples: [{ labels: '{}', value: 3 }] }],
      },
      {
        name: 'the first request evicted at its TTL while the pool had no endpoint: a series new at that drop',
        interval: '1m',
        input_series: [
          ready(0),
          {
            series: `llm_d_epp_flow_control_requests_total${at(PICKER_POD, ',inference_pool="qwen-pool",priority="0",outcome="EvictedTTL"')}`,
            values: '_ _ 1 1 1',
          },
          {
            series: `llm_d_epp_flow_control_requests_total${at(PICKER_POD, ',inference_pool="qwen-pool",priority="0",outcome="Dispatched"')}`,
            values: '0+5x4',
          },
        ],
        alert_rule_test: [
          silent('InferencePoolColdStartDrops', 60),
          fires(zspec, 'InferencePoolColdStartDrops', 120, { namespace: NS }),
        ],
      },
      {
        name: "a saturated pool's own evictions, with endpoints, are not a cold start",
        interval: '1m',
        input_series: [
          ready(2),
          {
            series: `llm_d_epp_flow_control_requests_total${at(PICKER_POD, ',inference_pool="qwen-pool",priority="0",outcome="EvictedTTL"')}`,
            values: '0+3x5',
          },
        ],
        alert_rule_test: [silent('InferencePoolColdStartDrops', 180)],
      },
    ]);
    if (!r.ok) console.log(r.output);
    expect(r.ok).toBe(true);
  });
});
