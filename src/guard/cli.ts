#!/usr/bin/env node
import { guard } from './diff';
import { GuardInputError, loadObjects } from './load';
import { formatReport } from './report';

/**
 * `cdk8s-gpu guard --before <file|dir|-> --after <file|dir> [--json]`
 * Exit codes: 0 clean (warnings allowed), 1 forbidden changes found, 2 bad input.
 */
export const EXIT_CLEAN = 0;
export const EXIT_FORBIDDEN = 1;
export const EXIT_BAD_INPUT = 2;

const USAGE = 'usage: cdk8s-gpu guard --before <file|dir|-> --after <file|dir|-> [--json]';

export function main(argv: string[], out: (s: string) => void, err: (s: string) => void): number {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h') {
    out(USAGE);
    return EXIT_CLEAN;
  }
  if (command !== 'guard') {
    err(`cdk8s-gpu: unknown command ${JSON.stringify(command ?? '')}. ${USAGE}`);
    return EXIT_BAD_INPUT;
  }
  let before: string | undefined;
  let after: string | undefined;
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '--json') json = true;
    else if (arg === '--before' || arg === '--after') {
      const value = rest[++i];
      if (value === undefined) {
        err(`cdk8s-gpu guard: ${arg} needs a value. ${USAGE}`);
        return EXIT_BAD_INPUT;
      }
      if (arg === '--before') before = value;
      else after = value;
    } else {
      err(`cdk8s-gpu guard: unknown option ${arg}. ${USAGE}`);
      return EXIT_BAD_INPUT;
    }
  }
  if (!before || !after) {
    err(`cdk8s-gpu guard: --before and --after are required. ${USAGE}`);
    return EXIT_BAD_INPUT;
  }
  if (before === '-' && after === '-') {
    err('cdk8s-gpu guard: only one of --before and --after can be stdin');
    return EXIT_BAD_INPUT;
  }
  try {
    const result = guard(loadObjects(before), loadObjects(after));
    out(json ? JSON.stringify(result, null, 2) : formatReport(result));
    return result.errors > 0 ? EXIT_FORBIDDEN : EXIT_CLEAN;
  } catch (e) {
    if (e instanceof GuardInputError) {
      err(`cdk8s-gpu guard: ${e.message}`);
      return EXIT_BAD_INPUT;
    }
    err(`cdk8s-gpu guard: internal error: ${(e as Error).message}`);
    return EXIT_BAD_INPUT;
  }
}

if (require.main === module) {
  process.exitCode = main(process.argv.slice(2), s => process.stdout.write(`${s}\n`), s => process.stderr.write(`${s}\n`));
}
