/** Signals a reload sidecar may send. */
const SIGNALS = ['HUP', 'USR1', 'USR2', 'INT', 'TERM', 'QUIT'];

/** The busybox image the sidecar runs by default: pinned, small, has sh, wget and cksum. */
export const DEFAULT_RELOAD_IMAGE = 'busybox:1.36.1';

export interface ReloadExecOptions {
  /**
   * The sidecar image, which must contain `sh` and the command (e.g. your GPU driver image).
   * @default DEFAULT_RELOAD_IMAGE
   */
  readonly image?: string;
}

export interface ReloadSignalOptions {
  /** The process name to signal, as in `/proc/<pid>/comm` (at most 15 characters). */
  readonly process: string;
}

/** @internal */
export type ReloadSpec =
  | { kind: 'exec'; command: string[]; image?: string }
  | { kind: 'signal'; signal: string; process: string }
  | { kind: 'http'; url: string }
  | { kind: 'sync' }
  | { kind: 'restart' };

/** What happens in a pod when a mounted rotating secret changes. */
export class Reload {
  /** Runs a command in the reload sidecar after each change. */
  static exec(command: string[], options: ReloadExecOptions = {}): Reload {
    return new Reload({ kind: 'exec', command, image: options.image });
  }

  /**
   * Sends a signal to a process of the main container. The pod shares its process namespace, and
   * the sidecar runs as the workload's UID: a restricted container can only signal its own UID.
   */
  static signal(signal: string, options: ReloadSignalOptions): Reload {
    return new Reload({ kind: 'signal', signal: String(signal ?? '').replace(/^SIG/, ''), process: options?.process });
  }

  /** POSTs to a URL (usually on localhost) after each change. */
  static httpPost(url: string): Reload {
    return new Reload({ kind: 'http', url });
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
   * disruptive: a restarted rank kills a training job. Prefer a reload in place.
   */
  static restart(): Reload {
    return new Reload({ kind: 'restart' });
  }

  private constructor(/** @internal */ readonly _spec: ReloadSpec) {}

  /** @internal */
  static _signals(): readonly string[] {
    return SIGNALS;
  }
}
