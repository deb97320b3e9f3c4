import { Chart, Duration, Size, Testing } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, SecretRotationMonitoring } from '../../src';
import { ROTATION_RUN_DEADLINE_SECONDS, ROTATION_START_DEADLINE_SECONDS } from '../../src/secrets/rotating-gpu-secret';
import { dashboardQueries } from '../../src/monitoring/rules';
import { expectCrdValid } from '../support/crd-schema';
import {
  checkRules,
  constant,
  describePromtool,
  fires,
  queriesAsRecordingRules,
  ruleSpec,
  silent,
  testRules,
} from './promtool';

const NS = 'ml';
const app = Testing.app();
const chart = new Chart(app, 'secrets', { namespace: NS });
const secret = new RotatingGpuSecret(chart, 'creds', {
  name: 'gpu-credentials',
  rotation: { image: 'myorg/rotator:1.0.0', every: Duration.hours(12), credentialTtl: Duration.hours(48) },
});
// Made before the mount: the thresholds are read when the app is synthesized.
const monitoring = new SecretRotationMonitoring(chart, 'monitoring', secret);
const trainer = new GpuTrainingStatefulSet(chart, 'trainer', {
  name: 'tr',
  image: 'myorg/trainer:1.0.0',
  gpusPerPod: 1,
  args: ['train.py'],
  storage: { size: Size.gibibytes(10) },
});
const before = secret.worstCasePropagationSeconds;
secret.mountInto(trainer, {
  path: '/etc/gpu',
  onRotation: Reload.exec(['/bin/reload'], { image: 'myorg/driver:1.0.0', timeout: Duration.seconds(120) }),
});
const spec = ruleSpec(monitoring);
const objects = Testing.synth(chart);
const cronJob = secret.rotator!.cronJob.name;
const initialJob = secret.rotator!.initialJob.name;
const rule = (name: string) => spec.groups[0].rules.find((r: any) => r.alert === name);

describe('SecretRotationMonitoring', () => {
  test('emits a PrometheusRule valid against the pinned CRD', () => {
    expectCrdValid(objects.filter((o: any) => o.kind === 'PrometheusRule'));
  });

  test('thresholds follow the timing model, including mounts made after the construct', () => {
    expect(secret.worstCasePropagationSeconds).toBe(before + 120);
    const expiry = 48 * 3600 - secret.worstCasePropagationSeconds;
    expect(rule('GpuCredentialNearExpiry').expr).toContain(`> ${expiry}`);
    const overdue = 12 * 3600 + ROTATION_START_DEADLINE_SECONDS + ROTATION_RUN_DEADLINE_SECONDS;
    expect(rule('GpuCredentialRotationOverdue').expr).toContain(`> ${overdue}`);
    expect(rule('GpuCredentialFirstRotationMissing').for).toBe(`${ROTATION_RUN_DEADLINE_SECONDS}s`);
  });

  test('refuses a Secret without a rotator, and a TTL-less rotation has no expiry alert', () => {
    const c = new Chart(Testing.app(), 'c');
    const external = new RotatingGpuSecret(c, 'ext', { name: 'ext' });
    expect(() => new SecretRotationMonitoring(c, 'm', external)).toThrow(
      /SecretRotationMonitoring 'm': secret must have a rotator/,
    );
    const noTtl = new RotatingGpuSecret(c, 'nottl', { name: 'nottl', rotation: { image: 'r/r:1' } });
    const m = new SecretRotationMonitoring(c, 'm2', noTtl);
    expect(m.alerts.map(a => a.alert)).toEqual(['GpuCredentialRotationOverdue', 'GpuCredentialFirstRotationMissing']);
  });
});

describePromtool('rotation alerts under promtool', () => {
  test('promtool check rules accepts the rule group, and every dashboard query parses', () => {
    expect(checkRules(spec).ok).toBe(true);
    const cm = objects.find((o: any) => o.metadata.name === 'gpu-credentials-dashboard');
    const queries = dashboardQueries(JSON.parse(cm.data['gpu-credentials-dashboard.json']));
    expect(checkRules(queriesAsRecordingRules('dashboard', queries)).output).toContain('SUCCESS');
  });

  test('each alert fires just past its threshold and stays silent before it', () => {
    const overdue = 12 * 3600 + ROTATION_START_DEADLINE_SECONDS + ROTATION_RUN_DEADLINE_SECONDS;
    const expiry = 48 * 3600 - secret.worstCasePropagationSeconds;
    // The last success lies in the past, so that the age crosses each threshold 10 minutes in.
    const lastSuccess = (age: number) =>
      constant(`kube_cronjob_status_last_successful_time{namespace="${NS}",cronjob="${cronJob}"}`, 600 - age, 20);
    const succeeded = (v: number) =>
      constant(`kube_job_status_succeeded{namespace="${NS}",job_name="${initialJob}"}`, v, 20);
    const labels = { namespace: NS, cronjob: cronJob };
    const r = testRules(spec, [
      {
        name: 'the last success becomes older than a period plus the start and run deadlines',
        interval: '1m',
        input_series: [lastSuccess(overdue)],
        alert_rule_test: [
          silent('GpuCredentialRotationOverdue', 600),
          fires(spec, 'GpuCredentialRotationOverdue', 660, labels),
          silent('GpuCredentialNearExpiry', 660),
        ],
      },
      {
        name: 'the credential becomes older than its lifetime minus the worst-case propagation',
        interval: '1m',
        input_series: [lastSuccess(expiry)],
        alert_rule_test: [silent('GpuCredentialNearExpiry', 600), fires(spec, 'GpuCredentialNearExpiry', 660, labels)],
      },
      {
        name: 'the first rotation has not succeeded within its run deadline, and no scheduled one has',
        interval: '1m',
        input_series: [succeeded(0)],
        alert_rule_test: [
          silent('GpuCredentialFirstRotationMissing', ROTATION_RUN_DEADLINE_SECONDS - 60),
          fires(spec, 'GpuCredentialFirstRotationMissing', ROTATION_RUN_DEADLINE_SECONDS, {
            namespace: NS,
            job_name: initialJob,
          }),
        ],
      },
      {
        name: 'the first rotation failed but a scheduled one succeeded: silent',
        interval: '1m',
        input_series: [succeeded(0), lastSuccess(3600)],
        alert_rule_test: [silent('GpuCredentialFirstRotationMissing', 1200)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });
});
