import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { RuntimeScript, runtimeScript, sourcedCommand } from '../common/runtime-scripts';
import { OwnedEnv } from '../common/workload-pod';

/** Pod-lifetime scratch of the launch wrapper (an emptyDir): attempt counts, "announced" flags. */
export const POD_STATE_DIR = '/var/lib/cdk8s-gpu';
/** The emptyDir volume behind POD_STATE_DIR. */
export const POD_STATE_VOLUME = 'job-state';
/** The directory, inside a checkpoint volume, that holds the completion markers of runs. */
export const STATE_SUBDIR = '.cdk8s-gpu';
/** argv[0] of the wrapper, shown in its log lines. */
const LAUNCHER = 'cdk8s-gpu-launch';
/**
 * The wrapper itself: a real POSIX sh file, run as is by the tests under dash and busybox; shipped
 * once per namespace (common/runtime-scripts.ts) for GpuTrainingStatefulSet's pods.
 */
export const launchScript = (): RuntimeScript => runtimeScript('launch', __dirname, 'launch.sh');
const LAUNCH_SCRIPT = launchScript().content;
/** The line after which only the StatefulSet's job model follows. */
const JOB_MODEL_MARKER = '# cdk8s-gpu: the job model (GpuTrainingStatefulSet) from here on;';
/**
 * GpuTrainingJob's wrapper: launch.sh up to the job model, which never runs there (the JobSet decides
 * completion and failure), so its pods carry only the code they run: the signal handling and the
 * forwarding branch, without the comments. A pod without CDK8S_GPU_MODE=forward fails instead of
 * running nothing.
 */
const FORWARD_SCRIPT = (() => {
  const at = LAUNCH_SCRIPT.indexOf(JOB_MODEL_MARKER);
  if (at < 0) throw new Error(`launch.sh has no line '${JOB_MODEL_MARKER}'`);
  // Comment lines go too: they document the job model, in launch.sh (which has no heredocs or
  // multi-line strings, so a line starting with # is always a comment; dash -n checks it in the tests).
  const code = LAUNCH_SCRIPT.slice(0, at)
    .split('\n')
    .filter(line => !/^\s*#/.test(line))
    .join('\n');
  return `${code}fail "this wrapper only forwards signals (CDK8S_GPU_MODE=forward)"\n`;
})();

/**
 * The container command and args that run `launcher` under the launch wrapper: the whole job model
 * (GpuTrainingStatefulSet), or only the signal forwarding (GpuTrainingJob, with forwardOnlyEnv).
 */
export function launchCommand(launcher: string[], o: { forwardOnly: boolean }): { command: string[]; args: string[] } {
  return {
    command: o.forwardOnly ? ['sh', '-c', FORWARD_SCRIPT, LAUNCHER] : sourcedCommand(launchScript(), LAUNCHER),
    args: launcher,
  };
}

/** Where completion markers live: on the checkpoint volume at `durableMount`, or in pod scratch. */
export function completionStateDir(durableMount: string | undefined): string {
  return durableMount !== undefined ? `${durableMount}/${STATE_SUBDIR}` : `${POD_STATE_DIR}/completion`;
}

/** The wrapper's scratch volume and its mount. */
export function launchVolume(): { volume: k8s.Volume; mount: k8s.VolumeMount } {
  return {
    volume: { name: POD_STATE_VOLUME, emptyDir: {} },
    mount: { name: POD_STATE_VOLUME, mountPath: POD_STATE_DIR },
  };
}

/** The wrapper's environment (src/training/launch.sh documents each variable). */
export function launchEnv(
  runId: string,
  stateDir: string,
  o: { shared: boolean; maxFailedStarts: number },
): OwnedEnv[] {
  return [
    { env: { name: 'CDK8S_GPU_RUN_ID', value: runId }, via: 'runId' },
    { env: { name: 'CDK8S_GPU_STATE_DIR', value: stateDir }, via: 'storage or sharedCheckpoints' },
    { env: { name: 'CDK8S_GPU_POD_STATE_DIR', value: POD_STATE_DIR } },
    // Every rank sees the others' markers only on a shared volume: completion is then run-wide.
    ...(o.shared ? [{ env: { name: 'CDK8S_GPU_STATE_SHARED', value: '1' }, via: 'sharedCheckpoints' }] : []),
    { env: { name: 'CDK8S_GPU_MAX_FAILED_STARTS', value: String(o.maxFailedStarts) }, via: 'maxFailedStarts' },
    // torchrun's shared workers' store survives rendezvous rounds (DynamicRendezvousHandler); an
    // in-place gang restart then connects to dead ports or hangs (found with a real torchrun).
    { env: { name: 'TORCH_DISABLE_SHARE_RDZV_TCP_STORE', value: '1' } },
  ];
}

/**
 * The wrapper's environment for GpuTrainingJob: it only traps and forwards signals and passes the
 * launcher's exit code on (the JobSet decides completion and failure; launch.sh, CDK8S_GPU_MODE).
 */
export function forwardOnlyEnv(): OwnedEnv[] {
  return [{ env: { name: 'CDK8S_GPU_MODE', value: 'forward' } }];
}

/**
 * The kubectl commands that observe and restart a job. Completion shows in the trainer container's
 * last termination (the wrapper's one exit 0 per pod after a run completed); `kubectl wait` filter
 * expressions need kubectl 1.28 (kubernetes#118748).
 */
export function jobCommands(
  container: string,
  selector: string,
  namespace: string | undefined,
): { waitForCompletion: string; restart: string } {
  const ns = namespace ? ` -n ${namespace}` : '';
  const reason = `{.status.containerStatuses[?(@.name=="${container}")].lastState.terminated.reason}`;
  return {
    waitForCompletion: `kubectl wait pod${ns} -l ${selector} --for=jsonpath='${reason}'=Completed --timeout=-1s`,
    restart: `kubectl delete pod${ns} -l ${selector} --wait=false`,
  };
}
