import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { GpuTrainingStatefulSet, GpuTrainingStatefulSetProps } from '../../src';
import { testChart } from '../support/synth';
import { Testing } from 'cdk8s';

/**
 * Runs the training launch wrapper exactly as synthesized (its `sh -c` script, argv0, args and
 * env from the YAML) under the shells training images have: dash (Debian/Ubuntu images such as
 * NGC PyTorch) and busybox sh (minimal images). Each run gets a PATH with only the tools such an
 * image has, so a wrapper that needs a missing tool fails here as it would in the pod.
 */

export type Shell = 'dash' | 'busybox';

export function onPath(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = path.join(dir, tool);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export const SHELLS: Record<Shell, string | undefined> = { dash: onPath('dash'), busybox: onPath('busybox') };

/** What a Debian/Ubuntu training image has besides its shell. */
const DEBIAN_TOOLS = ['date', 'mkdir', 'mv', 'sleep', 'cat', 'rm', 'ls'];

/** A bin directory with `sh` the shell under test and the other tools of the same world. */
export function toolbox(shell: Shell, dir: string, omit: string[] = []): string {
  const bin = path.join(dir, `bin-${shell}`);
  fs.mkdirSync(bin, { recursive: true });
  const sh = SHELLS[shell]!;
  const tools = new Map<string, string>();
  if (shell === 'busybox') {
    for (const applet of execFileSync(sh, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean)) tools.set(applet, sh);
  } else {
    for (const tool of DEBIAN_TOOLS) {
      const found = onPath(tool);
      if (found) tools.set(tool, found);
    }
    tools.set('sh', sh);
  }
  for (const tool of omit) tools.delete(tool);
  for (const [tool, target] of tools) fs.symlinkSync(target, path.join(bin, tool));
  return bin;
}

/** The main container of a synthesized training StatefulSet. */
export function synthesizedTrainer(props: Partial<GpuTrainingStatefulSetProps>): any {
  const chart = testChart();
  new GpuTrainingStatefulSet(chart, 't', { name: 'job', image: 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime', gpusPerPod: 1, args: ['train.py'], ...props });
  const sts = Testing.synth(chart).find(o => o.kind === 'StatefulSet');
  return sts.spec.template.spec.containers[0];
}

/** A run of the wrapper the test started. */
export class Launch {
  output = '';
  readonly exited: Promise<number | null>;
  private code: number | null | undefined;
  private readonly proc: ChildProcess;

  constructor(shell: Shell, container: any, env: Record<string, string>) {
    const [sh, dashC, script, argv0] = container.command;
    expect([sh, dashC]).toEqual(['sh', '-c']);
    const yamlEnv: Record<string, string> = {};
    for (const e of container.env) if (e.value !== undefined) yamlEnv[e.name] = e.value;
    this.proc = spawn(SHELLS[shell]!, [...(shell === 'busybox' ? ['sh'] : []), '-c', script, argv0, ...container.args], {
      env: { ...yamlEnv, ...env },
    });
    this.proc.stdout!.on('data', d => { this.output += d; });
    this.proc.stderr!.on('data', d => { this.output += d; });
    this.exited = new Promise(resolve => this.proc.on('exit', code => {
      this.code = code;
      resolve(code);
    }));
  }

  get running(): boolean {
    return this.code === undefined;
  }

  signal(sig: NodeJS.Signals): void {
    this.proc.kill(sig);
  }

  /**
   * Ends the run if the test left it running: SIGTERM first, so the wrapper ends its own child
   * (an idle sleep, the fake launcher), then SIGKILL for a wrapper that did not exit.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGTERM');
    await Promise.race([this.exited, sleep(2000)]);
    if (this.running) this.proc.kill('SIGKILL');
  }
}

export const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

export async function waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await sleep(20);
  }
  return predicate();
}
