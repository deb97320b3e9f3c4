import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { PodSecurityLevel } from './security';
import { Validator } from '../validation/validate';

/** The annotation Multus reads for a pod's extra network attachments. */
export const MULTUS_NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';
/** The resource the NVIDIA network operator's RDMA shared device plugin advertises in its examples. */
export const DEFAULT_RDMA_SHARED_RESOURCE = 'rdma/rdma_shared_device_a';
/** The resource the AWS EFA device plugin advertises. */
export const EFA_RESOURCE = 'vpc.amazonaws.com/efa';

/** InfiniBand / RoCE settings shared by the shared-device and SR-IOV set-ups. */
export interface InfinibandOptions {
  /**
   * `NCCL_IB_HCA`: which HCAs (and ports) NCCL uses, e.g. `'mlx5'` or `'=mlx5_0:1,mlx5_1:1'`.
   * @default - NCCL's choice among the devices the pod sees
   */
  readonly hca?: string;
  /**
   * `NCCL_IB_GID_INDEX`: the GID for RoCE (commonly 3 for RoCE v2 over IPv4). Leave unset on
   * InfiniBand.
   * @default - NCCL's default
   */
  readonly gidIndex?: number;
}

/** An RDMA device resource shared by every pod of a node (NVIDIA network operator, k8s-rdma-shared-dev-plugin). */
export interface SharedRdmaOptions extends InfinibandOptions {
  /**
   * The extended resource of the shared device plugin's resource pool.
   * @default 'rdma/rdma_shared_device_a' - the name in the network operator's examples
   */
  readonly resourceName?: string;
  /**
   * Secondary networks to attach through Multus, as Multus reads them (`name`, `namespace/name`,
   * `name@interface`). RoCE needs one: the RoCE GID is an address of a netdevice in the pod,
   * which the network operator's MacvlanNetwork (or an IPoIB network) provides; InfiniBand does not.
   * @default - none: InfiniBand over the shared HCA, bootstrap on the pod network
   */
  readonly networks?: string[];
}

/** SR-IOV virtual functions attached through Multus (NVIDIA network operator with the SR-IOV network operator). */
export interface SriovRdmaOptions extends InfinibandOptions {
  /**
   * NetworkAttachmentDefinitions to attach, as Multus reads them: `name`, `namespace/name` or
   * `name@interface`, one entry per attachment.
   */
  readonly networks: string[];
  /**
   * The SR-IOV device plugin resource the networks draw their VFs from, e.g.
   * `nvidia.com/sriov_rdma_vf`.
   */
  readonly resourceName: string;
  /**
   * VFs requested per pod.
   * @default - one per network
   */
  readonly count?: number;
}

/** What an RDMA choice adds to a pod. */
export interface RdmaPodParts {
  readonly resources: Record<string, number>;
  readonly env: k8s.EnvVar[];
  readonly capabilities: string[];
  readonly annotations: Record<string, string>;
}

type RdmaSpec =
  | { kind: 'shared'; options: SharedRdmaOptions }
  | { kind: 'sriov'; options: SriovRdmaOptions }
  | { kind: 'efa'; count: number };

/**
 * How the pods reach each other over RDMA. Each choice requests the device resource, sets the
 * NCCL / libfabric variables that make NCCL use it (and fail loudly rather than fall back to TCP
 * sockets where NCCL allows it), and adds the capability it needs.
 */
export class Rdma {
  /**
   * InfiniBand or RoCE through a device resource shared by the pods of a node (the NVIDIA network
   * operator's RDMA shared device plugin); for RoCE, name the secondary network in `networks`.
   * Adds `IPC_LOCK` (memory registration pins pages beyond the default memlock limit), so the pod
   * needs the **privileged** Pod Security level.
   */
  static sharedDevice(options: SharedRdmaOptions = {}): Rdma {
    return new Rdma({ kind: 'shared', options });
  }

  /**
   * InfiniBand or RoCE through SR-IOV virtual functions attached by Multus. Adds the
   * `k8s.v1.cni.cncf.io/networks` annotation, the VF resource and `IPC_LOCK` (privileged level).
   */
  static sriov(options: SriovRdmaOptions): Rdma {
    return new Rdma({ kind: 'sriov', options });
  }

  /**
   * AWS Elastic Fabric Adapter: `count` EFA interfaces per pod (4 on p4d.24xlarge, 32 on
   * p5.48xlarge: request all of a node's interfaces for a pod that takes all its GPUs), through the
   * AWS EFA device plugin. The image needs libfabric and the aws-ofi-nccl plugin (AWS Deep
   * Learning Containers and NGC images with EFA support have them): `NCCL_NET=AWS Libfabric`
   * makes NCCL fail at init without them, instead of falling back to TCP sockets silently. No extra capability (the
   * node's container runtime must allow unlimited locked memory, as EKS GPU AMIs do), so the pod
   * keeps its Pod Security level. GPUDirect RDMA is libfabric's choice per device: it is used on
   * p4d and p5 and not on g5, g6 or p3dn.
   */
  static efa(count: number): Rdma {
    return new Rdma({ kind: 'efa', count });
  }

  private constructor(private readonly spec: RdmaSpec) {}

  /** The Pod Security level a pod with this choice can meet at best. */
  get podSecurityLevel(): PodSecurityLevel {
    return this.spec.kind === 'efa' ? PodSecurityLevel.RESTRICTED : PodSecurityLevel.PRIVILEGED;
  }

  /** @internal Validated pod parts; `prop` names the prop in errors. */
  _resolve(v: Validator, prop: string): RdmaPodParts {
    const s = this.spec;
    if (s.kind === 'efa') {
      const count = v.wholeNumber(`${prop} (Rdma.efa count)`, s.count, 1, 64);
      return {
        resources: { [EFA_RESOURCE]: count },
        // FI_PROVIDER=efa keeps libfabric from quietly choosing its TCP provider.
        // FI_EFA_USE_DEVICE_RDMA is left to libfabric: from API 1.18 it uses RDMA read wherever
        // the device has it (p4d, p5), and a 1 on a device without it (g5, g6, p3dn) aborts the
        // process (prov/efa efa_rdm_get_use_device_rdma).
        // FI_EFA_USE_HUGE_PAGE=0: the pod requests no hugepages (its hugetlb limit is 0), and
        // huge-page bounce buffers also make fork() fail with ENOMEM in PyTorch data loaders
        // (aws-ofi-nccl doc/efa-env-var.md); the cost is a small bandwidth loss.
        // NCCL_NET names the network NCCL must use: "AWS Libfabric" is the aws-ofi-nccl plugin's
        // own name (aws/aws-ofi-nccl, the `.name` of its ncclNet structs). Without it, an image
        // lacking the plugin (or a plugin that cannot open EFA) makes NCCL fall back to TCP
        // sockets silently; with it NCCL fails at init instead (NCCL environment variables,
        // NCCL_NET: "make sure NCCL uses an external plugin and doesn't automatically fall back").
        env: [
          { name: 'NCCL_NET', value: 'AWS Libfabric' },
          { name: 'FI_PROVIDER', value: 'efa' },
          { name: 'FI_EFA_USE_HUGE_PAGE', value: '0' },
        ],
        capabilities: [],
        annotations: {},
      };
    }
    const o = s.options;
    v.plainObject(prop, o);
    const known =
      s.kind === 'shared'
        ? ['resourceName', 'networks', 'hca', 'gidIndex']
        : ['networks', 'resourceName', 'count', 'hca', 'gidIndex'];
    v.knownProps(prop, o, known);
    // NCCL_NET=IB makes NCCL fail at init when no IB device is usable, instead of silently using
    // TCP sockets (NCCL environment variables, NCCL_NET). Bootstrap stays on the pod network.
    const env: k8s.EnvVar[] = [{ name: 'NCCL_NET', value: 'IB' }];
    if (o.hca !== undefined) {
      if (typeof o.hca !== 'string' || !/^[=^]?[A-Za-z0-9_:,.-]+$/.test(o.hca))
        v.fail(`${prop}.hca`, 'must be an NCCL_IB_HCA value such as "mlx5" or "=mlx5_0:1,mlx5_1:1"', o.hca);
      env.push({ name: 'NCCL_IB_HCA', value: o.hca });
    }
    if (o.gidIndex !== undefined)
      env.push({ name: 'NCCL_IB_GID_INDEX', value: String(v.wholeNumber(`${prop}.gidIndex`, o.gidIndex, 0, 255)) });
    const annotations: Record<string, string> = {};
    let resource: string;
    let count = 1;
    if (s.kind === 'shared') {
      resource = o.resourceName ?? DEFAULT_RDMA_SHARED_RESOURCE;
      v.qualifiedName(`${prop}.resourceName`, resource);
      if (o.networks !== undefined) attachNetworks(v, prop, o.networks, annotations, env);
    } else {
      const so = s.options;
      const networks = attachNetworks(v, prop, so.networks, annotations, env);
      resource = so.resourceName;
      v.qualifiedName(`${prop}.resourceName`, resource);
      count = so.count === undefined ? networks.length : v.wholeNumber(`${prop}.count`, so.count, 1, 64);
    }
    if (!resource.includes('/'))
      v.fail(
        `${prop}.resourceName`,
        'must be an extended resource name with a domain prefix, e.g. "rdma/rdma_shared_device_a"',
        resource,
      );
    return { resources: { [resource]: count }, env, capabilities: ['IPC_LOCK'], annotations };
  }
}

/**
 * Validates Multus attachments and records them: the networks annotation, and NCCL_SOCKET_IFNAME
 * so that NCCL's bootstrap and socket fallback stay on eth0, the pod network.
 */
function attachNetworks(
  v: Validator,
  prop: string,
  value: string[] | undefined,
  annotations: Record<string, string>,
  env: k8s.EnvVar[],
): string[] {
  const networks = v.stringArray(`${prop}.networks`, value);
  if (!networks || networks.length === 0)
    v.fail(`${prop}.networks`, 'must name at least one NetworkAttachmentDefinition', value);
  networks.forEach((n, i) => {
    if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(@[A-Za-z0-9_.-]{1,15})?$/.test(n)) {
      v.fail(
        `${prop}.networks[${i}]`,
        'must be a NetworkAttachmentDefinition as Multus reads it: name, namespace/name or name@interface',
        n,
      );
    }
  });
  if (new Set(networks).size !== networks.length)
    v.fail(`${prop}.networks`, 'must not name an attachment twice', networks);
  annotations[MULTUS_NETWORKS_ANNOTATION] = networks.join(',');
  env.push({ name: 'NCCL_SOCKET_IFNAME', value: 'eth0' });
  return networks;
}

/** The `rdma` prop checked and resolved; undefined when not given. */
export function resolveRdma(v: Validator, rdma: Rdma | undefined): RdmaPodParts | undefined {
  if (rdma !== undefined && !(rdma instanceof Rdma))
    v.fail('rdma', 'must be made with Rdma.sharedDevice(), Rdma.sriov({...}) or Rdma.efa(n)', rdma);
  return rdma?._resolve(v, 'rdma');
}

/**
 * Whether a process must run as root to hold this choice's capabilities: Kubernetes sets no ambient
 * capabilities, so an added capability is gone once a non-root process execs
 * (kubernetes/kubernetes#56374), and IPC_LOCK, which memory registration needs beyond the node's
 * memlock limit, reaches the process only as root.
 */
export function rdmaNeedsRoot(rdma: RdmaPodParts | undefined): boolean {
  return (rdma?.capabilities.length ?? 0) > 0;
}

/** Refuses a non-root process with an RDMA choice whose capabilities need root. */
export function requireRootForRdma(v: Validator, rdma: RdmaPodParts | undefined, runAsRoot: boolean): void {
  if (rdmaNeedsRoot(rdma) && !runAsRoot) {
    v.fail(
      'runAsRoot',
      "must be true with Rdma.sharedDevice() or Rdma.sriov(): their IPC_LOCK reaches only a root process (Kubernetes sets no ambient capabilities), and without it verbs memory registration stops at the node's memlock limit and NCCL fails at init",
      false,
    );
  }
}

/**
 * The pod's extended resources with the RDMA choice's device resources added; a resource or a pod
 * annotation the choice sets is refused when the user sets it too.
 */
export function rdmaExtendedResources(
  v: Validator,
  props: { extendedResources?: Record<string, number>; pod?: { annotations?: Record<string, string> } },
  rdma: RdmaPodParts | undefined,
): Record<string, number> {
  const extendedResources = { ...(props.extendedResources ?? {}) };
  if (props.extendedResources !== undefined) v.plainObject('extendedResources', props.extendedResources);
  for (const [resource, count] of Object.entries(rdma?.resources ?? {})) {
    if (Object.prototype.hasOwnProperty.call(extendedResources, resource))
      v.fail(`extendedResources.${resource}`, 'is requested by rdma already', extendedResources[resource]);
    extendedResources[resource] = count;
  }
  for (const key of Object.keys(rdma?.annotations ?? {})) {
    const annotations = props.pod?.annotations;
    if (annotations && Object.prototype.hasOwnProperty.call(annotations, key))
      v.fail(`pod.annotations.${key}`, 'is set by rdma (its networks)', annotations[key]);
  }
  return extendedResources;
}
