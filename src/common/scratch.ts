import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';

/**
 * A writable home with the usual caches inside, and a writable /tmp, as emptyDirs. GPU images
 * assume root and write caches under $HOME (torch, triton, HF, outlines); a non-root UID has no
 * writable home, and even as root, caches belong on a volume rather than the image's layer.
 */
export function scratchSpace(home: string): { volumes: k8s.Volume[]; mounts: k8s.VolumeMount[]; env: k8s.EnvVar[] } {
  return {
    volumes: [
      { name: 'home', emptyDir: {} },
      { name: 'tmp', emptyDir: {} },
    ],
    mounts: [
      { name: 'home', mountPath: home },
      { name: 'tmp', mountPath: '/tmp' },
    ],
    env: [
      { name: 'HOME', value: home },
      { name: 'XDG_CACHE_HOME', value: `${home}/.cache` },
      { name: 'TORCH_HOME', value: `${home}/.cache/torch` },
      { name: 'TRITON_CACHE_DIR', value: `${home}/.cache/triton` },
    ],
  };
}

/**
 * `USER` for a non-root UID: a UID the image has no passwd entry for (any UID but the image's own
 * user, and that user too in images built before it existed) makes Python's `getpass.getuser()`
 * raise `KeyError: 'getpwuid(): uid not found'` unless `LOGNAME` or `USER` is set, and torch
 * calls it for its compile cache directory at start-up (torch/_inductor/runtime/cache_dir_utils.py;
 * vLLM's own non-root entrypoint sets `USER` for this, docker/entrypoints/vllm-nonroot-entrypoint.sh).
 */
export function nonRootUserEnv(name: string): k8s.EnvVar {
  return { name: 'USER', value: name };
}
