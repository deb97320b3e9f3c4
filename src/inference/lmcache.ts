import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { sizeQuantity } from '../common/quantity';

/**
 * LMCache's facts, read in the lmcache 0.5.6 wheel: how the in-process connector is configured, and where each tier
 * keeps its blocks. The engine's own fact (the connector flag) lives with the engine.
 */
export const LMCACHE = {
  source: 'LMCache 0.5.6 v1/config.py, v1/storage_backend/local_cpu_backend.py, local_disk_backend.py',
  // v1/config_base.py: every setting reads LMCACHE_<NAME>; v1/config.py defaults: local_cpu True with
  // max_local_cpu_size 5.0 (a pool a pod not sized for it would still get), local_disk None, enable_kv_events False.
  // Only whole 256-token chunks are stored (chunk_size, save_unfull_chunk False), written to every tier at once
  // (storage_manager.py batched_put).
  env: {
    localCpu: 'LMCACHE_LOCAL_CPU',
    cpuSize: 'LMCACHE_MAX_LOCAL_CPU_SIZE',
    localDisk: 'LMCACHE_LOCAL_DISK',
    diskSize: 'LMCACHE_MAX_LOCAL_DISK_SIZE',
    kvEvents: 'LMCACHE_ENABLE_KV_EVENTS',
  },
  /**
   * Settings that would add, replace or move what the construct sizes: a remote configuration overrides every other
   * (integration/vllm/utils.py lmcache_get_or_create_config), a config file brings settings of its own, hugepages
   * need a hugepages-2Mi pool the pod does not request (memory_management.py), extra_config's shm_name moves the pool
   * into /dev/shm (mixed_memory_allocator.py) and its use_odirect needs a filesystem that takes O_DIRECT, and a remote
   * tier, GPUDirect storage or peer-to-peer sharing reach storage and peers nothing sizes or admits.
   */
  refusedEnv: [
    'LMCACHE_CONFIG_FILE',
    'LMCACHE_REMOTE_CONFIG_URL',
    'LMCACHE_LOCAL_CPU_USE_HUGEPAGES',
    'LMCACHE_EXTRA_CONFIG',
    'LMCACHE_REMOTE_URL',
    'LMCACHE_GDS_PATH',
    'LMCACHE_ENABLE_P2P',
    'LMCACHE_LOCAL_DISK_PATH_SHARDING',
  ],
  refusedEnvWhy:
    'it would add, replace or move tiers the construct sizes (a config file or remote configuration, hugepages, extra_config, a remote, GPUDirect or peer-to-peer tier)',
  /**
   * Sizes are GiB floats (local_cpu_backend.py `int(cpu_size * 1024**3)`, local_disk_backend.py the same), for each
   * worker process: every tensor-parallel rank builds its own engine, CPU pool and disk budget (cache_engine.py
   * LMCacheEngineBuilder is per process), so a pod holds ranks x the size. A share below 1 GiB rounds toward LMCache's
   * empty pool, which degrades to recomputing (v1/manager.py).
   */
  minGibPerRank: 1,
  minGibPerRankWhy:
    "LMCache's pools are per rank and store whole chunks of 256 tokens, some 32 MiB each for a 7B model in 16 bits, so a smaller share holds too little to help",
  /**
   * Where the disk tier's volume is mounted. With one path every rank writes there (path_sharder.py), its files told
   * apart by the worker id in their keys (utils.py, local_disk_backend.py).
   */
  diskPath: '/var/cache/lmcache',
  diskVolume: 'lmcache',
  /**
   * The disk volume's room over the tier: LMCache evicts (LRU) to stay within its budget, counted in the chunks'
   * bytes, while the kubelet measures the directory's blocks; a little room keeps block rounding and a write in
   * flight from evicting the pod.
   */
  diskHeadroom: 1.05,
} as const;

/**
 * LMCache's own KV events stay off. LMCache 0.5.6 reports a store that starts inside a prompt (every prefix hit,
 * chunked prefill) with parent hash 0 (cache_engine.py), which llm-d-router v0.10.0 decodes as an 8-bit integer its
 * hash conversion refuses (pkg/kvevents/engineadapter), dropping the whole batch, vLLM's own GPU events with it. The
 * construct owns the variable so it cannot be switched on beside a gateway.
 */
export function lmcacheEventsOff(): k8s.EnvVar {
  return { name: LMCACHE.env.kvEvents, value: 'false' };
}

/**
 * The disk tier's volume of `room`: an emptyDir on the node's disk, or with a storage class a generic ephemeral volume
 * (one claim per pod, deleted with it).
 */
export function lmcacheDiskVolume(room: Size, storageClass: string | undefined): k8s.Volume {
  if (storageClass === undefined) return { name: LMCACHE.diskVolume, emptyDir: { sizeLimit: sizeQuantity(room) } };
  return {
    name: LMCACHE.diskVolume,
    ephemeral: {
      volumeClaimTemplate: {
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: storageClass,
          resources: { requests: { storage: sizeQuantity(room) } },
        },
      },
    },
  };
}

/**
 * A postStart hook that empties the disk tier's directory. LMCache neither scans nor counts the files an earlier run
 * left (local_disk_backend.py starts its budget at zero), and an emptyDir outlives a container restart: without this
 * the directory would grow past the tier, and the kubelet evicts a pod past an emptyDir's sizeLimit at once, without
 * a drain. "Other management of the container blocks until the hook completes" (the Lifecycle API), and the engine
 * loads its model before it serves a request, so LMCache writes nothing before the directory is empty. The hook also
 * writes a file: a volume the container's user cannot write (a CSI driver that ignores fsGroup) fails the hook, and
 * the container, where LMCache would lose every write in a worker thread (local_disk_backend.py).
 */
export function lmcacheDiskReset(path: string): k8s.LifecycleHandler {
  return {
    exec: {
      command: [
        'python3',
        '-c',
        'import os, shutil, sys\n' +
          'd = sys.argv[1]\n' +
          'for n in os.listdir(d):\n' +
          '    p = os.path.join(d, n)\n' +
          '    shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)\n' +
          "open(os.path.join(d, '.write-check'), 'w').close()\n" +
          "os.remove(os.path.join(d, '.write-check'))\n",
        path,
      ],
    },
  };
}
