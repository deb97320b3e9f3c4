import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { PodTemplate } from '../common/pod-template';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../validation/validate';

/** The init container that fills the model cache before the server starts. */
export const DOWNLOAD_CONTAINER = 'model-download';

/**
 * CPU and memory of the download init container. The pod's request is the larger of its init
 * containers' and the sum of its containers', so more than the server's raises what the pod
 * reserves, and less does not lower it (the server's request stands).
 */
export interface DownloadResources {
  /**
   * CPU cores requested (and limited, when the pod is Guaranteed).
   * @default - the server's
   */
  readonly cpu?: number;
  /**
   * Memory, request and limit.
   * @default - the server's
   */
  readonly memory?: Size;
}

/**
 * The download init container: the engine's image and command, with the server's env (minus
 * offline mode) and the hub credentials, envFrom, mounts (minus /dev/shm) and CPU/memory (or
 * `resources`), but no GPU. It runs first.
 */
export function addDownload(
  v: Validator,
  template: PodTemplate,
  command: string[],
  offlineVar: string,
  credentials: k8s.EnvVar[],
  resources?: DownloadResources,
): void {
  const main = template.main;
  if (resources !== undefined) v.knownProps('downloadResources', resources, ['cpu', 'memory']);
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
    resources:
      resources === undefined
        ? { requests: pick(main.resources?.requests), limits: pick(main.resources?.limits) }
        : ownResources(v, resources, main, template.guaranteedQos),
    volumeMounts: main.volumeMounts.filter(m => m.mountPath !== '/dev/shm'),
    securityContext: main.securityContext,
  };
  template.spec.initContainers = [download, ...init];
}

/** The download's own CPU and memory, each defaulting to the server's; limits as the pod's QoS needs them. */
function ownResources(
  v: Validator,
  r: DownloadResources,
  main: k8s.Container,
  guaranteed: boolean,
): k8s.ResourceRequirements {
  const cpu =
    r.cpu === undefined
      ? main.resources?.requests?.cpu
      : k8s.Quantity.fromString(String(v.positive('downloadResources.cpu', r.cpu)));
  const memory =
    r.memory === undefined
      ? main.resources?.requests?.memory
      : sizeQuantity(v.positiveSize('downloadResources.memory', r.memory));
  const requests = { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
  return { requests, limits: { ...(guaranteed && cpu ? { cpu } : {}), ...(memory ? { memory } : {}) } };
}
