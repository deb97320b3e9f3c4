import { ApiObject, Duration } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { contentHash } from '../common/hash';
import { LABEL_COMPONENT } from '../common/labels';
import { KIND, ManifestObject } from '../common/manifest-object';
import { egressNetworkPolicy, NetworkPeer, resolvePeers } from '../common/network-policy';
import { containerSecurityContext, DEFAULT_NON_ROOT_UID, podSecurityContext } from '../common/security';
import { toleration } from '../common/workload-pod';
import { Validator } from '../validation/validate';
import { fitName, LABEL_MAX, unset } from './names';
import { ROTATION_RUN_DEADLINE_SECONDS, ROTATION_START_DEADLINE_SECONDS } from './timing';

const ROTATION_PROPS = [
  'image',
  'command',
  'args',
  'every',
  'credentialTtl',
  'env',
  'imagePullSecrets',
  'nodeSelector',
  'tolerations',
  'serviceAccountAnnotations',
  'egress',
];

/** The user's rotator: a program that obtains a fresh credential and writes it into the Secret. */
export interface SecretRotation {
  /**
   * The rotator image (there is no default: it is the user's program), by tag or by digest
   * (`registry/rotator@sha256:<64 hex>`, `registry/rotator:1.4.2@sha256:...`). It must tolerate
   * running twice in a row (the first-rotation Job can start near a scheduled run), since two
   * rotations in a row are still a valid rotation.
   */
  readonly image: string;
  /** @default - the image's entrypoint */
  readonly command?: string[];
  /** @default - the image's command */
  readonly args?: string[];
  /**
   * How often to rotate. At least 1 hour; a whole number of hours that divides 24, or whole days,
   * so that it fits a cron schedule.
   * @default Duration.hours(24)
   */
  readonly every?: Duration;
  /**
   * The credential's lifetime. When set, the construct checks that it covers two rotation periods
   * (one scheduled run may be skipped when it misses its start deadline) plus the worst-case
   * propagation into every pod, and refuses it otherwise, showing the sum.
   * @default - no check
   */
  readonly credentialTtl?: Duration;
  /** @default - none besides SECRET_NAME and SECRET_NAMESPACE (and SECRET_TYPE) */
  readonly env?: Record<string, string>;
  /**
   * Secrets holding credentials for the registry of `image`.
   * @default - none: the image is public or the nodes can pull it
   */
  readonly imagePullSecrets?: string[];
  /**
   * Node labels the rotator's pods must run on.
   * @default - any node
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * Tolerations for the rotator's pods (e.g. a pool where everything is tainted).
   * @default - none
   */
  readonly tolerations?: k8s.Toleration[];
  /**
   * Annotations of the rotator's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` (IRSA) or
   * `iam.gke.io/gcp-service-account` (Workload Identity), for the cloud credentials it mints.
   * @default - none
   */
  readonly serviceAccountAnnotations?: Record<string, string>;
  /**
   * Where the rotator may connect: with it, a NetworkPolicy lets its pods reach only these peers and
   * DNS. Name the API server (it writes the Secret there: `NetworkPeer.cidr()` of the addresses
   * `kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes` lists, since
   * policies see the address after the Service is translated) and the credential provider.
   * @default - no egress policy: the library cannot know the API server's or the provider's addresses
   */
  readonly egress?: NetworkPeer[];
}

/**
 * The objects of a RotatingGpuSecret's rotator, for escape hatches (a JsonPatch applies to their API
 * JSON and is checked, like every object the library creates): e.g. image pull secrets or
 * tolerations on the CronJob's pod template, or a workload-identity annotation on the account.
 */
export interface SecretRotator {
  /** The account the rotator runs as (no API token unless patched). */
  readonly serviceAccount: ApiObject;
  /** get/patch/update of this Secret only (and create, for a Secret type the manifests cannot create). */
  readonly role: ApiObject;
  readonly roleBinding: ApiObject;
  /** The scheduled rotation. */
  readonly cronJob: ApiObject;
  /** The first rotation, named by a hash of its spec. */
  readonly initialJob: ApiObject;
  /** The rotator pods' egress policy, with `rotation.egress`. */
  readonly egressPolicy?: ApiObject;
}

/** A checked `SecretRotation`, with its defaults. */
export interface ResolvedRotation {
  readonly everySeconds: number;
  readonly ttlSeconds?: number;
  readonly ttlProp?: Duration;
  readonly schedule: string;
  readonly image: string;
  readonly command?: string[];
  readonly args?: string[];
  readonly env: Record<string, string>;
  readonly pullSecrets: string[];
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: k8s.Toleration[];
  readonly accountAnnotations: Record<string, string>;
  readonly egress?: k8s.NetworkPolicyPeer[];
}

/** Checks the rotation props and fills in their defaults; throws naming the prop. */
export function resolveRotation(v: Validator, r: SecretRotation, secretName: string): ResolvedRotation {
  v.plainObject('rotation', r);
  v.knownProps('rotation', r, ROTATION_PROPS);
  const everySeconds = v.seconds('rotation.every', unset(r.every, Duration.hours(24)), 3600);
  const ttlSeconds =
    r.credentialTtl !== undefined ? v.seconds('rotation.credentialTtl', r.credentialTtl, 1) : undefined;
  const command = v.stringArray('rotation.command', r.command);
  if (command?.length === 0)
    v.fail('rotation.command', "must not be empty: omit it to run the image's entrypoint", command);
  if (r.env !== undefined) v.plainObject('rotation.env', r.env);
  for (const [key, value] of Object.entries(r.env ?? {})) {
    v.envName(`rotation.env.${key}`, key);
    if (['SECRET_NAME', 'SECRET_NAMESPACE', 'SECRET_TYPE'].includes(key))
      v.fail(`rotation.env.${key}`, 'is set by the construct', value);
    if (typeof value !== 'string') v.fail(`rotation.env.${key}`, 'must be a string', value);
  }
  const tolerations = v.array('rotation.tolerations', r.tolerations);
  tolerations.forEach((t, i) => toleration(v, `rotation.tolerations[${i}]`, t));
  return {
    everySeconds,
    ttlSeconds,
    ttlProp: r.credentialTtl,
    schedule: cronSchedule(v, everySeconds, secretName, r.every),
    image: v.image('rotation.image', r.image),
    command,
    args: v.stringArray('rotation.args', r.args),
    env: { ...(r.env ?? {}) },
    pullSecrets: (v.stringArray('rotation.imagePullSecrets', r.imagePullSecrets) ?? []).map((n, i) =>
      v.dnsSubdomain(`rotation.imagePullSecrets[${i}]`, n),
    ),
    nodeSelector: v.labels('rotation.nodeSelector', r.nodeSelector),
    tolerations: [...tolerations],
    accountAnnotations: v.annotations('rotation.serviceAccountAnnotations', r.serviceAccountAnnotations),
    egress: resolvePeers(v, 'rotation.egress', r.egress),
  };
}

/** Where the rotator writes. */
export interface RotatorTarget {
  /** The Secret's name, which the Role is restricted to. */
  readonly secretName: string;
  /** The Secret's `type`, given to the program as SECRET_TYPE. */
  readonly secretType: string;
  /** Whether the rotator must create the Secret (its type needs data the manifests cannot hold). */
  readonly creates: boolean;
  /** The name of the account, Role, binding and CronJob. */
  readonly account: string;
  readonly labels: Record<string, string>;
}

/** The rotator's account, its Role on the Secret, the CronJob and the first-rotation Job. */
export function emitRotator(scope: Construct, r: ResolvedRotation, target: RotatorTarget): SecretRotator {
  const { account, secretName } = target;
  const labels = { ...target.labels, [LABEL_COMPONENT]: 'credential-rotator' };
  const jobSpec = rotationJobSpec(r, target, labels);

  const serviceAccount = new ManifestObject(scope, 'RotatorAccount', KIND.ServiceAccount, {
    metadata: {
      name: account,
      labels,
      ...(Object.keys(r.accountAnnotations).length ? { annotations: r.accountAnnotations } : {}),
    },
    automountServiceAccountToken: false,
  });
  const role = new ManifestObject(scope, 'RotatorRole', KIND.Role, {
    metadata: { name: account, labels },
    // Only this Secret, and only read and write: resourceNames cannot restrict create, so an Opaque
    // Secret is created by the manifests (empty) and the rotator fills it. A type whose data the
    // API server requires at creation is created by the rotator, which then needs create on all
    // Secrets of the namespace (docs/secrets.md says how an admission policy narrows it).
    rules: [
      { apiGroups: [''], resources: ['secrets'], resourceNames: [secretName], verbs: ['get', 'patch', 'update'] },
      ...(target.creates ? [{ apiGroups: [''], resources: ['secrets'], verbs: ['create'] }] : []),
    ],
  });
  const roleBinding = new ManifestObject(scope, 'RotatorBinding', KIND.RoleBinding, {
    metadata: { name: account, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
    subjects: [{ kind: 'ServiceAccount', name: account }],
  });
  const cronJob = new ManifestObject(scope, 'Rotation', KIND.CronJob, {
    metadata: { name: account, labels },
    spec: {
      schedule: r.schedule,
      timeZone: 'Etc/UTC',
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: ROTATION_START_DEADLINE_SECONDS,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: { spec: jobSpec },
    },
  });
  // The first rotation, so pods do not wait a whole period. It runs once per spec whatever
  // re-applies the manifests: its name carries a hash of its spec (a Job's template is
  // immutable, so a changed rotator is a new Job), and it has no ttlSecondsAfterFinished, so the
  // finished Job stays as the record. A Job deleted by a TTL is re-created, and run again, by
  // Argo CD, Flux or a plain re-apply (argo-cd#8586).
  const hash = contentHash({ spec: plainJson(jobSpec) }).slice(0, 8);
  const initialJob = new ManifestObject(scope, 'InitialRotation', KIND.Job, {
    metadata: { name: fitName(`${account}-initial`, `-${hash}`, LABEL_MAX), labels },
    spec: jobSpec,
  });
  const egressPolicy = r.egress ? egressNetworkPolicy(scope, r.egress, { name: account, labels }) : undefined;
  return { serviceAccount, role, roleBinding, cronJob, initialJob, egressPolicy };
}

function rotationJobSpec(r: ResolvedRotation, target: RotatorTarget, labels: Record<string, string>): k8s.JobSpec {
  const identity = { runAsRoot: false, uid: DEFAULT_NON_ROOT_UID, addCapabilities: [] };
  return {
    backoffLimit: 3,
    activeDeadlineSeconds: ROTATION_RUN_DEADLINE_SECONDS,
    template: {
      metadata: { labels },
      spec: {
        serviceAccountName: target.account,
        automountServiceAccountToken: true, // the rotator writes the Secret through the API
        restartPolicy: 'Never',
        ...(r.pullSecrets.length ? { imagePullSecrets: r.pullSecrets.map(name => ({ name })) } : {}),
        ...(Object.keys(r.nodeSelector).length ? { nodeSelector: r.nodeSelector } : {}),
        ...(r.tolerations.length ? { tolerations: r.tolerations } : {}),
        securityContext: podSecurityContext(identity),
        containers: [
          {
            name: 'rotator',
            image: r.image,
            imagePullPolicy: 'IfNotPresent',
            ...(r.command ? { command: r.command } : {}),
            ...(r.args ? { args: r.args } : {}),
            env: [
              { name: 'SECRET_NAME', value: target.secretName },
              { name: 'SECRET_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              ...(target.secretType !== 'Opaque' ? [{ name: 'SECRET_TYPE', value: target.secretType }] : []),
              ...Object.entries(r.env).map(([k, val]) => ({ name: k, value: val })),
            ],
            resources: {
              requests: { cpu: k8s.Quantity.fromString('50m'), memory: k8s.Quantity.fromString('64Mi') },
              limits: { memory: k8s.Quantity.fromString('256Mi') },
            },
            securityContext: containerSecurityContext(identity),
          },
        ],
      },
    },
  };
}

/** The JSON text of typed props, for hashing (Quantity and friends serialize to their values). */
function plainJson(x: unknown): string {
  return JSON.stringify(x, (_k, val) => (val instanceof k8s.Quantity ? val.value : val));
}

/**
 * A cron schedule for a period: hours that divide 24, or whole days. The minute (and the hour of a
 * daily rotation) come from a hash of the name, so many secrets do not rotate at the same instant.
 */
function cronSchedule(v: Validator, seconds: number, name: string, written: Duration | undefined): string {
  const hours = seconds / 3600;
  const h = parseInt(contentHash({ name }).slice(0, 8), 16);
  const minute = h % 60;
  if (Number.isInteger(hours) && hours < 24 && 24 % hours === 0) {
    return hours === 1 ? `${minute} * * * *` : `${minute} */${hours} * * *`;
  }
  if (Number.isInteger(hours) && hours % 24 === 0) {
    const days = hours / 24;
    const hour = h % 24;
    // Day-of-month steps restart each month; more than 31 days never fits.
    if (days > 31)
      v.fail(
        'rotation.every',
        'must be at most 31 days, the longest period a cron day-of-month step can express',
        written,
      );
    return days === 1 ? `${minute} ${hour} * * *` : `${minute} ${hour} */${days} * *`;
  }
  return v.fail(
    'rotation.every',
    'must be a whole number of hours that divides 24, or whole days, to fit a cron schedule',
    written,
  );
}
