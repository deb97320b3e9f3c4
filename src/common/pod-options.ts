import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { DynamicResourceAllocation } from './device-claim';
import { EnvFrom, EnvValue } from './env';
import { NetworkAccess } from './network-policy';

/**
 * Pod-level settings every workload construct accepts: scheduling, identity, metadata and extra
 * containers. Each is merged with what the construct itself sets; none can change a selector.
 */
export interface PodOptions {
  /**
   * Tolerations added to the construct's own `nvidia.com/gpu:NoSchedule` toleration, e.g. for a
   * GPU pool tainted `sku=gpu:NoSchedule`.
   * @default - only the GPU toleration
   */
  readonly tolerations?: k8s.Toleration[];
  /**
   * Node and pod (anti-)affinity, as in the Pod spec.
   * @default - none; `nodeSelector` covers the common case of a GPU product label
   */
  readonly affinity?: k8s.Affinity;
  /**
   * Spread constraints added to the construct's own (serving constructs spread replicas over nodes).
   * @default - the construct's
   */
  readonly topologySpreadConstraints?: k8s.TopologySpreadConstraint[];
  /**
   * A PriorityClass, e.g. so that a training job can preempt batch work, or a server cannot be.
   * @default - the cluster's default priority
   */
  readonly priorityClassName?: string;
  /**
   * A RuntimeClass, e.g. `nvidia` on clusters where the NVIDIA container runtime is not the default.
   * @default - the node's default runtime
   */
  readonly runtimeClassName?: string;
  /**
   * A scheduler, e.g. `volcano` or the scheduler-plugins coscheduling scheduler for gang scheduling.
   * @default - the default scheduler
   */
  readonly schedulerName?: string;
  /**
   * Secrets holding registry credentials, e.g. for nvcr.io.
   * @default - none
   */
  readonly imagePullSecrets?: string[];
  /**
   * The ServiceAccount the pods run as, e.g. one annotated for IRSA, GKE Workload Identity or Azure
   * Workload Identity. Those mechanisms inject their own projected token (or use the metadata
   * server), so the Kubernetes API token stays unmounted unless `automountServiceAccountToken` is set.
   * @default - the namespace's `default` ServiceAccount
   */
  readonly serviceAccountName?: string;
  /**
   * Mount the Kubernetes API token: only for workloads that call the API server themselves.
   * @default false - none of these workloads needs the API, and a token is a credential to steal
   */
  readonly automountServiceAccountToken?: boolean;
  /**
   * Labels added to the pods (never to selectors, so they can change on a live workload).
   * `app.kubernetes.io/name`, `instance` and `component` are the construct's and are refused.
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Annotations added to the pods.
   * @default - none
   */
  readonly annotations?: Record<string, string>;
  /**
   * Extra containers beside the main one (log shippers, proxies). Each becomes a native sidecar (an
   * init container with `restartPolicy: Always`, after `initContainers`): it starts before the main
   * container and stops after it, so a Job's pods still complete. They get the construct's container
   * security context unless they set those fields themselves, field by field.
   * @default - none
   */
  readonly sidecars?: k8s.Container[];
  /**
   * Init containers, run before the main container (after the construct's own), with the same
   * security defaults as sidecars.
   * @default - none
   */
  readonly initContainers?: k8s.Container[];
}

/** A volume of the pod, mounted into the main container. */
export interface WorkloadVolume {
  /**
   * The volume as in the Pod spec: a name and one source, e.g.
   * `{ name: 'datasets', persistentVolumeClaim: { claimName: 'datasets', readOnly: true } }`,
   * a ConfigMap, a Secret or a CSI volume.
   */
  readonly volume: k8s.Volume;
  /**
   * Where the main container mounts it. Must not be a path the construct mounts itself.
   * @default - not mounted in the main container (e.g. a volume only a sidecar uses)
   */
  readonly mountPath?: string;
  /** @default false */
  readonly readOnly?: boolean;
  /**
   * A sub-path of the volume to mount. A subPath mount never sees updates of a ConfigMap or Secret.
   * @default - the whole volume
   */
  readonly subPath?: string;
}

/**
 * Props every GPU workload construct accepts, with the same meaning and default everywhere.
 */
export interface GpuWorkloadProps {
  /**
   * Environment variables of the main container: a plain string or an `EnvValue` (Secret key,
   * ConfigMap key, pod field, resource). A variable the construct sets as a default (cache
   * locations such as `HF_HOME`) is replaced by yours; one it needs for its own mechanism (rank
   * wiring, ports, modelled props) is refused with the prop to use instead.
   * @default - none
   */
  readonly env?: Record<string, string | EnvValue>;
  /**
   * Whole ConfigMaps or Secrets as environment variables of the main container.
   * @default - none
   */
  readonly envFrom?: EnvFrom[];
  /**
   * Extra volumes, e.g. a shared ReadWriteMany dataset claim, a ConfigMap, a Secret or a CSI volume.
   * @default - none
   */
  readonly volumes?: WorkloadVolume[];
  /**
   * The extended resource that provides the GPUs: `nvidia.com/gpu`, or a MIG profile such as
   * `nvidia.com/mig-1g.10gb` (the count is then in MIG instances).
   * @default 'nvidia.com/gpu' - the NVIDIA device plugin's whole GPUs
   */
  readonly gpuResource?: string;
  /**
   * GPUs through Dynamic Resource Allocation (Kubernetes 1.34+, a DRA driver such as NVIDIA's
   * k8s-dra-driver-gpu installed): each pod claims its GPUs from a ResourceClaimTemplate the
   * construct makes, instead of the device plugin's `gpuResource`. Its `kubernetesVersion` states
   * the version it needs; see docs/design.md "Dynamic Resource Allocation".
   * @default - the device plugin's `gpuResource`, which every supported Kubernetes version schedules
   */
  readonly dynamicResourceAllocation?: DynamicResourceAllocation;
  /**
   * Further device resources per pod, requested and limited alike, e.g.
   * `{ 'vpc.amazonaws.com/efa': 4 }` or `{ 'rdma/rdma_shared_device_a': 1 }`.
   * @default - none
   */
  readonly extendedResources?: Record<string, number>;
  /**
   * CPU cores requested per pod.
   * @default 4 × GPUs - data loaders and tokenizers without starving small GPU nodes
   */
  readonly cpu?: number;
  /**
   * Also limit CPU to the request, which makes the pod Guaranteed QoS (memory is always limited
   * to its request): the kubelet's static CPU manager and topology manager pin only Guaranteed
   * pods, and only a whole number of CPUs, so `cpu` must then be whole. Every container of the pod
   * then needs equal CPU and memory requests and limits (the reload sidecar of `mountInto`
   * reserves its limits in such a pod).
   * @default false - no CPU limit, because CFS throttling stalls data loaders and NCCL threads
   */
  readonly guaranteedQos?: boolean;
  /**
   * Memory per pod, request and limit.
   * @default 16 GiB × GPUs - fits 1-GPU cloud nodes and scales with the GPU count
   */
  readonly memory?: Size;
  /**
   * Node labels to schedule on, e.g. `{ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }`.
   * @default - any node with free GPUs
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * The UID, GID and fsGroup of a non-root pod. Setting it asks for a non-root pod (`runAsRoot`
   * then defaults to false); with `runAsRoot: true` it is refused, since the pod would not use it.
   * @default 1000 - the first regular user of Debian and Ubuntu based images (vLLM: 2000, its image's `vllm` user)
   */
  readonly runAsUser?: number;
  /** @default 'cluster.local' */
  readonly clusterDomain?: string;
  /**
   * Who may reach the pods, as a NetworkPolicy (enforced where the cluster's CNI enforces policy):
   * serving pods take their API port from `clients` and metrics from the monitoring namespace,
   * training pods take every port only from their own job. `NetworkAccess.unrestricted()` makes none.
   * @default NetworkAccess.restricted() - the engines' APIs and torchrun's store have no authentication
   */
  readonly networkPolicy?: NetworkAccess;
  /**
   * Scheduling, identity, metadata and extra containers of the pods.
   * @default - none beyond the construct's own
   */
  readonly pod?: PodOptions;
}
