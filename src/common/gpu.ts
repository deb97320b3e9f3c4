import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Validator } from '../validation/validate';
import { MIG_DEVICE_CLASS } from './gpu-names';
import { sizeQuantity } from './quantity';

/** The extended resource the NVIDIA device plugin advertises. */
export const GPU_RESOURCE = 'nvidia.com/gpu';

/**
 * Whether a resource name is an extended resource (a device plugin's): domain-prefixed, outside
 * kubernetes.io, not a quota name (IsExtendedResourceName). Those are whole numbers, and their
 * request equals their limit.
 */
export function isExtendedResourceName(name: string): boolean {
  return name.includes('/') && !/(^|\.)kubernetes\.io\//.test(name) && !name.startsWith('requests.');
}

/**
 * GPU node pools are commonly tainted `nvidia.com/gpu:NoSchedule` (GKE and AKS do it, EKS
 * examples do); tolerating it with `Exists` works whatever value the taint carries.
 */
export function gpuTolerations(): k8s.Toleration[] {
  return [{ key: GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }];
}

/**
 * The most GPUs of one kind a current GPU node carries: HGX/DGX H100, H200 and B200 and the MI300X
 * platforms have 8; GB200 NVL72 compute trays have 4. The default of `maxGpusPerNode`.
 */
export const DEFAULT_MAX_GPUS_PER_NODE = 8;
/**
 * The largest `maxGpusPerNode` taken: eight times a node's 8 GPUs, above the most device-plugin
 * instances a node advertises (8 GPUs of 7 MIG instances make 56).
 */
export const MAX_GPUS_PER_NODE_BOUND = 64;

/**
 * Refuses a pod's GPU count (`prop`, e.g. gpusPerPod) above `maxGpusPerNode`: a pod's GPUs come from
 * one node, so a pod asking for more than any node has stays Pending. `more` says how to get more
 * GPUs for the workload (more nodes). Returns the resolved maximum.
 */
export function checkGpusPerNode(
  v: Validator,
  o: { prop: string; gpus: number; maxGpusPerNode: number | undefined; more: string },
): number {
  const max = v.wholeNumber(
    'maxGpusPerNode',
    o.maxGpusPerNode ?? DEFAULT_MAX_GPUS_PER_NODE,
    1,
    MAX_GPUS_PER_NODE_BOUND,
  );
  if (o.gpus > max)
    v.fail(
      o.prop,
      `must be at most maxGpusPerNode (${max}): a pod's GPUs come from one node, and a pod asking for more than a node has stays Pending (${o.more}, or raise maxGpusPerNode for larger nodes)`,
      o.gpus,
    );
  return max;
}

/** CPU cores requested per GPU: enough for data loaders or tokenizers without starving small GPU nodes. */
export const DEFAULT_CPU_PER_GPU = 4;
/** Memory per GPU: fits 1-GPU cloud nodes (e.g. 32 GB hosts) and scales with the GPU count. */
export const DEFAULT_MEMORY_GIB_PER_GPU = 16;

/** The host CPU and memory defaults of a pod with `gpus` GPUs. */
export function defaultHostResources(gpus: number): { cpu: number; memory: Size } {
  return { cpu: DEFAULT_CPU_PER_GPU * gpus, memory: Size.gibibytes(DEFAULT_MEMORY_GIB_PER_GPU * gpus) };
}

/**
 * Whether an extended resource is a MIG instance of the NVIDIA device plugin's mixed strategy
 * (`nvidia.com/mig-<profile>`). A CUDA process enumerates one MIG instance, and NCCL does not
 * connect instances (NVIDIA MIG user guide, "CUDA Device Enumeration" and "Application
 * Considerations"), so a process never uses two of them together.
 */
export function isMigResource(resource: string): boolean {
  return /^nvidia\.com\/mig-/.test(resource);
}

/**
 * What makes a workload's GPUs MIG instances, as a refusal names it: its MIG resource, or NVIDIA's
 * MIG DeviceClass under Dynamic Resource Allocation; undefined for whole GPUs.
 */
export function migSource(props: {
  readonly gpuResource?: string;
  readonly dynamicResourceAllocation?: { readonly deviceClassName?: string };
}): string | undefined {
  if (typeof props.gpuResource === 'string' && isMigResource(props.gpuResource)) return props.gpuResource;
  if (props.dynamicResourceAllocation?.deviceClassName === MIG_DEVICE_CLASS) return `DeviceClass ${MIG_DEVICE_CLASS}`;
  return undefined;
}

/** What a GPU container asks for. */
export interface GpuResourceOptions {
  /** GPUs (or MIG instances) of `gpuResource`. */
  readonly gpus: number;
  /** @default GPU_RESOURCE */
  readonly gpuResource?: string;
  readonly cpu: k8s.Quantity;
  readonly memory: Size;
  /** A CPU limit; none by default, because CFS throttling stalls data loaders and NCCL threads. */
  readonly cpuLimit?: k8s.Quantity;
  /** Further device resources, requested and limited alike. */
  readonly extended?: Record<string, k8s.Quantity>;
  /**
   * The pod's resource claim that holds the GPUs (Dynamic Resource Allocation): the container
   * references it, and `gpuResource` is then not requested.
   */
  readonly claim?: string;
  /**
   * Node disk to request: an emptyDir the container fills. Requested only, not limited: a container limit would also
   * count its logs and writable layer, and the emptyDir's own sizeLimit bounds it.
   */
  readonly ephemeralStorage?: Size;
}

/**
 * Requests and limits for a GPU container. GPUs and other devices are set in both (extended
 * resources must match); memory limit equals the request so a node never overcommits the memory
 * that `/dev/shm` also draws on.
 */
export function gpuResources(o: GpuResourceOptions): k8s.ResourceRequirements {
  const gpus = o.claim === undefined ? { [o.gpuResource ?? GPU_RESOURCE]: k8s.Quantity.fromNumber(o.gpus) } : {};
  const devices = { ...gpus, ...o.extended };
  const memory = sizeQuantity(o.memory);
  return {
    ...(o.claim !== undefined ? { claims: [{ name: o.claim }] } : {}),
    requests: {
      cpu: o.cpu,
      memory,
      ...(o.ephemeralStorage ? { 'ephemeral-storage': sizeQuantity(o.ephemeralStorage) } : {}),
      ...devices,
    },
    limits: { ...(o.cpuLimit ? { cpu: o.cpuLimit } : {}), memory, ...devices },
  };
}

export const SHM_VOLUME = 'dshm';

/**
 * `/dev/shm` as a memory-backed emptyDir: the container runtime's default is 64 MiB, which NCCL
 * and PyTorch data loaders exhaust ("Bus error"). Its usage counts against the memory limit.
 */
export function shmVolume(size: Size): { volume: k8s.Volume; mount: k8s.VolumeMount } {
  return {
    volume: { name: SHM_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: sizeQuantity(size) } },
    mount: { name: SHM_VOLUME, mountPath: '/dev/shm' },
  };
}
