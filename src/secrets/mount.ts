import { refuseReserved, shipScript } from '../common/runtime-scripts';
import * as path from 'path';
import { Chart } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { DEFAULT_NON_ROOT_UID } from '../common/security';
import { Validator } from '../validation/validate';
import { fitName, LABEL_MAX } from './names';
import { Reload } from './reload';
import { ReloadAction, resolveReload } from './reload-action';
import { reloadScript, reloadSidecar, SIDECAR_DIR, SidecarSettings, STATE_DIR } from './sidecar';

const MOUNT_PROPS = ['path', 'onRotation'];

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

/** The Secret being mounted. */
export interface MountSource {
  readonly secretName: string;
  readonly namespace: string | undefined;
  readonly keys: readonly string[];
  readonly pollSeconds: number;
  /** Which mount of this Secret this is (names of the pod's volumes and containers derive from it). */
  readonly index: number;
}

/** A checked mount: everything `emitMount` needs, so that it cannot fail half-way through the pods. */
export interface MountPlan {
  /** Every pod template the Secret goes into: the workload's, or a group's leader and workers. */
  readonly pods: readonly PodTemplate[];
  readonly path: string;
  readonly action: ReloadAction;
  readonly volume: string;
  readonly copies: string;
  readonly state: string;
  readonly sidecar: string;
}

/**
 * Whether a pod template gets the reload sidecar. An HTTP reload goes to the server's API, which
 * only a group's leader (the first template) serves: a worker has no API port, so its POST could
 * never succeed. Its files are kept current by the kubelet all the same.
 */
function reloadsIn(action: ReloadAction, index: number): boolean {
  return action.kind !== 'files' && action.kind !== 'restart' && (action.kind !== 'http' || index === 0);
}

/** Checks a mount against the workload's pods; throws naming the prop. */
export function planMount(v: Validator, workload: IGpuWorkload, options: MountOptions, source: MountSource): MountPlan {
  if (!workload || !(workload._podTemplate instanceof PodTemplate)) {
    v.fail(
      'mountInto',
      'needs a workload of this library (GpuTrainingStatefulSet, GpuTrainingJob or an InferenceService)',
      workload,
    );
  }
  // A pod can only mount a Secret of its own namespace; any other stays in ContainerCreating.
  const podNamespace = workload._podOwner.metadata.namespace;
  if (podNamespace !== source.namespace) {
    v.failDescribed(
      'mountInto',
      `needs a workload in the Secret's namespace (${source.namespace ?? 'the default namespace'}), because a pod can only mount a Secret of its own namespace`,
      `a workload in ${podNamespace ?? 'the default namespace'}`,
    );
  }
  v.plainObject('mountInto options', options);
  v.knownProps('', options, MOUNT_PROPS);
  const pods = workload._podTemplates ?? [workload._podTemplate];
  let mountPath = '';
  for (const pod of pods) mountPath = checkPath(v, pod, options.path);
  const action = resolveReload(v, options.onRotation, workload);

  const volume = fitName(source.secretName, `-${source.index}`, LABEL_MAX);
  const plan: MountPlan = {
    pods,
    path: mountPath,
    action,
    volume,
    copies: fitName(volume, '-copies', LABEL_MAX),
    state: fitName(volume, '-state', LABEL_MAX),
    sidecar: fitName(`reload-${volume}`, '', LABEL_MAX),
  };
  pods.forEach((pod, i) => {
    const sidecar = reloadsIn(action, i);
    const newVolumes = !sidecar
      ? [volume]
      : action.kind === 'sync'
        ? [volume, plan.state, plan.copies]
        : [volume, plan.state];
    const volumes = pod.volumeNames();
    for (const name of newVolumes) {
      if (volumes.has(name))
        v.fail('name', `must not derive a volume name the pod already has (${[...volumes].join(', ')})`, name);
    }
    const spec = pod.spec as { initContainers?: k8s.Container[]; containers: k8s.Container[] };
    const containers = new Set([...(spec.initContainers ?? []), ...spec.containers].map(c => c.name));
    if (sidecar && containers.has(plan.sidecar))
      v.fail(
        'name',
        `must not derive a container name the pod already has (${[...containers].join(', ')})`,
        plan.sidecar,
      );
  });
  return plan;
}

/** Adds the volumes, mounts and sidecars of a checked mount to every pod template. */
export function emitMount(v: Validator, workload: IGpuWorkload, plan: MountPlan, source: MountSource): void {
  if (plan.action.kind === 'restart') {
    const key = 'secret.reloader.stakater.com/reload';
    const existing: string | undefined = workload._podOwner.metadata.toJson().annotations?.[key];
    const names = new Set([...(existing ? existing.split(',') : []), source.secretName]);
    workload._podOwner.metadata.addAnnotation(key, [...names].join(','));
  }
  const uid = workload._securityUid ?? DEFAULT_NON_ROOT_UID;
  plan.pods.forEach((pod, i) => emitInto(v, pod, plan, source, uid, reloadsIn(plan.action, i)));
  // Beside the workload's object, in its chart: the ConfigMap is the workload's, named after it.
  for (const pod of plan.pods) shipScript(Chart.of(workload._podOwner), pod, reloadScript());
}

function emitInto(
  v: Validator,
  pod: PodTemplate,
  plan: MountPlan,
  source: MountSource,
  uid: number,
  sidecar: boolean,
): void {
  const { action, path: mountPath } = plan;
  // 0440: readable by the owner and the pod's fsGroup only, which the sidecar shares.
  pod.ensureFsGroup(uid);
  pod.addVolume(
    {
      name: plan.volume,
      secret: {
        secretName: source.secretName,
        defaultMode: 0o440,
        items: source.keys.map(k => ({ key: k, path: k })),
      },
    },
    v,
    'name',
  );
  if (!sidecar) {
    pod.mount(pod.main, { name: plan.volume, mountPath, readOnly: true }, v, 'path');
    return;
  }

  // sync: the Secret goes to the sidecar only; the main container reads the copies.
  const watchDir = action.kind === 'sync' ? `${SIDECAR_DIR}/${plan.volume}` : mountPath;
  const mounts: k8s.VolumeMount[] = [{ name: plan.volume, mountPath: watchDir, readOnly: true }];
  if (action.kind === 'sync') {
    pod.addVolume(
      { name: plan.copies, emptyDir: { medium: 'Memory', sizeLimit: k8s.Quantity.fromString('16Mi') } },
      v,
      'name',
    );
    mounts.push({ name: plan.copies, mountPath });
    pod.mount(pod.main, { name: plan.copies, mountPath, readOnly: true }, v, 'path');
  } else {
    pod.mount(pod.main, { name: plan.volume, mountPath, readOnly: true }, v, 'path');
  }
  if (action.kind === 'signal') pod.shareProcessNamespace();
  // The record of the last reload outlives a restart of the sidecar. Not the pod's: a new pod's
  // sidecar records the content its application is about to start on.
  pod.addVolume({ name: plan.state, emptyDir: { sizeLimit: k8s.Quantity.fromString('1Mi') } }, v, 'name');
  mounts.push({ name: plan.state, mountPath: STATE_DIR });

  const settings: SidecarSettings = {
    action,
    keys: source.keys,
    pollSeconds: source.pollSeconds,
    watchDir,
    syncDir: action.kind === 'sync' ? mountPath : undefined,
    mounts,
    uid,
    guaranteed: pod.guaranteedQos,
  };
  // Last of the init containers: it starts once the downloads before it are done, right before
  // the application, so no reload is tried against an application that is not there yet.
  pod.addInitContainer(reloadSidecar(plan.sidecar, settings), v, 'name');
}

/** The mount path: normalized, clear of the container's mounts and of what the image needs. */
function checkPath(v: Validator, pod: PodTemplate, value: string): string {
  const p = v.absolutePath('path', value);
  if (path.posix.normalize(p) !== p || (p.length > 1 && p.endsWith('/'))) {
    v.fail(
      'path',
      'must be a normalized absolute path (no "//", "/./" or trailing "/"), because the kubelet compares mount paths as strings',
      value,
    );
  }
  refuseReserved(v, 'path', { mountPath: p });
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
