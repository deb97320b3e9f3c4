/**
 * Facts about signals and the processes a reload sidecar may signal: rules as data, checked by
 * `RotatingGpuSecret.mountInto` for `Reload.signal`.
 */

/** The signals a reload sidecar may send, by the name dash's `kill -s` takes (no `SIG`). */
export const RELOAD_SIGNALS: readonly string[] = ['HUP', 'USR1', 'USR2', 'INT', 'TERM', 'QUIT'];

/** Linux keeps the first 15 bytes of a process name in `/proc/<pid>/comm` (TASK_COMM_LEN 16). */
export const COMM_MAX = 15;

/** A process that a signal ends instead of reloading. */
export interface EndingSignalRule {
  /** The name in `/proc/<pid>/comm`. */
  readonly comm: RegExp;
  /** What the user signalled, for the message. */
  readonly program: string;
  /** The signals that end it. */
  readonly signals: readonly string[];
  /** Why, with the source. */
  readonly why: string;
}

export const ENDING_SIGNALS: readonly EndingSignalRule[] = [
  {
    comm: /^torchrun$/,
    program: 'torchrun',
    signals: RELOAD_SIGNALS,
    why:
      'its elastic agent handles TERM, INT, HUP and QUIT by shutting down every worker ' +
      '(torch/distributed/elastic/multiprocessing/api.py, _terminate_process_handler), and USR1 and USR2 keep their default action, which ends it',
  },
  {
    // text-generation-launcher, -router and -server all show as "text-generation" (15 characters).
    comm: /^text-generation$/,
    program: 'TGI (text-generation-launcher, its router and its shards all show as "text-generation")',
    signals: RELOAD_SIGNALS,
    why:
      'the launcher handles INT, TERM and HUP as a shutdown (ctrlc with the "termination" feature, launcher/Cargo.toml), ' +
      'and USR1, USR2 and QUIT keep their default action, which ends it; TGI has no reload signal',
  },
  {
    comm: /^vllm$/,
    program: 'vLLM (vllm serve)',
    signals: RELOAD_SIGNALS,
    why:
      'its server (uvicorn) handles INT and TERM as a shutdown and installs no handler for HUP, USR1, USR2 or QUIT, ' +
      'whose default action ends a Python process; vLLM has no reload signal',
  },
  {
    // A pseudo-name: the SGLang server runs as python3 (python3 -m sglang.launch_server), named so by its construct.
    comm: /^sglang$/,
    program: 'the SGLang server (python3 -m sglang.launch_server)',
    signals: RELOAD_SIGNALS,
    why:
      'it installs no handler for HUP, USR1 or USR2, whose default action ends it, its QUIT handler kills its whole process tree ' +
      '(srt/entrypoints/engine.py, launch_phase_sigquit_handler), and INT and TERM shut it down; SGLang has no reload signal',
  },
  {
    comm: /^python(\d+(\.\d+)?)?$/,
    program: 'a Python program',
    signals: ['INT'],
    why:
      'CPython turns INT into KeyboardInterrupt, which ends the program (Python docs, "signal": SIGINT is translated into a KeyboardInterrupt); ' +
      'HUP, USR1 or USR2 reload it only if it installs a handler with signal.signal',
  },
];

/**
 * Names the sidecar's own processes and the pod's pause process carry. With a shared process
 * namespace they are in the scan, so signalling them hits the wrong target or the sidecar itself.
 */
export const RESERVED_COMMS: readonly string[] = [
  'sh',
  'sleep',
  'timeout',
  'busybox',
  'pause',
  'sha256sum',
  'md5sum',
  'cksum',
];

/** `SIGHUP`, `sighup`, `HUP` and `hup` all read as `HUP`; anything else is undefined. */
export function normalizeSignal(signal: unknown): string | undefined {
  if (typeof signal !== 'string') return undefined;
  const name = signal.trim().toUpperCase().replace(/^SIG/, '');
  return RELOAD_SIGNALS.includes(name) ? name : undefined;
}

/** The rule that says this signal ends this process, if any. */
export function endingRule(comm: string, signal: string): EndingSignalRule | undefined {
  return ENDING_SIGNALS.find(r => r.comm.test(comm) && r.signals.includes(signal));
}
