import { inlineCommand } from '../support/runtime-scripts';
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { exitWithOutput } from '../support/child-exit';
import { onPath, Shell, SHELLS } from '../support/shells';
import { GpuTrainingStatefulSet, GpuTrainingStatefulSetProps } from '../../src';
import { testChart } from '../support/synth';
import { Testing } from 'cdk8s';

/**
 * Runs the training launch wrapper exactly as synthesized (its `sh -c` script, argv0, args and
 * env from the YAML) under the shells training images have: dash (Debian/Ubuntu images such as
 * NGC PyTorch) and busybox sh (minimal images). Each run gets a PATH with only the tools such an
 * image has, so a wrapper that needs a missing tool fails here as it would in the pod.
 */

/** A new PID namespace (and a user namespace, so it works unprivileged) whose PID 1 is the wrapper. */
// --mount-proc: the wrapper reads /proc/<pid> of its child, which must be its own PID namespace's.
const UNSHARE_ARGS = ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount', '--mount-proc'];

/** The wrapper as shipped (src/training/launch.sh). */
export const LAUNCH_SCRIPT = fs.readFileSync(path.join(__dirname, '..', '..', 'src', 'training', 'launch.sh'), 'utf8');

/** The external tools the wrapper checks for at start (its `for tool in ...` line). */
export const WRAPPER_TOOLS: string[] = /^for tool in ([a-z ]+); do$/m.exec(LAUNCH_SCRIPT)![1].split(' ');

/**
 * A bin directory with `sh` the shell under test and the tools of the same world: every busybox
 * applet, or for dash exactly the tools the wrapper declares, so a wrapper that starts using an
 * undeclared tool fails here.
 */
export function toolbox(shell: Shell, dir: string, omit: string[] = []): string {
  const bin = path.join(dir, `bin-${shell}${omit.length ? `-without-${omit.join('-')}` : ''}`);
  fs.mkdirSync(bin, { recursive: true });
  const sh = SHELLS[shell]!;
  const tools = new Map<string, string>();
  if (shell === 'busybox') {
    for (const applet of execFileSync(sh, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean))
      tools.set(applet, sh);
  } else {
    for (const tool of WRAPPER_TOOLS) {
      const found = onPath(tool);
      if (!found) throw new Error(`${tool} is not installed here`);
      tools.set(tool, found);
    }
    tools.set('sh', sh);
  }
  for (const tool of omit) tools.delete(tool);
  for (const [tool, target] of tools) fs.symlinkSync(target, path.join(bin, tool));
  return bin;
}

/**
 * The kubelet's expansion of a container's command and args (k8s.io/kubernetes
 * third_party/forked/golang/expansion/expand.go): `$(NAME)` of a defined variable becomes its
 * value, `$$` becomes `$`, anything else stays as written.
 */
export function kubeletExpand(input: string, env: Record<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    if (input[i] !== '$' || i + 1 >= input.length) {
      out += input[i];
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 1;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += '$(';
        i += 1;
      } else {
        const name = input.slice(i + 2, close);
        out += Object.prototype.hasOwnProperty.call(env, name) ? env[name] : `$(${name})`;
        i = close;
      }
    } else {
      out += `$${next}`;
      i += 1;
    }
  }
  return out;
}

/** Whether this machine can run a process as PID 1 of its own PID namespace (util-linux unshare). */
export const PID_NAMESPACES: boolean = (() => {
  const unshare = onPath('unshare');
  if (!unshare) return false;
  try {
    return (
      execFileSync(unshare, [...UNSHARE_ARGS, 'sh', '-c', 'echo $$'], { encoding: 'utf8', timeout: 5000 }).trim() ===
      '1'
    );
  } catch {
    return false;
  }
})();

/** The main container of a synthesized training StatefulSet. */
export function synthesizedTrainer(props: Partial<GpuTrainingStatefulSetProps>): any {
  const chart = testChart();
  new GpuTrainingStatefulSet(chart, 't', {
    name: 'job',
    image: 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime',
    gpusPerPod: 1,
    args: ['train.py'],
    ...props,
  });
  const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
  return sts.spec.template.spec.containers[0];
}

/** How a test starts the wrapper. */
export interface LaunchOptions {
  /** Run it as PID 1 of a new PID namespace, as in a container (needs PID_NAMESPACES). */
  readonly pid1?: boolean;
  /**
   * Without pid1: run it in a process group of its own, so that `kill()` ends everything it
   * started (torchrun and its workers), as the end of a container does.
   */
  readonly group?: boolean;
  /**
   * Start the wrapper with SIGTERM ignored: a non-interactive shell cannot trap a signal ignored on
   * entry (POSIX; dash and busybox ash), so no TERM it or its subshells send each other arrives, as
   * when one falls in the window between a subshell's fork and its own trap.
   */
  readonly termIgnored?: boolean;
}

/** A run of the wrapper the test started. */
export class Launch {
  output = '';
  readonly exited: Promise<number | null>;
  private code: number | null | undefined;
  private readonly proc: ChildProcess;
  private readonly pid1: boolean;
  private readonly group: boolean;
  private killed = false;

  constructor(shell: Shell, container: any, env: Record<string, string>, options: LaunchOptions = {}) {
    const [sh, dashC, script, argv0] = inlineCommand(container.command);
    expect([sh, dashC]).toEqual(['sh', '-c']);
    const yamlEnv: Record<string, string> = {};
    for (const e of container.env) if (e.value !== undefined) yamlEnv[e.name] = e.value;
    const fullEnv = { ...yamlEnv, ...env };
    // What the container runs: command and args after the kubelet's $(VAR) expansion.
    const argv = [
      ...(shell === 'busybox' ? ['sh'] : []),
      '-c',
      kubeletExpand(script, fullEnv),
      argv0,
      ...container.args.map((a: string) => kubeletExpand(a, fullEnv)),
    ];
    this.pid1 = options.pid1 === true;
    this.group = !this.pid1 && options.group === true;
    // `exec` keeps an ignored disposition, so the wrapper's shell starts with TERM ignored.
    const ignoring = [...(shell === 'busybox' ? ['sh'] : []), '-c', `trap '' TERM; exec "$0" "$@"`, SHELLS[shell]!];
    this.proc = this.pid1
      ? spawn(onPath('unshare')!, [...UNSHARE_ARGS, SHELLS[shell]!, ...argv], { env: fullEnv })
      : options.termIgnored
        ? spawn(SHELLS[shell]!, [...ignoring, ...argv], { env: fullEnv, detached: this.group })
        : spawn(SHELLS[shell]!, argv, { env: fullEnv, detached: this.group });
    this.proc.stdout!.on('data', d => {
      this.output += d;
    });
    this.proc.stderr!.on('data', d => {
      this.output += d;
    });
    this.exited = exitWithOutput(this.proc).then(({ code }) => {
      this.code = code;
      return code;
    });
  }

  get running(): boolean {
    return this.code === undefined;
  }

  /** Whether it has exited, and not because the test killed it. */
  get exitedOnItsOwn(): boolean {
    return !this.running && !this.killed;
  }

  /** The wrapper's process: the shell itself, or under pid1 the child unshare forked. */
  private async wrapperPid(): Promise<number> {
    if (!this.pid1) return this.proc.pid!;
    let pid: number | undefined;
    await waitFor(() => {
      try {
        pid =
          Number(
            fs.readFileSync(`/proc/${this.proc.pid}/task/${this.proc.pid}/children`, 'utf8').trim().split(' ')[0],
          ) || undefined;
      } catch {
        pid = undefined;
      }
      return pid !== undefined;
    }, 5000);
    if (pid === undefined) throw new Error('the PID-1 wrapper did not start');
    return pid;
  }

  /**
   * Resolves once the wrapper's shell has a handler for `sig` (SigCgt in /proc/<pid>/status): the
   * moment from which a signal to PID 1 can no longer be dropped by the kernel.
   */
  async catches(sig: 'SIGTERM' | 'SIGINT', ms = 5000): Promise<boolean> {
    const pid = await this.wrapperPid();
    const bit = 1n << BigInt((sig === 'SIGTERM' ? 15 : 2) - 1);
    return waitFor(() => {
      try {
        const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m !== null && (BigInt(`0x${m[1]}`) & bit) !== 0n;
      } catch {
        return false;
      }
    }, ms);
  }

  /** Sends a signal to the wrapper, as the container runtime does at pod deletion. */
  async signal(sig: NodeJS.Signals): Promise<void> {
    process.kill(await this.wrapperPid(), sig);
  }

  /**
   * SIGKILL for the wrapper and everything it started, as when its node is lost: under pid1 the
   * wrapper's PID namespace goes (unshare's --kill-child), with group the process group.
   */
  kill(): void {
    if (!this.running) return;
    this.killed = true;
    try {
      if (this.group) process.kill(-this.proc.pid!, 'SIGKILL');
      else this.proc.kill('SIGKILL');
    } catch {
      // already gone
    }
  }

  /**
   * Ends the run if the test left it running: SIGTERM first, so the wrapper ends its own child
   * (an idle sleep, the fake launcher), then SIGKILL for a wrapper that did not exit (under pid1,
   * unshare's --kill-child then kills the wrapper and with it its whole PID namespace).
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    if (!this.pid1) this.proc.kill('SIGTERM');
    await Promise.race([this.exited, deadline(this.pid1 ? 0 : 2000, null)]);
    if (this.running) this.kill();
    await Promise.race([this.exited, deadline(2000, null)]);
    // A process group outlives its leader: what the wrapper started goes with the test.
    if (this.group) {
      try {
        process.kill(-this.proc.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
  }
}

/** torchrun: $TORCHRUN (.ci/run exports its venv's), a repo venv at .cache/torch-venv, or the PATH. */
export const TORCHRUN: string | undefined = (() => {
  const candidates = [
    process.env.TORCHRUN,
    path.join(__dirname, '..', '..', '.cache', 'torch-venv', 'bin', 'torchrun'),
    onPath('torchrun'),
  ];
  return candidates.find(c => c !== undefined && c !== '' && fs.existsSync(c));
})();
/** The tiny training script the real-torchrun tests run (torchrun/train.py says what it does). */
export const TRAIN = path.join(__dirname, 'torchrun', 'train.py');

/** A free TCP port on 127.0.0.1 for a gang's rendezvous. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

/** A timer for Promise.race that does not keep the test worker alive once the race is decided. */
export const deadline = <T>(ms: number, value: T): Promise<T> =>
  new Promise(r => setTimeout(() => r(value), ms).unref());

export async function waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await sleep(20);
  }
  return predicate();
}

export { onPath, SHELLS };
export type { Shell };
