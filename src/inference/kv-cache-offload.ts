import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../validation/validate';
import { LMCACHE, lmcacheDiskVolume, lmcacheEventsOff } from './lmcache';

/** LMCache's tiers for a replica (`KvCacheOffload.lmcache()`). */
export interface LmCacheTiers {
  /**
   * Host memory for LMCache's CPU tier, per replica: split over the engine's tensor-parallel ranks, each of which
   * pins its own pool. The disk tier stages every block through it, so it is required.
   */
  readonly cpu: Size;
  /**
   * A local-disk tier per replica, split over the ranks like the CPU tier: LMCache writes every chunk it stores there
   * too (write-through), evicts the least recently used when full, and reads a chunk back on a prefix hit that host
   * memory no longer holds.
   * @default - no disk tier
   */
  readonly disk?: Size;
  /**
   * The storage class of the disk tier's volume, for a generic ephemeral volume (one claim per pod, deleted with
   * it): a local NVMe class, for instance.
   * @default - an emptyDir on the node's own disk, requested as ephemeral storage so the scheduler places the pod
   * where the tier fits
   */
  readonly diskStorageClass?: string;
}

/**
 * A host-memory tier for KV-cache blocks evicted from GPU memory: a prefix that a request shares with an
 * earlier one is copied back from host memory instead of computed again (long system prompts, multi-turn chats,
 * agents re-sending their context). The tier is pinned host memory the pod's memory limit must hold.
 */
export class KvCacheOffload {
  /**
   * A tier of `size` in host memory per replica: vLLM's native CPU offload (`--kv-offloading-size`, a file in
   * `/dev/shm`), SGLang's hierarchical cache (`--enable-hierarchical-cache --hicache-size`, in whole GB per
   * tensor-parallel rank, rounded down). The pod's memory (and for vLLM its `/dev/shm`) grows by it.
   */
  static cpu(size: Size): KvCacheOffload {
    return new KvCacheOffload(size);
  }

  /**
   * LMCache's tiers in the engine's process (vLLM's LMCacheConnectorV1, configured with LMCACHE_* variables): host
   * memory, and optionally a local disk behind it. The image must ship the `lmcache` package: vLLM does not depend on
   * it, and its Dockerfile installs it only with its KV connectors (INSTALL_KV_CONNECTORS), so check your image once.
   */
  static lmcache(tiers: LmCacheTiers): KvCacheOffload {
    // From plain JavaScript the tiers may be missing: the construct then reports the missing cpu.
    const given = tiers ?? ({} as LmCacheTiers);
    return new KvCacheOffload(given.cpu, given);
  }

  private constructor(
    /** The host memory the tier takes per replica. */
    readonly size: Size,
    /** LMCache's tiers, with `lmcache()`. */
    readonly lmcacheTiers?: LmCacheTiers,
  ) {}
}

/** How an engine runs LMCache in its own process: the connector's flags. */
export interface LmCacheConnectorFacts {
  readonly args: string[];
  readonly source: string;
}

/** How an engine offloads KV-cache blocks to host memory: its flags and where the memory lives. */
export interface KvOffloadFacts {
  /** The engine's flags for a tier of `bytes` per pod over `ranks` tensor-parallel ranks, and the bytes it takes. */
  flags(bytes: number, ranks: number): { args: string[]; bytes: number } | string;
  /** Whether the tier is a file in `/dev/shm` (which must then hold it) rather than the process's own memory. */
  readonly inSharedMemory: boolean;
  /** Where the facts come from, for messages. */
  readonly source: string;
  /**
   * Why `extraArgs` cannot hold what it does, with or without a tier: a host cache the construct would not size,
   * or a flag the tier overrides; undefined when it can.
   */
  refuseExtraArgs(args: readonly string[], withTier: boolean): string | undefined;
  /** How the engine runs LMCache's tiers, or why it cannot. */
  readonly lmcache: LmCacheConnectorFacts | string;
}

/** A resolved tier: the engine's flags and the host memory it pins. */
export interface ResolvedKvOffload {
  readonly args: string[];
  /** Variables the tier sets (LMCache's configuration). */
  readonly env: k8s.EnvVar[];
  readonly size: Size;
  readonly inSharedMemory: boolean;
  readonly source: string;
  /** Whether the engine's KV events report the blocks the tier holds, so a picker scoring precisely sees them. */
  readonly eventsSeen: boolean;
  /** Variables the user may not set beside the tier, and why. */
  readonly refusedEnv?: { readonly names: readonly string[]; readonly why: string };
  /** The disk tier: its volume, mounted at `path`, and the node disk it takes when that is an emptyDir. */
  readonly disk?: {
    readonly volume: k8s.Volume;
    readonly path: string;
    readonly nodeDisk?: Size;
  };
}

const GIB = 1024 ** 3;

/** The tier a construct asked for, checked against what its engine can do. */
export function resolveKvOffload(
  v: Validator,
  offload: KvCacheOffload | undefined,
  o: { facts: KvOffloadFacts | string; ranks: number; nodes: number },
): ResolvedKvOffload | undefined {
  if (offload === undefined) return undefined;
  if (!(offload instanceof KvCacheOffload))
    v.fail('kvCacheOffload', 'must be made with KvCacheOffload.cpu() or KvCacheOffload.lmcache()', offload);
  // How the tier shows in a message, whatever plain JavaScript passed as its size.
  const shown = offload.lmcacheTiers
    ? 'KvCacheOffload.lmcache()'
    : offload.size instanceof Size
      ? sizeQuantity(offload.size).value
      : offload.size;
  if (typeof o.facts === 'string') v.fail('kvCacheOffload', o.facts, shown);
  if (o.nodes > 1)
    v.fail(
      'kvCacheOffload',
      "needs a single-node replica (nodes 1): a group's ranks span pods, and how the engines split the tier over them is not modelled here",
      shown,
    );
  if (offload.lmcacheTiers !== undefined)
    return resolveLmCache(v, offload.lmcacheTiers, { facts: o.facts, ranks: o.ranks });
  const r = o.facts.flags(v.positiveSize('kvCacheOffload', offload.size).toKibibytes() * 1024, o.ranks);
  if (typeof r === 'string') v.fail('kvCacheOffload', r, shown);
  return {
    args: r.args,
    env: [],
    eventsSeen: true,
    size: Size.kibibytes(Math.ceil(r.bytes / 1024)),
    inSharedMemory: o.facts.inSharedMemory,
    source: o.facts.source,
  };
}

/**
 * A tier's size split over the ranks, as LMCache's per-rank GiB float, and the bytes the pod then holds; a rank's
 * share below LMCACHE.minGibPerRank is refused.
 */
function perRankGib(v: Validator, prop: string, size: Size, ranks: number): { gib: string; bytes: number } {
  const bytes = v.positiveSize(prop, size).toKibibytes() * 1024;
  const gib = Math.floor((bytes / ranks / GIB) * 1e6) / 1e6;
  if (gib < LMCACHE.minGibPerRank)
    v.fail(
      prop,
      `must give each tensor-parallel rank at least ${LMCACHE.minGibPerRank} GiB (${ranks} ranks): ${LMCACHE.minGibPerRankWhy}`,
      sizeQuantity(size).value,
    );
  return { gib: String(gib), bytes: Math.ceil(gib * GIB) * ranks };
}

function resolveLmCache(
  v: Validator,
  tiers: LmCacheTiers,
  o: { facts: KvOffloadFacts; ranks: number },
): ResolvedKvOffload {
  v.knownProps('kvCacheOffload', tiers, ['cpu', 'disk', 'diskStorageClass']);
  if (typeof o.facts.lmcache === 'string') v.fail('kvCacheOffload', o.facts.lmcache, 'KvCacheOffload.lmcache()');
  const cpu = perRankGib(v, 'kvCacheOffload.cpu', tiers.cpu, o.ranks);
  const env: k8s.EnvVar[] = [
    { name: LMCACHE.env.localCpu, value: 'true' },
    { name: LMCACHE.env.cpuSize, value: cpu.gib },
  ];
  let disk: ResolvedKvOffload['disk'];
  if (tiers.disk !== undefined) {
    const d = perRankGib(v, 'kvCacheOffload.disk', tiers.disk, o.ranks);
    const room = Size.kibibytes(Math.ceil((d.bytes * LMCACHE.diskHeadroom) / 1024));
    env.push({ name: LMCACHE.env.localDisk, value: LMCACHE.diskPath }, { name: LMCACHE.env.diskSize, value: d.gib });
    const storageClass = tiers.diskStorageClass;
    if (storageClass !== undefined) v.dnsSubdomain('kvCacheOffload.diskStorageClass', storageClass);
    disk = {
      path: LMCACHE.diskPath,
      ...(storageClass === undefined ? { nodeDisk: room } : {}),
      volume: lmcacheDiskVolume(room, storageClass),
    };
  } else if (tiers.diskStorageClass !== undefined)
    v.fail('kvCacheOffload.diskStorageClass', 'needs a disk tier (disk)', tiers.diskStorageClass);
  env.push(lmcacheEventsOff());
  return {
    args: o.facts.lmcache.args,
    env,
    size: Size.kibibytes(Math.ceil(cpu.bytes / 1024)),
    // cudaHostAlloc: the process's own pinned memory (memory_management.py alloc_pinned_ptr), not /dev/shm.
    inSharedMemory: false,
    source: `${o.facts.lmcache.source}; ${LMCACHE.source}`,
    eventsSeen: false,
    refusedEnv: { names: LMCACHE.refusedEnv, why: LMCACHE.refusedEnvWhy },
    ...(disk ? { disk } : {}),
  };
}

/** Bytes as GiB for a flag that takes a decimal number of GiB (vLLM's float). */
export function gibFlagValue(bytes: number): string {
  return String(Math.round((bytes / GIB) * 1e6) / 1e6);
}
