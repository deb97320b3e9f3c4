import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';

/**
 * LMCache's facts, read in the lmcache 0.5.6 wheel: how the in-process connector is configured, and where each tier
 * keeps its blocks. The engine's own fact (the connector flag) lives with the engine.
 */
export const LMCACHE = {
  source: 'LMCache 0.5.6 v1/config.py, v1/storage_backend/local_cpu_backend.py, local_disk_backend.py',
  // v1/config_base.py: every setting reads LMCACHE_<NAME>; v1/config.py defaults: local_cpu True with
  // max_local_cpu_size 5.0 (a pool a pod not sized for it would still get), local_disk None, enable_kv_events False.
  env: {
    localCpu: 'LMCACHE_LOCAL_CPU',
    cpuSize: 'LMCACHE_MAX_LOCAL_CPU_SIZE',
    localDisk: 'LMCACHE_LOCAL_DISK',
    diskSize: 'LMCACHE_MAX_LOCAL_DISK_SIZE',
    kvEvents: 'LMCACHE_ENABLE_KV_EVENTS',
  },
  /**
   * Settings that would move or replace what the construct sizes: a config file replaces the environment
   * (integration/vllm/utils.py lmcache_get_or_create_config), hugepages need a hugepages-2Mi pool the pod does not
   * request (memory_management.py), and extra_config's shm_name moves the pool into /dev/shm
   * (mixed_memory_allocator.py) while its use_odirect needs a filesystem that takes O_DIRECT (local_disk_backend.py).
   */
  refusedEnv: ['LMCACHE_CONFIG_FILE', 'LMCACHE_LOCAL_CPU_USE_HUGEPAGES', 'LMCACHE_EXTRA_CONFIG'],
  /**
   * Sizes are GiB floats (local_cpu_backend.py `int(cpu_size * 1024**3)`, local_disk_backend.py the same), for each
   * worker process: every tensor-parallel rank builds its own engine, CPU pool and disk budget (cache_engine.py
   * LMCacheEngineBuilder is per process), so a pod holds ranks x the size.
   */
  gibPerRank: true,
  /** Where the disk tier's volume is mounted; every rank writes its own files there (path_sharder.py by_gpu). */
  diskPath: '/var/cache/lmcache',
  diskVolume: 'lmcache',
  /**
   * The disk volume's room over the tier: LMCache evicts (LRU) to stay within its budget, counted in the chunks'
   * bytes, while the kubelet measures the directory's blocks; a little room keeps block rounding and a write in
   * flight from evicting the pod.
   */
  diskHeadroom: 1.05,
} as const;

/** The KV-events switch, `false` until a gateway asks the pods for their events. */
export function lmcacheEventsEnv(on: boolean): k8s.EnvVar {
  return { name: LMCACHE.env.kvEvents, value: on ? 'true' : 'false' };
}

/**
 * A postStart hook that empties the disk tier's directory. LMCache neither scans nor counts the files an earlier run
 * left (local_disk_backend.py starts its budget at zero), and an emptyDir outlives a container restart: without this
 * the directory would grow past the tier, and the kubelet evicts a pod past an emptyDir's sizeLimit at once, without
 * a drain. "Other management of the container blocks until the hook completes" (the Lifecycle API), and the engine
 * loads its model before it serves a request, so LMCache writes nothing before the directory is empty.
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
          '    shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)\n',
        path,
      ],
    },
  };
}
