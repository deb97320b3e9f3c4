import { GpuTrainingJob } from '../training/gpu-training-job';
import { TRAINER_CONTAINER } from '../training/practice';
import { Validator } from '../validation/validate';
import { KSM, RENDEZVOUS_JOIN_TIMEOUT_SECONDS } from './metric-facts';
import { AlertRule, DashboardPanel, namespaceMatcher, trainerGpuPanels, quote, selector } from './rules';

/**
 * How long after its pods' grace period a Job the JobSet restarts may still show Failed: the
 * JobSet controller's reconcile and kube-state-metrics' watch, with two scrapes (of 30 s) of slack.
 * A restart deletes the failed Job in the foreground (jobset_controller.go deleteJobs, v0.12.0),
 * which waits for its pods to end, within their grace period.
 */
export const JOBSET_RESTART_MARGIN_SECONDS = 120;
/** The window in which gang restarts are counted, by default. */
export const DEFAULT_RESTART_WINDOW_SECONDS = 3600;

/** What the JobSet trainer's alerts and dashboard are made of. */
export interface TrainingSignals {
  readonly alerts: AlertRule[];
  readonly panels: DashboardPanel[];
}

/**
 * The alerts and panels of a `GpuTrainingJob`, all from kube-state-metrics' Job and pod series:
 * JobSet v0.12.0's own metrics are only `jobset_completed_total` and `jobset_failed_total`
 * (pkg/metrics/metrics.go), and its restart count lives in the JobSet's status, which
 * kube-state-metrics does not export. A gang restart deletes the Job and creates it again under
 * the same name (`<jobSet>-node-0`, jobset_controller.go getChildJobs, deleteJobs), so each one
 * is a new value of the Job's creation time.
 */
export function jobSetTrainingSignals(
  v: Validator,
  job: GpuTrainingJob,
  o: { finishedRunGrace: number; restartWindow: number },
): TrainingSignals {
  const name = job.jobSetName;
  const ns = namespaceMatcher(job);
  const jobSel = `job_name=${quote(job.childJobName)}`;
  // Indexed Job pods are `<job>-<index>-<5-character random suffix>` (the name the JobSet webhook checks,
  // pkg/webhooks/jobset_webhook.go: placement.GenPodName + "-abcde", v0.12.0).
  const podRegex = `${job.childJobName}-[0-9]+-[a-z0-9]+`;
  const pods = `pod=~${quote(podRegex)}`;
  const trainer = `container=${quote(TRAINER_CONTAINER)}`;
  const failedFor = job.terminationGracePeriodSeconds + JOBSET_RESTART_MARGIN_SECONDS;
  const deadline = job.activeDeadlineSeconds;
  // A JobSet deleted by its TTL takes its Job, and the Job's series, with it: the failure must
  // have been seen by then. One evaluation (60 s) after the alert's hold to fire.
  if (job.ttlAfterFinishedSeconds !== undefined && job.ttlAfterFinishedSeconds < failedFor + 60)
    v.fail(
      'job',
      `ttlAfterFinished must be at least ${failedFor + 60}s (the pods' grace period ${job.terminationGracePeriodSeconds}s, ${JOBSET_RESTART_MARGIN_SECONDS}s for a restart to replace a failed Job, and one evaluation), or the JobSet is deleted before GpuTrainingJobFailed can fire`,
      `${job.ttlAfterFinishedSeconds}s`,
    );
  const restarts = `changes(${selector(KSM.jobCreated, ns, jobSel)}[${o.restartWindow}s])`;
  const readyRanks = `count by (namespace) (${selector(KSM.podReady, ns, pods, 'condition="true"')} == 1)`;
  const done = `count by (namespace) (${selector(KSM.containerTerminatedReason, ns, pods, trainer, 'reason="Completed"')} == 1)`;
  const running = `count by (namespace) (${selector(KSM.containerRunning, ns, pods, trainer)} == 1)`;
  const byDeadline = selector(KSM.jobFailed, ns, jobSel, 'reason="DeadlineExceeded"');

  const alerts: AlertRule[] = [
    {
      alert: 'GpuTrainingJobFailed',
      expr:
        `${selector(KSM.jobFailedCondition, ns, jobSel, 'condition="true"')} == 1` +
        (deadline !== undefined ? ` unless on (namespace, job_name) (${byDeadline} == 1)` : ''),
      forSeconds: failedFor,
      severity: 'critical',
      summary: `The training run ${name} failed: its JobSet is Failed, and its GPUs are released.`,
      description: `Its Job has been Failed for ${failedFor}s, longer than a gang restart keeps a failed Job (the pods' grace period ${job.terminationGracePeriodSeconds}s plus ${JOBSET_RESTART_MARGIN_SECONDS}s): the JobSet used its ${job.maxRestarts} restarts (maxRestarts), or a failure rule (an exit code of 126 or 127) failed it at once.`,
    },
    {
      alert: 'GpuTrainingJobGangRestarted',
      expr: `${restarts} > 0`,
      forSeconds: 0,
      severity: 'warning',
      summary: `The training run ${name} restarted its whole gang in the last ${o.restartWindow}s.`,
      description: `The JobSet re-created its Job (a new creation time) within restartWindow (${o.restartWindow}s): a pod failed, and every node restarts from the last checkpoint. Up to ${job.maxRestarts} restarts count (maxRestarts); a preemption or drain does not.`,
    },
    {
      alert: 'GpuTrainingJobRestartLoop',
      expr: `${restarts} > ${job.maxRestarts}`,
      forSeconds: 0,
      severity: 'critical',
      summary: `The training run ${name} restarted more than ${job.maxRestarts} times in ${o.restartWindow}s without failing.`,
      description: `More gang restarts than maxRestarts (${job.maxRestarts}) within restartWindow (${o.restartWindow}s): restarts that do not count (a preemption, an eviction, a node drain: DisruptionTarget) keep interrupting the run, and the JobSet will not fail by itself.`,
    },
    {
      alert: 'GpuTrainingJobRendezvousStuck',
      expr: `(${selector(KSM.jobActive, ns, jobSel)} > 0) ` + `unless on (namespace) (${readyRanks} >= ${job.nodes})`,
      forSeconds: RENDEZVOUS_JOIN_TIMEOUT_SECONDS,
      severity: 'critical',
      summary: `${name} has had fewer than its ${job.nodes} nodes Ready for ${RENDEZVOUS_JOIN_TIMEOUT_SECONDS}s.`,
      description: `The run needs all ${job.nodes} pods (nodes) in torchrun's rendezvous; with one missing (Pending for GPUs or a topology domain, failing to start) the others wait, and after the rendezvous join timeout (${RENDEZVOUS_JOIN_TIMEOUT_SECONDS}s) give up. A JobSet Kueue has not admitted is suspended, has no active pods, and does not fire.`,
    },
    {
      alert: 'GpuTrainingJobFinishedHoldingGpus',
      expr: `(${done}) and on (namespace) (${running})`,
      forSeconds: o.finishedRunGrace,
      severity: 'warning',
      summary: `Nodes of ${name} finished, and others still run on ${job.gpusPerPod} GPUs each after ${o.finishedRunGrace}s.`,
      description: `A node's trainer exited 0 (Completed): the run's last step is done on every rank. Another node's trainer is still running after finishedRunGrace (${o.finishedRunGrace}s), hung at exit (a collective, a process group teardown): the Job cannot complete, and the JobSet keeps its GPUs and quota.`,
    },
  ];
  if (deadline !== undefined) {
    alerts.push({
      alert: 'GpuTrainingJobPastDeadline',
      // Still active past the deadline (the Job controller has not ended it yet), or ended by it; a
      // Job that completed, or failed earlier for another reason (GpuTrainingJobFailed), is not.
      expr:
        `(time() - ${selector(KSM.jobStartTime, ns, jobSel)}) > ${deadline} ` +
        `and on (namespace, job_name) ((${selector(KSM.jobActive, ns, jobSel)} > 0) or (${byDeadline} == 1))`,
      forSeconds: 0,
      severity: 'critical',
      summary: `The training run ${name} did not complete within its activeDeadline of ${deadline}s.`,
      description: `The current attempt started more than activeDeadline (${deadline}s) ago and is still active, or has failed with DeadlineExceeded: the deadline fails the JobSet at once (no restart).`,
    });
  }

  const panels: DashboardPanel[] = [
    {
      title: 'Nodes Ready',
      description: `Ready pods of ${job.nodes}: fewer, and the others wait in the rendezvous.`,
      queries: [
        { expr: `sum(${selector(KSM.podReady, ns, pods, 'condition="true"')})`, legend: 'ready' },
        { expr: `vector(${job.nodes})`, legend: 'needed' },
      ],
    },
    {
      title: 'Gang restarts',
      description: `Restarts of the whole gang in the last ${o.restartWindow}s; the JobSet fails after ${job.maxRestarts} counted ones.`,
      queries: [
        { expr: restarts, legend: 'restarts' },
        { expr: `vector(${job.maxRestarts})`, legend: 'maxRestarts' },
      ],
    },
    {
      title: 'Pods by phase',
      description: 'Pending: waiting for GPUs or a topology domain; Succeeded beside Running: a node hung at exit.',
      queries: [{ expr: `count by (phase) (${selector(KSM.podPhase, ns, pods)} == 1)`, legend: '{{phase}}' }],
    },
    {
      title: 'Attempt running time',
      description:
        deadline !== undefined
          ? `Seconds since the current attempt started; the Job fails at activeDeadline (${deadline}s).`
          : 'Seconds since the current attempt started.',
      unit: 's',
      queries: [
        { expr: `time() - ${selector(KSM.jobStartTime, ns, jobSel)}`, legend: 'running' },
        ...(deadline !== undefined ? [{ expr: `vector(${deadline})`, legend: 'activeDeadline' }] : []),
      ],
    },
    ...trainerGpuPanels(job, podRegex, 'node while Ready means a stuck rendezvous or a hung exit'),
  ];
  return { alerts, panels };
}
