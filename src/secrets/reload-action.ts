import { Duration } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { metadataTargetReason } from '../common/env';
import { IGpuWorkload } from '../common/pod-template';
import { Validator } from '../validation/validate';
import { unset } from './names';
import { DEFAULT_RELOAD_IMAGE, DEFAULT_RELOAD_TIMEOUT_SECONDS, Reload, ReloadSpec } from './reload';
import { COMM_MAX, endingRule, normalizeSignal, RELOAD_SIGNALS, RESERVED_COMMS } from './signals';

/** A checked onRotation: what the reload sidecar runs, as its settings. */
export interface ReloadAction {
  readonly kind: 'exec' | 'signal' | 'http' | 'sync' | 'restart' | 'files';
  /** The script's ACTION. */
  readonly script: string;
  readonly image: string;
  /** The exec command, as the script's arguments. */
  readonly args: string[];
  /** The mode's own settings. */
  readonly env: k8s.EnvVar[];
  /** 0 when the mode has no timeout. */
  readonly timeoutSeconds: number;
}

/** Checks `onRotation` against the workload and resolves it to the sidecar's settings. */
export function resolveReload(v: Validator, reload: Reload, workload: IGpuWorkload): ReloadAction {
  if (!(reload instanceof Reload)) {
    v.fail('onRotation', 'must be a Reload, e.g. Reload.exec([...]), Reload.httpPost(url) or Reload.sync()', reload);
  }
  const spec = reload._spec;
  const image = (prop: string, value: string | undefined) =>
    value !== undefined ? v.image(prop, value) : DEFAULT_RELOAD_IMAGE;
  const timeout = (t: Duration | undefined) =>
    v.seconds('onRotation timeout', unset(t, Duration.seconds(DEFAULT_RELOAD_TIMEOUT_SECONDS)), 1, 600);
  const base = { args: [] as string[], env: [] as k8s.EnvVar[], timeoutSeconds: 0 };
  switch (spec.kind) {
    case 'files':
      return { ...base, kind: 'files', script: '', image: '' };
    case 'exec':
      return {
        ...base,
        kind: 'exec',
        script: 'exec',
        args: execCommand(v, spec.command),
        image: image('onRotation image', spec.image),
        timeoutSeconds: timeout(spec.timeout),
      };
    case 'http':
      return {
        ...base,
        kind: 'http',
        script: 'http',
        image: image('onRotation image', spec.image),
        env: [{ name: 'RELOAD_URL', value: reloadUrl(v, spec.url) }],
        timeoutSeconds: timeout(spec.timeout),
      };
    case 'signal':
      return {
        ...base,
        kind: 'signal',
        script: 'signal',
        image: image('onRotation image', spec.image),
        env: signalSettings(v, spec, workload),
      };
    case 'sync':
      return {
        ...base,
        kind: 'sync',
        script: 'sync',
        image: image('onRotation image', spec.image),
        timeoutSeconds: DEFAULT_RELOAD_TIMEOUT_SECONDS,
      };
    case 'restart':
      if (!workload._templateChangesRollOut && workload._templateChangesStay !== undefined) {
        v.fail(
          'onRotation',
          `Reload.restart() needs a workload that rolls pod-template changes out: ${workload._templateChangesStay}. ` +
            'Reload in place (Reload.exec, signal, httpPost, sync): the mounted files update in the running pods',
          `a ${workload._podOwner.kind}`,
        );
      }
      if (!workload._templateChangesRollOut) {
        v.fail(
          'onRotation',
          'Reload.restart() needs a workload that rolls pod-template changes out (updateStrategy RollingUpdate): ' +
            'Stakater Reloader only patches the pod template, which an OnDelete StatefulSet never applies to running pods (stakater/Reloader#294). ' +
            'Reload in place (Reload.exec, signal, httpPost, sync) or use RollingUpdate',
          'a workload with updateStrategy OnDelete',
        );
      }
      return { ...base, kind: 'restart', script: '', image: '' };
    default:
      return v.fail('onRotation', 'must be made with a Reload factory', spec);
  }
}

function execCommand(v: Validator, value: string[]): string[] {
  const command = v.stringArray('onRotation command', value);
  if (!command || command.length === 0)
    v.fail('onRotation command', 'must be a non-empty array: the program, then its arguments', value);
  if (command[0].trim() === '' || /\s/.test(command[0])) {
    v.fail(
      'onRotation command[0]',
      'must be the program alone, without whitespace: put each argument in its own element',
      command[0],
    );
  }
  return [...command];
}

/** An absolute http(s) URL that is not a cloud metadata endpoint (the POST would reach it from the pod). */
function reloadUrl(v: Validator, value: string): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' && !/\s/.test(value) ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
    v.fail(
      'onRotation url',
      'must be an absolute http:// or https:// URL without whitespace, e.g. "http://localhost:8080/reload"',
      value,
    );
  }
  const reason = metadataTargetReason(url.hostname);
  if (reason !== undefined) {
    v.fail(
      'onRotation url',
      `must not target ${reason}: a reload is a POST to the workload, usually on localhost`,
      value,
    );
  }
  return value;
}

function signalSettings(
  v: Validator,
  spec: Extract<ReloadSpec, { kind: 'signal' }>,
  workload: IGpuWorkload,
): k8s.EnvVar[] {
  const signal = normalizeSignal(spec.signal);
  if (signal === undefined) {
    v.fail(
      'onRotation signal',
      `must be one of ${RELOAD_SIGNALS.map(s => `SIG${s}`).join(', ')} (with or without "SIG", any case)`,
      spec.signal,
    );
  }
  const comm = spec.process;
  if (typeof comm !== 'string' || comm.trim() === '') {
    v.fail(
      'onRotation process',
      'must be the name of the process to signal ({ process }), as in /proc/<pid>/comm',
      comm,
    );
  }
  if (/[/\s]/.test(comm))
    v.fail('onRotation process', 'must be a process name (the file name), not a path or a command line', comm);
  const truncated = comm.slice(0, COMM_MAX);
  // python3 running torchrun or the SGLang server is judged as that program.
  const rule = endingRule(workload._processAliases?.[truncated] ?? truncated, signal);
  if (rule) {
    v.fail(
      'onRotation',
      `must not send SIG${signal} to ${rule.program}: ${rule.why}. Reload it with Reload.exec or Reload.httpPost, or signal the process that reloads on SIG${signal}`,
      comm,
    );
  }
  if (comm.length > COMM_MAX) {
    v.failDescribed(
      'onRotation process',
      `must be at most ${COMM_MAX} characters, because Linux truncates process names in /proc/<pid>/comm and the sidecar would never find it; use "${truncated}"`,
      JSON.stringify(comm),
    );
  }
  if (RESERVED_COMMS.includes(comm)) {
    v.fail(
      'onRotation process',
      `must not be a name the reload sidecar's own processes or the pod's pause process carry (${RESERVED_COMMS.join(', ')})`,
      comm,
    );
  }
  if (workload._securityUid === undefined) {
    v.fail(
      'onRotation',
      'Reload.signal needs a workload that runs as a non-root UID: the restricted sidecar can only signal processes of its own UID',
      'a workload running as root',
    );
  }
  if (spec.exposeWorkloadToSidecar !== true) {
    v.fail(
      'onRotation exposeWorkloadToSidecar',
      'must be true for Reload.signal: to signal without CAP_KILL (which the restricted Pod Security Standard forbids) the sidecar runs as the ' +
        "workload's UID in its process namespace, so it can read the workload's environment (/proc/<pid>/environ) and files (/proc/<pid>/root), " +
        'every secret included. Opt in by name with an image you trust, or use Reload.exec, Reload.httpPost or Reload.sync, whose sidecar sees only the mounted Secret',
      spec.exposeWorkloadToSidecar,
    );
  }
  return [
    { name: 'SIGNAL', value: signal },
    { name: 'PROCESS_NAME', value: comm },
  ];
}
