import { Chart, Duration, Testing } from 'cdk8s';
import { GpuTrainingJob, GpuTrainingStatefulSet, TrainingMonitoring } from '../../src';
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
const chart = new Chart(app, 'pretraining', { namespace: NS });
const jobProps = {
  image: 'nvcr.io/nvidia/pytorch:24.08-py3',
  gpusPerPod: 8,
  nodes: 3,
  maxRestarts: 2,
  args: ['train.py'],
};
const job = new GpuTrainingJob(chart, 'pretrain', { ...jobProps, name: 'pt', activeDeadline: Duration.hours(2) });
const monitoring = new TrainingMonitoring(chart, 'monitoring', job);
const spec = ruleSpec(monitoring);
const objects = Testing.synth(chart);
/** The default grace period (300 s) plus the time a restart keeps a failed Job (120 s). */
const FAILED_FOR = 420;
const JOB = `namespace="${NS}",job_name="pt-node-0"`;
const pod = (index: number, suffix = 'abcde') => `pt-node-0-${index}-${suffix}`;
const trainer = (p: string, extra = '') => `{namespace="${NS}",pod="${p}",container="trainer"${extra}}`;

describe('TrainingMonitoring of a GpuTrainingJob', () => {
  test('emits a PrometheusRule valid against the pinned CRD, labelled with the JobSet, and a dashboard', () => {
    expectCrdValid(objects.filter((o: any) => o.kind === 'PrometheusRule'));
    expect(spec.groups[0].rules.every((r: any) => r.labels.jobset === 'pt')).toBe(true);
    expect(objects.find((o: any) => o.metadata.name === 'pt-dashboard').metadata.labels.grafana_dashboard).toBe('1');
  });

  test("thresholds are the job's numbers: nodes, maxRestarts, grace period, activeDeadline", () => {
    expect(alertOf(monitoring.alerts, 'GpuTrainingJobRendezvousStuck').expr).toMatch(/>= 3\)$/);
    expect(alertOf(monitoring.alerts, 'GpuTrainingJobRestartLoop').expr).toMatch(/\[3600s\]\) > 2$/);
    expect(alertOf(monitoring.alerts, 'GpuTrainingJobFailed').forSeconds).toBe(FAILED_FOR);
    expect(alertOf(monitoring.alerts, 'GpuTrainingJobPastDeadline').expr).toContain('> 7200 ');
    const c = new Chart(Testing.app(), 'c', { namespace: NS });
    const slow = new GpuTrainingJob(c, 'slow', {
      ...jobProps,
      name: 'slow',
      terminationGracePeriod: Duration.minutes(10),
      ttlAfterFinished: Duration.minutes(13), // 600 + 120 + 60: just enough
    });
    const m = new TrainingMonitoring(c, 'm', slow, { restartWindow: Duration.hours(6), dashboard: false });
    expect(alertOf(m.alerts, 'GpuTrainingJobFailed').forSeconds).toBe(720);
    expect(alertOf(m.alerts, 'GpuTrainingJobFailed').expr).not.toContain('DeadlineExceeded');
    expect(alertOf(m.alerts, 'GpuTrainingJobGangRestarted').expr).toContain('[21600s]');
    expect(m.alerts.map(a => a.alert)).not.toContain('GpuTrainingJobPastDeadline');
  });

  test('refuses a TTL that deletes a failed run before its alert, and the other backend’s props', () => {
    const c = new Chart(Testing.app(), 'c', { namespace: NS });
    const quick = new GpuTrainingJob(c, 'quick', { ...jobProps, name: 'quick', ttlAfterFinished: Duration.minutes(5) });
    expect(() => new TrainingMonitoring(c, 'm', quick)).toThrow(
      "TrainingMonitoring 'm': job ttlAfterFinished must be at least 480s",
    );
    expect(() => new TrainingMonitoring(c, 'd', job, { deadline: Duration.hours(1) })).toThrow(
      "TrainingMonitoring 'd': deadline is a GpuTrainingStatefulSet's",
    );
    const sts = new GpuTrainingStatefulSet(c, 'sts', { name: 'sts', image: 'a/b:1', gpusPerPod: 1, args: ['t.py'] });
    expect(() => new TrainingMonitoring(c, 'w', sts, { restartWindow: Duration.hours(1) })).toThrow(
      "TrainingMonitoring 'w': restartWindow is a GpuTrainingJob's",
    );
    expect(() => new TrainingMonitoring(c, 'x', {} as any)).toThrow(
      "TrainingMonitoring 'x': job must be a GpuTrainingStatefulSet or a GpuTrainingJob",
    );
  });
});

describePromtool('JobSet training alerts under promtool', () => {
  test('promtool check rules accepts the rule group, and every dashboard query parses', () => {
    expect(checkRules(spec).ok).toBe(true);
    const cm = objects.find((o: any) => o.metadata.name === 'pt-dashboard');
    const r = checkRules(
      queriesAsRecordingRules('dashboard', dashboardQueries(JSON.parse(cm.data['pt-dashboard.json']))),
    );
    expect(r.output).toContain('SUCCESS');
  });

  test('a failed run fires after a restart would have replaced its Job; a restart and a deadline do not', () => {
    const failed = (values: string) => ({ series: `kube_job_failed{${JOB},condition="true"}`, values });
    const r = testRules(spec, [
      {
        name: 'the Job stays Failed: restarts used up',
        interval: '1m',
        input_series: [failed('1x20')],
        alert_rule_test: [
          silent('GpuTrainingJobFailed', FAILED_FOR - 60),
          fires(spec, 'GpuTrainingJobFailed', FAILED_FOR, { namespace: NS, job_name: 'pt-node-0', condition: 'true' }),
        ],
      },
      {
        name: 'a gang restart: Failed for the grace period, then deleted and re-created',
        interval: '1m',
        input_series: [failed('1 1 1 1 1 1 stale 0x13')],
        alert_rule_test: [silent('GpuTrainingJobFailed', 360), silent('GpuTrainingJobFailed', 600)],
      },
      {
        name: 'failed by its deadline: the deadline alert says so instead',
        interval: '1m',
        input_series: [
          failed('1x20'),
          { series: `kube_job_status_failed{${JOB},reason="DeadlineExceeded"}`, values: '1x20' },
        ],
        alert_rule_test: [silent('GpuTrainingJobFailed', 900)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('each gang restart (a new creation time, across the gap while the Job is re-created) fires for the window', () => {
    const created = (values: string) => ({ series: `kube_job_created{${JOB}}`, values });
    const r = testRules(spec, [
      {
        name: 'one restart at minute 3',
        interval: '1m',
        input_series: [created('0 0 stale 180x70')],
        alert_rule_test: [
          silent('GpuTrainingJobGangRestarted', 120),
          fires(spec, 'GpuTrainingJobGangRestarted', 180, { namespace: NS, job_name: 'pt-node-0' }),
          silent('GpuTrainingJobRestartLoop', 180),
          // The restart leaves the one-hour window.
          silent('GpuTrainingJobGangRestarted', 180 + 3600),
        ],
      },
      {
        name: 'three restarts within the hour, one more than maxRestarts: a loop of uncounted restarts',
        interval: '1m',
        input_series: [created('0 0 0 180 180 180 360 360 360 540x10')],
        alert_rule_test: [
          silent('GpuTrainingJobRestartLoop', 480),
          fires(spec, 'GpuTrainingJobRestartLoop', 540, { namespace: NS, job_name: 'pt-node-0' }),
        ],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('fewer Ready nodes than the gang past the join timeout fires; a full or suspended gang does not', () => {
    const active = (n: number) => constant(`kube_job_status_active{${JOB}}`, n, 30);
    const ready = (p: string, v: 'true' | 'false') =>
      constant(`kube_pod_status_ready{namespace="${NS}",pod="${p}",condition="${v}"}`, 1, 30);
    const r = testRules(spec, [
      {
        name: 'two of three nodes Ready; another JobSet whose name extends this one is not counted',
        interval: '1m',
        input_series: [
          active(3),
          ready(pod(0), 'true'),
          ready(pod(1), 'true'),
          ready(pod(2), 'false'),
          ready('pt-node-0-1-node-0-0-abcde', 'true'),
        ],
        alert_rule_test: [
          silent('GpuTrainingJobRendezvousStuck', 540),
          fires(spec, 'GpuTrainingJobRendezvousStuck', 600, { namespace: NS, job_name: 'pt-node-0' }),
        ],
      },
      {
        name: 'all three Ready',
        interval: '1m',
        input_series: [active(3), ready(pod(0), 'true'), ready(pod(1), 'true'), ready(pod(2), 'true')],
        alert_rule_test: [silent('GpuTrainingJobRendezvousStuck', 1200)],
      },
      {
        name: 'suspended until Kueue admits it: no active pods',
        interval: '1m',
        input_series: [active(0)],
        alert_rule_test: [silent('GpuTrainingJobRendezvousStuck', 1200)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('a node still running after another finished fires after finishedRunGrace; a finished run does not', () => {
    const done = (p: string) =>
      constant(`kube_pod_container_status_terminated_reason${trainer(p, ',reason="Completed"')}`, 1, 40);
    const running = (p: string, v: number) => constant(`kube_pod_container_status_running${trainer(p)}`, v, 40);
    const r = testRules(spec, [
      {
        name: 'nodes 0 and 1 Completed, node 2 hung at exit',
        interval: '1m',
        input_series: [done(pod(0)), done(pod(1)), running(pod(0), 0), running(pod(1), 0), running(pod(2), 1)],
        alert_rule_test: [
          silent('GpuTrainingJobFinishedHoldingGpus', 1740),
          fires(spec, 'GpuTrainingJobFinishedHoldingGpus', 1800, { namespace: NS }),
        ],
      },
      {
        name: 'every node Completed',
        interval: '1m',
        input_series: [done(pod(0)), done(pod(1)), done(pod(2)), running(pod(0), 0), running(pod(1), 0)],
        alert_rule_test: [silent('GpuTrainingJobFinishedHoldingGpus', 2400)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('an attempt past activeDeadline fires, running or ended by it; a completed or otherwise failed one does not', () => {
    const minutes = 130;
    const started = constant(`kube_job_status_start_time{${JOB}}`, 0, minutes);
    const active = (n: number) => constant(`kube_job_status_active{${JOB}}`, n, minutes);
    const failedBy = (reason: string) => constant(`kube_job_status_failed{${JOB},reason="${reason}"}`, 1, minutes);
    const firesAfterDeadline = fires(spec, 'GpuTrainingJobPastDeadline', evaluationAfter(7200), {
      namespace: NS,
      job_name: 'pt-node-0',
    });
    const r = testRules(spec, [
      {
        name: 'still running',
        interval: '1m',
        input_series: [started, active(3)],
        alert_rule_test: [silent('GpuTrainingJobPastDeadline', 7200), firesAfterDeadline],
      },
      {
        name: 'ended by the deadline',
        interval: '1m',
        input_series: [started, active(0), failedBy('DeadlineExceeded')],
        alert_rule_test: [silent('GpuTrainingJobPastDeadline', 7200), firesAfterDeadline],
      },
      {
        name: 'completed',
        interval: '1m',
        input_series: [started, active(0), constant(`kube_job_complete{${JOB},condition="true"}`, 1, minutes)],
        alert_rule_test: [silent('GpuTrainingJobPastDeadline', 7800)],
      },
      {
        name: 'failed earlier, its restarts used up (GpuTrainingJobFailed says so)',
        interval: '1m',
        input_series: [started, active(0), failedBy('')],
        alert_rule_test: [silent('GpuTrainingJobPastDeadline', 7800)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('a deliberately broken rule fails: a Failed alert that would fire within a restart', () => {
    const broken = structuredClone(spec);
    broken.groups[0].rules.find((x: any) => x.alert === 'GpuTrainingJobFailed').for = '60s';
    const r = testRules(broken, [
      {
        interval: '1m',
        input_series: [{ series: `kube_job_failed{${JOB},condition="true"}`, values: '1 1 1 1 1 1 stale 0x13' }],
        alert_rule_test: [silent('GpuTrainingJobFailed', 300)],
      },
    ]);
    expect(r.ok).toBe(false);
    expect(r.output).toContain('FAILED');
  });
});
