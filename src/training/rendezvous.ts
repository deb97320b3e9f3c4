import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
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
  const env: OwnedEnv[] = [
    // First, so that $(POD_NAMESPACE) expands in the variables below.
    own('POD_NAMESPACE', { fieldRef: { fieldPath: 'metadata.namespace' } }),
    own('MASTER_ADDR', o.masterAddress, 'name and clusterDomain'),
    own('MASTER_PORT', String(o.masterPort), 'masterPort'),
    own('NNODES', String(o.replicas), 'replicas'),
    own('NPROC_PER_NODE', String(o.gpusPerPod), 'gpusPerPod'),
    own('WORLD_SIZE', String(o.replicas * o.gpusPerPod), 'replicas and gpusPerPod'),
    own('NODE_RANK', NODE_RANK),
    own('PET_NNODES', String(o.replicas), 'replicas'),
    own('PET_NPROC_PER_NODE', String(o.gpusPerPod), 'gpusPerPod'),
    own('PET_RDZV_BACKEND', 'c10d'),
    own('PET_RDZV_ENDPOINT', `${o.masterAddress}:${o.masterPort}`, 'masterPort'),
    { env: rendezvousId, via: 'runId' },
    own('PET_MAX_RESTARTS', String(o.maxRestarts), 'maxRestarts'),
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
  return { env, rendezvousId };
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
 * torchrun options the construct sets through `PET_*` variables, and the prop that controls each:
 * an option on the command line wins over its variable (torch/distributed/argparse_util.py), so
 * passing one would silently undo the prop (a different world size, no gang restart, a window
 * past the grace period). `undefined` means no prop: the construct's rendezvous needs it as set.
 */
const TORCHRUN_OWNED_OPTIONS: ReadonlyArray<[string, string | undefined]> = [
  ['nnodes', 'replicas'],
  ['nproc-per-node', 'gpusPerPod'],
  ['max-restarts', 'maxRestarts'],
  ['rdzv-id', 'runId'],
  ['rdzv-endpoint', 'masterPort'],
  ['rdzv-backend', undefined],
  ['standalone', undefined],
  ['node-rank', undefined],
  ['master-addr', undefined],
  ['master-port', 'masterPort'],
  ['shutdown-timeout', 'terminationGracePeriod'],
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

/** Every torchrun option, owned ones first. */
const TORCHRUN_OPTIONS = [...TORCHRUN_OWNED_OPTIONS.map(([o]) => o), ...TORCHRUN_OTHER_OPTIONS];

/** torchrun options that take no value. */
const TORCHRUN_FLAGS = ['standalone', 'module', 'no-python', 'run-path', 'virtual-local-rank'];

/** A torchrun option in the launcher's arguments that the construct sets itself. */
export interface TorchrunConflict {
  /** Its index in the launcher's argv (command then args). */
  readonly index: number;
  readonly token: string;
  /** The option, in its canonical form, e.g. `--nnodes`. */
  readonly option: string;
  readonly via?: string;
}

/**
 * Finds the first torchrun option in `argv` (command then args) that the construct sets itself,
 * when the launcher is torchrun (`torchrun ...` or `python -m torch.distributed.run ...`). Only
 * torchrun's own options count: the scan stops at the training script. argparse accepts an
 * unambiguous abbreviation and `_` for `-`, and so does this scan.
 */
export function findTorchrunConflict(argv: string[]): TorchrunConflict | undefined {
  const start = torchrunOptionsStart(argv);
  if (start === undefined) return undefined;
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
    if (matches.length === 1) {
      const owned = TORCHRUN_OWNED_OPTIONS.find(([o]) => o === matches[0]);
      if (owned) return { index: i, token, option: `--${owned[0]}`, via: owned[1] };
    }
    if (!inline && !(matches.length === 1 && TORCHRUN_FLAGS.includes(matches[0]))) i++;
  }
  return undefined;
}

/** The program name (`torchrun`, `python3`, ...) when `argv` launches torchrun, else undefined. */
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
