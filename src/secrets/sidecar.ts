import { RuntimeScript, runtimeScript, sourcedCommand } from '../common/runtime-scripts';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { containerSecurityContext } from '../common/security';
import { ReloadAction } from './reload-action';

/** The watcher script, a real file that tests run under dash and busybox sh, embedded in every sidecar. */
/** reload-sidecar.sh, shipped once per namespace (common/runtime-scripts.ts) and sourced from its mount. */
export const reloadScript = (): RuntimeScript => runtimeScript('reload-sidecar', __dirname, 'reload-sidecar.sh');

/** Where a sidecar mounts what only it sees; user mounts may not go there. */
export const SIDECAR_DIR = '/var/run/cdk8s-gpu';
/** Where the sidecar keeps the record of the last reload and its health mark. */
export const STATE_DIR = `${SIDECAR_DIR}/state`;

/** What one reload sidecar runs with. */
export interface SidecarSettings {
  readonly action: ReloadAction;
  readonly keys: readonly string[];
  readonly pollSeconds: number;
  /** The Secret as the sidecar sees it. */
  readonly watchDir: string;
  /** sync: where the copies go (the main container's mount path). */
  readonly syncDir?: string;
  readonly mounts: k8s.VolumeMount[];
  /** The workload's UID: the sidecar reads the 0440 files through the pod's fsGroup. */
  readonly uid: number;
  /** Whether the pod is Guaranteed, so the sidecar requests what it limits. */
  readonly guaranteed: boolean;
}

/**
 * The reload sidecar, a native sidecar: an init container that restarts always (beta and on from
 * 1.29, GA in 1.33; the library's floor is 1.32). The kubelet starts it before the application and
 * stops it after the application has exited, so a Job's pod still completes and frees its GPUs.
 *
 * Its startup probe passes once the script has recorded the content the application will start on
 * (and, for sync, made the first copies): the kubelet starts the next container only then, so no
 * rotation can land unseen between the application's first read and the sidecar's first look.
 *
 * Its liveness probe fails while the script's unhealthy mark exists (after repeated failed
 * reloads): readiness-neutral, so a failing reload restarts the sidecar (which retries, from its
 * record) and shows as its restart count and Unhealthy events, without taking the pod out of its
 * Service.
 */
export function reloadSidecar(name: string, s: SidecarSettings): k8s.Container {
  return {
    ...container(name, s),
    restartPolicy: 'Always',
    startupProbe: {
      exec: { command: ['sh', '-c', `[ -e ${RECORD} ]`] },
      periodSeconds: 1,
      timeoutSeconds: 5,
      // A first sync that keeps failing makes the script exit and the kubelet restart it; the
      // application waits, as it waited for the init container that made the first copy before.
      failureThreshold: STARTUP_FAILURES,
    },
    livenessProbe: {
      exec: { command: ['sh', '-c', `! [ -e ${STATE_DIR}/unhealthy ]`] },
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 3,
    },
  };
}

/** The script's record of the last reload (reload-sidecar.sh RECORD). */
const RECORD = `${STATE_DIR}/reloaded`;
/** Seconds the first record may take: fingerprinting and, for sync, copying a few small files. */
const STARTUP_FAILURES = 120;

function container(name: string, s: SidecarSettings): k8s.Container {
  const { action } = s;
  const identity = { runAsRoot: false, uid: s.uid, addCapabilities: [], readOnlyRootFilesystem: true };
  const memoryLimit = k8s.Quantity.fromString(action.kind === 'exec' ? '256Mi' : '64Mi');
  return {
    name,
    image: action.image,
    imagePullPolicy: 'IfNotPresent',
    command: sourcedCommand(reloadScript(), 'reload-sidecar'),
    ...(action.args.length ? { args: action.args } : {}),
    env: [
      { name: 'WATCH_DIR', value: s.watchDir },
      { name: 'KEYS', value: s.keys.join(' ') },
      { name: 'STATE_DIR', value: STATE_DIR },
      { name: 'POLL_SECONDS', value: String(s.pollSeconds) },
      { name: 'ACTION', value: action.script },
      ...(action.timeoutSeconds > 0 ? [{ name: 'ACTION_TIMEOUT_SECONDS', value: String(action.timeoutSeconds) }] : []),
      ...action.env,
      ...(s.syncDir !== undefined ? [{ name: 'SYNC_DIR', value: s.syncDir }] : []),
    ],
    volumeMounts: s.mounts,
    // In a Guaranteed pod every container requests what it limits, or the pod is Burstable and
    // the CPU manager does not pin the workload: the sidecar then reserves its limits.
    resources: s.guaranteed
      ? {
          requests: { cpu: k8s.Quantity.fromString('10m'), memory: memoryLimit },
          limits: { cpu: k8s.Quantity.fromString('10m'), memory: memoryLimit },
        }
      : {
          requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('16Mi') },
          limits: { memory: memoryLimit },
        },
    securityContext: { ...containerSecurityContext(identity), runAsUser: s.uid, runAsGroup: s.uid },
  };
}
