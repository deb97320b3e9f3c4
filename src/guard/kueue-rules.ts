/**
 * What Kueue's validating webhooks refuse on update: data for the guard's rule table (rules.ts),
 * read per release tag in kubernetes-sigs/kueue, v0.9.0 to v0.19.2 (every patch, because Kueue
 * backports checks). Kueue installs one webhook per integration, each named as the workload's own
 * (`vstatefulset.kb.io`, `vjob.kb.io`, `vjobset.kb.io`, `vleaderworkerset.kb.io`), so a refusal
 * reads `admission webhook "<name>" denied the request: ...`.
 *
 * - StatefulSet: `(*Webhook).ValidateUpdate` in pkg/controller/jobs/statefulset/statefulset_webhook.go:
 *   its label checks on every StatefulSet, the replicas and pod-shape checks only on one Kueue manages
 *   (a queue name), except where a release checked every one.
 * - Job and JobSet: `jobframework.ValidateJobOnUpdate` (pkg/controller/jobframework/validation.go),
 *   called by each one's `validateUpdate` on every object, queued or not; "running" is the new
 *   object's `spec.suspend` (GenericJob.IsSuspended).
 * - LeaderWorkerSet (the integration exists from v0.11.0): `(*Webhook).ValidateUpdate` in
 *   pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go; "running" is the old object's
 *   `status.readyReplicas` > 0, and the pod templates' shape is fixed while the new object has a
 *   queue name (IsManagedByKueue to v0.11.3, WorkloadShouldBeSuspended from v0.11.4).
 *
 * apivalidation.ValidateImmutableField(a, b, path) prints `a`: some releases pass the old value
 * first, so `{old}` or `{value}` (the new one) follows each release's argument order.
 *
 * Feature gates are read at their defaults per release: ElasticJobsViaWorkloadSlices and
 * WorkloadIdentifierAnnotations are on from v0.18, AdmissionGatedBy from v0.19, LWSImmutableGroupSize
 * from v0.18.5 and v0.19.1 (pkg/features/kube_features.go).
 *
 * Not modelled, because the answer depends on cluster state: a queue name removed in a namespace with
 * a default LocalQueue (validateUpdateForQueueName: v0.11.6-v0.11.x with LocalQueueDefaulting on, v0.12.2+),
 * and a batch Job Kueue is stopping (its `kueue.x-k8s.io/stopping` annotation, which Kueue sets and
 * clears). Before v0.15 Kueue also read the queue name from the deprecated `kueue.x-k8s.io/queue-name`
 * annotation; the guard reads the label only.
 */
import {
  KUEUE_ADMISSION_GATED_BY_ANNOTATION,
  KUEUE_ELASTIC_JOB_ANNOTATION,
  KUEUE_JOB_MIN_PARALLELISM_ANNOTATION,
  KUEUE_JOB_SYNC_COMPLETIONS_ANNOTATION,
  KUEUE_MAX_EXEC_TIME_LABEL,
  KUEUE_POD_GROUP_LABEL,
  KUEUE_PREBUILT_WORKLOAD_LABEL,
  KUEUE_PRIORITY_LABEL,
  KUEUE_QUEUE_LABEL,
} from '../common/kueue';
import { GuardCheck, KueueRunning, type FieldRule, type KindRules, type KueueVersionRange } from './rules';

/** A whole release line, as the end of a range: every patch of it. */
const line = (minor: number) => `0.${minor}`;
const label = (key: string) => `metadata.labels[${key}]`;
const QUEUE_PATH = label(KUEUE_QUEUE_LABEL);
const PRIORITY_PATH = label(KUEUE_PRIORITY_LABEL);
const denied = (webhook: string) => `admission webhook "${webhook}" denied the request: `;
const immutable = (webhook: string, path: string, shown: 'value' | 'old') =>
  `${denied(webhook)}${path}: Invalid value: {${shown}}: field is immutable`;
const PRIORITY_FN =
  'Kueue jobframework.ValidateUpdateForWorkloadPriorityClassName (pkg/controller/jobframework/validation.go)';

/** Checked on every object of the kind, queued or not. */
const EVERY: Partial<FieldRule> = { everyObject: true };

/** A label rule on `metadata.labels[key]`. */
function labelRule(
  key: string,
  check: GuardCheck,
  kueue: readonly KueueVersionRange[],
  source: string,
  message: string,
  extra: Partial<FieldRule> = {},
): FieldRule {
  return { path: 'metadata.labels', key, reportPath: label(key), check, kueue, source, message, ...extra };
}

/**
 * The priority-class rows every integration shares, by release: v0.15.2 reworded the refusals
 * ("cannot be added to a non-suspended workload", "cannot be removed from a workload").
 */
function priorityRules(
  webhook: string,
  source: string,
  ranges: {
    readonly anyChange: readonly KueueVersionRange[];
    readonly whileRunning: readonly KueueVersionRange[];
    readonly addedWhileRunning: readonly KueueVersionRange[];
  },
  extra: Partial<FieldRule>,
  /** Which value the pre-v0.15 refusals print: LeaderWorkerSet's webhook passed (new, old) as (old, new). */
  shown: 'value' | 'old' = 'value',
): FieldRule[] {
  const reworded = ranges.addedWhileRunning.filter(r => r.to === undefined);
  const before = ranges.addedWhileRunning.filter(r => r.to !== undefined);
  return [
    labelRule(
      KUEUE_PRIORITY_LABEL,
      GuardCheck.KUEUE_LABEL,
      ranges.anyChange,
      PRIORITY_FN,
      immutable(webhook, PRIORITY_PATH, shown),
      extra,
    ),
    labelRule(
      KUEUE_PRIORITY_LABEL,
      GuardCheck.KUEUE_LABEL_WHILE_RUNNING,
      ranges.whileRunning,
      `${source} / ${PRIORITY_FN} while running, or when the new class is empty`,
      immutable(webhook, PRIORITY_PATH, shown),
      extra,
    ),
    ...(before.length > 0
      ? [
          labelRule(
            KUEUE_PRIORITY_LABEL,
            GuardCheck.KUEUE_LABEL_ADDED_WHILE_RUNNING,
            before,
            `${PRIORITY_FN}(isSuspended, old, new)`,
            immutable(webhook, PRIORITY_PATH, 'value'),
            extra,
          ),
        ]
      : []),
    labelRule(
      KUEUE_PRIORITY_LABEL,
      GuardCheck.KUEUE_LABEL_ADDED_WHILE_RUNNING,
      reworded,
      `${PRIORITY_FN}(isSuspended, old, new)`,
      `${denied(webhook)}${PRIORITY_PATH}: Invalid value: {value}: {detail}`,
      extra,
    ),
  ];
}

/** The pod-level requests rule (kueue#12334), backported to these patches. */
const POD_RESOURCES_RANGES: readonly KueueVersionRange[] = [
  { from: '0.17.7', to: line(17) },
  { from: '0.18.3', to: line(18) },
  { from: '0.19.0' },
];
const SHAPE_SOURCE =
  'Kueue jobframework.ValidateImmutablePodGroupPodSpec (pkg/controller/jobframework/validation.go) over utilpod.SpecShape';

/** The shape of a pod template's spec at `specPath`, as the serving integrations fix it. */
function podShapeRules(webhook: string, specPath: string, shape: readonly KueueVersionRange[]): FieldRule[] {
  return [
    {
      path: specPath,
      check: GuardCheck.KUEUE_POD_SHAPE,
      kueue: shape,
      source: SHAPE_SOURCE,
      message: `${denied(webhook)}{path}: Invalid value: {value}: field is immutable`,
    },
    {
      path: `${specPath}.resources`,
      check: GuardCheck.KUEUE_POD_RESOURCES,
      kueue: POD_RESOURCES_RANGES,
      source: `${SHAPE_SOURCE} (pod-level resources, kueue#12334)`,
      message: `${denied(webhook)}${specPath}.resources: Invalid value: {value}: field is immutable`,
    },
  ];
}

/** AdmissionGatedBy (beta, on from v0.19): ValidateAdmissionGatedByAnnotationOnUpdate, on every object. */
function admissionGateRule(webhook: string, source: string): FieldRule {
  return {
    path: 'metadata.annotations',
    key: KUEUE_ADMISSION_GATED_BY_ANNOTATION,
    reportPath: `metadata.annotations[${KUEUE_ADMISSION_GATED_BY_ANNOTATION}]`,
    check: GuardCheck.KUEUE_ADMISSION_GATES,
    kueue: [{ from: '0.19.0' }],
    everyObject: true,
    source: `${source} / webhook.ValidateAdmissionGatedByAnnotationOnUpdate (pkg/util/webhook/validation_admissiongatedby.go)`,
    message: `${denied(webhook)}metadata.annotations[${KUEUE_ADMISSION_GATED_BY_ANNOTATION}]: Forbidden: {detail}`,
  };
}

// --- StatefulSet (vstatefulset.kb.io) ---

const STS_WEBHOOK = 'vstatefulset.kb.io';
const STS_VU = 'Kueue (*Webhook).ValidateUpdate (pkg/controller/jobs/statefulset/statefulset_webhook.go)';

// Its label checks run on every StatefulSet (before the isManagedByKueue / WorkloadShouldBeSuspended
// guard, at every release); a label only a queued object carries makes them Kueue's business anyway.
const KUEUE_STATEFULSET: readonly FieldRule[] = [
  // v0.9-v0.10: the queue name, the pod template's queue name (written by the mutating webhook) and
  // the pod-group-name label are immutable.
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL,
    [{ from: '0.9.0', to: line(9) }],
    `${STS_VU} / apivalidation.ValidateImmutableField(new, old)`,
    immutable(STS_WEBHOOK, QUEUE_PATH, 'value'),
    EVERY,
  ),
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL,
    [{ from: '0.10.0', to: line(10) }],
    `${STS_VU} / apivalidation.ValidateImmutableField(old, new) on jobframework.QueueNameForObject`,
    immutable(STS_WEBHOOK, QUEUE_PATH, 'old'),
    EVERY,
  ),
  // v0.9's mutating webhook runs on create only: the template label changes only when the manifest does.
  {
    path: 'spec.template.metadata.labels',
    key: KUEUE_QUEUE_LABEL,
    reportPath: `spec.template.${QUEUE_PATH}`,
    check: GuardCheck.KUEUE_WEBHOOK_LABEL,
    kueue: [{ from: '0.9.0', to: line(9) }],
    everyObject: true,
    source: `${STS_VU} / podSpecQueueNameLabelPath`,
    message: immutable(STS_WEBHOOK, `spec.template.${QUEUE_PATH}`, 'value'),
  },
  // v0.10's runs on update too: (*Webhook).Default writes the new queue name into the template first.
  {
    path: 'spec.template.metadata.labels',
    key: KUEUE_QUEUE_LABEL,
    reportPath: `spec.template.${QUEUE_PATH}`,
    check: GuardCheck.KUEUE_TEMPLATE_QUEUE_LABEL,
    kueue: [{ from: '0.10.0', to: line(10) }],
    everyObject: true,
    source: `${STS_VU} / podSpecQueueNameLabelPath, after (*Webhook).Default (create and update) wrote the queue name`,
    message: immutable(STS_WEBHOOK, `spec.template.${QUEUE_PATH}`, 'value'),
  },
  labelRule(
    KUEUE_POD_GROUP_LABEL,
    GuardCheck.KUEUE_LABEL,
    [{ from: '0.9.0', to: line(10) }],
    `${STS_VU} / groupNameLabelPath`,
    immutable(STS_WEBHOOK, label(KUEUE_POD_GROUP_LABEL), 'value'),
    EVERY,
  ),
  // v0.11+: the queue name may change while no pod is Ready (status.readyReplicas == 0), never be removed.
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL_WHILE_RUNNING,
    [
      { from: '0.11.0', to: '0.12.8' },
      { from: '0.13.0', to: '0.13.3' },
    ],
    `${STS_VU} / apivalidation.ValidateImmutableField(old, new) when status.readyReplicas > 0 or the new queue name is empty`,
    immutable(STS_WEBHOOK, QUEUE_PATH, 'old'),
    EVERY,
  ),
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL_WHILE_RUNNING,
    [{ from: '0.12.9', to: line(12) }, { from: '0.13.4', to: line(13) }, { from: '0.14.0' }],
    `${STS_VU} / apivalidation.ValidateImmutableField(new, old) when status.readyReplicas > 0 or the new queue name is empty`,
    immutable(STS_WEBHOOK, QUEUE_PATH, 'value'),
    EVERY,
  ),
  // The workload priority class label (backported to v0.9.4 and v0.10.2).
  ...priorityRules(
    STS_WEBHOOK,
    STS_VU,
    {
      anyChange: [
        { from: '0.9.4', to: line(9) },
        { from: '0.10.2', to: line(11) },
      ],
      whileRunning: [{ from: '0.12.0', to: line(14) }],
      addedWhileRunning: [{ from: '0.15.0', to: '0.15.1' }, { from: '0.15.2' }],
    },
    EVERY,
  ),
  admissionGateRule(STS_WEBHOOK, STS_VU),
  // replicas: immutable in v0.9 (kueue#3279: resizes not supported); from v0.10 only to or from 0.
  // v0.9.0-v0.9.2 and v0.10.0 check it on every StatefulSet, queued or not; v0.9.3 and v0.10.1
  // added the isManagedByKueue guard (a queue name, and no controller owner managed by Kueue).
  ...[{ kueue: [{ from: '0.9.0', to: '0.9.2' }], everyObject: true }, { kueue: [{ from: '0.9.3', to: line(9) }] }].map(
    r => ({
      path: 'spec.replicas',
      check: GuardCheck.KUEUE_COUNT,
      ...r,
      source: `${STS_VU} / apivalidation.ValidateImmutableField on spec.replicas${r.everyObject ? ' (every StatefulSet: no isManagedByKueue check before v0.9.3)' : ''}`,
      message: immutable(STS_WEBHOOK, 'spec.replicas', 'value'),
    }),
  ),
  ...[{ kueue: [{ from: '0.10.0', to: '0.10.0' }], everyObject: true }, { kueue: [{ from: '0.10.1' }] }].flatMap(r => [
    {
      path: 'spec.replicas',
      check: GuardCheck.KUEUE_REPLICAS_TO_OR_FROM_ZERO,
      ...r,
      source: `${STS_VU}: "Allow only scale down to zero and scale up from zero"${r.everyObject ? ' (every StatefulSet: no isManagedByKueue check before v0.10.1)' : ''}`,
      message: immutable(STS_WEBHOOK, 'spec.replicas', 'value'),
    },
    {
      path: 'spec.replicas',
      check: GuardCheck.KUEUE_SCALE_UP_WHILE_SCALING_DOWN,
      ...r,
      source: `${STS_VU}: field.Forbidden when status.replicas > 0${r.everyObject ? ' (every StatefulSet before v0.10.1)' : ''}`,
      message: `${denied(STS_WEBHOOK)}spec.replicas: Forbidden: scaling down is still in progress`,
    },
  ]),
  // The pod group's shape (backported to v0.9.4 and v0.10.2).
  ...podShapeRules(STS_WEBHOOK, 'spec.template.spec', [{ from: '0.9.4', to: line(9) }, { from: '0.10.2' }]),
];

// --- Job (vjob.kb.io) and JobSet (vjobset.kb.io): jobframework.ValidateJobOnUpdate ---

const JOB_FN = 'Kueue jobframework.ValidateJobOnUpdate (pkg/controller/jobframework/validation.go)';

/** The rules ValidateJobOnUpdate gives every job integration, on every object of the kind. */
function jobRules(webhook: string): FieldRule[] {
  const onEvery = { everyObject: true, kueueRunning: KueueRunning.NOT_SUSPENDED };
  return [
    labelRule(
      KUEUE_QUEUE_LABEL,
      GuardCheck.KUEUE_LABEL_UNLESS_SUSPENDED,
      [{ from: '0.9.0' }],
      `${JOB_FN} / validateUpdateForQueueName: apivalidation.ValidateImmutableField(new, old) unless the new object is suspended`,
      immutable(webhook, QUEUE_PATH, 'value'),
      onEvery,
    ),
    ...priorityRules(
      webhook,
      JOB_FN,
      {
        anyChange: [{ from: '0.9.0', to: line(11) }],
        whileRunning: [{ from: '0.12.0', to: line(14) }],
        addedWhileRunning: [{ from: '0.15.0', to: '0.15.1' }, { from: '0.15.2' }],
      },
      onEvery,
    ),
    labelRule(
      KUEUE_MAX_EXEC_TIME_LABEL,
      GuardCheck.KUEUE_LABEL_UNLESS_BOTH_SUSPENDED,
      [{ from: '0.9.0' }],
      `${JOB_FN} / validateUpdateForMaxExecTime: apivalidation.ValidateImmutableField(new, old) unless the old and the new object are suspended`,
      immutable(webhook, label(KUEUE_MAX_EXEC_TIME_LABEL), 'value'),
      onEvery,
    ),
    labelRule(
      KUEUE_PREBUILT_WORKLOAD_LABEL,
      GuardCheck.KUEUE_LABEL,
      [{ from: '0.9.0', to: line(10) }],
      `${JOB_FN} / validateUpdateForQueueName: apivalidation.ValidateImmutableField(new, old)`,
      immutable(webhook, label(KUEUE_PREBUILT_WORKLOAD_LABEL), 'value'),
      onEvery,
    ),
    labelRule(
      KUEUE_PREBUILT_WORKLOAD_LABEL,
      GuardCheck.KUEUE_LABEL_UNLESS_SUSPENDED,
      [{ from: '0.11.0', to: line(17) }],
      `${JOB_FN} / validateUpdateForPrebuiltWorkload: apivalidation.ValidateImmutableField(new, old) unless the new object is suspended`,
      immutable(webhook, label(KUEUE_PREBUILT_WORKLOAD_LABEL), 'value'),
      onEvery,
    ),
    // v0.18 (WorkloadIdentifierAnnotations): the annotation of the same key names it first, and is reported.
    {
      path: 'metadata',
      key: KUEUE_PREBUILT_WORKLOAD_LABEL,
      check: GuardCheck.KUEUE_PREBUILT_WORKLOAD,
      kueue: [{ from: '0.18.0' }],
      ...onEvery,
      source: `${JOB_FN} / validateUpdateForPrebuiltWorkload over PrebuiltWorkloadNameFor, unless the new object is suspended or the old one is elastic`,
      message: `${denied(webhook)}{path}: Invalid value: {value}: field is immutable`,
    },
    // v0.18 (ElasticJobsViaWorkloadSlices on): workload slicing may not be turned on or off.
    {
      path: 'metadata.annotations',
      key: KUEUE_ELASTIC_JOB_ANNOTATION,
      reportPath: `metadata.annotations[${KUEUE_ELASTIC_JOB_ANNOTATION}]`,
      check: GuardCheck.KUEUE_ELASTIC_JOB,
      kueue: [{ from: '0.18.0' }],
      ...onEvery,
      source: `${JOB_FN} / validatedUpdateForEnabledWorkloadSlice`,
      message: `${denied(webhook)}metadata.annotations[${KUEUE_ELASTIC_JOB_ANNOTATION}]: Invalid value: {value}: field is immutable`,
    },
    admissionGateRule(webhook, JOB_FN),
  ];
}

// --- batch Job only (vjob.kb.io): validatePartialAdmissionUpdate in pkg/controller/jobs/job/job_webhook.go ---

const PARTIAL = 'Kueue validatePartialAdmissionUpdate (pkg/controller/jobs/job/job_webhook.go)';
const KUEUE_BATCH_JOB: readonly FieldRule[] = [
  {
    path: 'spec.parallelism',
    key: KUEUE_JOB_MIN_PARALLELISM_ANNOTATION,
    check: GuardCheck.KUEUE_PARTIAL_ADMISSION,
    kueue: [{ from: '0.9.0' }],
    everyObject: true,
    source: `${PARTIAL}: with the ${KUEUE_JOB_MIN_PARALLELISM_ANNOTATION} annotation, while the old Job is not suspended`,
    message: `${denied('vjob.kb.io')}spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended`,
  },
  {
    path: 'metadata.annotations',
    key: KUEUE_JOB_SYNC_COMPLETIONS_ANNOTATION,
    reportPath: `metadata.annotations[${KUEUE_JOB_SYNC_COMPLETIONS_ANNOTATION}]`,
    check: GuardCheck.KUEUE_SYNC_COMPLETIONS,
    kueue: [{ from: '0.9.0' }],
    everyObject: true,
    source: `${PARTIAL}: strconv.ParseBool of the annotation, while neither Job is suspended`,
    message: `${denied('vjob.kb.io')}metadata.annotations[${KUEUE_JOB_SYNC_COMPLETIONS_ANNOTATION}]: Forbidden: field is immutable while the job is not suspended`,
  },
];

// --- LeaderWorkerSet (vleaderworkerset.kb.io), from v0.11.0 ---

const LWS_WEBHOOK = 'vleaderworkerset.kb.io';
const LWS_VU = 'Kueue (*Webhook).ValidateUpdate (pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go)';
const LWS_TEMPLATE = 'spec.leaderWorkerTemplate';

const KUEUE_LEADERWORKERSET: readonly FieldRule[] = [
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL,
    [{ from: '0.11.0', to: line(17) }],
    `${LWS_VU} / apivalidation.ValidateImmutableField(new, old)`,
    immutable(LWS_WEBHOOK, QUEUE_PATH, 'value'),
    EVERY,
  ),
  labelRule(
    KUEUE_QUEUE_LABEL,
    GuardCheck.KUEUE_LABEL_WHILE_RUNNING,
    [{ from: '0.18.0' }],
    `${LWS_VU} / apivalidation.ValidateImmutableField(new, old) when status.readyReplicas > 0 or the new queue name is empty`,
    immutable(LWS_WEBHOOK, QUEUE_PATH, 'value'),
    EVERY,
  ),
  ...priorityRules(
    LWS_WEBHOOK,
    LWS_VU,
    {
      anyChange: [{ from: '0.11.0', to: line(11) }],
      whileRunning: [{ from: '0.12.0', to: line(14) }],
      addedWhileRunning: [{ from: '0.15.0', to: '0.15.1' }, { from: '0.15.2' }],
    },
    EVERY,
    'old',
  ),
  admissionGateRule(LWS_WEBHOOK, LWS_VU),
  // validateImmutablePodTemplateSpec: a leader template added or removed, else each template's shape.
  {
    path: `${LWS_TEMPLATE}.leaderTemplate`,
    check: GuardCheck.KUEUE_PRESENCE,
    kueue: [{ from: '0.11.0' }],
    source: `${LWS_VU} / validateImmutablePodTemplateSpec: apivalidation.ValidateImmutableField when either template is nil`,
    message: immutable(LWS_WEBHOOK, `${LWS_TEMPLATE}.leaderTemplate`, 'value'),
  },
  ...podShapeRules(LWS_WEBHOOK, `${LWS_TEMPLATE}.leaderTemplate.spec`, [{ from: '0.11.0' }]),
  ...podShapeRules(LWS_WEBHOOK, `${LWS_TEMPLATE}.workerTemplate.spec`, [{ from: '0.11.0' }]),
  // The group size (LWSImmutableGroupSize, beta and on by default; backported to v0.18.5).
  {
    path: `${LWS_TEMPLATE}.size`,
    check: GuardCheck.KUEUE_COUNT,
    kueue: [{ from: '0.18.5', to: line(18) }, { from: '0.19.1' }],
    source: `${LWS_VU} / apivalidation.ValidateImmutableField on the group size (LWSImmutableGroupSize)`,
    message: immutable(LWS_WEBHOOK, `${LWS_TEMPLATE}.size`, 'value'),
  },
];

/** Kueue's rules by kind, merged into IMMUTABLE_FIELDS. */
export const KUEUE_RULES: readonly KindRules[] = [
  { group: 'apps', kind: 'StatefulSet', fields: KUEUE_STATEFULSET },
  { group: 'batch', kind: 'Job', fields: [...jobRules('vjob.kb.io'), ...KUEUE_BATCH_JOB] },
  { group: 'jobset.x-k8s.io', kind: 'JobSet', fields: jobRules('vjobset.kb.io') },
  { group: 'leaderworkerset.x-k8s.io', kind: 'LeaderWorkerSet', fields: KUEUE_LEADERWORKERSET },
];
