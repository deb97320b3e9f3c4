import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { exitWithOutput } from '../support/child-exit';
import { onPath, Shell, SHELLS } from '../support/shells';

/**
 * Runs the reload sidecar script under the shells it meets: dash (Debian-based exec images) and
 * busybox sh (the pinned busybox:1.36.1 image; here Debian's busybox 1.35, the poorer of the two).
 * Each run gets a PATH of its own that holds only the tools an image would have, so a script that
 * calls a tool the image lacks fails here as it would in the pod.
 */

/** Host tools a Debian image with coreutils has, for the dash runs. */
const DEBIAN_TOOLS = [
  'sleep',
  'timeout',
  'setsid',
  'sha256sum',
  'md5sum',
  'cksum',
  'cp',
  'mv',
  'ln',
  'mkdir',
  'cat',
  'wget',
  'rm',
];

let applets: string[] | undefined;

/** The applets of the busybox binary, as the image's /bin has them. */
function busyboxApplets(busybox: string): string[] {
  applets ??= execFileSync(busybox, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return applets;
}

export interface ToolboxOptions {
  /** Tools the image lacks. */
  readonly omit?: string[];
  /** Replace a tool with a script (its body after the shebang); `$REAL` is the real tool. */
  readonly replace?: Record<string, string>;
}

/**
 * A bin directory for one run: `sh` is the shell under test, every other tool comes from the same
 * world (busybox applets, or the host's coreutils for dash).
 */
export function toolbox(shell: Shell, dir: string, options: ToolboxOptions = {}): string {
  const bin = fs.mkdtempSync(path.join(dir, `bin-${shell}-`));
  const sh = SHELLS[shell]!;
  const tools = new Map<string, string>();
  if (shell === 'busybox') {
    for (const applet of busyboxApplets(sh)) tools.set(applet, sh);
  } else {
    for (const tool of DEBIAN_TOOLS) {
      const found = onPath(tool);
      if (found) tools.set(tool, found);
    }
    tools.set('sh', sh);
  }
  for (const tool of options.omit ?? []) tools.delete(tool);
  for (const [tool, target] of tools) {
    const link = path.join(bin, tool);
    if (options.replace?.[tool] !== undefined) {
      const real = shell === 'busybox' ? `${sh} ${tool}` : target;
      fs.writeFileSync(link, `#!${SHELLS.dash ?? '/bin/sh'}\nREAL="${real}"\n${options.replace[tool]}\n`, {
        mode: 0o755,
      });
    } else {
      fs.symlinkSync(target, link);
    }
  }
  return bin;
}

/** A sidecar process the test started, with its output and a way to wait on conditions. */
export class Sidecar {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitedAt?: number;

  constructor(readonly proc: ChildProcess) {
    proc.stdout!.on('data', d => {
      this.output += d;
    });
    proc.stderr!.on('data', d => {
      this.output += d;
    });
    this.exited = new Promise(resolve => {
      void exitWithOutput(proc).then(({ code, signal }) => {
        this.exitedAt = Date.now();
        resolve({ code, signal });
      });
      // A command that cannot start (ENOENT) never exits: count it as exit 127, like a shell.
      proc.on('error', err => {
        this.output += String(err);
        this.exitedAt = Date.now();
        resolve({ code: 127, signal: null });
      });
    });
  }

  get running(): boolean {
    return this.exitedAt === undefined;
  }

  /** Sends SIGKILL if it still runs: cleanup of a process this test started. */
  kill(): void {
    if (this.running) this.proc.kill('SIGKILL');
  }

  /**
   * Cleanup that leaves nothing behind: TERM first, so the script also stops the sleep or reload
   * it waits for, then KILL if it is still there after a second.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.kill(), 1000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Starts the script under a shell, with only the given env and the toolbox PATH. */
export function startSidecar(
  shell: Shell,
  script: string,
  argv0: string,
  args: string[],
  env: Record<string, string>,
  bin: string,
  launcher: string[] = [],
): Sidecar {
  const sh = SHELLS[shell]!;
  const shellArgs = shell === 'busybox' ? ['sh', '-c', script, argv0, ...args] : ['-c', script, argv0, ...args];
  // The launcher comes from the host, not from the image's PATH.
  const [command, ...prefix] =
    launcher.length > 0 ? [onPath(launcher[0]) ?? launcher[0], ...launcher.slice(1), sh] : [sh];
  return new Sidecar(
    spawn(command, [...prefix, ...shellArgs], { env: { ...env, PATH: bin }, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

export const pause = (ms: number) => new Promise(r => setTimeout(r, ms));

/** Polls a condition every 20 ms until it holds or the time is up; returns whether it held. */
export async function waitFor(predicate: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await pause(20);
  }
  return predicate();
}

/** Lines of a file the test's commands append to; none when it does not exist yet. */
export function lines(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

export { onPath, SHELLS };
export type { Shell };
