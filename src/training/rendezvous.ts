import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { contentHash } from '../common/hash';
import { OwnedEnv } from '../common/workload-pod';

/**
 * Seconds of the grace period kept back from torchrun's shutdown timeout: after it SIGKILLs its
 * workers, torchrun and the launch wrapper still have to reap them and exit before the kubelet's
 * SIGKILL at the end of the grace period.
 */
export const SHUTDOWN_MARGIN_SECONDS = 15;

/** torchrun's SIGTERM-to-SIGKILL window for a pod grace period: the grace minus the margin (half of it below 30 s). */
export function shutdownTimeoutSeconds(grace: number): number {
  return grace >= 2 * SHUTDOWN_MARGIN_SECONDS ? grace - SHUTDOWN_MARGIN_SECONDS : Math.floor(grace / 2);
}

/** What the rank wiring is made of. */
export interface RankWiringOptions {
  /** Rank 0's stable DNS name, with `$(POD_NAMESPACE)` for the kubelet to expand. */
  readonly masterAddress: string;
  readonly masterPort: number;
  readonly replicas: number;
  readonly gpusPerPod: number;
  readonly maxRestarts: number;
  readonly shutdownTimeoutSeconds: number;
  /**
   * The prop that sets the node count, named in errors.
   * @default 'replicas'
   */
  readonly nodesProp?: string;
}

/** The rank wiring, and the `PET_RDZV_ID` variable whose value is set once the rank spec is known. */
export interface RankWiring {
  readonly env: OwnedEnv[];
  readonly rendezvousId: k8s.EnvVar & { value: string };
}

const NODE_RANK: k8s.EnvVarSource = { fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } };

function own(name: string, value: string | k8s.EnvVarSource, via?: string): OwnedEnv {
  return { env: typeof value === 'string' ? { name, value } : { name, valueFrom: value }, via };
}

/**
 * The variables that make the pods one gang. torchrun reads each `--option` from `PET_<OPTION>`
 * (torch/distributed/argparse_util.py). The c10d rendezvous re-forms the gang on rank 0's stable
 * address, and `--max-restarts` restarts every rank's workers together. With c10d, torchrun
 * assigns node ranks itself and uses `--node-rank`, `--master-addr` and `--master-port` only for
 * the static backend (torch/distributed/run.py), which the construct refuses: their `PET_*`
 * variables are not set, because argparse converts a `PET_*` default with the option's type even
 * when unused, and an empty `PET_NODE_RANK` (a pod without the pod-index label) would stop
 * torchrun with "invalid int value". The torch.distributed `env://` variables stay set for
 * launchers other than torchrun.
 */
export function rankWiring(o: RankWiringOptions): RankWiring {
  const rendezvousId = { name: 'PET_RDZV_ID', value: '' };
  const nodes = o.nodesProp ?? 'replicas';
  const env: OwnedEnv[] = [
    ...commonWiring(o, nodes, NODE_RANK),
    own('PET_RDZV_BACKEND', 'c10d'),
    own('PET_RDZV_ENDPOINT', `${o.masterAddress}:${o.masterPort}`, 'masterPort'),
    { env: rendezvousId, via: 'runId' },
    own('PET_MAX_RESTARTS', String(o.maxRestarts), 'maxRestarts'),
    ...shutdownWiring(o),
  ];
  return { env, rendezvousId };
}

/** What the static rank wiring of an indexed Job is made of. */
export interface StaticRankWiringOptions {
  /** The index-0 pod's stable DNS name, with `$(POD_NAMESPACE)` for the kubelet to expand. */
  readonly masterAddress: string;
  readonly masterPort: number;
  readonly nodes: number;
  readonly gpusPerPod: number;
  readonly shutdownTimeoutSeconds: number;
}

/**
 * The pod's completion index in an Indexed Job, as the Job controller annotates it (batch/v1,
 * `batch.kubernetes.io/job-completion-index`); JobSet's own PyTorch examples read the node rank
 * from it (site/static/examples/pytorch/cnn-mnist/mnist.yaml at v0.12.0).
 */
const COMPLETION_INDEX: k8s.EnvVarSource = {
  fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" },
};

/**
 * The variables that make the pods of an Indexed Job one gang with torchrun's static rendezvous:
 * node rank = completion index, the store on the index-0 pod (`--master-addr`, `--master-port`).
 * This is how JobSet's PyTorch examples launch torchrun (`--nnodes --master_addr --master_port
 * --node_rank`). torchrun makes no restart of its own (`--max-restarts 0`): a static rendezvous
 * cannot take a failed node back, and the JobSet restarts the whole gang instead (its
 * `failurePolicy.maxRestarts`), so every failure is seen and counted once, by the JobSet.
 */
export function staticRankWiring(o: StaticRankWiringOptions): OwnedEnv[] {
  return [
    ...commonWiring({ ...o, replicas: o.nodes }, 'nodes', COMPLETION_INDEX),
    own('PET_RDZV_BACKEND', 'static'),
    own('PET_MASTER_ADDR', o.masterAddress, 'name and clusterDomain'),
    own('PET_MASTER_PORT', String(o.masterPort), 'masterPort'),
    own('PET_NODE_RANK', COMPLETION_INDEX),
    own('PET_MAX_RESTARTS', '0', 'maxRestarts (the JobSet restarts the gang)'),
    ...shutdownWiring(o),
  ];
}

/** The torch.distributed `env://` variables and torchrun's world shape, the same for every backend. */
function commonWiring(
  o: { masterAddress: string; masterPort: number; replicas: number; gpusPerPod: number },
  nodes: string,
  nodeRank: k8s.EnvVarSource,
): OwnedEnv[] {
  return [
    // First, so that $(POD_NAMESPACE) expands in the variables below.
    own('POD_NAMESPACE', { fieldRef: { fieldPath: 'metadata.namespace' } }),
    own('MASTER_ADDR', o.masterAddress, 'name and clusterDomain'),
    own('MASTER_PORT', String(o.masterPort), 'masterPort'),
    own('NNODES', String(o.replicas), nodes),
    own('NPROC_PER_NODE', String(o.gpusPerPod), 'gpusPerPod'),
    own('WORLD_SIZE', String(o.replicas * o.gpusPerPod), `${nodes} and gpusPerPod`),
    own('NODE_RANK', nodeRank),
    own('PET_NNODES', String(o.replicas), nodes),
    own('PET_NPROC_PER_NODE', String(o.gpusPerPod), 'gpusPerPod'),
  ];
}

function shutdownWiring(o: { shutdownTimeoutSeconds: number }): OwnedEnv[] {
  return [
    // torchrun's SIGTERM-to-SIGKILL window for its workers (pytorch/pytorch#172596, first in
    // 2.12): LaunchConfig reads TORCH_ELASTIC_SHUTDOWN_TIMEOUT when --shutdown-timeout is not
    // given, and torchrun reads --shutdown-timeout from PET_SHUTDOWN_TIMEOUT; a user value of
    // either would silently move the window past the grace period. Older releases ignore both
    // and keep 30 s.
    own('TORCH_ELASTIC_SHUTDOWN_TIMEOUT', String(o.shutdownTimeoutSeconds), 'terminationGracePeriod'),
    own('PET_SHUTDOWN_TIMEOUT', String(o.shutdownTimeoutSeconds), 'terminationGracePeriod'),
    // --standalone (read from PET_STANDALONE) replaces the gang's rendezvous with one on localhost.
    own('PET_STANDALONE', '0'),
  ];
}

/**
 * The rendezvous id of a gang: the run id and a hash of the rank spec, what every rank of one gang
 * must agree on (world size, image, launcher and its arguments, env, resources). A rank re-created with another spec
 * (a template change under OnDelete) then waits in a rendezvous of its own instead of joining ranks
 * still running the old one.
 */
export function rendezvousIdFor(runId: string, replicas: number, main: k8s.Container, exclude: k8s.EnvVar): string {
  const spec = JSON.stringify({
    replicas,
    image: main.image,
    args: main.args,
    resources: main.resources,
    envFrom: main.envFrom,
    env: (main.env ?? []).filter(e => e !== exclude),
  });
  return `${runId}-${contentHash({ spec }).slice(0, 10)}`;
}

/**
 * torchrun options that define the gang's rendezvous (torch/distributed/run.py). An option on the
 * command line wins over its `PET_*` variable (torch/distributed/argparse_util.py), so passing one
 * would silently undo the construct's wiring: `--standalone` gives every pod a rendezvous of its
 * own on localhost (each trains alone into the same checkpoints), `--nnodes` another world size,
 * `--max-restarts` another restart budget, `--shutdown-timeout` a window past the grace period.
 */
const RENDEZVOUS_OPTIONS = [
  'nnodes',
  'nproc-per-node',
  'max-restarts',
  'rdzv-id',
  'rdzv-endpoint',
  'rdzv-backend',
  'standalone',
  'node-rank',
  'master-addr',
  'master-port',
  'shutdown-timeout',
];

/** torchrun's other options (torch/distributed/run.py), so that an abbreviation is judged as argparse judges it. */
const TORCHRUN_OTHER_OPTIONS = [
  'rdzv-conf',
  'monitor-interval',
  'start-method',
  'event-log-handler',
  'role',
  'module',
  'no-python',
  'run-path',
  'log-dir',
  'redirects',
  'tee',
  'local-ranks-filter',
  'local-addr',
  'logs-specs',
  'numa-binding',
  'signals-to-handle',
  'virtual-local-rank',
];

/** Every torchrun option, rendezvous ones first. */
const TORCHRUN_OPTIONS = [...RENDEZVOUS_OPTIONS, ...TORCHRUN_OTHER_OPTIONS];

/** torchrun options that take no value. */
const TORCHRUN_FLAGS = ['standalone', 'module', 'no-python', 'run-path', 'virtual-local-rank'];

/** Shells whose `-c` string is a command line the scan reads too. */
const SHELLS = /^(sh|bash|dash|ash|zsh|ksh|busybox)$/;

/** A torchrun option in the launcher's arguments that the construct sets itself. */
export interface TorchrunConflict {
  /** Its index in the launcher's argv (command then args); for a `sh -c` string, the string's index. */
  readonly index: number;
  /** The offending word. */
  readonly token: string;
  /** The option, in its canonical form, e.g. `--nnodes`. */
  readonly option: string;
  /** The prop that controls it, if any. */
  readonly via?: string;
  /** Whether it was found inside a `sh -c` / `bash -c` string. */
  readonly inShell: boolean;
}

/**
 * Finds the first rendezvous option of torchrun in `argv` (command then args), in torchrun's own
 * options only (the scan stops at the training script). A torchrun run through a shell string
 * (`bash -c 'cd /w && torchrun --standalone train.py'`) is found too: the string is split into
 * words and commands as the shell would (quotes, backslashes, `;`, `&&`, `||`, `|`, `&`, newlines,
 * leading `VAR=value` assignments and `exec`), nested shells included. argparse accepts an
 * unambiguous abbreviation and `_` for `-`, and so does this scan. `owned` names the prop that
 * sets each variable (from the construct's wiring), for the error.
 */
export function findTorchrunConflict(
  argv: string[],
  owned: ReadonlyArray<OwnedEnv> = [],
): TorchrunConflict | undefined {
  const via = (option: string): string | undefined => {
    const name = option.toUpperCase().replace(/-/g, '_');
    return (owned.find(o => o.env.name === `PET_${name}`) ?? owned.find(o => o.env.name === name))?.via;
  };
  const found = scanCommand(argv, 0);
  if (found === undefined) return undefined;
  const index = found.shellIndex ?? found.index;
  return {
    index,
    token: found.token,
    option: `--${found.option}`,
    via: via(found.option),
    inShell: found.shellIndex !== undefined,
  };
}

interface Found {
  index: number;
  shellIndex?: number;
  token: string;
  option: string;
}

/** Scans one command (argv); `depth` bounds nested shells. */
function scanCommand(argv: string[], depth: number): Found | undefined {
  const words = withoutPrefixes(argv);
  const offset = argv.length - words.length;
  const start = torchrunOptionsStart(words);
  if (start !== undefined) {
    const found = scanTorchrunOptions(words, start);
    if (found) return { ...found, index: found.index + offset };
  }
  const script = shellScript(words);
  if (script !== undefined && depth < 4) {
    for (const command of shellCommands(words[script])) {
      const found = scanCommand(command, depth + 1);
      if (found) return { ...found, index: script + offset, shellIndex: script + offset };
    }
  }
  return undefined;
}

function scanTorchrunOptions(argv: string[], start: number): Found | undefined {
  for (let i = start; i < argv.length; i++) {
    const token = argv[i];
    if (token === '--' || !token.startsWith('-') || token === '-') return undefined;
    if (token === '-m') continue;
    if (!token.startsWith('--')) {
      // A short option with a value (-r 3, -t 3, or -r3).
      if (token.length === 2) i++;
      continue;
    }
    const [raw, inline] = [token.slice(2).split('=')[0], token.includes('=')];
    const name = raw.replace(/_/g, '-');
    const matches = TORCHRUN_OPTIONS.includes(name) ? [name] : TORCHRUN_OPTIONS.filter(o => o.startsWith(name));
    if (matches.length === 1 && RENDEZVOUS_OPTIONS.includes(matches[0])) return { index: i, token, option: matches[0] };
    if (!inline && !(matches.length === 1 && TORCHRUN_FLAGS.includes(matches[0]))) i++;
  }
  return undefined;
}

/** The command without leading `VAR=value` assignments, `exec`, `env` and `env`'s assignments. */
function withoutPrefixes(argv: string[]): string[] {
  let i = 0;
  while (i < argv.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[i]) || ['exec', 'env', 'command'].includes(argv[i])))
    i++;
  return argv.slice(i);
}

/** The index of the `-c` string when `argv` runs a shell with one (`sh -c`, `bash -xc`, `bash -e -c`). */
function shellScript(argv: string[]): number | undefined {
  let program = (argv[0] ?? '').split('/').pop()!;
  let i = 1;
  if (program === 'busybox') program = argv[i++] ?? '';
  if (!SHELLS.test(program)) return undefined;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (!/^-[A-Za-z]+$/.test(a)) return undefined;
    if (a.includes('c')) return i + 1 < argv.length ? i + 1 : undefined;
  }
  return undefined;
}

/**
 * Splits a shell command line into simple commands of words, as a POSIX shell reads them: quotes
 * and backslashes are removed, parameter expansions are kept as written (`--node_rank=$RANK` is
 * still the option `--node_rank`), and `;`, `&`, `|`, `&&`, `||`, newlines and `(`/`)` end a command.
 * Comments (`#` at the start of a word) are skipped.
 */
export function shellCommands(script: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < script.length; i++) {
    const c = script[i];
    if (c === "'") {
      const end = script.indexOf("'", i + 1);
      word = (word ?? '') + script.slice(i + 1, end < 0 ? script.length : end);
      i = end < 0 ? script.length : end;
    } else if (c === '"') {
      word = word ?? '';
      for (i++; i < script.length && script[i] !== '"'; i++) {
        if (script[i] === '\\' && '$`"\\\n'.includes(script[i + 1] ?? '')) i++;
        word += script[i];
      }
    } else if (c === '\\') {
      if (script[i + 1] !== '\n') word = (word ?? '') + (script[i + 1] ?? '');
      i++;
    } else if (c === '#' && word === undefined) {
      while (i < script.length && script[i] !== '\n') i++;
      endCommand();
    } else if (' \t'.includes(c)) {
      endWord();
    } else if (';&|()\n'.includes(c)) {
      endCommand();
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return commands;
}

/** The program name (`torchrun`, `python3`, ...) when `argv` launches torchrun directly, else undefined. */
export function torchrunProgram(argv: string[]): string | undefined {
  return torchrunOptionsStart(argv) === undefined ? undefined : (argv[0] ?? '').split('/').pop();
}

const PYTHON = /^python[0-9.]*$/;

/** Where torchrun's own options begin in `argv`, or undefined when the launcher is not torchrun. */
function torchrunOptionsStart(argv: string[]): number | undefined {
  const program = (argv[0] ?? '').split('/').pop()!;
  if (program === 'torchrun') return 1;
  if (!PYTHON.test(program)) return undefined;
  for (let i = 1; i < argv.length; i++) {
    if (argv[i] === '-m' && argv[i + 1] === 'torch.distributed.run') return i + 2;
    if (argv[i] === '-mtorch.distributed.run') return i + 1;
    if (!argv[i].startsWith('-')) return undefined;
  }
  return undefined;
}
