import { ApiObject, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { podNamePattern } from '../common/names';
import { GpuTrainingJob } from '../training/gpu-training-job';
import { GpuTrainingStatefulSet } from '../training/gpu-training-stateful-set';
import { TRAINER_CONTAINER } from '../training/practice';
import { Validator } from '../validation/validate';
import { KSM, KUBELET_MAX_BACKOFF_SECONDS, RENDEZVOUS_JOIN_TIMEOUT_SECONDS } from './metric-facts';
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
  resolveMonitoring,
  selector,
  trainerGpuPanels,
} from './rules';
import { DEFAULT_RESTART_WINDOW_SECONDS, jobSetTrainingSignals, TrainingSignals } from './training-job-signals';
/** How long a finished run may keep its GPUs, by default. */
export const DEFAULT_FINISHED_RUN_GRACE_SECONDS = 1800;

/** Alerts and a dashboard for a training job. */
export interface TrainingMonitoringProps extends MonitoringProps {
  /**
   * How long the run may take from the creation of its StatefulSet: past it, a run not finished
   * on every rank fires an alert. A `GpuTrainingJob` has its own, `activeDeadline`, which its
   * deadline alert reads: this prop is refused for it.
   * @default - no deadline alert
   */
  readonly deadline?: Duration;
  /**
   * How long a finished run may keep GPUs before an alert: a StatefulSet's ranks that idle on
   * their GPUs (to collect results) until it is deleted, or a `GpuTrainingJob`'s nodes still
   * running after another node finished.
   * @default Duration.minutes(30)
   */
  readonly finishedRunGrace?: Duration;
  /**
   * `GpuTrainingJob` only: the window in which gang restarts are counted. Each restart fires a
   * warning for this long; more than `maxRestarts` in it (possible only with restarts that do not
   * count, a preemption or drain) fire a restart-loop alert.
   * @default Duration.hours(1) - an attempt of a multi-node run takes minutes to be scheduled and
   * to rendezvous: more restarts than the budget within an hour are a loop, not bad luck
   */
  readonly restartWindow?: Duration;
}

/**
 * Alert rules (a PrometheusRule) and a Grafana dashboard (a ConfigMap) for a training job, from
 * the job's own numbers. For a `GpuTrainingStatefulSet`: its ranks, its gang restarts, and the
 * completion its launch wrapper records (a finished rank's trainer last terminated `Completed`).
 * For a `GpuTrainingJob` (a JobSet): its nodes, its whole-gang restarts, its pods' grace period
 * and its `activeDeadline`, from its Job's kube-state-metrics series.
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

  constructor(
    scope: Construct,
    id: string,
    job: GpuTrainingStatefulSet | GpuTrainingJob,
    props: TrainingMonitoringProps = {},
  ) {
    super(scope, id);
    const v = new Validator('TrainingMonitoring', id);
    const isJobSet = job instanceof GpuTrainingJob;
    if (!isJobSet && !(job instanceof GpuTrainingStatefulSet))
      v.fail('job', 'must be a GpuTrainingStatefulSet or a GpuTrainingJob', job);
    v.knownProps('', props, [...MONITORING_PROP_KEYS, 'deadline', 'finishedRunGrace', 'restartWindow']);
    const shared = resolveMonitoring(v, props);
    const grace =
      props.finishedRunGrace === undefined
        ? DEFAULT_FINISHED_RUN_GRACE_SECONDS
        : v.seconds('finishedRunGrace', props.finishedRunGrace, 0);

    let name: string;
    let signals: TrainingSignals;
    if (isJobSet) {
      if (props.deadline !== undefined)
        v.fail(
          'deadline',
          "is a GpuTrainingStatefulSet's: a GpuTrainingJob's alert reads its activeDeadline",
          props.deadline,
        );
      const restartWindow =
        props.restartWindow === undefined
          ? DEFAULT_RESTART_WINDOW_SECONDS
          : v.seconds('restartWindow', props.restartWindow, 60);
      name = job.jobSetName;
      signals = jobSetTrainingSignals(v, job, { finishedRunGrace: grace, restartWindow });
    } else {
      if (props.restartWindow !== undefined)
        v.fail(
          'restartWindow',
          "is a GpuTrainingJob's: a GpuTrainingStatefulSet's restarts are counted over two kubelet back-offs",
          props.restartWindow,
        );
      const deadline = props.deadline === undefined ? undefined : v.seconds('deadline', props.deadline, 60);
      name = job.statefulSetName;
      signals = statefulSetTrainingSignals(job, { finishedRunGrace: grace, deadline });
    }
    this.alerts = signals.alerts;

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
      ruleLabels: isJobSet ? { jobset: name } : { statefulset: name },
      runbookBase: shared.runbookBaseUrl,
    });

    this.panels = signals.panels;
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

/** The alerts and panels of a `GpuTrainingStatefulSet`. */
function statefulSetTrainingSignals(
  job: GpuTrainingStatefulSet,
  o: { finishedRunGrace: number; deadline?: number },
): TrainingSignals {
  const name = job.statefulSetName;
  const ns = namespaceMatcher(job);
  const pods = podMatcher(name);
  const trainer = `container=${quote(TRAINER_CONTAINER)}`;
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
      forSeconds: o.finishedRunGrace,
      severity: 'warning',
      summary: `${name} finished run ${job.runId}, and its ranks still hold ${job.gpusPerPod} GPUs each.`,
      description: `The launch wrapper recorded the run complete (the trainer last terminated Completed) and idles instead of training again; after finishedRunGrace (${o.finishedRunGrace}s), delete the StatefulSet to release the GPUs.`,
    },
  ];
  const deadline = o.deadline;
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
  const panels: DashboardPanel[] = [
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
    ...trainerGpuPanels(
      job,
      podNamePattern('StatefulSet', name),
      'rank while Ready means a stuck rendezvous or a finished run',
    ),
  ];
  return { alerts, panels };
}
