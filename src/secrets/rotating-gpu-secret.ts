import * as fs from 'fs';
import * as path from 'path';
import { ApiObject, Duration } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { KIND, ManifestObject } from '../common/manifest-object';
import { Construct, IConstruct } from 'constructs';
import { addOutputRule } from '../checks/output-rules';
import { DATA_OWNER_ANNOTATION, envReadsIn, rotatingEnvErrors, RotatingSecretRef } from '../checks/rotating-env';
import { configKey } from '../common/env';
import { contentHash } from '../common/hash';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { containerSecurityContext, DEFAULT_NON_ROOT_UID, podSecurityContext } from '../common/security';
import { Validator } from '../validation/validate';
import { toleration } from '../common/workload-pod';
import { DEFAULT_RELOAD_IMAGE, DEFAULT_RELOAD_TIMEOUT_SECONDS, Reload, ReloadSpec } from './reload';
import { COMM_MAX, endingRule, normalizeSignal, RELOAD_SIGNALS, RESERVED_COMMS } from './signals';

/** The watcher script, a real file that tests run under dash and busybox sh, embedded in every sidecar. */
const RELOAD_SCRIPT = fs.readFileSync(path.join(__dirname, 'reload-sidecar.sh'), 'utf8');

/**
 * The kubelet's pod resync period (`syncFrequency`, default 1 min). Each pod worker waits that
 * long plus up to 50% jitter (`workerResyncIntervalJitterFactor` 0.5, pkg/kubelet/pod_workers.go)
 * before it updates the pod's secret volumes again.
 */
export const KUBELET_SYNC_SECONDS = 60;
/** The jitter on top of the sync period: 50% of it. */
export const KUBELET_SYNC_JITTER_SECONDS = 30;
/** The CronJob's starting deadline: a rotation that cannot start in 10 min is skipped. */
export const ROTATION_START_DEADLINE_SECONDS = 600;
/** The rotation Job's active deadline: one run, with its retries, may take at most 10 min. */
export const ROTATION_RUN_DEADLINE_SECONDS = 600;
/** How often the reload sidecar fingerprints the secret directory. */
export const DEFAULT_RELOAD_POLL_SECONDS = 10;
/** Where a sync sidecar mounts the Secret itself; user mounts may not go there. */
const SIDECAR_DIR = '/var/run/cdk8s-gpu';
/** Where the sidecar keeps the record of the last reload and its health mark. */
const STATE_DIR = `${SIDECAR_DIR}/state`;

/** The CronJob name limit: its Jobs are named `<cronjob>-<11 characters>` and copied into a 63-character label. */
const CRONJOB_NAME_MAX = 52;
/** Job and container names, volume names and label values. */
const LABEL_MAX = 63;

/**
 * Directories a secret mount would hide from the image (or, for the service-account token, collide
 * with the kubelet's own mount): the container would start and then fail in confusing ways.
 */
const SYSTEM_DIRS = new Set([
  '/',
  '/bin',
  '/boot',
  '/dev',
  '/dev/shm',
  '/etc',
  '/home',
  '/lib',
  '/lib32',
  '/lib64',
  '/opt',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/srv',
  '/sys',
  '/tmp',
  '/usr',
  '/usr/bin',
  '/usr/lib',
  '/usr/local',
  '/usr/local/bin',
  '/usr/local/lib',
  '/usr/sbin',
  '/usr/share',
  '/var',
  '/var/lib',
  '/var/run',
  '/var/tmp',
  '/var/run/secrets',
  '/var/run/secrets/kubernetes.io',
  '/var/run/secrets/kubernetes.io/serviceaccount',
]);

const PROPS = ['name', 'keys', 'rotation', 'reloadPollInterval', 'kubeletSecretCacheTtl'];
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
];
const MOUNT_PROPS = ['path', 'onRotation'];

/** The user's rotator: a program that obtains a fresh credential and writes it into the Secret. */
export interface SecretRotation {
  /**
   * The rotator image. It must tolerate running twice in a row (the first-rotation Job can start
   * near a scheduled run), since two rotations in a row are still a valid rotation.
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
  /** @default - none besides SECRET_NAME and SECRET_NAMESPACE */
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
}

export interface RotatingGpuSecretProps {
  /**
   * The Secret's name, a DNS-1123 label (it is also a label value). Longer derived names (the
   * rotator's CronJob, at most 52 characters, and Jobs, at most 63) are shortened with a hash.
   */
  readonly name: string;
  /**
   * The keys the rotator writes: valid Secret keys (`[-._a-zA-Z0-9]+`, at most 253 characters, not
   * starting with `..`). Keys starting with one `.` (e.g. `.dockerconfigjson`) work: the sidecar is
   * given the exact list instead of globbing. Pods mount exactly these, so they wait in
   * ContainerCreating until the first rotation has written them instead of starting on an empty Secret.
   * @default ['credentials.json']
   */
  readonly keys?: string[];
  /**
   * A CronJob that rotates the Secret. Omit it when something else (External Secrets, Vault)
   * writes the Secret.
   * @default - no rotator
   */
  readonly rotation?: SecretRotation;
  /**
   * How often reload sidecars look for a change: whole seconds from 1 to 600.
   * @default Duration.seconds(10)
   */
  readonly reloadPollInterval?: Duration;
  /**
   * How stale the kubelet's copy of the Secret may be, for the timing check. Under the kubelet's
   * default `configMapAndSecretChangeDetectionStrategy: Watch` it is kept current by a watch: 0.
   * Under `Cache`, set the node TTL: the `node.alpha.kubernetes.io/ttl` annotation, which the TTL
   * controller sets from the cluster size (0 s up to 100 nodes, 15 s to 500, 30 s to 1000, 60 s to
   * 2000, 300 s to 10000, 600 s beyond), or 60 s where the annotation is missing.
   * @default Duration.seconds(0)
   */
  readonly kubeletSecretCacheTtl?: Duration;
}

export interface MountOptions {
  /**
   * Where the main container sees the files: a normalized absolute directory that the container
   * does not already mount, that is not inside one of its read-only mounts or above any of its
   * mounts, and that hides no system directory (`/etc`, `/tmp`, ...) or the working directory.
   */
  readonly path: string;
  /** What to do in the pod when the Secret changes. */
  readonly onRotation: Reload;
}

/** One term of the worst-case propagation. */
interface Delay {
  readonly what: string;
  readonly seconds: number;
}

/**
 * The objects of a RotatingGpuSecret's rotator, for escape hatches (a JsonPatch applies to their API
 * JSON and is checked, like every object the library creates): e.g. image pull secrets or
 * tolerations on the CronJob's pod template, or a workload-identity annotation on the account.
 */
export interface SecretRotator {
  /** The account the rotator runs as (no API token unless patched). */
  readonly serviceAccount: ApiObject;
  /** get/patch/update of this Secret only. */
  readonly role: ApiObject;
  readonly roleBinding: ApiObject;
  /** The scheduled rotation. */
  readonly cronJob: ApiObject;
  /** The first rotation, named by a hash of its spec. */
  readonly initialJob: ApiObject;
}

/**
 * A Secret whose credential is rotated on a schedule and reaches long-running pods without a
 * restart: a whole-directory read-only mount (which the kubelet updates) and a reload sidecar
 * that detects the update and tells the workload.
 */
export class RotatingGpuSecret extends Construct {
  readonly secretName: string;
  readonly keys: readonly string[];
  private readonly pollSeconds: number;
  private readonly v: Validator;
  private readonly labels: Record<string, string>;
  /** The Secret (created without data: the rotator, or whoever rotates it, owns the data). */
  readonly secret: ApiObject;
  /** The rotator's objects, when `rotation` is set. */
  readonly rotator?: SecretRotator;
  private readonly rotation?: { every: number; ttl?: number; ttlProp: Duration | undefined };
  private readonly baseDelays: Delay[];
  private slowestReloadSeconds = 0;
  private mounts = 0;

  constructor(scope: Construct, id: string, props: RotatingGpuSecretProps) {
    super(scope, id);
    const v: Validator = (this.v = new Validator('RotatingGpuSecret', id));
    v.plainObject('props', props);
    v.knownProps('', props, PROPS);
    const name = (this.secretName = v.dnsLabel('name', props.name));
    this.keys = secretKeys(v, unset(props.keys, ['credentials.json']));
    this.pollSeconds = v.seconds(
      'reloadPollInterval',
      unset(props.reloadPollInterval, Duration.seconds(DEFAULT_RELOAD_POLL_SECONDS)),
      1,
      600,
    );
    const cacheTtl = v.seconds(
      'kubeletSecretCacheTtl',
      unset(props.kubeletSecretCacheTtl, Duration.seconds(0)),
      0,
      3600,
    );
    this.labels = {
      [LABEL_NAME]: name,
      [LABEL_INSTANCE]: name,
      [LABEL_COMPONENT]: 'credentials',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    const rotatorName = fitName(name, '-rotator', CRONJOB_NAME_MAX);

    // No data: the rotator owns it. Re-applying this manifest (client- or server-side) leaves a
    // rotated value alone, since `data` is in neither the last-applied configuration nor our fields.
    this.secret = new ManifestObject(this, 'Secret', KIND.Secret, {
      metadata: {
        name,
        labels: this.labels,
        annotations: { [DATA_OWNER_ANNOTATION]: props.rotation !== undefined ? rotatorName : 'external' },
      },
      type: 'Opaque',
    });

    // The worst case from a scheduled rotation to the new file in every pod's volume, then in the
    // sidecar's hands. Each term is an upper bound; see the README's timing model.
    this.baseDelays = [
      ...(props.rotation !== undefined
        ? [
            { what: 'job start deadline', seconds: ROTATION_START_DEADLINE_SECONDS },
            { what: 'job run deadline', seconds: ROTATION_RUN_DEADLINE_SECONDS },
          ]
        : []),
      { what: 'kubelet sync', seconds: KUBELET_SYNC_SECONDS },
      { what: 'sync jitter', seconds: KUBELET_SYNC_JITTER_SECONDS },
      { what: 'kubelet secret cache', seconds: cacheTtl },
      { what: 'sidecar poll', seconds: this.pollSeconds },
    ];

    if (props.rotation !== undefined) {
      v.plainObject('rotation', props.rotation);
      v.knownProps('rotation', props.rotation, ROTATION_PROPS);
      const r = props.rotation;
      const every = v.seconds('rotation.every', unset(r.every, Duration.hours(24)), 3600);
      const ttl = r.credentialTtl !== undefined ? v.seconds('rotation.credentialTtl', r.credentialTtl, 1) : undefined;
      this.rotation = { every, ttl, ttlProp: r.credentialTtl };
      this.checkCredentialTtl();
      this.rotator = this.addRotator(r, every, rotatorName);
    }

    registerRotatingSecret(this, { who: `RotatingGpuSecret '${id}'`, name, namespace: this.secret.metadata.namespace });
  }

  /** The worst case from a scheduled rotation to the new credential in every pod, in seconds. */
  get worstCasePropagationSeconds(): number {
    return this.delays().reduce((sum, d) => sum + d.seconds, 0);
  }

  /**
   * Mounts the Secret into a workload's pods and adds what it takes for them to notice rotations.
   * The whole directory is mounted read-only, never through subPath (which never updates).
   */
  mountInto(workload: IGpuWorkload, options: MountOptions): void {
    const v: Validator = this.v;
    if (!workload || !(workload._podTemplate instanceof PodTemplate)) {
      v.fail('mountInto', 'needs a workload of this library (GpuTrainingStatefulSet or an InferenceService)', workload);
    }
    // A pod can only mount a Secret of its own namespace; any other stays in ContainerCreating.
    const podNamespace = workload.statefulSet.metadata.namespace;
    if (podNamespace !== this.secret.metadata.namespace) {
      v.failDescribed(
        'mountInto',
        `needs a workload in the Secret's namespace (${this.secret.metadata.namespace ?? 'the default namespace'}), because a pod can only mount a Secret of its own namespace`,
        `a workload in ${podNamespace ?? 'the default namespace'}`,
      );
    }
    v.plainObject('mountInto options', options);
    v.knownProps('', options, MOUNT_PROPS);
    const pod = workload._podTemplate;
    const mountPath = this.checkPath(pod, options.path);
    if (!(options.onRotation instanceof Reload)) {
      v.fail(
        'onRotation',
        'must be a Reload, e.g. Reload.exec([...]), Reload.signal("SIGHUP", { process }) or Reload.sync()',
        options.onRotation,
      );
    }
    const action = this.checkReload(options.onRotation._spec, workload);
    this.refuseEnv(pod);
    if (action.timeoutSeconds > this.slowestReloadSeconds) this.checkCredentialTtl(action.timeoutSeconds);

    const volume = fitName(this.secretName, `-${this.mounts}`, LABEL_MAX);
    const copies = fitName(volume, '-copies', LABEL_MAX);
    const stateVolume = fitName(volume, '-state', LABEL_MAX);
    const sidecar = fitName(`reload-${volume}`, '', LABEL_MAX);
    const initSidecar = fitName(`reload-${volume}`, '-init', LABEL_MAX);
    const volumes = pod.volumeNames();
    const newVolumes = action.kind === 'restart' ? [volume] : [volume, stateVolume];
    for (const name of action.kind === 'sync' ? [...newVolumes, copies] : newVolumes) {
      if (volumes.has(name))
        v.fail('name', `must not derive a volume name the pod already has (${[...volumes].join(', ')})`, name);
    }
    const spec = pod.spec as { initContainers?: k8s.Container[]; containers: k8s.Container[] };
    const containers = new Set([...(spec.initContainers ?? []), ...spec.containers].map(c => c.name));
    for (const name of action.kind === 'restart' ? [] : action.kind === 'sync' ? [sidecar, initSidecar] : [sidecar]) {
      if (containers.has(name))
        v.fail('name', `must not derive a container name the pod already has (${[...containers].join(', ')})`, name);
    }

    // Everything is checked: from here on nothing fails half-way through changing the pod.
    this.mounts++;
    this.slowestReloadSeconds = Math.max(this.slowestReloadSeconds, action.timeoutSeconds);
    const sidecarUid = workload._securityUid ?? DEFAULT_NON_ROOT_UID;
    // 0440: readable by the owner and the pod's fsGroup only, which the sidecar shares.
    pod.ensureFsGroup(sidecarUid);
    pod.addVolume(
      {
        name: volume,
        secret: { secretName: this.secretName, defaultMode: 0o440, items: this.keys.map(k => ({ key: k, path: k })) },
      },
      v,
      'name',
    );

    if (action.kind === 'restart') {
      pod.mount(pod.main, { name: volume, mountPath, readOnly: true }, v, 'path');
      const key = 'secret.reloader.stakater.com/reload';
      const existing: string | undefined = workload.statefulSet.metadata.toJson().annotations?.[key];
      const names = new Set([...(existing ? existing.split(',') : []), this.secretName]);
      workload.statefulSet.metadata.addAnnotation(key, [...names].join(','));
      return;
    }

    const env: k8s.EnvVar[] = [
      { name: 'KEYS', value: this.keys.join(' ') },
      { name: 'STATE_DIR', value: STATE_DIR },
      { name: 'POLL_SECONDS', value: String(this.pollSeconds) },
      { name: 'ACTION', value: action.script },
      ...(action.timeoutSeconds > 0 ? [{ name: 'ACTION_TIMEOUT_SECONDS', value: String(action.timeoutSeconds) }] : []),
      ...action.env,
    ];
    let watchDir = mountPath;
    const sidecarMounts: k8s.VolumeMount[] = [];
    if (action.kind === 'sync') {
      // The Secret goes to the sidecar only; the main container reads plain copies.
      watchDir = `${SIDECAR_DIR}/${volume}`;
      pod.addVolume(
        { name: copies, emptyDir: { medium: 'Memory', sizeLimit: k8s.Quantity.fromString('16Mi') } },
        v,
        'name',
      );
      env.push({ name: 'SYNC_DIR', value: mountPath });
      sidecarMounts.push({ name: copies, mountPath });
      pod.mount(pod.main, { name: copies, mountPath, readOnly: true }, v, 'path');
    } else {
      pod.mount(pod.main, { name: volume, mountPath, readOnly: true }, v, 'path');
    }
    if (action.kind === 'signal') pod.shareProcessNamespace();
    sidecarMounts.unshift({ name: volume, mountPath: watchDir, readOnly: true });
    // The record of the last reload outlives a restart of the sidecar (not the pod: a new pod's
    // application starts on the current content).
    pod.addVolume({ name: stateVolume, emptyDir: { sizeLimit: k8s.Quantity.fromString('1Mi') } }, v, 'name');
    sidecarMounts.push({ name: stateVolume, mountPath: STATE_DIR });
    env.unshift({ name: 'WATCH_DIR', value: watchDir });

    const identity = { runAsRoot: false, uid: sidecarUid, addCapabilities: [], readOnlyRootFilesystem: true };
    const memoryLimit = k8s.Quantity.fromString(action.kind === 'exec' ? '256Mi' : '64Mi');
    const container = (name: string, extraEnv: k8s.EnvVar[] = []): k8s.Container => ({
      name,
      image: action.image,
      imagePullPolicy: 'IfNotPresent',
      command: ['sh', '-c', RELOAD_SCRIPT, 'reload-sidecar'],
      ...(action.args.length ? { args: action.args } : {}),
      env: [...env, ...extraEnv],
      volumeMounts: sidecarMounts,
      // In a Guaranteed pod every container requests what it limits, or the pod is Burstable and
      // the CPU manager does not pin the workload: the sidecar then reserves its limits.
      resources: pod.guaranteedQos
        ? {
            requests: { cpu: k8s.Quantity.fromString('10m'), memory: memoryLimit },
            limits: { cpu: k8s.Quantity.fromString('10m'), memory: memoryLimit },
          }
        : {
            requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('16Mi') },
            limits: { memory: memoryLimit },
          },
      securityContext: { ...containerSecurityContext(identity), runAsUser: sidecarUid, runAsGroup: sidecarUid },
    });
    pod.addContainer(
      {
        ...container(sidecar),
        // Readiness-neutral: a failing reload restarts the sidecar (which retries) and shows as its
        // restart count and Unhealthy events, without taking the pod out of its Service.
        livenessProbe: {
          exec: { command: ['sh', '-c', `! [ -e ${STATE_DIR}/unhealthy ]`] },
          periodSeconds: 10,
          timeoutSeconds: 5,
          failureThreshold: 3,
        },
      },
      v,
      'name',
    );
    if (action.kind === 'sync')
      pod.addInitContainer(container(initSidecar, [{ name: 'RUN_ONCE', value: '1' }]), v, 'name');
  }

  /** The terms of the worst case, with the slowest reload of any mount so far (or `reloadSeconds`). */
  private delays(reloadSeconds = this.slowestReloadSeconds): Delay[] {
    return [...this.baseDelays, ...(reloadSeconds > 0 ? [{ what: 'reload timeout', seconds: reloadSeconds }] : [])];
  }

  /**
   * A credential issued at one scheduled run must last until the run after next has reached every
   * pod: one run may be skipped (it missed startingDeadlineSeconds, with only an Event to show).
   */
  private checkCredentialTtl(reloadSeconds = this.slowestReloadSeconds): void {
    const r = this.rotation;
    if (r?.ttl === undefined) return;
    const delays = this.delays(reloadSeconds);
    const total = 2 * r.every + delays.reduce((sum, d) => sum + d.seconds, 0);
    if (total > r.ttl) {
      this.v.fail(
        'rotation.credentialTtl',
        `must cover two rotation periods (a run that misses its start deadline is skipped) plus the worst-case propagation: 2 x ${r.every}s + (` +
          `${delays.map(d => `${d.what} ${d.seconds}s`).join(' + ')}) = ${total}s; rotate more often or lengthen the credential's lifetime`,
        r.ttlProp,
      );
    }
  }

  /** The mount path: normalized, clear of the container's mounts and of what the image needs. */
  private checkPath(pod: PodTemplate, value: string): string {
    const v: Validator = this.v;
    const p = v.absolutePath('path', value);
    if (path.posix.normalize(p) !== p || (p.length > 1 && p.endsWith('/'))) {
      v.fail(
        'path',
        'must be a normalized absolute path (no "//", "/./" or trailing "/"), because the kubelet compares mount paths as strings',
        value,
      );
    }
    if (SYSTEM_DIRS.has(p))
      v.fail('path', 'must not be a system directory: a secret mount there hides what the image keeps in it', value);
    if (p === SIDECAR_DIR || p.startsWith(`${SIDECAR_DIR}/`))
      v.fail('path', `must not be under ${SIDECAR_DIR}, where the reload sidecar mounts the Secret`, value);
    const workingDir = pod.main.workingDir;
    if (workingDir !== undefined && (workingDir === p || workingDir.startsWith(`${p}/`))) {
      v.fail('path', `must not hide the main container's working directory (${workingDir})`, value);
    }
    for (const m of pod.main.volumeMounts) {
      if (m.mountPath === p) {
        v.fail(
          'path',
          `must not be a path container '${pod.main.name}' already mounts (volume '${m.name}' is there)`,
          value,
        );
      }
      if (m.mountPath.startsWith(`${p}/`)) {
        v.fail(
          'path',
          `must not contain another mount of container '${pod.main.name}' (volume '${m.name}' at ${m.mountPath}): the runtime cannot create that mount point inside the read-only secret volume`,
          value,
        );
      }
      if (m.readOnly && p.startsWith(`${m.mountPath}/`)) {
        v.fail(
          'path',
          `must not be inside the read-only mount ${m.mountPath} of container '${pod.main.name}' (volume '${m.name}'): the runtime cannot create the mount point there`,
          value,
        );
      }
    }
    return p;
  }

  /** The onRotation action, checked against the workload, as the sidecar's settings. */
  private checkReload(
    spec: ReloadSpec,
    workload: IGpuWorkload,
  ): {
    kind: ReloadSpec['kind'];
    script: string;
    image: string;
    args: string[];
    env: k8s.EnvVar[];
    timeoutSeconds: number;
  } {
    const v: Validator = this.v;
    const base = { image: DEFAULT_RELOAD_IMAGE, args: [] as string[], env: [] as k8s.EnvVar[], timeoutSeconds: 0 };
    const timeout = (t: Duration | undefined, prop: string) =>
      v.seconds(prop, unset(t, Duration.seconds(DEFAULT_RELOAD_TIMEOUT_SECONDS)), 1, 600);
    switch (spec.kind) {
      case 'exec': {
        const command = v.stringArray('onRotation command', spec.command);
        if (!command || command.length === 0)
          v.fail('onRotation command', 'must be a non-empty array: the program, then its arguments', spec.command);
        if (command[0].trim() === '' || /\s/.test(command[0])) {
          v.fail(
            'onRotation command[0]',
            'must be the program alone, without whitespace: put each argument in its own element',
            command[0],
          );
        }
        const image = spec.image !== undefined ? v.image('onRotation image', spec.image) : DEFAULT_RELOAD_IMAGE;
        return {
          ...base,
          kind: 'exec',
          script: 'exec',
          image,
          args: [...command],
          timeoutSeconds: timeout(spec.timeout, 'onRotation timeout'),
        };
      }
      case 'http': {
        let url: URL | undefined;
        try {
          url = typeof spec.url === 'string' && !/\s/.test(spec.url) ? new URL(spec.url) : undefined;
        } catch {
          url = undefined;
        }
        if (!url || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
          v.fail(
            'onRotation url',
            'must be an absolute http:// or https:// URL without whitespace, e.g. "http://localhost:8080/reload"',
            spec.url,
          );
        }
        return {
          ...base,
          kind: 'http',
          script: 'http',
          timeoutSeconds: timeout(spec.timeout, 'onRotation timeout'),
          env: [{ name: 'RELOAD_URL', value: spec.url }],
        };
      }
      case 'signal': {
        const signal = normalizeSignal(spec.signal);
        if (signal === undefined) {
          v.fail(
            'onRotation signal',
            `must be one of ${RELOAD_SIGNALS.map(s => `SIG${s}`).join(', ')} (with or without "SIG", any case)`,
            spec.signal,
          );
        }
        const comm = spec.process;
        if (typeof comm !== 'string' || comm.trim() === '') {
          v.fail(
            'onRotation process',
            'must be the name of the process to signal ({ process }), as in /proc/<pid>/comm',
            comm,
          );
        }
        if (/[/\s]/.test(comm))
          v.fail('onRotation process', 'must be a process name (the file name), not a path or a command line', comm);
        const truncated = comm.slice(0, COMM_MAX);
        // python3 running torchrun or the SGLang server is judged as that program.
        const rule = endingRule(workload._processAliases?.[truncated] ?? truncated, signal);
        if (rule) {
          v.fail(
            'onRotation',
            `must not send SIG${signal} to ${rule.program}: ${rule.why}. Reload it with Reload.exec or Reload.httpPost, or signal the process that reloads on SIG${signal}`,
            comm,
          );
        }
        if (comm.length > COMM_MAX) {
          v.failDescribed(
            'onRotation process',
            `must be at most ${COMM_MAX} characters, because Linux truncates process names in /proc/<pid>/comm and the sidecar would never find it; use "${truncated}"`,
            JSON.stringify(comm),
          );
        }
        if (RESERVED_COMMS.includes(comm)) {
          v.fail(
            'onRotation process',
            `must not be a name the reload sidecar's own processes or the pod's pause process carry (${RESERVED_COMMS.join(', ')})`,
            comm,
          );
        }
        if (workload._securityUid === undefined) {
          v.fail(
            'onRotation',
            'Reload.signal needs a workload that runs as a non-root UID: the restricted sidecar can only signal processes of its own UID',
            'a workload running as root',
          );
        }
        return {
          ...base,
          kind: 'signal',
          script: 'signal',
          env: [
            { name: 'SIGNAL', value: signal },
            { name: 'PROCESS_NAME', value: comm },
          ],
        };
      }
      case 'sync':
        return { ...base, kind: 'sync', script: 'sync', timeoutSeconds: DEFAULT_RELOAD_TIMEOUT_SECONDS };
      case 'restart':
        if (!workload._templateChangesRollOut) {
          v.fail(
            'onRotation',
            'Reload.restart() needs a workload that rolls pod-template changes out (updateStrategy RollingUpdate): ' +
              'Stakater Reloader only patches the pod template, which an OnDelete StatefulSet never applies to running pods (stakater/Reloader#294). ' +
              'Reload in place (Reload.exec, signal, httpPost, sync) or use RollingUpdate',
            'a workload with updateStrategy OnDelete',
          );
        }
        return { ...base, kind: 'restart', script: '' };
      default:
        return v.fail('onRotation', 'must be made with a Reload factory', spec);
    }
  }

  private addRotator(r: SecretRotation, every: number, account: string): SecretRotator {
    const v: Validator = this.v;
    const name = this.secretName;
    const schedule = cronSchedule(v, every, name, r.every);
    const image = v.image('rotation.image', r.image);
    const command = v.stringArray('rotation.command', r.command);
    const args = v.stringArray('rotation.args', r.args);
    if (command?.length === 0)
      v.fail('rotation.command', "must not be empty: omit it to run the image's entrypoint", command);
    if (r.env !== undefined) v.plainObject('rotation.env', r.env);
    for (const [key, value] of Object.entries(r.env ?? {})) {
      v.envName(`rotation.env.${key}`, key);
      if (key === 'SECRET_NAME' || key === 'SECRET_NAMESPACE')
        v.fail(`rotation.env.${key}`, 'is set by the construct', value);
      if (typeof value !== 'string') v.fail(`rotation.env.${key}`, 'must be a string', value);
    }

    const labels = { ...this.labels, [LABEL_COMPONENT]: 'credential-rotator' };
    const saAnnotations = v.annotations('rotation.serviceAccountAnnotations', r.serviceAccountAnnotations);
    const pullSecrets = (v.stringArray('rotation.imagePullSecrets', r.imagePullSecrets) ?? []).map((n, i) => ({
      name: v.dnsSubdomain(`rotation.imagePullSecrets[${i}]`, n),
    }));
    const nodeSelector = v.labels('rotation.nodeSelector', r.nodeSelector);
    const tolerations = v.array('rotation.tolerations', r.tolerations);
    tolerations.forEach((t, i) => toleration(v, `rotation.tolerations[${i}]`, t));
    const serviceAccount = new ManifestObject(this, 'RotatorAccount', KIND.ServiceAccount, {
      metadata: { name: account, labels, ...(Object.keys(saAnnotations).length ? { annotations: saAnnotations } : {}) },
      automountServiceAccountToken: false,
    });
    const role = new ManifestObject(this, 'RotatorRole', KIND.Role, {
      metadata: { name: account, labels },
      // Only this Secret, and only read and write: resourceNames cannot restrict create, so the
      // Secret is created by the manifests (empty) and the rotator fills it.
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [name], verbs: ['get', 'patch', 'update'] }],
    });
    const roleBinding = new ManifestObject(this, 'RotatorBinding', KIND.RoleBinding, {
      metadata: { name: account, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
      subjects: [{ kind: 'ServiceAccount', name: account }],
    });

    const identity = { runAsRoot: false, uid: DEFAULT_NON_ROOT_UID, addCapabilities: [] };
    const jobSpec: k8s.JobSpec = {
      backoffLimit: 3,
      activeDeadlineSeconds: ROTATION_RUN_DEADLINE_SECONDS,
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: account,
          automountServiceAccountToken: true, // the rotator writes the Secret through the API
          restartPolicy: 'Never',
          ...(pullSecrets.length ? { imagePullSecrets: pullSecrets } : {}),
          ...(Object.keys(nodeSelector).length ? { nodeSelector } : {}),
          ...(tolerations.length ? { tolerations: [...tolerations] } : {}),
          securityContext: podSecurityContext(identity),
          containers: [
            {
              name: 'rotator',
              image,
              imagePullPolicy: 'IfNotPresent',
              ...(command ? { command } : {}),
              ...(args ? { args } : {}),
              env: [
                { name: 'SECRET_NAME', value: name },
                { name: 'SECRET_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                ...Object.entries(r.env ?? {}).map(([k, val]) => ({ name: k, value: val })),
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

    const cronJob = new ManifestObject(this, 'Rotation', KIND.CronJob, {
      metadata: { name: account, labels },
      spec: {
        schedule,
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
    const initialJob = new ManifestObject(this, 'InitialRotation', KIND.Job, {
      metadata: { name: fitName(`${account}-initial`, `-${hash}`, LABEL_MAX), labels },
      spec: jobSpec,
    });
    return { serviceAccount, role, roleBinding, cronJob, initialJob };
  }

  private refuseEnv(pod: PodTemplate): void {
    const errors: string[] = [];
    envReadsIn(pod.spec, this.secretName, errors);
    if (errors.length > 0) this.v.fail('mountInto', errors[0]);
  }
}

/** The rotating Secrets of each app, by namespace. */
const ROTATING = new WeakMap<IConstruct, Map<string | undefined, RotatingSecretRef[]>>();

/**
 * Records a rotating Secret and makes, once per app, every object of the library refuse at synth a
 * container that reads a rotating Secret of its namespace through env, envFrom or a subPath mount
 * (none of which ever sees a rotation), from the object's own final JSON. The user's own objects are
 * checked with the whole output (checks/manifests.ts, the validation plugin).
 */
function registerRotatingSecret(scope: IConstruct, ref: RotatingSecretRef): void {
  const root = scope.node.root;
  let byNamespace = ROTATING.get(root);
  if (!byNamespace) ROTATING.set(root, (byNamespace = new Map()));
  const list = byNamespace.get(ref.namespace);
  if (list) list.push(ref);
  else byNamespace.set(ref.namespace, [ref]);
  addOutputRule(scope, 'rotating-secret-env', (obj, json) =>
    rotatingEnvErrors(json, byNamespace.get(obj.metadata.namespace) ?? []),
  );
}

/**
 * The default when a prop is left out. Only `undefined` means "left out": a `null` from JavaScript
 * is a wrong value, which the prop's check then refuses by name.
 */
function unset<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/** The Secret keys, checked as the API server checks them (`IsConfigMapKey`). */
function secretKeys(v: Validator, keys: string[]): string[] {
  if (!Array.isArray(keys) || keys.length === 0) v.fail('keys', 'must be a non-empty array of Secret keys', keys);
  keys.forEach((k, i) => {
    configKey(v, `keys[${i}]`, k);
  });
  const duplicate = keys.find((k, i) => keys.indexOf(k) !== i);
  if (duplicate !== undefined) v.fail('keys', 'must not repeat a key', duplicate);
  return [...keys];
}

/**
 * `stem + suffix` when it fits in `max` characters, else the stem shortened and followed by a hash
 * of the whole stem, so that two long names never shorten to the same one.
 */
function fitName(stem: string, suffix: string, max: number): string {
  if (stem.length + suffix.length <= max) return stem + suffix;
  const hash = contentHash({ stem }).slice(0, 8);
  return `${stem.slice(0, max - suffix.length - hash.length - 1).replace(/-+$/, '')}-${hash}${suffix}`;
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
