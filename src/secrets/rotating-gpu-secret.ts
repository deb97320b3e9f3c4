import * as fs from 'fs';
import * as path from 'path';
import { ApiObject, Chart, Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct, Node } from 'constructs';
import { contentHash } from '../common/hash';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { IGpuWorkload } from '../common/pod-template';
import { containerSecurityContext, DEFAULT_NON_ROOT_UID, podSecurityContext } from '../common/security';
import { Validator } from '../common/validate';
import { DEFAULT_RELOAD_IMAGE, Reload } from './reload';

/** The watcher script, a real file that tests run under `sh`, embedded in every sidecar. */
const RELOAD_SCRIPT = fs.readFileSync(path.join(__dirname, 'reload-sidecar.sh'), 'utf8');

/** The kubelet's sync period (`syncFrequency`, default 1 min): how often it refreshes secret volumes. */
export const KUBELET_SYNC_SECONDS = 60;
/** The kubelet's secret cache TTL under the default Watch strategy is at most the sync period again. */
export const KUBELET_CACHE_SECONDS = 60;
/** The CronJob's starting deadline: a rotation that cannot start in 10 min is skipped and alerts. */
export const ROTATION_START_DEADLINE_SECONDS = 600;
/** The rotation Job's active deadline: one run, with its retries, may take at most 10 min. */
export const ROTATION_RUN_DEADLINE_SECONDS = 600;
/** How often the reload sidecar fingerprints the secret directory. */
export const DEFAULT_RELOAD_POLL_SECONDS = 10;

/** The user's rotator: a program that obtains a fresh credential and writes it into the Secret. */
export interface SecretRotation {
  /** The rotator image. */
  readonly image: string;
  /** @default - the image's entrypoint */
  readonly command?: string[];
  /** @default - the image's command */
  readonly args?: string[];
  /**
   * How often to rotate. At least 1 hour; a whole number of hours that divides 24, or whole days.
   * @default Duration.hours(24)
   */
  readonly every?: Duration;
  /**
   * The credential's lifetime. When set, the construct checks that a rotation lands in every pod
   * before the previous credential expires.
   * @default - no check
   */
  readonly credentialTtl?: Duration;
  /** @default - none besides SECRET_NAME and SECRET_NAMESPACE */
  readonly env?: Record<string, string>;
}

export interface RotatingGpuSecretProps {
  /** The Secret's name, a DNS-1123 label (it also names the rotator's objects). */
  readonly name: string;
  /**
   * The keys the rotator writes. Pods mount exactly these, so they wait in ContainerCreating until
   * the first rotation has written them instead of starting on an empty Secret.
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
   * How often reload sidecars look for a change.
   * @default Duration.seconds(10)
   */
  readonly reloadPollInterval?: Duration;
}

export interface MountOptions {
  /** Where the main container sees the files: an absolute directory. */
  readonly path: string;
  /** What to do in the pod when the Secret changes. */
  readonly onRotation: Reload;
}

/**
 * A Secret whose credential is rotated on a schedule and reaches long-running pods without a
 * restart: a whole-directory read-only mount (which the kubelet updates) and a reload sidecar
 * that detects the update and tells the workload.
 */
export class RotatingGpuSecret extends Construct {
  readonly secretName: string;
  readonly keys: readonly string[];
  /** The worst case from a scheduled rotation to the new credential in every pod, in seconds. */
  readonly worstCasePropagationSeconds: number;
  private readonly pollSeconds: number;
  private readonly v: Validator;
  private readonly labels: Record<string, string>;
  private mounts = 0;

  constructor(scope: Construct, id: string, props: RotatingGpuSecretProps) {
    super(scope, id);
    const v = this.v = new Validator('RotatingGpuSecret', id);
    const name = this.secretName = v.dnsLabel('name', props.name, 40);
    this.keys = props.keys ?? ['credentials.json'];
    if (this.keys.length === 0) v.fail('keys', 'must name at least one key', this.keys);
    this.keys.forEach((k, i) => {
      if (!/^[-._a-zA-Z0-9]+$/.test(k) || k.startsWith('..')) v.fail(`keys[${i}]`, 'must be a valid Secret key (letters, digits, "-", "_", ".")', k);
    });
    this.pollSeconds = v.seconds('reloadPollInterval', props.reloadPollInterval ?? Duration.seconds(DEFAULT_RELOAD_POLL_SECONDS), 1, 600);
    this.labels = {
      [LABEL_NAME]: name, [LABEL_INSTANCE]: name, [LABEL_COMPONENT]: 'credentials', [LABEL_MANAGED_BY]: MANAGED_BY,
    };

    // No data: the rotator owns it. Re-applying this manifest (client- or server-side) leaves a
    // rotated value alone, since `data` is in neither the last-applied configuration nor our fields.
    new k8s.KubeSecret(this, 'Secret', {
      metadata: {
        name, labels: this.labels,
        annotations: { 'cdk8s-gpu.io/data-owner': props.rotation ? `${name}-rotator` : 'external' },
      },
      type: 'Opaque',
    });

    const runDeadlines = props.rotation ? ROTATION_START_DEADLINE_SECONDS + ROTATION_RUN_DEADLINE_SECONDS : 0;
    this.worstCasePropagationSeconds = KUBELET_SYNC_SECONDS + KUBELET_CACHE_SECONDS + this.pollSeconds + runDeadlines;

    if (props.rotation) this.addRotator(props.rotation);

    Node.of(this).addValidation({ validate: () => this.findEnvConsumers() });
  }

  /**
   * Mounts the Secret into a workload's pods and adds what it takes for them to notice rotations.
   * The whole directory is mounted read-only, never through subPath (which never updates).
   */
  mountInto(workload: IGpuWorkload, options: MountOptions): void {
    const v = this.v;
    const mountPath = v.absolutePath('path', options.path);
    const spec = options.onRotation?._spec;
    if (!spec) v.fail('onRotation', 'must be a Reload, e.g. Reload.exec([...]) or Reload.signal("SIGHUP", { process })');
    const pod = workload._podTemplate;
    this.refuseEnv(pod.spec.containers);
    const index = this.mounts++;
    const volume = `${this.secretName}-${index}`.slice(0, 63);
    const sidecarUid = workload._securityUid ?? DEFAULT_NON_ROOT_UID;
    // 0440: readable by the owner and the pod's fsGroup only, which the sidecar shares.
    pod.ensureFsGroup(sidecarUid);
    pod.addVolume({
      name: volume,
      secret: { secretName: this.secretName, defaultMode: 0o440, items: this.keys.map(k => ({ key: k, path: k })) },
    });

    if (spec.kind === 'restart') {
      pod.main.volumeMounts.push({ name: volume, mountPath, readOnly: true });
      workload.statefulSet.metadata.addAnnotation('secret.reloader.stakater.com/reload', this.secretName);
      return;
    }

    const env: k8s.EnvVar[] = [{ name: 'POLL_SECONDS', value: String(this.pollSeconds) }, { name: 'ACTION', value: spec.kind }];
    let watchDir = mountPath;
    let image = DEFAULT_RELOAD_IMAGE;
    let args: string[] = [];
    const sidecarMounts: k8s.VolumeMount[] = [];
    switch (spec.kind) {
      case 'exec':
        if (!Array.isArray(spec.command) || spec.command.length === 0) v.fail('onRotation', 'Reload.exec needs a non-empty command', spec.command);
        image = spec.image !== undefined ? v.nonEmpty('onRotation.image', spec.image) : image;
        args = spec.command;
        break;
      case 'signal':
        if (!spec.process) v.fail('onRotation', 'Reload.signal needs the name of the process to signal ({ process })', spec.process);
        if (!Reload._signals().includes(spec.signal)) v.fail('onRotation', `Reload.signal takes one of ${Reload._signals().map(s => `SIG${s}`).join(', ')}`, spec.signal);
        if (workload._securityUid === undefined) {
          v.fail('onRotation', 'Reload.signal needs a workload that runs as a non-root UID: the restricted sidecar can only signal processes of its own UID', 'a workload running as root');
        }
        pod.shareProcessNamespace();
        env.push({ name: 'SIGNAL', value: spec.signal }, { name: 'PROCESS_NAME', value: spec.process });
        break;
      case 'http':
        if (!/^https?:\/\/\S+$/.test(spec.url ?? '')) v.fail('onRotation', 'Reload.httpPost needs an http(s) URL', spec.url);
        env.push({ name: 'RELOAD_URL', value: spec.url });
        break;
      case 'sync': {
        // The secret goes to the sidecar only; the main container reads plain copies.
        watchDir = `/var/run/cdk8s-gpu/${volume}`;
        const copies = `${volume}-copies`.slice(0, 63);
        pod.addVolume({ name: copies, emptyDir: { medium: 'Memory', sizeLimit: k8s.Quantity.fromString('16Mi') } });
        env.push({ name: 'SYNC_DIR', value: mountPath });
        sidecarMounts.push({ name: copies, mountPath });
        pod.main.volumeMounts.push({ name: copies, mountPath, readOnly: true });
        break;
      }
    }
    if (spec.kind !== 'sync') pod.main.volumeMounts.push({ name: volume, mountPath, readOnly: true });
    sidecarMounts.unshift({ name: volume, mountPath: watchDir, readOnly: true });
    env.unshift({ name: 'WATCH_DIR', value: watchDir });

    const identity = { runAsRoot: false, uid: sidecarUid, addCapabilities: [], readOnlyRootFilesystem: true };
    const container = (name: string, extraEnv: k8s.EnvVar[] = []): k8s.Container => ({
      name,
      image,
      imagePullPolicy: 'IfNotPresent',
      command: ['sh', '-c', RELOAD_SCRIPT, 'reload-sidecar'],
      ...(args.length ? { args } : {}),
      env: [...env, ...extraEnv],
      volumeMounts: sidecarMounts,
      resources: {
        requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('16Mi') },
        limits: { memory: k8s.Quantity.fromString(spec.kind === 'exec' ? '256Mi' : '64Mi') },
      },
      securityContext: { ...containerSecurityContext(identity), runAsUser: sidecarUid, runAsGroup: sidecarUid },
    });
    const sidecarName = `reload-${volume}`.slice(0, 63).replace(/-+$/, '');
    pod.addContainer(container(sidecarName));
    if (spec.kind === 'sync') pod.addInitContainer(container(`${sidecarName}-init`.slice(0, 63), [{ name: 'RUN_ONCE', value: '1' }]));
  }

  private addRotator(r: SecretRotation): void {
    const v = this.v;
    const name = this.secretName;
    v.nonEmpty('rotation.image', r.image);
    const every = v.seconds('rotation.every', r.every ?? Duration.hours(24), 3600);
    const schedule = cronSchedule(v, every, name);
    if (r.credentialTtl !== undefined) {
      const ttl = v.seconds('rotation.credentialTtl', r.credentialTtl, 1);
      if (every > ttl) v.fail('rotation.every', `must not exceed credentialTtl (${ttl}s)`, r.every);
      const total = every + this.worstCasePropagationSeconds;
      if (total > ttl) {
        v.fail('rotation.credentialTtl',
          `must cover rotation.every plus the worst-case propagation: ${every}s + (kubelet sync ${KUBELET_SYNC_SECONDS}s + cache ${KUBELET_CACHE_SECONDS}s`
          + ` + sidecar poll ${this.pollSeconds}s + job start deadline ${ROTATION_START_DEADLINE_SECONDS}s + job run deadline ${ROTATION_RUN_DEADLINE_SECONDS}s) = ${total}s`,
          r.credentialTtl);
      }
    }
    for (const key of Object.keys(r.env ?? {})) {
      v.envName(`rotation.env.${key}`, key);
      if (key === 'SECRET_NAME' || key === 'SECRET_NAMESPACE') v.fail(`rotation.env.${key}`, 'is set by the construct', r.env![key]);
    }

    const account = `${name}-rotator`;
    const labels = { ...this.labels, [LABEL_COMPONENT]: 'credential-rotator' };
    new k8s.KubeServiceAccount(this, 'RotatorAccount', { metadata: { name: account, labels }, automountServiceAccountToken: false });
    new k8s.KubeRole(this, 'RotatorRole', {
      metadata: { name: account, labels },
      // Only this Secret, and only read and write: resourceNames cannot restrict create, so the
      // Secret is created by the manifests (empty) and the rotator fills it.
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [name], verbs: ['get', 'patch', 'update'] }],
    });
    new k8s.KubeRoleBinding(this, 'RotatorBinding', {
      metadata: { name: account, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
      subjects: [{ kind: 'ServiceAccount', name: account }],
    });

    const identity = { runAsRoot: false, uid: DEFAULT_NON_ROOT_UID, addCapabilities: [] };
    const jobSpec = (ttlAfterFinished?: number): k8s.JobSpec => ({
      backoffLimit: 3,
      activeDeadlineSeconds: ROTATION_RUN_DEADLINE_SECONDS,
      ...(ttlAfterFinished !== undefined ? { ttlSecondsAfterFinished: ttlAfterFinished } : {}),
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: account,
          automountServiceAccountToken: true, // the rotator writes the Secret through the API
          restartPolicy: 'Never',
          securityContext: podSecurityContext(identity),
          containers: [{
            name: 'rotator',
            image: r.image,
            imagePullPolicy: 'IfNotPresent',
            ...(r.command ? { command: r.command } : {}),
            ...(r.args ? { args: r.args } : {}),
            env: [
              { name: 'SECRET_NAME', value: name },
              { name: 'SECRET_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              ...Object.entries(r.env ?? {}).map(([k, val]) => ({ name: k, value: String(val) })),
            ],
            resources: {
              requests: { cpu: k8s.Quantity.fromString('50m'), memory: k8s.Quantity.fromString('64Mi') },
              limits: { memory: k8s.Quantity.fromString('256Mi') },
            },
            securityContext: containerSecurityContext(identity),
          }],
        },
      },
    });

    new k8s.KubeCronJob(this, 'Rotation', {
      metadata: { name: account, labels },
      spec: {
        schedule,
        timeZone: 'Etc/UTC',
        concurrencyPolicy: 'Forbid',
        startingDeadlineSeconds: ROTATION_START_DEADLINE_SECONDS,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 3,
        jobTemplate: { spec: jobSpec() },
      },
    });

    // The first rotation, so pods do not wait a whole period. A Job's template is immutable, so
    // its name carries a hash of its content: a changed rotator is a new Job, never an update.
    const initial = jobSpec(24 * 3600);
    const hash = contentHash({ spec: JSON.stringify(plainJson(initial)) }).slice(0, 8);
    new k8s.KubeJob(this, 'InitialRotation', { metadata: { name: `${account}-initial-${hash}`, labels }, spec: initial });
  }

  private refuseEnv(containers: k8s.Container[]): void {
    const errors = envConsumers(containers.map(c => ({ name: c.name, env: c.env as any[] | undefined, envFrom: c.envFrom as any[] | undefined })), this.secretName);
    if (errors.length > 0) this.v.fail('mountInto', errors[0]);
  }

  /** At synth: any container in the chart that reads this Secret through env is an error. */
  private findEnvConsumers(): string[] {
    const errors: string[] = [];
    for (const obj of Chart.of(this).node.findAll()) {
      if (!(obj instanceof ApiObject)) continue;
      const json = obj.toJson();
      const podSpec = json.spec?.template?.spec ?? json.spec?.jobTemplate?.spec?.template?.spec ?? (json.kind === 'Pod' ? json.spec : undefined);
      if (!podSpec) continue;
      const containers = [...(podSpec.initContainers ?? []), ...(podSpec.containers ?? [])];
      for (const e of envConsumers(containers, this.secretName)) {
        errors.push(`RotatingGpuSecret '${Node.of(this).id}': ${json.kind}/${json.metadata?.name}: ${e}`);
      }
    }
    return errors;
  }
}

function envConsumers(containers: Array<{ name: string; env?: any[]; envFrom?: any[] }>, secret: string): string[] {
  const why = 'environment variables are read once at container start and never see a rotation; mount the Secret with mountInto instead';
  const out: string[] = [];
  for (const c of containers) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.secretKeyRef?.name === secret) out.push(`container '${c.name}' reads rotating Secret '${secret}' through env ${e.name}: ${why}`);
    }
    for (const e of c.envFrom ?? []) {
      if (e.secretRef?.name === secret) out.push(`container '${c.name}' reads rotating Secret '${secret}' through envFrom: ${why}`);
    }
  }
  return out;
}

/** Plain JSON of typed props, for hashing (Quantity and friends serialize to their values). */
function plainJson(x: unknown): unknown {
  return JSON.parse(JSON.stringify(x, (_k, val) => (val instanceof k8s.Quantity ? val.value : val)));
}

/**
 * A cron schedule for a period: hours that divide 24, or whole days. The minute (and the hour of a
 * daily rotation) come from a hash of the name, so many secrets do not rotate at the same instant.
 */
function cronSchedule(v: Validator, seconds: number, name: string): string {
  const hours = seconds / 3600;
  const h = parseInt(contentHash({ name }).slice(0, 8), 16);
  const minute = h % 60;
  if (Number.isInteger(hours) && hours < 24 && 24 % hours === 0) {
    return hours === 1 ? `${minute} * * * *` : `${minute} */${hours} * * *`;
  }
  if (Number.isInteger(hours) && hours % 24 === 0) {
    const days = hours / 24;
    const hour = h % 24;
    return days === 1 ? `${minute} ${hour} * * *` : `${minute} ${hour} */${days} * *`;
  }
  return v.fail('rotation.every', 'must be a whole number of hours that divides 24, or whole days, to fit a cron schedule', Duration.seconds(seconds));
}
