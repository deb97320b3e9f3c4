import { ApiObject, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { GpuTrainingStatefulSet } from '../training/gpu-training-stateful-set';
import { Validator } from '../validation/validate';
import { DCGM, KSM, KUBELET_MAX_BACKOFF_SECONDS, RENDEZVOUS_JOIN_TIMEOUT_SECONDS } from './metric-facts';
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
  resolveMonitoring,
  selector,
} from './rules';

/** The trainer container's name (GpuTrainingStatefulSet). */
const TRAINER = 'trainer';
/** How long a finished run may keep its GPUs, by default. */
export const DEFAULT_FINISHED_RUN_GRACE_SECONDS = 1800;

/** Alerts and a dashboard for a training job. */
export interface TrainingMonitoringProps extends MonitoringProps {
  /**
   * How long the run may take from the creation of its StatefulSet: past it, a run not finished
   * on every rank fires an alert.
   * @default - no deadline alert
   */
  readonly deadline?: Duration;
  /**
   * How long a finished run's ranks may idle on their GPUs (to collect results) before an alert
   * says to release them by deleting the StatefulSet.
   * @default Duration.minutes(30)
   */
  readonly finishedRunGrace?: Duration;
}

/**
 * Alert rules (a PrometheusRule) and a Grafana dashboard (a ConfigMap) for a
 * `GpuTrainingStatefulSet`, from the job's own numbers: its ranks, its gang restarts, and the
 * completion its launch wrapper records (a finished rank's trainer last terminated `Completed`).
 */
export class TrainingMonitoring extends Construct {
  /** The alerts, as data (what each watches, its threshold and its source). */
  readonly alerts: readonly AlertRule[];
  /** The dashboard's panels and queries, as data. */
  readonly panels: readonly DashboardPanel[];
  /** The PrometheusRule. */
  readonly prometheusRule: ApiObject;
  /** The dashboard ConfigMap, unless `dashboard: false`. */
  readonly dashboard?: ApiObject;

  constructor(scope: Construct, id: string, job: GpuTrainingStatefulSet, props: TrainingMonitoringProps = {}) {
    super(scope, id);
    const v = new Validator('TrainingMonitoring', id);
    if (!(job instanceof GpuTrainingStatefulSet)) v.fail('job', 'must be a GpuTrainingStatefulSet', job);
    v.knownProps('', props, [...MONITORING_PROP_KEYS, 'deadline', 'finishedRunGrace']);
    const shared = resolveMonitoring(v, props);
    const deadline = props.deadline === undefined ? undefined : v.seconds('deadline', props.deadline, 60);
    const grace =
      props.finishedRunGrace === undefined
        ? DEFAULT_FINISHED_RUN_GRACE_SECONDS
        : v.seconds('finishedRunGrace', props.finishedRunGrace, 0);

    const name = job.statefulSetName;
    const ns = namespaceMatcher(job);
    const pods = podMatcher(name);
    const trainer = `container=${quote(TRAINER)}`;
    const sts = `statefulset=${quote(name)}`;
    const completed = `(${selector(KSM.containerLastTerminatedReason, ns, pods, trainer, 'reason="Completed"')} == 1)`;
    const restartWindow = 2 * KUBELET_MAX_BACKOFF_SECONDS;

    const alerts: AlertRule[] = [
      {
        alert: 'GpuTrainingGangRestartsExhausted',
        expr:
          `increase(${selector(KSM.containerRestarts, ns, pods, trainer)}[${restartWindow}s]) > 0 ` +
          `and on (namespace, pod, container) ` +
          `(${selector(KSM.containerLastTerminatedReason, ns, pods, trainer, 'reason!="Completed"')} == 1)`,
        forSeconds: 0,
        severity: 'warning',
        summary: `A rank of ${name} exited with an error after torchrun's ${job.maxRestarts} gang restarts.`,
        description: `torchrun restarts every rank's workers together up to maxRestarts (${job.maxRestarts}) times without a pod restart; a trainer container that restarted (in the last ${restartWindow}s, two of the kubelet's longest back-offs) and last terminated other than Completed has used them all.`,
      },
      {
        alert: 'GpuTrainingRankCrashLooping',
        expr: `${selector(KSM.containerWaitingReason, ns, pods, trainer, 'reason="CrashLoopBackOff"')} == 1`,
        forSeconds: KUBELET_MAX_BACKOFF_SECONDS,
        severity: 'critical',
        summary: `A rank of ${name} is crash-looping: the job cannot make progress.`,
        description: `The trainer container has waited in CrashLoopBackOff for ${KUBELET_MAX_BACKOFF_SECONDS}s, the kubelet's longest back-off: it keeps failing at start, and the other ranks wait for it.`,
      },
      {
        alert: 'GpuTrainingRendezvousStuck',
        expr: `${selector(KSM.statefulSetReplicasReady, ns, sts)} < ${job.replicas}`,
        forSeconds: RENDEZVOUS_JOIN_TIMEOUT_SECONDS,
        severity: 'critical',
        summary: `${name} has had fewer than its ${job.replicas} ranks Ready for ${RENDEZVOUS_JOIN_TIMEOUT_SECONDS}s.`,
        description: `The gang needs all ${job.replicas} ranks (replicas) in torchrun's c10d rendezvous; with one missing (Pending for GPUs, not admitted by Kueue, failing) the others wait, and after the rendezvous join timeout (${RENDEZVOUS_JOIN_TIMEOUT_SECONDS}s) give up.`,
      },
      {
        alert: 'GpuTrainingFinishedHoldingGpus',
        expr: `${completed} and on (namespace, pod, container) (${selector(KSM.containerRunning, ns, pods, trainer)} == 1)`,
        forSeconds: grace,
        severity: 'warning',
        summary: `${name} finished run ${job.runId}, and its ranks still hold ${job.gpusPerPod} GPUs each.`,
        description: `The launch wrapper recorded the run complete (the trainer last terminated Completed) and idles instead of training again; after finishedRunGrace (${grace}s), delete the StatefulSet to release the GPUs.`,
      },
    ];
    if (deadline !== undefined) {
      alerts.push({
        alert: 'GpuTrainingPastDeadline',
        expr:
          `(time() - ${selector(KSM.statefulSetCreated, ns, sts)}) > ${deadline} ` +
          `unless on (namespace) (count by (namespace) (${completed}) >= ${job.replicas})`,
        forSeconds: 0,
        severity: 'warning',
        summary: `${name} has not finished within its deadline of ${deadline}s.`,
        description: `The StatefulSet is older than deadline (${deadline}s) and fewer than its ${job.replicas} ranks have recorded run ${job.runId} complete.`,
      });
    }
    this.alerts = alerts;

    const labels = {
      [LABEL_NAME]: name,
      [LABEL_INSTANCE]: name,
      [LABEL_COMPONENT]: 'monitoring',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    this.prometheusRule = prometheusRule(this, {
      name,
      labels: { ...labels, ...shared.ruleLabels },
      group: `${name}.training`,
      rules: () => this.alerts,
      ruleLabels: { statefulset: name },
      runbookBase: shared.runbookBaseUrl,
    });

    this.panels = [
      {
        title: 'Ranks Ready',
        description: `Ready ranks of ${job.replicas}: fewer, and the others wait in the rendezvous.`,
        queries: [
          { expr: selector(KSM.statefulSetReplicasReady, ns, sts), legend: 'ready' },
          { expr: `vector(${job.replicas})`, legend: 'needed' },
        ],
      },
      {
        title: 'Trainer restarts',
        description: `Pod-level restarts of the trainer: each one follows ${job.maxRestarts} gang restarts inside torchrun.`,
        queries: [
          {
            expr: `sum by (pod) (increase(${selector(KSM.containerRestarts, ns, pods, trainer)}[${restartWindow}s]))`,
            legend: '{{pod}}',
          },
        ],
      },
      {
        title: 'Waiting and last termination',
        description:
          'Why a rank is not running (CrashLoopBackOff, ...) and how its trainer last ended (Completed = run finished).',
        queries: [
          {
            expr: `${selector(KSM.containerWaitingReason, ns, pods, trainer)} == 1`,
            legend: '{{pod}} waiting: {{reason}}',
          },
          {
            expr: `${selector(KSM.containerLastTerminatedReason, ns, pods, trainer)} == 1`,
            legend: '{{pod}} last: {{reason}}',
          },
        ],
      },
      {
        title: 'GPU utilization',
        description: `${DCGM.gpuUtil} from the DCGM exporter: 0 on every rank while Ready means a stuck rendezvous or a finished run.`,
        unit: 'percent',
        queries: [{ expr: dcgmPerPod('avg', DCGM.gpuUtil, job, name), legend: '{{pod}}' }],
      },
      {
        title: 'GPU memory used',
        description: `${DCGM.framebufferUsed} (MiB) from the DCGM exporter.`,
        unit: 'decmbytes',
        queries: [{ expr: dcgmPerPod('sum', DCGM.framebufferUsed, job, name), legend: '{{pod}}' }],
      },
    ];
    if (shared.dashboard) {
      const namespace = Chart.of(job).namespace;
      this.dashboard = dashboardConfigMap(this, {
        name: `${name}-dashboard`,
        labels: { ...labels, ...shared.dashboardLabels },
        dashboard: dashboardJson({
          uid: `cdk8s-gpu-${namespace ?? 'default'}-${name}`.slice(0, 40),
          title: `Training: ${name}${namespace ? ` (${namespace})` : ''}`,
          tags: ['cdk8s-gpu', 'training'],
          panels: this.panels,
        }),
      });
    }
  }
}
