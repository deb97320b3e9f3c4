import { Duration } from 'cdk8s';

/**
 * The busybox image the sidecar runs by default: pinned and small. Its default build
 * (docker-library/busybox runs `make defconfig`) has every applet the script uses: sh, sleep with
 * fractions (FEATURE_FANCY_SLEEP, FLOAT_DURATION), timeout with -k, sha256sum, md5sum, cksum,
 * wget, cp, mv (busybox 1_36_1: coreutils/timeout.c, coreutils/sleep.c, coreutils/md5_sha1_sum.c).
 */
export const DEFAULT_RELOAD_IMAGE = 'busybox:1.36.1';

/** How long one reload may take before it is killed and counts as failed. */
export const DEFAULT_RELOAD_TIMEOUT_SECONDS = 30;

export interface ReloadExecOptions {
  /**
   * The sidecar image. It runs the watcher script, so besides the command it needs `sh` (dash,
   * busybox or bash), `sleep`, `timeout` and one of `sha256sum`, `md5sum` or `cksum` on its PATH:
   * a Debian or Ubuntu image with coreutils has them, a distroless image does not. The sidecar
   * checks at start and exits with a message naming the missing tool.
   * @default DEFAULT_RELOAD_IMAGE
   */
  readonly image?: string;
  /**
   * How long the command may run before it is killed (TERM, then KILL 5 s later) and the reload
   * counts as failed, to be retried with backoff. A command that hangs must not stop the watcher.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
}

export interface ReloadHttpOptions {
  /**
   * How long the POST may take before it counts as failed and is retried with backoff: an
   * endpoint that never answers must not stop the watcher.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
}

export interface ReloadSignalOptions {
  /**
   * The process name to signal, as in `/proc/<pid>/comm`: the executable's (or script's) file
   * name, which Linux truncates to 15 characters.
   */
  readonly process: string;
}

/** @internal */
export type ReloadSpec =
  | { kind: 'exec'; command: string[]; image?: string; timeout?: Duration }
  | { kind: 'signal'; signal: string; process: string }
  | { kind: 'http'; url: string; timeout?: Duration }
  | { kind: 'sync' }
  | { kind: 'restart' };

/**
 * What happens in a pod when a mounted rotating secret changes. Arguments are checked when the
 * Reload is used in `RotatingGpuSecret.mountInto`, which names the construct in its errors.
 */
export class Reload {
  /**
   * Runs a command in the reload sidecar after each change, with a timeout. The image must hold
   * the command and the tools the watcher needs (see `ReloadExecOptions.image`).
   */
  static exec(command: string[], options: ReloadExecOptions = {}): Reload {
    return new Reload({ kind: 'exec', command, image: options?.image, timeout: options?.timeout });
  }

  /**
   * Sends a signal to a process of the main container: `SIGHUP` or `HUP`, `SIGUSR1`, `SIGUSR2`,
   * `SIGINT`, `SIGTERM` or `SIGQUIT`, in any case. The pod shares its process namespace, and the
   * sidecar runs as the workload's UID: a restricted container can only signal its own UID.
   * Only a process that handles the signal reloads; most end on it (see the README).
   */
  static signal(signal: string, options: ReloadSignalOptions): Reload {
    return new Reload({ kind: 'signal', signal, process: options?.process });
  }

  /** POSTs (empty body) to an http(s) URL, usually on localhost, after each change, with a timeout. */
  static httpPost(url: string, options: ReloadHttpOptions = {}): Reload {
    return new Reload({ kind: 'http', url, timeout: options?.timeout });
  }

  /**
   * Keeps plain copies of the files at the mount path, in an emptyDir shared with the sidecar,
   * each replaced atomically: for programs that need a regular file rather than a symlink, or
   * that re-read the file on each use. An init container makes the first copy, so the program
   * never starts before the files exist. The working form of a one-time init-container copy.
   */
  static sync(): Reload {
    return new Reload({ kind: 'sync' });
  }

  /**
   * Restarts the pods through Stakater Reloader annotations (Reloader must be installed). This is
   * disruptive: a restarted rank kills a training job. Prefer a reload in place. Reloader only
   * patches the pod template, so the workload must roll template changes out (RollingUpdate):
   * an OnDelete workload is refused (stakater/Reloader#294).
   */
  static restart(): Reload {
    return new Reload({ kind: 'restart' });
  }

  private constructor(/** @internal */ readonly _spec: ReloadSpec) {}
}
