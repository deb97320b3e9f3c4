import { Chart, Duration, Size, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, TrainingMonitoring } from '../../src';
import { dashboardQueries } from '../../src/monitoring/rules';
import { expectCrdValid } from '../support/crd-schema';
import {
  alertOf,
  checkRules,
  constant,
  describePromtool,
  evaluationAfter,
  fires,
  queriesAsRecordingRules,
  ruleSpec,
  silent,
  testRules,
} from './promtool';

const NS = 'ml';
const app = Testing.app();
const chart = new Chart(app, 'training', { namespace: NS });
const job = new GpuTrainingStatefulSet(chart, 'trainer', {
  name: 'tr',
  image: 'nvcr.io/nvidia/pytorch:24.08-py3',
  gpusPerPod: 8,
  replicas: 3,
  maxRestarts: 2,
  args: ['train.py'],
  storage: { size: Size.gibibytes(100) },
});
const monitoring = new TrainingMonitoring(chart, 'monitoring', job, { deadline: Duration.hours(2) });
const spec = ruleSpec(monitoring);
const objects = Testing.synth(chart);
const trainer = (pod: string, extra = '') => `{namespace="${NS}",pod="${pod}",container="trainer"${extra}}`;

describe('TrainingMonitoring', () => {
  test('emits a PrometheusRule valid against the pinned CRD, and a dashboard for the sidecar', () => {
    expectCrdValid(objects.filter((o: any) => o.kind === 'PrometheusRule'));
    const cm = objects.find((o: any) => o.metadata.name === 'tr-dashboard');
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
  });

  test('thresholds are the job numbers: its ranks, its gang restarts, its deadline', () => {
    expect(alertOf(monitoring.alerts, 'GpuTrainingRendezvousStuck').expr).toMatch(/ < 3$/);
    expect(alertOf(monitoring.alerts, 'GpuTrainingGangRestartsExhausted').summary).toContain(
      "torchrun's 2 gang restarts",
    );
    expect(alertOf(monitoring.alerts, 'GpuTrainingPastDeadline').expr).toContain('> 7200 ');
    expect(alertOf(monitoring.alerts, 'GpuTrainingFinishedHoldingGpus').forSeconds).toBe(1800);
    const plain = new TrainingMonitoring(chart, 'plain', job, {
      dashboard: false,
      finishedRunGrace: Duration.minutes(5),
    });
    expect(plain.alerts.map(a => a.alert)).not.toContain('GpuTrainingPastDeadline');
    expect(alertOf(plain.alerts, 'GpuTrainingFinishedHoldingGpus').forSeconds).toBe(300);
    expect(plain.dashboard).toBeUndefined();
    expect(() => new TrainingMonitoring(chart, 'bad', job, { deadline: Duration.seconds(5) })).toThrow(
      /TrainingMonitoring 'bad': deadline/,
    );
  });
});

describe('monitoring props every construct shares', () => {
  test('rule and dashboard labels, and the runbook page, are props; unknown props are refused', () => {
    const c = new Chart(Testing.app(), 'c', { namespace: NS });
    const j = new GpuTrainingStatefulSet(c, 'j', { name: 'j', image: 'a/b:1', gpusPerPod: 1, args: ['t.py'] });
    new TrainingMonitoring(c, 'm', j, {
      ruleLabels: { prometheus: 'gpu' },
      dashboardLabels: { dashboards: 'gpu' },
      runbookBaseUrl: 'https://wiki.example.com/runbooks/gpu',
    });
    const out = Testing.synth(c);
    const rule = out.find((o: any) => o.kind === 'PrometheusRule');
    expect(rule.metadata.labels.prometheus).toBe('gpu');
    expect(rule.metadata.labels.release).toBeUndefined();
    expect(rule.spec.groups[0].rules[0].annotations.runbook_url).toBe(
      'https://wiki.example.com/runbooks/gpu#gputraininggangrestartsexhausted',
    );
    const cm = out.find((o: any) => o.kind === 'ConfigMap' && o.metadata.name === 'j-dashboard');
    expect(cm.metadata.labels).toMatchObject({ dashboards: 'gpu' });
    expect(cm.metadata.labels.grafana_dashboard).toBeUndefined();
    expect(() => new TrainingMonitoring(c, 'x', j, { runbookBaseUrl: 'wiki#here' })).toThrow(
      /TrainingMonitoring 'x': runbookBaseUrl must be an http\(s\) URL without a fragment/,
    );
    expect(() => new TrainingMonitoring(c, 'y', j, { rulesLabels: {} } as any)).toThrow(/TrainingMonitoring 'y'/);
    // Rules kept in a monitoring chart of their own select the workload's namespace.
    const elsewhere = new Chart(c.node.root, 'monitoring', { namespace: 'monitoring' });
    const m = new TrainingMonitoring(elsewhere, 'm', j);
    expect(m.alerts[0].expr).toContain(`namespace="${NS}"`);
    expect(Testing.synth(elsewhere).find((o: any) => o.kind === 'PrometheusRule').metadata.namespace).toBe(
      'monitoring',
    );
  });
});

describePromtool('training alerts under promtool', () => {
  test('promtool check rules accepts the rule group, and every dashboard query parses', () => {
    expect(checkRules(spec).ok).toBe(true);
    const cm = objects.find((o: any) => o.metadata.name === 'tr-dashboard');
    const r = checkRules(
      queriesAsRecordingRules('dashboard', dashboardQueries(JSON.parse(cm.data['tr-dashboard.json']))),
    );
    expect(r.output).toContain('SUCCESS');
  });

  test('each alert fires just past its threshold and stays silent before it and for healthy ranks', () => {
    const minutes = 40;
    const ready = (v: number) =>
      constant(`kube_statefulset_status_replicas_ready{namespace="${NS}",statefulset="tr"}`, v, minutes);
    const r = testRules(spec, [
      {
        name: 'tr-1 exits with an error at minute 3 (gang restarts used up); tr-0 finished (Completed)',
        interval: '1m',
        input_series: [
          { series: `kube_pod_container_status_restarts_total${trainer('tr-1')}`, values: `0 0 0 1x${minutes}` },
          {
            series: `kube_pod_container_status_last_terminated_reason${trainer('tr-1', ',reason="Error"')}`,
            values: `_ _ _ 1x${minutes}`,
          },
          { series: `kube_pod_container_status_restarts_total${trainer('tr-0')}`, values: `0 0 0 1x${minutes}` },
          {
            series: `kube_pod_container_status_last_terminated_reason${trainer('tr-0', ',reason="Completed"')}`,
            values: `_ _ _ 1x${minutes}`,
          },
        ],
        alert_rule_test: [
          silent('GpuTrainingGangRestartsExhausted', 120),
          fires(spec, 'GpuTrainingGangRestartsExhausted', 180, { namespace: NS, pod: 'tr-1', container: 'trainer' }),
          // The restart leaves the window of two longest back-offs.
          silent('GpuTrainingGangRestartsExhausted', 180 + 600 + 60),
        ],
      },
      {
        name: 'tr-2 in CrashLoopBackOff for the longest back-off; tr-0 merely creating',
        interval: '1m',
        input_series: [
          constant(
            `kube_pod_container_status_waiting_reason${trainer('tr-2', ',reason="CrashLoopBackOff"')}`,
            1,
            minutes,
          ),
          constant(
            `kube_pod_container_status_waiting_reason${trainer('tr-0', ',reason="ContainerCreating"')}`,
            1,
            minutes,
          ),
        ],
        alert_rule_test: [
          silent('GpuTrainingRankCrashLooping', 240),
          fires(spec, 'GpuTrainingRankCrashLooping', 300, {
            namespace: NS,
            pod: 'tr-2',
            container: 'trainer',
            reason: 'CrashLoopBackOff',
          }),
        ],
      },
      {
        name: 'two of three ranks Ready past the rendezvous join timeout',
        interval: '1m',
        input_series: [ready(2)],
        alert_rule_test: [
          silent('GpuTrainingRendezvousStuck', 540),
          fires(spec, 'GpuTrainingRendezvousStuck', 600, { namespace: NS }),
        ],
      },
      {
        name: 'all three ranks Ready: silent',
        interval: '1m',
        input_series: [ready(3)],
        alert_rule_test: [silent('GpuTrainingRendezvousStuck', 1200)],
      },
      {
        name: 'tr-0 finished and idles on its GPUs; tr-1 finished and is not running',
        interval: '1m',
        input_series: [
          constant(
            `kube_pod_container_status_last_terminated_reason${trainer('tr-0', ',reason="Completed"')}`,
            1,
            minutes,
          ),
          constant(`kube_pod_container_status_running${trainer('tr-0')}`, 1, minutes),
          constant(
            `kube_pod_container_status_last_terminated_reason${trainer('tr-1', ',reason="Completed"')}`,
            1,
            minutes,
          ),
          constant(`kube_pod_container_status_running${trainer('tr-1')}`, 0, minutes),
        ],
        alert_rule_test: [
          silent('GpuTrainingFinishedHoldingGpus', 1740),
          fires(spec, 'GpuTrainingFinishedHoldingGpus', 1800, {
            namespace: NS,
            pod: 'tr-0',
            container: 'trainer',
            reason: 'Completed',
          }),
        ],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test("the GPU panel reads the DCGM exporter's pod label either way Prometheus keeps it", () => {
    const expr = monitoring.panels.find(p => p.title === 'GPU utilization')!.queries[0].expr;
    const rules = { groups: [{ name: 'gpu', rules: [{ record: 'gpu:util', expr }] }] };
    const r = testRules(rules, [
      {
        interval: '1m',
        input_series: [
          // honorLabels: false (the exporter's own labels renamed), two GPUs of tr-0.
          constant(`DCGM_FI_DEV_GPU_UTIL{exported_namespace="${NS}",exported_pod="tr-0",gpu="0"}`, 50, 10),
          constant(`DCGM_FI_DEV_GPU_UTIL{exported_namespace="${NS}",exported_pod="tr-0",gpu="1"}`, 70, 10),
          // honorLabels: true.
          constant(`DCGM_FI_DEV_GPU_UTIL{namespace="${NS}",pod="tr-1",gpu="0"}`, 30, 10),
          // Another job's pod and another namespace's.
          constant(`DCGM_FI_DEV_GPU_UTIL{namespace="${NS}",pod="other-0",gpu="0"}`, 99, 10),
          constant(`DCGM_FI_DEV_GPU_UTIL{exported_namespace="dev",exported_pod="tr-2",gpu="0"}`, 99, 10),
        ],
        promql_expr_test: [
          {
            expr: 'gpu:util',
            eval_time: '5m',
            exp_samples: [
              { labels: 'gpu:util{pod="tr-0"}', value: 60 },
              { labels: 'gpu:util{pod="tr-1"}', value: 30 },
            ],
          },
        ],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('the deadline: past it unfinished fires; all ranks finished stays silent', () => {
    const minutes = 130;
    const created = constant(`kube_statefulset_created{namespace="${NS}",statefulset="tr"}`, 0, minutes);
    const done = (pod: string) =>
      constant(`kube_pod_container_status_last_terminated_reason${trainer(pod, ',reason="Completed"')}`, 1, minutes);
    const r = testRules(spec, [
      {
        name: 'two of three ranks finished',
        interval: '1m',
        input_series: [created, done('tr-0'), done('tr-1')],
        alert_rule_test: [
          silent('GpuTrainingPastDeadline', 7200),
          fires(spec, 'GpuTrainingPastDeadline', evaluationAfter(7200), { namespace: NS, statefulset: 'tr' }),
        ],
      },
      {
        name: 'every rank finished',
        interval: '1m',
        input_series: [created, done('tr-0'), done('tr-1'), done('tr-2')],
        alert_rule_test: [silent('GpuTrainingPastDeadline', 7800)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });
});
