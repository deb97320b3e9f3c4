import { Duration } from 'cdk8s';

/**
 * The busybox image the sidecar runs by default (`docker.io/library/busybox:1.36.1`, by tag):
 * small, and its default build (docker-library/busybox runs `make defconfig`) has every applet the
 * script uses: sh, sleep with fractions (FEATURE_FANCY_SLEEP, FLOAT_DURATION), setsid, sha256sum,
 * md5sum, cksum, wget, cp, ln, mkdir, mv, rm (busybox 1_36_1: coreutils/sleep.c,
 * miscutils/setsid.c, coreutils/md5_sha1_sum.c). Every mode takes an `image` option: pin it by
 * digest (`busybox:1.36.1@sha256:<digest>`) or point it at a mirror (docs/secrets.md, "Images").
 */
export const DEFAULT_RELOAD_IMAGE = 'busybox:1.36.1';

/** The image option every reload mode takes. */
export interface ReloadImageOptions {
  /**
   * The sidecar image, by tag or by digest (`registry/busybox@sha256:<64 hex>`, or
   * `registry/busybox:1.36.1@sha256:...`), e.g. a copy in a private registry. It runs the watcher
   * script, so it needs `sh` (dash, busybox or bash), `sleep`, `setsid`, `mv`, `rm` and one of
   * `sha256sum`, `md5sum` or `cksum` on its PATH, plus `wget` (httpPost) or `cp`, `ln` and `mkdir`
   * (sync); the sidecar checks at start and exits with a message naming the missing tool.
   * @default DEFAULT_RELOAD_IMAGE
   */
  readonly image?: string;
}

/** How long one reload may take before it is killed and counts as failed. */
export const DEFAULT_RELOAD_TIMEOUT_SECONDS = 30;

export interface ReloadExecOptions extends ReloadImageOptions {
  /**
   * How long the command may run before its whole process group is killed (TERM, then KILL 5 s later) and the reload
   * counts as failed, to be retried with backoff. A command that hangs must not stop the watcher.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
}

export interface ReloadHttpOptions extends ReloadImageOptions {
  /**
   * How long the POST may take before it counts as failed and is retried with backoff: an
   * endpoint that never answers must not stop the watcher.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
}

export interface ReloadSignalOptions extends ReloadImageOptions {
  /**
   * The process name to signal, as in `/proc/<pid>/comm`: the executable's (or script's) file
   * name, which Linux truncates to 15 characters.
   */
  readonly process: string;
  /**
   * The opt-in that signal mode needs, by name. To signal the workload under the restricted Pod
   * Security Standard (which allows adding no capability but NET_BIND_SERVICE, so no CAP_KILL) the
   * sidecar must run as the workload's UID in a shared process namespace, and then it can read
   * the workload's environment (`/proc/<pid>/environ`, where e.g. HF_TOKEN lives) and files
   * (`/proc/<pid>/root`): every secret the workload has. Set `true` to accept that, with an image
   * you trust (pinned by digest); otherwise use Reload.exec, Reload.httpPost or Reload.sync, whose
   * sidecar shares no process namespace and sees only the mounted Secret.
   * @default false
   */
  readonly exposeWorkloadToSidecar?: boolean;
}

/** The options of Reload.sync. */
export type ReloadSyncOptions = ReloadImageOptions;

/** @internal */
export type ReloadSpec =
  | { kind: 'exec'; command: string[]; image?: string; timeout?: Duration }
  | { kind: 'signal'; signal: string; process: string; image?: string; exposeWorkloadToSidecar?: boolean }
  | { kind: 'http'; url: string; image?: string; timeout?: Duration }
  | { kind: 'sync'; image?: string }
  | { kind: 'restart' }
  | { kind: 'files' };

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
   * sidecar runs as the workload's UID: a restricted container can only signal its own UID. So the
   * sidecar can read the workload's environment and files: it needs
   * `exposeWorkloadToSidecar: true`. Only a process that handles the signal reloads; most end on
   * it (see docs/secrets.md).
   */
  static signal(signal: string, options: ReloadSignalOptions): Reload {
    return new Reload({
      kind: 'signal',
      signal,
      process: options?.process,
      image: options?.image,
      exposeWorkloadToSidecar: options?.exposeWorkloadToSidecar,
    });
  }

  /** POSTs (empty body) to an http(s) URL, usually on localhost, after each change, with a timeout. */
  static httpPost(url: string, options: ReloadHttpOptions = {}): Reload {
    return new Reload({ kind: 'http', url, image: options?.image, timeout: options?.timeout });
  }

  /**
   * Keeps copies of the files at the mount path, in an emptyDir shared with the sidecar, all keys
   * replaced at once: the copies are regular files in a hidden directory, `<key>` is a symlink to
   * `..data/<key>` and one rename of `..data` switches every key (the kubelet's own layout), so a
   * program never sees `tls.crt` of one pair next to `tls.key` of another. For programs that must
   * not see a change before the sidecar has acted, or that re-read the files on each use. An init
   * container makes the first copy, so the program never starts before the files exist.
   */
  static sync(options: ReloadSyncOptions = {}): Reload {
    return new Reload({ kind: 'sync', image: options?.image });
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

  /**
   * Nothing to run: the program re-reads the mounted files itself (on each use, or when they
   * change). The kubelet updates the whole-directory mount in the running pods; no sidecar, no
   * restart. The only choice for a GpuTrainingJob, whose pods must be able to finish.
   */
  static filesOnly(): Reload {
    return new Reload({ kind: 'files' });
  }

  private constructor(/** @internal */ readonly _spec: ReloadSpec) {}
}
