import { ApiObject } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { labelSelector, selectorLabels, WorkloadIdentity, workloadLabels } from './labels';
import { KIND, ManifestObject } from './manifest-object';
import { Validator } from '../validation/validate';

/**
 * The label the API server sets on every namespace to its own name (the NamespaceDefaultLabelName
 * feature, GA in 1.22): a namespace selector on it names exactly one namespace, and no user can
 * set it to another value.
 */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** kube-prometheus-stack's conventional namespace (its docs install the chart into `monitoring`). */
export const DEFAULT_MONITORING_NAMESPACE = 'monitoring';

/** Link-local ranges, where clouds serve instance metadata and its credentials (169.254.169.254). */
const LINK_LOCAL = ['169.254.0.0/16', 'fe80::/10'];

/** Pods or addresses a NetworkPolicy lets in (or out). */
export class NetworkPeer {
  /** Every pod of one namespace, by its name (the `kubernetes.io/metadata.name` label the API server sets). */
  static namespace(name: string): NetworkPeer {
    return new NetworkPeer({ kind: 'namespace', namespace: name });
  }

  /** The pods of the workload's own namespace that carry these labels. */
  static pods(labels: Record<string, string>): NetworkPeer {
    return new NetworkPeer({ kind: 'pods', labels });
  }

  /** The pods of another namespace that carry these labels, e.g. a gateway's data plane. */
  static podsInNamespace(namespace: string, labels: Record<string, string>): NetworkPeer {
    return new NetworkPeer({ kind: 'pods', namespace, labels });
  }

  /** Every pod of the workload's own namespace. */
  static sameNamespace(): NetworkPeer {
    return new NetworkPeer({ kind: 'pods', labels: {} });
  }

  /**
   * Addresses outside the cluster's pods, e.g. `10.0.0.0/8` or the API server's endpoint. A block
   * inside a link-local range is refused (cloud metadata); a wider block (`0.0.0.0/0`) gets the
   * link-local range as an exception.
   */
  static cidr(cidr: string): NetworkPeer {
    return new NetworkPeer({ kind: 'cidr', cidr });
  }

  private constructor(private readonly spec: PeerSpec) {}

  /** @internal The peer, validated; `prop` names it in errors. */
  _toPeer(v: Validator, prop: string): k8s.NetworkPolicyPeer {
    const s = this.spec;
    switch (s.kind) {
      case 'namespace':
        return { namespaceSelector: namespaceSelector(v, `${prop} namespace`, s.namespace) };
      case 'pods':
        return {
          podSelector: labelSelector({ ...v.labels(`${prop} labels`, s.labels) }),
          ...(s.namespace !== undefined
            ? { namespaceSelector: namespaceSelector(v, `${prop} namespace`, s.namespace) }
            : {}),
        };
      case 'cidr':
        return { ipBlock: ipBlock(v, prop, s.cidr) };
    }
  }
}

type PeerSpec =
  | { kind: 'namespace'; namespace: string }
  | { kind: 'pods'; labels: Record<string, string>; namespace?: string }
  | { kind: 'cidr'; cidr: string };

function namespaceSelector(v: Validator, prop: string, name: string): k8s.LabelSelector {
  return { matchLabels: { [NAMESPACE_NAME_LABEL]: v.dnsLabel(prop, name) } };
}

/** Options of `NetworkAccess.restricted`. */
export interface RestrictedNetworkOptions {
  /**
   * Who may reach the workload: for a serving construct, its API port (the gateway's data plane, the
   * applications that call it); for a trainer, every port, beside the job's own pods.
   * @default - serving: every pod of the workload's namespace (where the Endpoint Picker and most
   * callers run); trainers: only the job's own pods
   */
  readonly clients?: NetworkPeer[];
  /**
   * The namespace whose pods may scrape a serving construct's metrics (Prometheus). The engines serve
   * `/metrics` on the API port, so this namespace reaches that port.
   * @default 'monitoring' - where kube-prometheus-stack's docs install it
   */
  readonly monitoringNamespace?: string;
}

const RESTRICTED_KEYS: ReadonlyArray<keyof RestrictedNetworkOptions> = ['clients', 'monitoringNamespace'];

/**
 * Who may reach a workload's pods, enforced by a NetworkPolicy (on clusters whose CNI enforces
 * policy: Calico, Cilium, Antrea, a cloud's policy engine; flannel alone does not).
 */
export class NetworkAccess {
  /**
   * A NetworkPolicy admits only the workload's peers: serving pods take their API port from
   * `clients` and metrics from the monitoring namespace; training pods take any port only from
   * their own job's pods (torchrun's store and NCCL have no authentication).
   */
  static restricted(options: RestrictedNetworkOptions = {}): NetworkAccess {
    return new NetworkAccess(true, options);
  }

  /** No NetworkPolicy: every pod of the cluster reaches every port of the workload. */
  static unrestricted(): NetworkAccess {
    return new NetworkAccess(false, {});
  }

  private constructor(
    /** @internal */ readonly _restricted: boolean,
    /** @internal */ readonly _options: RestrictedNetworkOptions,
  ) {}
}

/** What a workload's policy admits. */
export interface WorkloadPolicyInput {
  readonly identity: WorkloadIdentity;
  /**
   * `serving`: clients on `ports`, the monitoring namespace on `metricsPort`; `gang`: the workload's
   * own pods (and clients) on every port.
   */
  readonly profile: 'serving' | 'gang';
  /** The API ports' names (serving): one, or one per data-parallel rank. */
  readonly ports?: readonly string[];
  /** The metrics port's name (serving). */
  readonly metricsPort?: string;
  /**
   * Pods admitted on every port besides the workload's own: the other pods of a multi-node serving
   * group (the ranks' rendezvous and NCCL connections).
   */
  readonly peers?: k8s.NetworkPolicyPeer[];
  /** @default - the identity's instance */
  readonly name?: string;
  /**
   * Whether `clients` are admitted (gang: on every port). False for the workers of a serving group,
   * which serve no clients: their ports (store, NCCL, message queues) have no authentication.
   * @default true
   */
  readonly admitClients?: boolean;
}

/** A workload's NetworkPolicy, and how other constructs of the library add peers to it. */
export interface WorkloadNetworkPolicy {
  readonly object: ApiObject;
  /** Adds a peer to the API rule (serving) or the gang rule (training), e.g. the Endpoint Picker. */
  readonly allowClient: (peer: k8s.NetworkPolicyPeer) => void;
  /** Adds a rule admitting a peer on named ports (the Endpoint Picker on the ranks' KV-events sockets). */
  readonly allowOnPorts: (peer: k8s.NetworkPolicyPeer, ports: readonly string[]) => void;
}

/**
 * The NetworkPolicy of a workload, named after it, selecting its pods by the selector labels the
 * library owns; undefined with `NetworkAccess.unrestricted()`.
 */
export function workloadNetworkPolicy(
  scope: Construct,
  v: Validator,
  access: NetworkAccess | undefined,
  input: WorkloadPolicyInput,
): WorkloadNetworkPolicy | undefined {
  const resolved = access ?? NetworkAccess.restricted();
  if (!(resolved instanceof NetworkAccess))
    v.fail('networkPolicy', 'must be made with NetworkAccess.restricted() or NetworkAccess.unrestricted()', access);
  if (!resolved._restricted) return undefined;
  const o = resolved._options;
  v.knownProps('networkPolicy', o, RESTRICTED_KEYS);
  const clients = v
    .array('networkPolicy.clients', o.clients)
    .map((p, i) => peerOf(v, `networkPolicy.clients[${i}]`, p));
  const selector = selectorLabels(input.identity);
  const from: k8s.NetworkPolicyPeer[] = [];
  const ingress: k8s.NetworkPolicyIngressRule[] = [];
  if (input.profile === 'gang') {
    // Every port: torchrun's store listens on MASTER_PORT, NCCL and Gloo on ephemeral ports.
    const admitted = input.admitClients === false ? [] : clients;
    from.push({ podSelector: labelSelector(selector) }, ...(input.peers ?? []), ...admitted);
    ingress.push({ from });
  } else {
    if (input.peers) ingress.push({ from: [...input.peers] });
    from.push(...(o.clients === undefined ? [{ podSelector: labelSelector({}) }] : clients));
    const apiPorts = input.ports!.map(port => ({ port: k8s.IntOrString.fromString(port), protocol: 'TCP' }));
    ingress.push({ from, ports: apiPorts });
    const monitoring = v.dnsLabel(
      'networkPolicy.monitoringNamespace',
      o.monitoringNamespace ?? DEFAULT_MONITORING_NAMESPACE,
    );
    ingress.push({
      from: [{ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: monitoring } } }],
      ports: input.metricsPort
        ? [{ port: k8s.IntOrString.fromString(input.metricsPort), protocol: 'TCP' }]
        : [...apiPorts],
    });
  }
  const object = new ManifestObject(scope, 'NetworkPolicy', KIND.NetworkPolicy, {
    metadata: { name: input.name ?? input.identity.instance, labels: workloadLabels(input.identity) },
    spec: { podSelector: labelSelector(selector), policyTypes: ['Ingress'], ingress },
  });
  return {
    object,
    allowOnPorts: (peer, ports) => {
      ingress.push({ from: [peer], ports: ports.map(p => ({ port: k8s.IntOrString.fromString(p), protocol: 'TCP' })) });
    },
    allowClient: peer => {
      if (!from.some(p => JSON.stringify(p) === JSON.stringify(peer))) from.push(peer);
    },
  };
}

/**
 * Peers as the API takes them, validated; undefined when not given. An empty list is refused: it
 * would mean "nothing" where the user meant a choice.
 */
export function resolvePeers(
  v: Validator,
  prop: string,
  peers: NetworkPeer[] | undefined,
): k8s.NetworkPolicyPeer[] | undefined {
  if (peers === undefined) return undefined;
  const resolved = v.array(prop, peers).map((p, i) => peerOf(v, `${prop}[${i}]`, p));
  if (resolved.length === 0) v.fail(prop, 'must name at least one peer (omit it for the default)', peers);
  return resolved;
}

/**
 * An egress NetworkPolicy for pods that need few destinations (a rotator's cloud API and the API
 * server): those, and DNS on port 53 anywhere (node-local DNS caches listen on link-local addresses,
 * so no selector of CoreDNS pods would find them). Made only when destinations are named: a policy
 * with DNS only would cut the pod off from everything it must reach.
 */
export function egressNetworkPolicy(
  scope: Construct,
  to: k8s.NetworkPolicyPeer[],
  o: { name: string; labels: Record<string, string> },
): ApiObject {
  const dns: k8s.NetworkPolicyPort[] = ['UDP', 'TCP'].map(protocol => ({
    port: k8s.IntOrString.fromNumber(53),
    protocol,
  }));
  return new ManifestObject(scope, 'EgressPolicy', KIND.NetworkPolicy, {
    metadata: { name: `${o.name}-egress`, labels: o.labels },
    spec: { podSelector: labelSelector(o.labels), policyTypes: ['Egress'], egress: [{ to }, { ports: dns }] },
  });
}

function peerOf(v: Validator, prop: string, peer: NetworkPeer): k8s.NetworkPolicyPeer {
  if (!(peer instanceof NetworkPeer))
    v.fail(
      prop,
      'must be made with NetworkPeer.namespace(), pods(), podsInNamespace(), sameNamespace() or cidr()',
      peer,
    );
  return peer._toPeer(v, prop);
}

/** An ipBlock: a canonical CIDR (the API server refuses host bits), never inside a link-local range. */
function ipBlock(v: Validator, prop: string, cidr: string): k8s.IpBlock {
  const block = parseCidr(cidr);
  if (!block)
    v.fail(prop, 'must be a CIDR such as "10.0.0.0/8" or "fd00::/8", without host bits set after the prefix', cidr);
  const except: string[] = [];
  for (const ll of LINK_LOCAL.map(c => parseCidr(c)!)) {
    if (ll.bits !== block.bits) continue;
    if (block.prefix >= ll.prefix && contains(ll, block))
      v.fail(prop, `must not be a link-local range (${ll.text}), where clouds serve instance metadata`, cidr);
    // A wider block keeps the metadata address out.
    if (block.prefix < ll.prefix && contains(block, ll)) except.push(ll.text);
  }
  return { cidr, ...(except.length ? { except } : {}) };
}

interface Cidr {
  readonly text: string;
  readonly bits: 32 | 128;
  readonly address: bigint;
  readonly prefix: number;
}

function contains(outer: Cidr, inner: Cidr): boolean {
  const shift = BigInt(outer.bits - outer.prefix);
  return outer.address >> shift === inner.address >> shift;
}

function parseCidr(text: string): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const prefix = Number(m[2]);
  const v4 = parseIpv4(m[1]);
  const address = v4 ?? parseIpv6(m[1]);
  const bits = v4 !== undefined ? 32 : 128;
  if (address === undefined || prefix > bits) return undefined;
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  if ((address & hostMask) !== 0n) return undefined;
  return { text, bits, address, prefix };
}

function parseIpv4(s: string): bigint | undefined {
  const parts = s.split('.');
  if (parts.length !== 4 || !parts.every(p => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((a, p) => (a << 8n) | BigInt(p), 0n);
}

function parseIpv6(s: string): bigint | undefined {
  if (!/^[0-9a-fA-F:]+$/.test(s) || s.split('::').length > 2) return undefined;
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const groups = (x: string) => (x === '' ? [] : x.split(':'));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const missing = 8 - h.length - t.length;
  if ((tail === undefined && missing !== 0) || (tail !== undefined && missing < 1)) return undefined;
  const all = [...h, ...Array(tail === undefined ? 0 : missing).fill('0'), ...t];
  if (!all.every(g => /^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return all.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n);
}
