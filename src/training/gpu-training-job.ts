import { ApiObject, Chart, Duration } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { labelSet, LABEL_INSTANCE } from '../common/labels';
import { ManifestObject } from '../common/manifest-object';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { PodSecurityLevel } from '../common/security';
import { addPodValidation } from '../common/workload-pod';
import { Validator } from '../validation/validate';
import { JOB_SET, JobSetFailureAction, JobSetSuccessOperator, TypedJobSet } from './job-set';
import { forwardOnlyEnv, launchCommand } from './launch';
import {
  buildTrainingPod,
  checkTorchrunOptions,
  KUEUE_PRIORITY_LABEL,
  KUEUE_QUEUE_LABEL,
  KUEUE_TAS_ANNOTATIONS,
  resolveTraining,
  sharedClaim,
  TRAINER_CONTAINER,
  TrainingPracticeProps,
  TRAINING_COMPONENT,
  TRAINING_PRACTICE_PROP_KEYS,
} from './practice';
import { staticRankWiring } from './rendezvous';

/**
 * JobSet's annotation for exclusive placement of each Job in one topology domain (jobset_types.go
 * ExclusiveKey, v0.12.0).
 */
export const JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION = 'alpha.jobset.sigs.k8s.io/exclusive-topology';
/** The replicated Job's name: pods are `<jobSet>-node-0-<index>`. */
export const TRAINING_REPLICATED_JOB = 'node';
/** Whole-gang restarts of the JobSet before it fails. */
export const DEFAULT_JOB_MAX_RESTARTS = 3;
/**
 * The characters the JobSet webhook adds to the deterministic pod name before it checks the name
 * is a DNS-1035 label (pkg/webhooks/jobset_webhook.go ValidateCreate, v0.12.0: `+ "-abcde"`).
 */
const POD_NAME_SUFFIX = 6;
/**
 * The pod condition set on a pod that is preempted, evicted or drained (pod disruption conditions:
 * beta and on from 1.26, GA in 1.31).
 */
const DISRUPTION_TARGET = 'DisruptionTarget';
const SHARED_CHECKPOINT_VOLUME = 'checkpoints';

/** What the JobSet does when a pod failure matches a rule. */
export enum TrainingFailureAction {
  /** The JobSet fails at once: a configuration error that a restart cannot fix. */
  FAIL = 'FailJobSet',
  /** The whole gang restarts, counted against `maxRestarts`. */
  RESTART = 'RestartJobSet',
  /** The whole gang restarts without using `maxRestarts`: a preemption, a node drain. */
  RESTART_UNCOUNTED = 'RestartJobSetAndIgnoreMaxRestarts',
}

/**
 * A rule of the failure policy: pods failing with one of `exitCodes` (of the trainer container),
 * or failing with the pod condition `podCondition`, lead to `action` for the whole JobSet.
 */
export interface TrainingFailureRule {
  /**
   * Exit codes of the trainer container (1-255). torchrun itself exits 1 whenever a worker fails,
   * whatever the worker's code, so these match the launcher's own exit code.
   * @default - set exactly one of exitCodes and podCondition
   */
  readonly exitCodes?: number[];
  /**
   * A pod condition type, e.g. `DisruptionTarget` (the pod was preempted, evicted or its node
   * drained) or `ConfigIssue`.
   * @default - set exactly one of exitCodes and podCondition
   */
  readonly podCondition?: string;
  readonly action: TrainingFailureAction;
}

/** The default failure policy: the rules a finite training run needs whatever the script. */
export const DEFAULT_FAILURE_RULES: ReadonlyArray<TrainingFailureRule> = [
  // A preemption, eviction or drain is not the job's fault: restart the gang from its checkpoint
  // without using the restart budget.
  { podCondition: DISRUPTION_TARGET, action: TrainingFailureAction.RESTART_UNCOUNTED },
  // 126: found but not executable, 127: not found (POSIX shells): the image cannot run the
  // launcher, and no restart will change that.
  { exitCodes: [126, 127], action: TrainingFailureAction.FAIL },
];

/** Where the pods are placed: Kueue topology-aware scheduling and JobSet exclusive placement. */
export interface TrainingTopology {
  /**
   * Kueue topology-aware scheduling: every pod in one domain of this level, a node label of the
   * Kueue Topology, e.g. `cloud.provider.com/topology-block` (`kueue.x-k8s.io/podset-required-topology`).
   * Needs `queueName`.
   * @default - not required
   */
  readonly required?: string;
  /**
   * Like `required`, as a preference: Kueue tries this level, then the levels above it
   * (`kueue.x-k8s.io/podset-preferred-topology`). Needs `queueName`.
   * @default - no preference
   */
  readonly preferred?: string;
  /**
   * JobSet exclusive placement: the JobSet's Job gets a topology domain (the node label, e.g.
   * `cloud.google.com/gke-nodepool`) that no other JobSet's Job uses
   * (`alpha.jobset.sigs.k8s.io/exclusive-topology`).
   * @default - not exclusive
   */
  readonly exclusive?: string;
}

/** A ReadWriteMany claim every pod mounts for checkpoints. */
export interface JobCheckpoints {
  /** An existing PersistentVolumeClaim with access mode ReadWriteMany (NFS, CephFS, EFS, Filestore, Lustre...). */
  readonly claimName: string;
  /**
   * Where every pod mounts it.
   * @default '/checkpoints'
   */
  readonly mountPath?: string;
}

export interface GpuTrainingJobProps extends TrainingPracticeProps {
  /**
   * The JobSet's name, a DNS-1035 label. Pods are named `<name>-node-0-<index>-<suffix>`, which
   * the JobSet webhook requires to be a DNS-1035 label too.
   */
  readonly name: string;
  /**
   * Pods (nodes) in the run: the Job's `parallelism` and `completions`.
   * @default 1 - one node; set the node count of a multi-node run explicitly
   */
  readonly nodes?: number;
  /**
   * Whole-gang restarts of the JobSet (`failurePolicy.maxRestarts`): a failed pod fails its Job
   * (`backoffLimit: 0`), and the JobSet re-creates every pod together. When they are used up the
   * JobSet is Failed, its pods end, and its GPUs and Kueue quota are released.
   * @default 3
   */
  readonly maxRestarts?: number;
  /**
   * Rules, in order, for pod failures that should not simply use a restart. The first matching
   * rule wins; a failure no rule matches restarts the gang, counted.
   * @default DEFAULT_FAILURE_RULES - a preemption or drain (DisruptionTarget) restarts without
   * counting; exit 126 or 127 (the launcher cannot run) fails at once
   */
  readonly failurePolicy?: TrainingFailureRule[];
  /**
   * Delete the finished JobSet (and its pods) this long after it completed or failed.
   * @default - kept until deleted: its status stays readable, and GitOps tools and re-applies
   * re-create a deleted object (argo-cd#8586), which would train again
   */
  readonly ttlAfterFinished?: Duration;
  /**
   * The longest one attempt may run (the Job's `activeDeadlineSeconds`). Reaching it fails the
   * JobSet at once (a rule on `DeadlineExceeded`), instead of restarting a run that is too slow.
   * A JobSet restart starts a new attempt, with a new deadline.
   * @default - no deadline
   */
  readonly activeDeadline?: Duration;
  /**
   * Create the JobSet suspended: no pods until `spec.suspend` is false. The manifest's value is
   * what each `kubectl apply` writes, so resume by changing it. Refused with `queueName`: Kueue
   * suspends the JobSet on creation and resumes it on admission.
   * @default - unset (not suspended; under Kueue, suspended until admitted)
   */
  readonly suspend?: boolean;
  /**
   * A Kueue WorkloadPriorityClass (the `kueue.x-k8s.io/priority-class` label): the run's priority
   * for admission and preemption within Kueue. Needs `queueName`.
   * @default - the queue's default priority
   */
  readonly priorityClass?: string;
  /**
   * Topology placement: Kueue topology-aware scheduling and JobSet exclusive placement.
   * @default - none
   */
  readonly topology?: TrainingTopology;
  /**
   * An existing ReadWriteMany claim every pod mounts, for checkpoints written by rank 0 (or
   * sharded by all ranks) and read back after a restart.
   * @default - none: pods keep nothing across a restart unless the script writes elsewhere
   */
  readonly checkpoints?: JobCheckpoints;
}

const OWN_PROP_KEYS: ReadonlyArray<keyof GpuTrainingJobProps> = [
  'name',
  'nodes',
  'maxRestarts',
  'failurePolicy',
  'ttlAfterFinished',
  'activeDeadline',
  'suspend',
  'priorityClass',
  'topology',
  'checkpoints',
];
const PROP_KEYS = [...TRAINING_PRACTICE_PROP_KEYS, ...OWN_PROP_KEYS];
const RULE_KEYS: ReadonlyArray<keyof TrainingFailureRule> = ['exitCodes', 'podCondition', 'action'];
const TOPOLOGY_KEYS: ReadonlyArray<keyof TrainingTopology> = ['required', 'preferred', 'exclusive'];

/**
 * Finite multi-GPU distributed training as a JobSet (jobset.x-k8s.io/v1alpha2, pinned v0.12.0):
 * one Indexed Job of `nodes` pods, torchrun's static rendezvous on the index-0 pod's stable DNS
 * name, whole-gang restarts with a real terminal Failed state, failure rules by exit code or pod
 * condition, and, under Kueue, quota released when the run completes or fails.
 *
 * The pods run the launcher under the shared launch wrapper in its forward-only mode: the JobSet
 * decides completion and failure for the whole run and restarts the gang, so the wrapper keeps no
 * markers; it catches SIGTERM from its first line as the container's PID 1 and forwards it to
 * torchrun, which as PID 1 would drop it until its workers start (docs/training.md, "Signals"),
 * and passes the launcher's exit code on for the failure rules.
 */
export class GpuTrainingJob extends Construct implements IGpuWorkload {
  /** The JobSet's name. */
  readonly jobSetName: string;
  /** The JobSet. */
  readonly jobSet: ApiObject;
  /**
   * The index-0 pod's stable DNS name (`<jobSet>-node-0-0.<jobSet>.<namespace>.svc.<domain>`,
   * through the headless Service the JobSet creates), with `$(POD_NAMESPACE)` expanded by the kubelet.
   */
  readonly masterAddress: string;
  /** The rendezvous port on the index-0 pod (MASTER_PORT). */
  readonly masterPort: number;
  /** Pods (nodes) in the run. */
  readonly nodes: number;
  /** GPUs per pod, and torchrun's processes per node. */
  readonly gpusPerPod: number;
  /** Processes in the run: nodes × gpusPerPod. */
  readonly worldSize: number;
  /** Whole-gang restarts of the JobSet before it fails. */
  readonly maxRestarts: number;
  /** torchrun's shutdown timeout in seconds: the grace period minus a margin. */
  readonly shutdownTimeoutSeconds: number;
  /** The pods' termination grace period in seconds. */
  readonly terminationGracePeriodSeconds: number;
  /** The longest one attempt may run (the Job's `activeDeadlineSeconds`), if set. */
  readonly activeDeadlineSeconds?: number;
  /** How long the finished JobSet is kept (`ttlSecondsAfterFinished`), if set. */
  readonly ttlAfterFinishedSeconds?: number;
  /** The JobSet's one child Job: `<jobSet>-node-0`, re-created under the same name by each gang restart. */
  readonly childJobName: string;
  /** The Kueue LocalQueue, if queued. */
  readonly queueName?: string;
  /** The label selector of the run's pods. */
  readonly podSelector: string;
  /**
   * `kubectl wait jobset/<name> [-n <namespace>] --for=condition=Completed --timeout=-1s`, which exits 0 once the
   * JobSet has the `Completed` condition. It waits for that condition only: a `Failed` JobSet never gets it, so on a
   * failure the command keeps waiting until kubectl's timeout (`-1s` means a week) and then exits non-zero, and a
   * JobSet deleted meanwhile (`ttlAfterFinished`) keeps it waiting too. To stop on a failure as well, watch the
   * `Failed` condition beside it (`kubectl wait jobset/<name> [-n <namespace>] --for=condition=Failed`). A JobSet
   * that does not exist yet fails it at once.
   */
  readonly waitForCompletionCommand: string;
  /** The ConfigMap holding `gpuConfig`, if any. */
  readonly gpuConfigMapName?: string;
  /** The ConfigMap holding `gpuConfig`, if any. */
  readonly gpuConfigMap?: ApiObject;
  /** The NetworkPolicy admitting only the job's own pods (unless `networkPolicy` is unrestricted). */
  readonly networkPolicy?: ApiObject;
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** @internal */
  readonly _securityUid: number | undefined;
  /** @internal */
  readonly _processAliases: Readonly<Record<string, string>>;
  /**
   * @internal A running JobSet's pod template never changes: its pods keep the template they were
   * made with (a mounted Secret's files still update in place; an env read never would).
   */
  readonly _templateChangesRollOut = false;
  /** @internal */
  readonly _templateChangesStay =
    'a running JobSet refuses pod-template changes (the JobSet v0.12.0 webhook keeps spec.replicatedJobs immutable unless the JobSet is suspended), and Stakater Reloader restarts Deployments, StatefulSets, DaemonSets, Argo Rollouts and CronJobs, not JobSets';
  /** @internal */
  get _podOwner(): ApiObject {
    return this.jobSet;
  }

  /** The strictest Pod Security Standard the pod template meets. */
  get podSecurityLevel(): PodSecurityLevel {
    return this._podTemplate.securityLevel();
  }

  constructor(scope: Construct, id: string, props: GpuTrainingJobProps) {
    super(scope, id);
    const v = new Validator('GpuTrainingJob', id);
    v.knownProps('', props, PROP_KEYS);

    this.nodes = v.wholeNumber('nodes', props.nodes ?? 1, 1);
    const name = (this.jobSetName = jobSetName(v, props.name, this.nodes));
    const basics = resolveTraining(v, props, this.nodes, 'nodes');
    this.gpusPerPod = basics.gpusPerPod;
    this.worldSize = basics.worldSize;
    this.masterPort = basics.masterPort;
    this.shutdownTimeoutSeconds = basics.shutdownTimeoutSeconds;
    this.terminationGracePeriodSeconds = basics.grace;
    this.queueName = basics.queueName;
    this._securityUid = basics.uid;
    this._processAliases = basics.processAliases;
    this.maxRestarts = v.wholeNumber('maxRestarts', props.maxRestarts ?? DEFAULT_JOB_MAX_RESTARTS, 0, 1000);
    const rules = failureRules(v, props.failurePolicy);
    const ttl =
      props.ttlAfterFinished === undefined
        ? undefined
        : v.seconds('ttlAfterFinished', props.ttlAfterFinished, 0, 2147483647);
    const deadline =
      props.activeDeadline === undefined ? undefined : v.seconds('activeDeadline', props.activeDeadline, 1, 2147483647);
    this.ttlAfterFinishedSeconds = ttl;
    this.activeDeadlineSeconds = deadline;
    const suspend = props.suspend === undefined ? undefined : v.boolean('suspend', props.suspend, false);
    if (suspend !== undefined && this.queueName)
      v.fail(
        'suspend',
        "must not be set with queueName: Kueue suspends the JobSet on creation and resumes it on admission, and kubectl apply writes the manifest's value over the live one, so each apply would suspend the admitted, running JobSet again (stopping its pods) or resume one Kueue has not admitted",
        suspend,
      );
    let priorityClass: string | undefined;
    if (props.priorityClass !== undefined) {
      priorityClass = v.dnsSubdomain('priorityClass', props.priorityClass);
      if (priorityClass.length > 63)
        v.fail('priorityClass', 'must be at most 63 characters, because it is a label value', priorityClass);
      if (!this.queueName)
        v.fail(
          'priorityClass',
          "needs queueName: Kueue's WorkloadPriorityClass applies only to workloads it admits",
          priorityClass,
        );
    }
    const topology = topologyOf(v, props, this.queueName);

    const { labels, selector: _selector } = labelSet({
      name: props.name,
      instance: name,
      component: TRAINING_COMPONENT,
    });
    this.podSelector = `${LABEL_INSTANCE}=${name}`;

    const volumes: k8s.Volume[] = [];
    const mounts: k8s.VolumeMount[] = [];
    if (props.checkpoints !== undefined) {
      const shared = sharedClaim(v, 'checkpoints', props.checkpoints, {
        defaultMountPath: '/checkpoints',
        volumeName: SHARED_CHECKPOINT_VOLUME,
        runAsRoot: basics.runAsRoot,
      });
      volumes.push(shared.volume);
      mounts.push(shared.mount);
    }

    // The JobSet's headless Service is named after the JobSet (network.subdomain defaults to the
    // JobSet name), and with enableDNSHostnames each pod is `<jobSet>-<replicatedJob>-<jobIndex>-<podIndex>`
    // in it (jobset_types.go Network, placement.GenPodName, v0.12.0).
    // The Job is `<jobSet>-<replicatedJob>-<jobIndex>` (placement.GenJobName, v0.12.0).
    this.childJobName = `${name}-${TRAINING_REPLICATED_JOB}-0`;
    const master = `${this.childJobName}-0`;
    this.masterAddress = `${master}.${name}.$(POD_NAMESPACE).svc.${basics.clusterDomain}`;
    const rankWiring = staticRankWiring({
      masterAddress: this.masterAddress,
      masterPort: this.masterPort,
      nodes: this.nodes,
      gpusPerPod: this.gpusPerPod,
      shutdownTimeoutSeconds: this.shutdownTimeoutSeconds,
    });
    checkTorchrunOptions(v, props, basics.launch, rankWiring);

    const pod = buildTrainingPod(this, v, {
      props,
      basics,
      labels,
      name,
      command: launchCommand(basics.launch, { forwardOnly: true }),
      ownedEnv: [...rankWiring, ...forwardOnlyEnv()],
      volumes,
      mounts,
      // The JobSet restarts the gang; a pod restarted in place would rejoin a static rendezvous
      // that has moved on. podFailurePolicy also needs Never.
      spec: { restartPolicy: 'Never' },
    });
    this._podTemplate = pod.template;
    this.gpuConfigMapName = pod.gpuConfigMapName;
    this.gpuConfigMap = pod.gpuConfigMap;
    this.networkPolicy = pod.networkPolicy;
    if (topology.required) pod.template.annotate(KUEUE_TAS_ANNOTATIONS[0], topology.required);
    if (topology.preferred) pod.template.annotate(KUEUE_TAS_ANNOTATIONS[1], topology.preferred);
    addPodValidation(
      this,
      pod.template,
      v.boolean('guaranteedQos', props.guaranteedQos, false),
      `GpuTrainingJob '${id}'`,
    );

    const jobSetLabels = {
      ...labels,
      ...(this.queueName ? { [KUEUE_QUEUE_LABEL]: this.queueName } : {}),
      ...(priorityClass ? { [KUEUE_PRIORITY_LABEL]: priorityClass } : {}),
    };
    // An exit-code rule has no onPodConditions (optional from 1.29): an empty list is dropped by every
    // Go client that updates the JobSet (omitempty), and Kueue's update on admission then owns the
    // atomic `rules`, so the next server-side apply conflicts (shown in test/cluster/kueue-admission).
    const podFailureRules: k8s.PodFailurePolicyRule[] = rules.map(r =>
      r.exitCodes
        ? {
            action: 'FailJob',
            onExitCodes: { containerName: TRAINER_CONTAINER, operator: 'In', values: r.exitCodes },
          }
        : { action: 'FailJob', onPodConditions: [{ type: r.podCondition!, status: 'True' }] },
    );
    const typed: TypedJobSet = {
      metadata: {
        name,
        labels: jobSetLabels,
        ...(topology.exclusive ? { annotations: { [JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION]: topology.exclusive } } : {}),
      },
      spec: {
        ...(suspend !== undefined ? { suspend } : {}),
        ...(ttl !== undefined ? { ttlSecondsAfterFinished: ttl } : {}),
        network: { enableDnsHostnames: true, publishNotReadyAddresses: true },
        successPolicy: { operator: JobSetSuccessOperator.ALL, targetReplicatedJobs: [TRAINING_REPLICATED_JOB] },
        failurePolicy: {
          maxRestarts: this.maxRestarts,
          rules: [
            // Each pod failure rule fails the Job with reason PodFailurePolicy and the message
            // "... matching FailJob rule at index <i>" (kubernetes pkg/controller/job/pod_failure_policy.go),
            // which tells the JobSet which rule it was.
            ...rules.map((r, i) => ({
              name: `podFailureRule${i}`,
              action: r.action as string as JobSetFailureAction,
              onJobFailureReasons: ['PodFailurePolicy'],
              onJobFailureMessagePatterns: [`matching FailJob rule at index ${i}$`],
            })),
            ...(deadline !== undefined
              ? [
                  {
                    name: 'deadlineExceeded',
                    action: JobSetFailureAction.FAIL_JOB_SET,
                    onJobFailureReasons: ['DeadlineExceeded'],
                  },
                ]
              : []),
          ],
        },
        replicatedJobs: [
          {
            name: TRAINING_REPLICATED_JOB,
            replicas: 1,
            template: {
              spec: {
                parallelism: this.nodes,
                completions: this.nodes,
                completionMode: 'Indexed',
                // One failed pod fails the Job, and the JobSet restarts the whole gang.
                backoffLimit: 0,
                // A pod counts as failed only once it has stopped (batch/v1 podReplacementPolicy, beta
                // and on from 1.29, GA in 1.34): an evicted rank finishes its SIGTERM checkpoint
                // before the Job fails and the JobSet restarts the gang. It is already the only value
                // allowed with a podFailurePolicy; set always, the behaviour does not depend on
                // whether the run has failure rules. JobSet v0.12.0 sets none itself.
                podReplacementPolicy: 'Failed',
                ...(deadline !== undefined ? { activeDeadlineSeconds: deadline } : {}),
                ...(podFailureRules.length ? { podFailurePolicy: { rules: podFailureRules } } : {}),
                template: pod.template.toTemplate(),
              },
            },
          },
        ],
      },
    };
    this.jobSet = new ManifestObject(this, 'Resource', JOB_SET, typed);

    const ns = Chart.of(this).namespace ? ` -n ${Chart.of(this).namespace}` : '';
    this.waitForCompletionCommand = `kubectl wait jobset/${name}${ns} --for=condition=Completed --timeout=-1s`;
  }
}

/**
 * The JobSet name: a DNS-1035 label short enough that the JobSet webhook accepts the longest pod
 * name, `<name>-node-0-<nodes-1>` plus a 6-character random suffix.
 */
function jobSetName(v: Validator, name: string, nodes: number): string {
  v.dnsLabel('name', name);
  if (!/^[a-z]/.test(name)) v.fail('name', 'must start with a letter (a DNS-1035 label: it names a Service)', name);
  const longestPod = `${name}-${TRAINING_REPLICATED_JOB}-0-${nodes - 1}`;
  const max = 63 - POD_NAME_SUFFIX - (longestPod.length - name.length);
  if (name.length > max)
    v.fail(
      'name',
      `must be at most ${max} characters with ${nodes} nodes: the JobSet webhook refuses a pod name (${longestPod}-xxxxx) over 63`,
      name,
    );
  return name;
}

function failureRules(v: Validator, rules: TrainingFailureRule[] | undefined): TrainingFailureRule[] {
  if (rules === undefined) return [...DEFAULT_FAILURE_RULES];
  const list = v.array('failurePolicy', rules);
  // Job podFailurePolicy allows at most 20 rules (batch/v1 validation, maxPodFailurePolicyRules).
  if (list.length > 20) v.fail('failurePolicy', 'must have at most 20 rules (the Job API limit)', list.length);
  return list.map((r, i) => {
    const prop = `failurePolicy[${i}]`;
    v.knownProps(prop, r, RULE_KEYS);
    if (!Object.values(TrainingFailureAction).includes(r.action))
      v.fail(`${prop}.action`, 'must be a TrainingFailureAction', r.action);
    if ((r.exitCodes === undefined) === (r.podCondition === undefined))
      v.fail(prop, 'must set exactly one of exitCodes and podCondition', r);
    if (r.exitCodes !== undefined) {
      const codes = v.array(`${prop}.exitCodes`, r.exitCodes);
      if (codes.length === 0 || codes.length > 255)
        v.fail(`${prop}.exitCodes`, 'must list 1 to 255 exit codes (the Job API limit)', r.exitCodes);
      codes.forEach((c, j) => v.wholeNumber(`${prop}.exitCodes[${j}]`, c, 1, 255));
      if (new Set(codes).size !== codes.length) v.fail(`${prop}.exitCodes`, 'must not repeat a code', r.exitCodes);
      // The Job API wants them in increasing order.
      return { exitCodes: [...codes].sort((a, b) => a - b), action: r.action };
    }
    v.qualifiedName(`${prop}.podCondition`, r.podCondition!);
    return { podCondition: r.podCondition, action: r.action };
  });
}

function topologyOf(v: Validator, props: GpuTrainingJobProps, queueName: string | undefined): TrainingTopology {
  for (const a of KUEUE_TAS_ANNOTATIONS) {
    if (props.pod?.annotations?.[a] !== undefined)
      v.fail(
        `pod.annotations.${a}`,
        'is set by the construct: use topology.required or topology.preferred',
        props.pod.annotations[a],
      );
  }
  if (props.pod?.annotations?.[JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION] !== undefined)
    v.fail(
      `pod.annotations.${JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION}`,
      'belongs on the JobSet, not the pods: use topology.exclusive',
      props.pod.annotations[JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION],
    );
  const t = props.topology;
  if (t === undefined) return {};
  v.knownProps('topology', t, TOPOLOGY_KEYS);
  for (const key of TOPOLOGY_KEYS) if (t[key] !== undefined) v.qualifiedName(`topology.${key}`, t[key]);
  if (t.required !== undefined && t.preferred !== undefined)
    v.fail('topology.preferred', 'must not be set with topology.required: Kueue takes one of them', t.preferred);
  if ((t.required ?? t.preferred) !== undefined && !queueName)
    v.fail(
      t.required !== undefined ? 'topology.required' : 'topology.preferred',
      "needs queueName: topology-aware scheduling is Kueue's, for the workloads it admits",
      t.required ?? t.preferred,
    );
  return t;
}
