import { k8s } from 'cdk8s-plus-28';
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
 * assigns node ranks itself and ignores `--node-rank`, `--master-addr` and `--master-port`
 * (torch/distributed/run.py); those stay set for a user who passes `--rdzv-backend static`, and
 * the torch.distributed `env://` variables stay set for launchers other than torchrun.
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
    own('PET_NODE_RANK', NODE_RANK),
    own('PET_MASTER_ADDR', o.masterAddress, 'name and clusterDomain'),
    own('PET_MASTER_PORT', String(o.masterPort), 'masterPort'),
    // torchrun's SIGTERM-to-SIGKILL window for its workers (pytorch/pytorch#172596, read by
    // LaunchConfig); older releases ignore it and keep 30 s.
    own('TORCH_ELASTIC_SHUTDOWN_TIMEOUT', String(o.shutdownTimeoutSeconds), 'terminationGracePeriod'),
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
    image: main.image, args: main.args, resources: main.resources, envFrom: main.envFrom,
    env: (main.env ?? []).filter(e => e !== exclude),
  });
  return `${runId}-${contentHash({ spec }).slice(0, 10)}`;
}
