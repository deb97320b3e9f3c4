import * as fs from 'fs';
import * as path from 'path';

/**
 * The shells container scripts meet: dash (Debian and Ubuntu based images) and busybox sh
 * (minimal images). `.ci/run` installs both; tests that need one say so loudly where it is missing.
 */
export type Shell = 'dash' | 'busybox';

/** The path of an executable on this machine's PATH, if any. */
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
