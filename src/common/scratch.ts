import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';

/**
 * A writable home with the usual caches inside, and a writable /tmp, as emptyDirs. GPU images
 * assume root and write caches under $HOME (torch, triton, HF, outlines); a non-root UID has no
 * writable home, and even as root, caches belong on a volume rather than the image's layer.
 */
export function scratchSpace(home: string): { volumes: k8s.Volume[]; mounts: k8s.VolumeMount[]; env: k8s.EnvVar[] } {
  return {
    volumes: [{ name: 'home', emptyDir: {} }, { name: 'tmp', emptyDir: {} }],
    mounts: [{ name: 'home', mountPath: home }, { name: 'tmp', mountPath: '/tmp' }],
    env: [
      { name: 'HOME', value: home },
      { name: 'XDG_CACHE_HOME', value: `${home}/.cache` },
      { name: 'TORCH_HOME', value: `${home}/.cache/torch` },
      { name: 'TRITON_CACHE_DIR', value: `${home}/.cache/triton` },
    ],
  };
}
