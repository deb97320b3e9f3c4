import { refuseReserved } from './runtime-scripts';
import { sizeQuantity } from './quantity';
import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct, IConstruct } from 'constructs';
import { claimTemplate, GPU_CLAIM, resolveDeviceClaim } from './device-claim';
import { EnvValue } from './env';
import {
  defaultHostResources,
  GPU_RESOURCE,
  gpuResources,
  gpuTolerations,
  isExtendedResourceName,
  shmVolume,
} from './gpu';
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME } from './labels';
import { GpuWorkloadProps, PodOptions, WorkloadVolume } from './pod-options';
import { PodTemplate } from './pod-template';
import {
  checkAffinity,
  checkContainer,
  checkSpreadConstraints,
  checkTolerationValues,
  checkVolumeSource,
} from '../validation/pod-spec-rules';
import { checkTyped } from '../validation/typed-input';
import { containerSecurityContext, podSecurityContext, POD_HARDENING, ProcessIdentity } from './security';
import { show, Validator } from '../validation/validate';

/** The keys of `GpuWorkloadProps`, for the unknown-prop check of every workload construct. */
export const GPU_WORKLOAD_PROP_KEYS: ReadonlyArray<keyof GpuWorkloadProps> = [
  'env',
  'envFrom',
  'volumes',
  'gpuResource',
  'dynamicResourceAllocation',
  'extendedResources',
  'cpu',
  'guaranteedQos',
  'memory',
  'nodeSelector',
  'runAsUser',
  'clusterDomain',
  'networkPolicy',
  'pod',
];
const POD_OPTION_KEYS: ReadonlyArray<keyof PodOptions> = [
  'tolerations',
  'affinity',
  'topologySpreadConstraints',
  'priorityClassName',
  'runtimeClassName',
  'schedulerName',
  'imagePullSecrets',
  'serviceAccountName',
  'automountServiceAccountToken',
  'labels',
  'annotations',
  'sidecars',
  'initContainers',
];
const VOLUME_KEYS: ReadonlyArray<keyof WorkloadVolume> = ['volume', 'mountPath', 'readOnly', 'subPath'];

/** Labels the construct's selectors are built from: a pod label of the same key would break them. */
const SELECTOR_KEYS = [LABEL_NAME, LABEL_INSTANCE, LABEL_COMPONENT, LABEL_MANAGED_BY];

/** Resource names the construct sets itself, so `extendedResources` may not. */
const CORE_RESOURCES = ['cpu', 'memory', 'ephemeral-storage', 'hugepages-'];

const TOLERATION_OPERATORS = ['Exists', 'Equal'];
const TOLERATION_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** An environment variable the construct sets, and what a user should set instead of overriding it. */
export interface OwnedEnv {
  readonly env: k8s.EnvVar;
  /** The prop that controls it, e.g. `replicas`; shown when a user tries to set the variable. */
  readonly via?: string;
}

/** What a construct contributes to its pod; the shared props come from `props`. */
export interface WorkloadPodInput {
  /** Where the objects the pod needs beside it (a GPU claim template) are made. */
  readonly scope: IConstruct;
  readonly props: GpuWorkloadProps;
  /** The Kueue LocalQueue the workload is admitted through, if any: its quota must see the pods' GPUs. */
  readonly queueName?: string;
  /** GPUs (or MIG instances) per pod, validated. */
  readonly gpus: number;
  readonly identity: ProcessIdentity;
  readonly labels: Record<string, string>;
  /** The main container without env, resources, mounts and security context. */
  readonly container: Omit<k8s.Container, 'env' | 'envFrom' | 'resources' | 'volumeMounts' | 'securityContext'>;
  /** Variables the construct needs for its mechanism: a user variable of the same name is refused. */
  readonly ownedEnv: OwnedEnv[];
  /** Variables the construct sets as defaults (cache locations): a user variable replaces them. */
  readonly defaultEnv: k8s.EnvVar[];
  /** The construct's own `envFrom` sources, e.g. a generated ConfigMap. */
  readonly envFrom?: k8s.EnvFromSource[];
  /** The construct's own volumes and the main container's mounts of them. */
  readonly volumes: k8s.Volume[];
  readonly mounts: k8s.VolumeMount[];
  /** Claim templates mounted into the main container: name and mount path. */
  readonly claims?: ReadonlyArray<{ name: string; mountPath: string; prop: string }>;
  /** The `/dev/shm` size, validated against memory here. */
  readonly sharedMemory: Size;
  /**
   * Host memory the construct pins beyond the process's own (a KV-cache tier): added to the default memory, and a
   * memory given must hold it beside `/dev/shm` (where `inSharedMemory` puts it, it is part of `/dev/shm` already).
   */
  readonly hostMemory?: { readonly size: Size; readonly inSharedMemory: boolean; readonly what: string };
  /** Node disk an emptyDir of the construct's fills, requested as ephemeral storage so the scheduler counts it. */
  readonly nodeDisk?: Size;
  /** Pod spec fields the construct sets (grace period, spread constraints, ...). */
  readonly spec: Omit<k8s.PodSpec, 'containers' | 'volumes'>;
}

/** The pod template of a workload, and the facts its construct reports. */
export interface WorkloadPod {
  readonly template: PodTemplate;
  readonly cpu: number;
  readonly memory: Size;
}

/**
 * Builds a workload's pod template: the construct's own container, volumes and env, merged with
 * every shared prop (env, volumes, device resources, QoS, scheduling, identity, metadata,
 * sidecars), each checked against what the construct already set.
 */
export function buildWorkloadPod(v: Validator, input: WorkloadPodInput): WorkloadPod {
  const props = input.props;
  const pod: PodOptions = props.pod ?? {};
  v.knownProps('pod', props.pod, POD_OPTION_KEYS);

  const host = defaultHostResources(input.gpus);
  const cpu = v.positive('cpu', props.cpu ?? host.cpu);
  const pinned = input.hostMemory?.size.toKibibytes() ?? 0;
  const memory = v.positiveSize('memory', props.memory ?? Size.kibibytes(host.memory.toKibibytes() + pinned));
  const shm = v.sharedMemory(input.sharedMemory, memory);
  // /dev/shm counts against the limit (the check above); a tier outside it needs room beside it.
  if (input.hostMemory && !input.hostMemory.inSharedMemory && memory.toKibibytes() <= shm.toKibibytes() + pinned)
    v.fail(
      'memory',
      `must hold ${input.hostMemory.what}, ${sizeQuantity(input.hostMemory.size).value} of pinned host memory, beside /dev/shm (${sizeQuantity(shm).value}), with room left for the engine: the kernel kills the container past its limit`,
      props.memory,
    );
  const guaranteed = v.boolean('guaranteedQos', props.guaranteedQos, false);
  // The static CPU manager gives exclusive cores to Guaranteed containers with integer CPU requests only.
  if (guaranteed && !Number.isInteger(cpu))
    v.fail(
      'cpu',
      'must be a whole number of CPUs with guaranteedQos: the static CPU manager pins only integer CPU requests',
      cpu,
    );
  const claim = resolveDeviceClaim(v, props.dynamicResourceAllocation, {
    gpus: input.gpus,
    gpuResource: props.gpuResource,
    queueName: input.queueName,
    extended: Object.keys(props.extendedResources ?? {}),
  });
  const gpuResource = props.gpuResource ?? GPU_RESOURCE;
  extendedResourceName(v, 'gpuResource', gpuResource);
  const extended = extendedResources(v, props.extendedResources ?? {}, gpuResource);

  const env = mergeEnv(v, input.ownedEnv, input.defaultEnv, props.env);
  const envFrom = [
    ...(input.envFrom ?? []),
    ...v.array('envFrom', props.envFrom).map((e, i) => {
      if (!e || typeof (e as { _toSource?: unknown })._toSource !== 'function')
        v.fail(`envFrom[${i}]`, 'must be made with EnvFrom.configMap() or EnvFrom.secret()', e);
      return e._toSource(v, `envFrom[${i}]`);
    }),
  ];

  const shmParts = shmVolume(shm);
  const cpuQuantity = k8s.Quantity.fromString(String(cpu));
  const main = {
    ...input.container,
    env,
    ...(envFrom.length ? { envFrom } : {}),
    resources: gpuResources({
      gpus: input.gpus,
      gpuResource,
      cpu: cpuQuantity,
      memory,
      extended,
      ...(input.nodeDisk ? { ephemeralStorage: input.nodeDisk } : {}),
      ...(guaranteed ? { cpuLimit: cpuQuantity } : {}),
      ...(claim ? { claim: GPU_CLAIM } : {}),
    }),
    volumeMounts: [] as k8s.VolumeMount[],
    securityContext: containerSecurityContext(input.identity),
  };

  const labels = { ...input.labels };
  const spec = input.spec;
  const template = new PodTemplate(labels, main, {
    ...POD_HARDENING,
    ...spec,
    securityContext: podSecurityContext(input.identity),
    tolerations: [...gpuTolerations(), ...(spec.tolerations ?? [])],
    ...(claim
      ? { resourceClaims: [{ name: GPU_CLAIM, resourceClaimTemplateName: claimTemplate(input.scope, claim, labels) }] }
      : {}),
    volumes: [],
  });

  template.guaranteedQos = guaranteed;
  for (const vol of [shmParts.volume, ...input.volumes]) template.addVolume(vol);
  for (const claim of input.claims ?? []) template.reserveClaimVolume(claim.name, v, claim.prop);
  for (const m of [shmParts.mount, ...input.mounts]) template.mount(main, m, v, 'mount');
  for (const claim of input.claims ?? [])
    template.mount(main, { name: claim.name, mountPath: claim.mountPath }, v, claim.prop);
  addUserVolumes(v, template, props.volumes);
  applyPodOptions(v, template, pod, input.identity, props.nodeSelector);

  return { template, cpu, memory };
}

function extendedResourceName(v: Validator, prop: string, name: string): void {
  v.qualifiedName(prop, name);
  if (!isExtendedResourceName(name)) {
    v.fail(
      prop,
      'must be an extended resource name with a domain prefix outside kubernetes.io, e.g. "nvidia.com/gpu" or "vpc.amazonaws.com/efa"',
      name,
    );
  }
}

function extendedResources(
  v: Validator,
  map: Record<string, number>,
  gpuResource: string,
): Record<string, k8s.Quantity> {
  v.plainObject('extendedResources', map);
  const out: Record<string, k8s.Quantity> = {};
  for (const [name, count] of Object.entries(map)) {
    const prop = `extendedResources.${name}`;
    if (CORE_RESOURCES.some(r => name === r || name.startsWith(r)))
      v.fail(prop, 'must not be a core resource: use cpu and memory', count);
    extendedResourceName(v, prop, name);
    if (name === gpuResource)
      v.fail(prop, `must not repeat the GPU resource ${gpuResource}: the GPU count sets it`, count);
    // Extended resources cannot be overcommitted: whole numbers, request equal to limit.
    out[name] = k8s.Quantity.fromNumber(v.wholeNumber(prop, count, 1));
  }
  return out;
}

function mergeEnv(
  v: Validator,
  owned: OwnedEnv[],
  defaults: k8s.EnvVar[],
  user: Record<string, string | EnvValue> | undefined,
): k8s.EnvVar[] {
  if (user === undefined) return [...owned.map(o => o.env), ...defaults];
  v.plainObject('env', user);
  const userVars: k8s.EnvVar[] = [];
  for (const [name, value] of Object.entries(user)) {
    const prop = `env.${name}`;
    v.envName(prop, name);
    const mine = owned.find(o => o.env.name === name);
    if (mine) {
      v.fail(
        prop,
        `is set by the construct${mine.via ? `; set ${mine.via} instead` : ' for its own mechanism'}`,
        value instanceof EnvValue ? name : value,
      );
    }
    if (typeof value === 'string') userVars.push(EnvValue.fromValue(value)._toEnvVar(v, prop, name));
    else if (value instanceof EnvValue) userVars.push(value._toEnvVar(v, prop, name));
    else v.fail(prop, 'must be a string or an EnvValue', value);
  }
  // A user value replaces a default in place, so the order (and $(VAR) expansion) stays stable.
  const replaced = new Set(userVars.map(e => e.name));
  return [...owned.map(o => o.env), ...defaults.filter(d => !replaced.has(d.name)), ...userVars];
}

function addUserVolumes(v: Validator, template: PodTemplate, volumes: WorkloadVolume[] | undefined): void {
  if (volumes === undefined) return;
  if (!Array.isArray(volumes)) v.fail('volumes', 'must be an array', volumes);
  volumes.forEach((w, i) => {
    const prop = `volumes[${i}]`;
    v.knownProps(prop, w, VOLUME_KEYS);
    const vol = w.volume;
    checkTyped(v, `${prop}.volume`, vol, 'Volume');
    checkVolumeSource(v, `${prop}.volume`, vol);
    v.dnsLabel(`${prop}.volume.name`, vol.name);
    refuseReserved(v, `${prop}.volume.name`, { volumeName: vol.name });
    const sources = Object.keys(vol).filter(
      k => k !== 'name' && (vol as unknown as Record<string, unknown>)[k] !== undefined,
    );
    if (sources.length !== 1)
      v.fail(`${prop}.volume`, 'must have exactly one source besides its name', sources.join(', ') || 'none');
    template.addVolume(vol, v, `${prop}.volume.name`);
    if (w.mountPath !== undefined) {
      v.absolutePath(`${prop}.mountPath`, w.mountPath);
      refuseReserved(v, `${prop}.mountPath`, { mountPath: w.mountPath });
      if (
        w.subPath !== undefined &&
        (typeof w.subPath !== 'string' || w.subPath.startsWith('/') || w.subPath.split('/').includes('..'))
      ) {
        v.fail(`${prop}.subPath`, 'must be a relative path without ".." segments', w.subPath);
      }
      template.mount(
        template.main,
        {
          name: vol.name,
          mountPath: w.mountPath,
          ...(w.readOnly !== undefined ? { readOnly: v.boolean(`${prop}.readOnly`, w.readOnly, false) } : {}),
          ...(w.subPath !== undefined ? { subPath: w.subPath } : {}),
        },
        v,
        `${prop}.mountPath`,
      );
    } else if (w.readOnly !== undefined || w.subPath !== undefined) {
      v.fail(`${prop}.mountPath`, 'is needed when readOnly or subPath is set', undefined);
    }
  });
}

function applyPodOptions(
  v: Validator,
  template: PodTemplate,
  pod: PodOptions,
  identity: ProcessIdentity,
  nodeSelector: Record<string, string> | undefined,
): void {
  const spec = template.spec as k8s.PodSpec & Record<string, unknown>;
  const set = (key: string, value: unknown) => {
    if (value !== undefined) spec[key] = value;
  };
  if (nodeSelector !== undefined) set('nodeSelector', { ...v.labels('nodeSelector', nodeSelector) });

  v.array('pod.tolerations', pod.tolerations).forEach((t, i) => toleration(v, `pod.tolerations[${i}]`, t));
  if (pod.tolerations) set('tolerations', [...(spec.tolerations ?? []), ...pod.tolerations]);
  if (pod.affinity !== undefined) {
    checkTyped(v, 'pod.affinity', pod.affinity, 'Affinity');
    checkAffinity(v, 'pod.affinity', pod.affinity);
  }
  set('affinity', pod.affinity);
  const spread = v.array('pod.topologySpreadConstraints', pod.topologySpreadConstraints);
  spread.forEach((c, i) => checkTyped(v, `pod.topologySpreadConstraints[${i}]`, c, 'TopologySpreadConstraint'));
  checkSpreadConstraints(v, 'pod.topologySpreadConstraints', spread, [
    ...(spec.topologySpreadConstraints ?? []),
    ...spread,
  ]);
  if (spread.length) set('topologySpreadConstraints', [...(spec.topologySpreadConstraints ?? []), ...spread]);
  if (pod.priorityClassName !== undefined)
    set('priorityClassName', v.dnsSubdomain('pod.priorityClassName', pod.priorityClassName));
  if (pod.runtimeClassName !== undefined)
    set('runtimeClassName', v.dnsSubdomain('pod.runtimeClassName', pod.runtimeClassName));
  if (pod.schedulerName !== undefined) set('schedulerName', v.dnsSubdomain('pod.schedulerName', pod.schedulerName));
  if (pod.imagePullSecrets !== undefined) {
    v.stringArray('pod.imagePullSecrets', pod.imagePullSecrets)!.forEach((s, i) =>
      v.dnsSubdomain(`pod.imagePullSecrets[${i}]`, s),
    );
    set(
      'imagePullSecrets',
      pod.imagePullSecrets.map(name => ({ name })),
    );
  }
  if (pod.serviceAccountName !== undefined)
    set('serviceAccountName', v.dnsSubdomain('pod.serviceAccountName', pod.serviceAccountName));
  set(
    'automountServiceAccountToken',
    v.boolean('pod.automountServiceAccountToken', pod.automountServiceAccountToken, false),
  );

  for (const [key, value] of Object.entries(v.labels('pod.labels', pod.labels))) {
    if (SELECTOR_KEYS.includes(key))
      v.fail(`pod.labels.${key}`, 'is set by the construct and used by its selectors', value);
    template.label(key, value);
  }
  for (const [key, value] of Object.entries(v.annotations('pod.annotations', pod.annotations)))
    template.userAnnotate(v, key, value);

  v.array('pod.initContainers', pod.initContainers).forEach((c, i) =>
    template.addInitContainer(
      userContainer(v, `pod.initContainers[${i}]`, c, identity, true),
      v,
      `pod.initContainers[${i}].name`,
    ),
  );
  // Native sidecars: they start before the main container and stop after it, so a log shipper sees
  // the whole run and a Job's pod still completes (a regular container would keep it Running).
  v.array('pod.sidecars', pod.sidecars).forEach((c, i) => {
    const prop = `pod.sidecars[${i}]`;
    template.addInitContainer(
      userContainer(v, prop, { ...c, restartPolicy: sidecarRestartPolicy(v, prop, c) }, identity, true),
      v,
      `${prop}.name`,
    );
  });
  for (const c of [...(pod.initContainers ?? []), ...(pod.sidecars ?? [])]) {
    for (const m of v.array(`pod container '${c.name}' volumeMounts`, c.volumeMounts)) {
      if (!template.hasVolume(m.name))
        v.fail(`pod container '${c.name}' volumeMounts`, 'must name a volume of the pod (add it with volumes)', m.name);
    }
  }
}

/** A sidecar's restartPolicy: Always, which the library sets; any other value is the user's mistake. */
function sidecarRestartPolicy(v: Validator, prop: string, c: k8s.Container): string {
  const value = (c as { restartPolicy?: unknown } | undefined)?.restartPolicy;
  if (value !== undefined && value !== 'Always')
    v.fail(
      `${prop}.restartPolicy`,
      'must be left out: every sidecar is a native sidecar (an init container with restartPolicy Always), which stops after the main container',
      value,
    );
  return 'Always';
}

/** A user's toleration, as the API server checks it (ValidateTolerations). */
export function toleration(v: Validator, prop: string, t: k8s.Toleration): void {
  checkTyped(v, prop, t, 'Toleration');
  checkTolerationValues(v, prop, t);
  const operator = t.operator ?? 'Equal';
  if (!TOLERATION_OPERATORS.includes(operator))
    v.fail(`${prop}.operator`, `must be one of ${TOLERATION_OPERATORS.join(', ')}`, t.operator);
  if (t.effect !== undefined && t.effect !== '' && !TOLERATION_EFFECTS.includes(t.effect))
    v.fail(`${prop}.effect`, `must be one of ${TOLERATION_EFFECTS.join(', ')}`, t.effect);
  if (t.key !== undefined && t.key !== '') v.qualifiedName(`${prop}.key`, t.key);
  if (operator === 'Exists' && t.value !== undefined && t.value !== '')
    v.fail(`${prop}.value`, 'must be empty when operator is Exists', t.value);
  if ((t.key === undefined || t.key === '') && operator !== 'Exists')
    v.fail(`${prop}.operator`, 'must be Exists when key is empty', t.operator);
  if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute')
    v.fail(`${prop}.tolerationSeconds`, 'is only valid with effect NoExecute', t.tolerationSeconds);
}

/** A user's extra container with the construct's security defaults under any field it sets itself. */
function userContainer(
  v: Validator,
  prop: string,
  c: k8s.Container,
  identity: ProcessIdentity,
  init: boolean,
): k8s.Container {
  checkTyped(v, prop, c, 'Container');
  checkContainer(v, prop, c, init);
  v.dnsLabel(`${prop}.name`, c.name);
  v.image(`${prop}.image`, c.image as string);
  return { ...c, securityContext: { ...containerSecurityContext(identity), ...(c.securityContext ?? {}) } };
}

/**
 * Checks at synth, after every construct and escape hatch has had its say, what can only be seen
 * then: Guaranteed QoS needs every container (sidecars added by other constructs included) to
 * limit CPU and memory to its request.
 */
export function addPodValidation(
  scope: Construct,
  template: PodTemplate,
  guaranteedQos: boolean,
  describe: string,
): void {
  // Registered only when asked: cdk8s runs every validation again for each chart it writes.
  if (!guaranteedQos) return;
  scope.node.addValidation({
    validate: () => {
      const errors: string[] = [];
      for (const c of [...(template.spec.initContainers ?? []), ...template.spec.containers]) {
        const r = c.resources ?? {};
        for (const res of ['cpu', 'memory']) {
          const req = r.requests?.[res]?.value;
          const lim = r.limits?.[res]?.value;
          if (req === undefined || req !== lim) {
            errors.push(
              `${describe}: guaranteedQos needs container '${c.name}' to request and limit the same ${res} (got request ${show(req)}, limit ${show(lim)}); otherwise the pod is Burstable and the CPU manager does not pin it`,
            );
          }
        }
      }
      return errors;
    },
  });
}
