#!/usr/bin/env node
import { parseArgs } from 'util';
import { guard } from './diff';
import { GuardInputError, loadObjects } from './load';
import { formatReport, toJson } from './report';

/** The plan's modules, loaded only for `plan`. */
const planModules = () => ({
  ...(require('./plan') as typeof import('./plan')),
  ...(require('./plan-report') as typeof import('./plan-report')),
});
import { DEFAULT_KUEUE_VERSION, MIN_SERVER_VERSION } from './rules';

/** Exit codes: 0 clean (warnings allowed), 1 forbidden changes found, 2 bad input or usage. */
export const EXIT_CLEAN = 0;
export const EXIT_FORBIDDEN = 1;
export const EXIT_BAD_INPUT = 2;

const USAGE = `usage: cdk8s-gpu guard --before <file|dir|-> --after <file|dir|-> [--server-version 1.NN] [--kueue-version 0.NN[.P]] [--crds <file|dir>]... [--server-side] [--json [--whole-values]]

Compares the objects in --before (a live export or the last applied manifests) with those in
--after (the new manifests) and reports every change the API server would reject on update.
  --before, --after   a YAML/JSON file, a folder (read with its subfolders), or - for stdin
  --server-version    the target API server's version (default ${MIN_SERVER_VERSION}); rules differ by release
  --kueue-version     the cluster's Kueue release (default ${DEFAULT_KUEUE_VERSION}); its webhooks' rules apply to
                      queued StatefulSets, Jobs, JobSets and LeaderWorkerSets (docs/guard.md)
  --crds              CustomResourceDefinitions whose self == oldSelf rules apply (repeatable)
  --server-side       the change is applied with server-side apply (kubectl apply --server-side, Argo CD's
                      ServerSideApply, Flux), not client-side kubectl apply
  --json              machine-readable output (a stable shape, see docs/guard.md); values past 200
                      characters are abbreviated, and each finding lists its changed fields
  --whole-values      with --json, the findings' whole values instead
exit codes: 0 no forbidden change (warnings allowed), 1 forbidden changes, 2 bad input or usage

usage: cdk8s-gpu plan --before <file|dir|-> --after <file|dir|-> [the guard's options] [--format text|json|markdown]

What the update does before it runs: every workload whose pods restart and why (the template
fields that changed, embedded scripts included), how many pods, the time (drain + startup budget,
sequenced by the update strategy), the GPUs held during the rollout, the objects a pruning sync
deletes, and the guard's findings. Same inputs and exit codes as guard.`;

const OPTIONS = {
  before: { type: 'string', multiple: true },
  after: { type: 'string', multiple: true },
  'server-version': { type: 'string', multiple: true },
  'kueue-version': { type: 'string', multiple: true },
  'server-side': { type: 'boolean' },
  crds: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  'whole-values': { type: 'boolean' },
  format: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Node's parseArgs errors, in one line a user can act on. */
function usageError(e: Error & { code?: string }): string {
  const option = /'(--[a-z-]+)/.exec(e.message)?.[1];
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') return `${option ?? 'an option'} needs a value`;
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option ?? e.message.split('\n')[0]}`;
  if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `unexpected argument ${/'([^']*)'/.exec(e.message)?.[1] ?? ''}`.trim();
  return e.message.split('\n')[0];
}

export function main(argv: string[], out: (s: string) => void, err: (s: string) => void, stdin?: () => string): number {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    out(USAGE);
    return EXIT_CLEAN;
  }
  if (command !== 'guard' && command !== 'plan') {
    err(`cdk8s-gpu: unknown command ${JSON.stringify(command ?? '')}. ${USAGE.split('\n')[0]}`);
    return EXIT_BAD_INPUT;
  }
  const fail = (message: string) => {
    const usage = USAGE.split('\n').find(l => l.startsWith(`usage: cdk8s-gpu ${command} `));
    err(`cdk8s-gpu ${command}: ${message}. ${usage}`);
    return EXIT_BAD_INPUT;
  };
  let values: {
    before?: string[];
    after?: string[];
    'server-version'?: string[];
    'kueue-version'?: string[];
    'server-side'?: boolean;
    crds?: string[];
    json?: boolean;
    'whole-values'?: boolean;
    format?: string[];
    help?: boolean;
  };
  try {
    values = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    return fail(usageError(e as Error));
  }
  if (values.help) {
    out(USAGE);
    return EXIT_CLEAN;
  }
  // A repeated flag is refused rather than silently resolved: which file did the user mean?
  for (const name of ['before', 'after', 'server-version', 'kueue-version', 'format'] as const) {
    const v = values[name];
    if (v && v.length > 1) return fail(`--${name} given ${v.length} times (${v.join(', ')}); give it once`);
    if (v && v[0] === '') return fail(`--${name} needs a value`);
  }
  if (values.crds?.some(c => c === '')) return fail('--crds needs a value');
  const format = values.format?.[0] ?? (values.json ? 'json' : 'text');
  if (command === 'guard' && values.format) return fail('--format is for plan; guard takes --json');
  if (values['whole-values'] && !values.json) return fail('--whole-values goes with --json');
  if (!['text', 'json', 'markdown'].includes(format))
    return fail(`--format must be text, json or markdown (got ${JSON.stringify(format)})`);
  const before = values.before?.[0];
  const after = values.after?.[0];
  if (!before || !after) return fail('--before and --after are required');
  if ([before, after, ...(values.crds ?? [])].filter(v => v === '-').length > 1)
    return fail('only one input can be stdin (-)');
  try {
    const crds = (values.crds ?? []).flatMap(c => loadObjects(c, stdin));
    const options = {
      serverVersion: values['server-version']?.[0],
      kueueVersion: values['kueue-version']?.[0],
      customResourceDefinitions: crds,
      serverSideApply: values['server-side'] === true,
    };
    if (command === 'plan') {
      const m = planModules();
      const p = m.plan(loadObjects(before, stdin), loadObjects(after, stdin), options);
      out(
        format === 'json'
          ? JSON.stringify(m.planToJson(p), null, 2)
          : format === 'markdown'
            ? m.formatPlanMarkdown(p)
            : m.formatPlan(p),
      );
      return p.guard.errors > 0 ? EXIT_FORBIDDEN : EXIT_CLEAN;
    }
    const result = guard(loadObjects(before, stdin), loadObjects(after, stdin), options);
    out(
      values.json
        ? JSON.stringify(toJson(result, { wholeValues: values['whole-values'] === true }), null, 2)
        : formatReport(result),
    );
    return result.errors > 0 ? EXIT_FORBIDDEN : EXIT_CLEAN;
  } catch (e) {
    if (e instanceof GuardInputError) {
      err(`cdk8s-gpu ${command}: ${e.message}`);
      return EXIT_BAD_INPUT;
    }
    err(`cdk8s-gpu ${command}: could not compare: ${(e as Error).message.split('\n')[0]}`);
    return EXIT_BAD_INPUT;
  }
}

if (require.main === module) {
  // `cdk8s-gpu guard ... | head` closes the pipe early: stop quietly, as other CLIs do.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  process.exitCode = main(
    process.argv.slice(2),
    s => process.stdout.write(`${s}\n`),
    s => process.stderr.write(`${s}\n`),
  );
}
