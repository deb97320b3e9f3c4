import { ApiObject, Chart, Duration } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { addOutputRule } from '../checks/output-rules';
import { DATA_OWNER_ANNOTATION, envReadsIn, rotatingEnvErrors, RotatingSecretRef } from '../checks/rotating-env';
import { configKey } from '../common/env';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { KIND, ManifestObject } from '../common/manifest-object';
import { IGpuWorkload } from '../common/pod-template';
import type { GpuWorkload } from '../workloads';
import { Validator } from '../validation/validate';
import { emitMount, MountOptions, planMount } from './mount';
import { CRONJOB_NAME_MAX, fitName, unset } from './names';
import { emitRotator, resolveRotation, SecretRotation, SecretRotator } from './rotator';
import { SecretType } from './secret-type';
import { DEFAULT_RELOAD_POLL_SECONDS, PropagationModel } from './timing';

export type { MountOptions } from './mount';
export type { SecretRotation, SecretRotator } from './rotator';
export {
  DEFAULT_RELOAD_POLL_SECONDS,
  KUBELET_SYNC_JITTER_SECONDS,
  KUBELET_SYNC_SECONDS,
  ROTATION_RUN_DEADLINE_SECONDS,
  ROTATION_START_DEADLINE_SECONDS,
} from './timing';

const PROPS = ['name', 'type', 'keys', 'rotation', 'reloadPollInterval', 'kubeletSecretCacheTtl'];

export interface RotatingGpuSecretProps {
  /**
   * The Secret's name, a DNS-1123 label (it is also a label value). Longer derived names (the
   * rotator's CronJob, at most 52 characters, and Jobs, at most 63) are shortened with a hash.
   */
  readonly name: string;
  /**
   * The Secret's type. `Opaque` is created empty by the manifests. A type whose data the API server
   * requires at creation (dockerconfigjson, TLS, basic-auth) is created by whoever writes it: the
   * rotator (whose Role then also has `create` on Secrets) or an operator; the manifests never hold
   * it, so no apply ever undoes a rotation (see `SecretType`).
   * @default SecretType.OPAQUE
   */
  readonly type?: SecretType;
  /**
   * The keys the rotator writes: valid Secret keys (`[-._a-zA-Z0-9]+`, at most 253 characters, not
   * starting with `..`), including the keys the type requires. Keys starting with one `.` (e.g.
   * `.dockerconfigjson`) work: the sidecar is given the exact list instead of globbing. Pods mount
   * exactly these, so they wait in ContainerCreating until the first rotation has written them
   * instead of starting on an empty Secret.
   * @default - the type's keys: ['credentials.json'] (Opaque), ['.dockerconfigjson'], ['tls.crt', 'tls.key'],
   * ['username', 'password']
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

/**
 * A Secret whose credential is rotated on a schedule and reaches long-running pods without a
 * restart: a whole-directory read-only mount (which the kubelet updates) and a reload sidecar
 * that detects the update and tells the workload.
 */
export class RotatingGpuSecret extends Construct {
  readonly secretName: string;
  readonly secretType: SecretType;
  readonly keys: readonly string[];
  /**
   * The Secret, created without data: the rotator, or whoever rotates it, owns the data. Undefined
   * for a type that needs data at creation, which the writer creates (see `type`).
   */
  readonly secret?: ApiObject;
  /** The rotator's objects, when `rotation` is set. */
  readonly rotator?: SecretRotator;
  private readonly namespace: string | undefined;
  private readonly pollSeconds: number;
  private readonly timing: PropagationModel;
  private readonly rotationSeconds?: { every: number; ttl?: number };
  private readonly v: Validator;
  /**
   * Mounts so far into each workload: the n-th mount into one pod is `<secret>-<n>`. Counted per workload,
   * never across them, so a workload's volume and sidecar names do not depend on which other workloads the
   * Secret is mounted into, or in which order (dropping v1 of a bump must not rename what v2's pods mount).
   */
  private readonly mounts = new Map<IGpuWorkload, number>();

  constructor(scope: Construct, id: string, props: RotatingGpuSecretProps) {
    super(scope, id);
    // Resolve: every prop checked and defaulted, nothing emitted yet.
    const v: Validator = (this.v = new Validator('RotatingGpuSecret', id));
    v.plainObject('props', props);
    v.knownProps('', props, PROPS);
    const name = (this.secretName = v.dnsLabel('name', props.name));
    const type = (this.secretType = secretType(v, props.type));
    this.keys = secretKeys(v, unset(props.keys, [...type.defaultKeys]), type);
    this.pollSeconds = v.seconds(
      'reloadPollInterval',
      unset(props.reloadPollInterval, Duration.seconds(DEFAULT_RELOAD_POLL_SECONDS)),
      1,
      600,
    );
    const cacheSeconds = v.seconds(
      'kubeletSecretCacheTtl',
      unset(props.kubeletSecretCacheTtl, Duration.seconds(0)),
      0,
      3600,
    );
    const rotation = props.rotation !== undefined ? resolveRotation(v, props.rotation, name) : undefined;
    this.rotationSeconds = rotation && { every: rotation.everySeconds, ttl: rotation.ttlSeconds };
    this.timing = new PropagationModel(v, {
      rotated: rotation !== undefined,
      kubeletCacheSeconds: cacheSeconds,
      pollSeconds: this.pollSeconds,
      everySeconds: rotation?.everySeconds,
      ttlSeconds: rotation?.ttlSeconds,
      ttlProp: rotation?.ttlProp,
    });

    // Compose.
    this.namespace = Chart.of(this).namespace;
    const labels = {
      [LABEL_NAME]: name,
      [LABEL_INSTANCE]: name,
      [LABEL_COMPONENT]: 'credentials',
      [LABEL_MANAGED_BY]: MANAGED_BY,
    };
    const account = fitName(name, '-rotator', CRONJOB_NAME_MAX);

    // Emit. No data: the rotator owns it. Re-applying this manifest (client- or server-side) leaves
    // a rotated value alone, since `data` is in neither the last-applied configuration nor our fields.
    if (!type.needsDataAtCreation) {
      this.secret = new ManifestObject(this, 'Secret', KIND.Secret, {
        metadata: {
          name,
          labels,
          annotations: { [DATA_OWNER_ANNOTATION]: rotation !== undefined ? account : 'external' },
        },
        type: type.type,
      });
    }
    if (rotation !== undefined) {
      this.rotator = emitRotator(this, rotation, {
        secretName: name,
        secretType: type.type,
        creates: type.needsDataAtCreation,
        account,
        labels,
      });
    }
    registerRotatingSecret(this, { who: `RotatingGpuSecret '${id}'`, name, namespace: this.namespace });
  }

  /** The rotation period in seconds, when `rotation` is set. */
  get rotationPeriodSeconds(): number | undefined {
    return this.rotationSeconds?.every;
  }

  /** The credential's lifetime in seconds, when `rotation.credentialTtl` is set. */
  get credentialTtlSeconds(): number | undefined {
    return this.rotationSeconds?.ttl;
  }

  /** The worst case from a scheduled rotation to the new credential in every pod, in seconds. */
  get worstCasePropagationSeconds(): number {
    return this.timing.worstCaseSeconds;
  }

  /**
   * Mounts the Secret into a workload's pods and adds what it takes for them to notice rotations.
   * The whole directory is mounted read-only, never through subPath (which never updates).
   */
  mountInto(workload: GpuWorkload, options: MountOptions): void {
    const v: Validator = this.v;
    const source = {
      secretName: this.secretName,
      namespace: this.namespace,
      keys: this.keys,
      pollSeconds: this.pollSeconds,
      index: this.mounts.get(workload) ?? 0,
    };
    const plan = planMount(v, workload, options, source);
    this.refuseEnv(workload);
    this.timing.checkReload(plan.action.timeoutSeconds);
    // Everything is checked: from here on nothing fails half-way through changing the pod.
    this.mounts.set(workload, (this.mounts.get(workload) ?? 0) + 1);
    this.timing.addReload(plan.action.timeoutSeconds);
    emitMount(v, workload, plan, source);
  }

  private refuseEnv(workload: IGpuWorkload): void {
    const errors: string[] = [];
    envReadsIn(workload._podTemplate.spec, this.secretName, errors);
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

function secretType(v: Validator, value: SecretType | undefined): SecretType {
  if (value === undefined) return SecretType.OPAQUE;
  if (!(value instanceof SecretType)) {
    v.fail('type', 'must be a SecretType, e.g. SecretType.DOCKER_CONFIG_JSON or SecretType.TLS', value);
  }
  return value;
}

/** The Secret keys, checked as the API server checks them (`IsConfigMapKey`), with those the type needs. */
function secretKeys(v: Validator, keys: string[], type: SecretType): string[] {
  if (!Array.isArray(keys) || keys.length === 0) v.fail('keys', 'must be a non-empty array of Secret keys', keys);
  keys.forEach((k, i) => {
    configKey(v, `keys[${i}]`, k);
  });
  const duplicate = keys.find((k, i) => keys.indexOf(k) !== i);
  if (duplicate !== undefined) v.fail('keys', 'must not repeat a key', duplicate);
  for (const oneOf of type.requiredKeys) {
    if (!oneOf.some(k => keys.includes(k))) {
      v.fail(
        'keys',
        `must include ${oneOf.map(k => `"${k}"`).join(' or ')}: the API server refuses a ${type.type} Secret without it`,
        keys,
      );
    }
  }
  return [...keys];
}
