import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import {
  ROTATION_RUN_DEADLINE_SECONDS,
  ROTATION_START_DEADLINE_SECONDS,
  RotatingGpuSecret,
} from '../secrets/rotating-gpu-secret';
import { Validator } from '../validation/validate';
import { KSM } from './metric-facts';
import {
  AlertRule,
  dashboardConfigMap,
  dashboardJson,
  DashboardPanel,
  MONITORING_PROP_KEYS,
  MonitoringProps,
  namespaceMatcher,
  prometheusRule,
  quote,
  resolveMonitoring,
  selector,
} from './rules';

/**
 * Alert rules (a PrometheusRule) and a Grafana dashboard (a ConfigMap) for a `RotatingGpuSecret`
 * with a rotator, from its timing model: the rotation period, the credential's lifetime, the
 * rotation Job's start and run deadlines, and the worst-case propagation into every pod (read
 * when the app is synthesized, so mounts made after this construct count).
 */
export class SecretRotationMonitoring extends Construct {
  /** The PrometheusRule. */
  readonly prometheusRule: ApiObject;
  /** The dashboard ConfigMap, unless `dashboard: false`. */
  readonly dashboard?: ApiObject;
  /** The dashboard's panels and queries, as data. */
  readonly panels: readonly DashboardPanel[];
  private readonly secret: RotatingGpuSecret;
  private readonly cronJob: string;
  private readonly initialJob: string;
  private readonly ns: string | undefined;

  constructor(scope: Construct, id: string, secret: RotatingGpuSecret, props: MonitoringProps = {}) {
    super(scope, id);
    const v = new Validator('SecretRotationMonitoring', id);
    if (!(secret instanceof RotatingGpuSecret)) v.fail('secret', 'must be a RotatingGpuSecret', secret);
    if (!secret.rotator || secret.rotationPeriodSeconds === undefined)
      v.fail(
        'secret',
        'must have a rotator (rotation): an externally written Secret has no CronJob to watch',
        secret.secretName,
      );
    v.knownProps('', props, MONITORING_PROP_KEYS);
    const shared = resolveMonitoring(v, props);
    this.secret = secret;
    this.cronJob = secret.rotator!.cronJob.name;
    this.initialJob = secret.rotator!.initialJob.name;
    const ns = (this.ns = namespaceMatcher(secret));

    const name = secret.secretName;
    const labels = {
      [LABEL_NAME]: name,
      [LABEL_INSTANCE]: name,
      [LABEL_COMPONENT]: 'monitoring',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    this.prometheusRule = prometheusRule(this, {
      name: `${this.cronJob}`,
      labels: { ...labels, ...shared.ruleLabels },
      group: `${name}.rotation`,
      rules: () => this.alerts,
      ruleLabels: { secret: name },
      runbookBase: shared.runbookBaseUrl,
    });

    const age = `time() - ${selector(KSM.cronJobLastSuccess, ns, `cronjob=${quote(this.cronJob)}`)}`;
    this.panels = [
      {
        title: 'Credential age',
        description: 'Seconds since the rotation CronJob last succeeded: the age of the credential in the Secret.',
        unit: 's',
        queries: [{ expr: age, legend: 'age' }],
      },
      {
        title: 'Rotation Jobs',
        description: 'Succeeded and failed pods of the first-rotation Job.',
        queries: [
          { expr: selector(KSM.jobSucceeded, ns, `job_name=${quote(this.initialJob)}`), legend: 'first: succeeded' },
          { expr: selector(KSM.jobFailed, ns, `job_name=${quote(this.initialJob)}`), legend: 'first: failed' },
        ],
      },
    ];
    if (shared.dashboard) {
      const namespace = Chart.of(secret).namespace;
      this.dashboard = dashboardConfigMap(this, {
        name: `${name}-dashboard`,
        labels: { ...labels, ...shared.dashboardLabels },
        dashboard: dashboardJson({
          uid: `cdk8s-gpu-${namespace ?? 'default'}-${name}`.slice(0, 40),
          title: `Credential rotation: ${name}${namespace ? ` (${namespace})` : ''}`,
          tags: ['cdk8s-gpu', 'secrets'],
          panels: this.panels,
        }),
      });
    }
  }

  /** The alerts, from the Secret's timing model as it is now (mounts add reload timeouts). */
  get alerts(): readonly AlertRule[] {
    const s = this.secret;
    const every = s.rotationPeriodSeconds!;
    const ttl = s.credentialTtlSeconds;
    const propagation = s.worstCasePropagationSeconds;
    const ns = this.ns;
    const lastSuccess = selector(KSM.cronJobLastSuccess, ns, `cronjob=${quote(this.cronJob)}`);
    const overdue = every + ROTATION_START_DEADLINE_SECONDS + ROTATION_RUN_DEADLINE_SECONDS;
    const alerts: AlertRule[] = [
      {
        alert: 'GpuCredentialRotationOverdue',
        expr: `(time() - ${lastSuccess}) > ${overdue}`,
        forSeconds: 0,
        severity: 'warning',
        summary: `The rotation of ${s.secretName} has not succeeded for ${overdue}s: a scheduled run was missed or failed.`,
        description: `Threshold: rotation period ${every}s + the Job's start deadline ${ROTATION_START_DEADLINE_SECONDS}s + run deadline ${ROTATION_RUN_DEADLINE_SECONDS}s = ${overdue}s since CronJob ${this.cronJob} last succeeded.`,
      },
      {
        alert: 'GpuCredentialFirstRotationMissing',
        expr:
          `(${selector(KSM.jobSucceeded, ns, `job_name=${quote(this.initialJob)}`)} == 0) ` +
          `unless on (namespace) ${lastSuccess}`,
        forSeconds: ROTATION_RUN_DEADLINE_SECONDS,
        severity: 'critical',
        summary: `The first rotation of ${s.secretName} has not written it: pods that mount it wait in ContainerCreating.`,
        description: `Job ${this.initialJob} has not succeeded within its run deadline (${ROTATION_RUN_DEADLINE_SECONDS}s, activeDeadlineSeconds), and no scheduled rotation has succeeded either.`,
      },
    ];
    if (ttl !== undefined) {
      const threshold = ttl - propagation;
      alerts.push({
        alert: 'GpuCredentialNearExpiry',
        expr: `(time() - ${lastSuccess}) > ${threshold}`,
        forSeconds: 0,
        severity: 'critical',
        summary: `The credential in ${s.secretName} is too old for a new one to reach every pod before it expires.`,
        description: `Threshold: credentialTtl ${ttl}s - worst-case propagation ${propagation}s = ${threshold}s since the last successful rotation; a rotation that succeeds now may still reach some pods after the credential expires.`,
      });
    }
    return alerts;
  }
}
