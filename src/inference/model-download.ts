import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { PodTemplate } from '../common/pod-template';
import { Validator } from '../validation/validate';

/** The init container that fills the model cache before the server starts. */
export const DOWNLOAD_CONTAINER = 'model-download';

/**
 * The download init container: the engine's image and command, with the server's env (minus
 * offline mode) and the hub credentials, envFrom, mounts (minus /dev/shm) and CPU/memory, but no
 * GPU. It runs first.
 */
export function addDownload(
  v: Validator,
  template: PodTemplate,
  command: string[],
  offlineVar: string,
  credentials: k8s.EnvVar[],
): void {
  const main = template.main;
  const init = template.spec.initContainers ?? [];
  if (init.some(c => c.name === DOWNLOAD_CONTAINER))
    v.fail(
      'pod.initContainers',
      `must not use the name ${DOWNLOAD_CONTAINER}: the construct's download runs there`,
      DOWNLOAD_CONTAINER,
    );
  const pick = (m: { [key: string]: k8s.Quantity } | undefined) =>
    Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k === 'cpu' || k === 'memory'));
  const download: k8s.Container = {
    name: DOWNLOAD_CONTAINER,
    image: main.image,
    imagePullPolicy: main.imagePullPolicy,
    command,
    // The hub credentials live here only: the server runs offline and never needs them.
    env: [...main.env.filter(e => e.name !== offlineVar), ...credentials],
    ...(main.envFrom ? { envFrom: main.envFrom } : {}),
    resources: { requests: pick(main.resources?.requests), limits: pick(main.resources?.limits) },
    volumeMounts: main.volumeMounts.filter(m => m.mountPath !== '/dev/shm'),
    securityContext: main.securityContext,
  };
  template.spec.initContainers = [download, ...init];
}
