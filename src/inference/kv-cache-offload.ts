import { Size } from 'cdk8s';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../validation/validate';

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

  private constructor(
    /** The host memory the tier takes per replica. */
    readonly size: Size,
  ) {}
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
}

/** A resolved tier: the engine's flags and the host memory it pins. */
export interface ResolvedKvOffload {
  readonly args: string[];
  readonly size: Size;
  readonly inSharedMemory: boolean;
  readonly source: string;
}

const GIB = 1024 ** 3;

/** The tier a construct asked for, checked against what its engine can do. */
export function resolveKvOffload(
  v: Validator,
  offload: KvCacheOffload | undefined,
  o: { facts: KvOffloadFacts | string; ranks: number; nodes: number },
): ResolvedKvOffload | undefined {
  if (offload === undefined) return undefined;
  if (!(offload instanceof KvCacheOffload)) v.fail('kvCacheOffload', 'must be made with KvCacheOffload.cpu()', offload);
  if (typeof o.facts === 'string') v.fail('kvCacheOffload', o.facts, sizeQuantity(offload.size).value);
  if (o.nodes > 1)
    v.fail(
      'kvCacheOffload',
      "needs a single-node replica (nodes 1): a group's ranks span pods, and how the engines split the tier over them is not modelled here",
      sizeQuantity(offload.size).value,
    );
  const requested = v.positiveSize('kvCacheOffload', offload.size).toKibibytes() * 1024;
  const r = o.facts.flags(requested, o.ranks);
  if (typeof r === 'string') v.fail('kvCacheOffload', r, sizeQuantity(offload.size).value);
  return {
    args: r.args,
    size: Size.kibibytes(Math.ceil(r.bytes / 1024)),
    inSharedMemory: o.facts.inSharedMemory,
    source: o.facts.source,
  };
}

/** Bytes as GiB for a flag that takes a decimal number of GiB (vLLM's float). */
export function gibFlagValue(bytes: number): string {
  return String(Math.round((bytes / GIB) * 1e6) / 1e6);
}
