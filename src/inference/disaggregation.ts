import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Rdma } from '../common/rdma';
import { Validator } from '../validation/validate';
import { AutoscalingOptions } from './autoscaling';

/**
 * The pod label llm-d-router's `prefill-filter` and `decode-filter` read (pkg/epp/framework/plugins/scheduling/filter/
 * bylabel/roles.go at v0.10.0): `prefill` pods take the prefill leg, `decode` pods the decode leg. The decode filter
 * also keeps pods without the label, so a pool may hold disaggregated and whole-request services.
 */
export const ROLE_LABEL = 'llm-d.ai/role';

/** The role of one pool of a disaggregated service. */
export type PoolRole = 'prefill' | 'decode';

/** How KV blocks move from the prefill pool to the decode pool. */
export enum KvTransfer {
  /** NIXL (UCX underneath: RDMA where the pod has it, else TCP). vLLM's NixlConnector, SGLang's `nixl` backend. */
  NIXL = 'nixl',
  /** Mooncake's transfer engine over RDMA (SGLang's default backend). */
  MOONCAKE = 'mooncake',
}

/** Options of a disaggregated service: its prefill pool, and when the picker disaggregates. */
export interface DisaggregationOptions {
  /**
   * Replicas of the prefill pool. Not with `prefillAutoscaling`.
   * @default 1
   */
  readonly prefillReplicas?: number;
  /**
   * GPUs per prefill replica: its tensor-parallel size, which the engine requires to divide the decode pool's or be
   * a multiple of it.
   * @default - the decode pool's gpusPerReplica
   */
  readonly prefillGpusPerReplica?: number;
  /**
   * Nodes per prefill replica (a LeaderWorkerSet group, as `nodes`).
   * @default 1
   */
  readonly prefillNodes?: number;
  /**
   * Autoscaling of the prefill pool on its own requests in flight (its own HPA or ScaledObject). At least one
   * replica: a pool at zero leaves the picker no prefill endpoint.
   * @default - a fixed prefillReplicas
   */
  readonly prefillAutoscaling?: AutoscalingOptions;
  /**
   * The uncached prompt tokens from which a request is disaggregated (llm-d-router's `prefix-based-pd-decider`
   * `nonCachedTokens`); a shorter uncached suffix is prefilled on the decode pod, where an extra hop and a KV
   * transfer would cost more than they save.
   * @default 512 - the decider's documented example (llm-d-router v0.10.0
   * pkg/epp/framework/plugins/scheduling/profilehandler/disagg/README.md)
   */
  readonly disaggregateFromTokens?: number;
  /**
   * RDMA for the KV transfer on both pools (`Rdma.sharedDevice()`, `Rdma.sriov()`, `Rdma.efa()`). NIXL without it
   * moves blocks over TCP through the pod network; Mooncake needs it.
   * @default - none: NIXL over TCP
   */
  readonly rdma?: Rdma;
  /**
   * The decode pods' routing sidecar image.
   * @default - llm-d-router v0.10.0's `ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0`
   */
  readonly sidecarImage?: string;
}

/**
 * Disaggregated prefill and decode: the service's own pods decode (behind llm-d-router's routing sidecar, which
 * clients and the gateway reach), and a second pool of the same model prefills, its KV blocks moved to the decode pod
 * by the transfer named here. An `InferenceGateway` routing to the service sends a long uncached prompt's prefill
 * to the prefill pool. See docs/serving.md.
 */
export class Disaggregation {
  /** KV blocks moved by NIXL (vLLM's NixlConnector, SGLang's `nixl` backend): RDMA with `rdma`, else TCP. */
  static nixl(options: DisaggregationOptions = {}): Disaggregation {
    return new Disaggregation(KvTransfer.NIXL, options);
  }

  /** KV blocks moved by Mooncake's transfer engine over RDMA (SGLang only); needs `rdma`. */
  static mooncake(options: DisaggregationOptions): Disaggregation {
    return new Disaggregation(KvTransfer.MOONCAKE, options);
  }

  private constructor(
    /** The transfer. */
    readonly transfer: KvTransfer,
    /** The options. */
    readonly options: DisaggregationOptions,
  ) {}
}

/** What an engine does in one transfer: its flags per role, variables and listening ports. */
export interface TransferFacts {
  /** The engine's flags for a pool of this role. */
  args(role: PoolRole): string[];
  /** Variables every pod of both pools gets. */
  readonly env: k8s.EnvVar[];
  /** Ports the pods listen on for the transfer's handshake (declared, so a NetworkPolicy can name them). */
  readonly ports: ReadonlyArray<{ readonly name: string; readonly port: number; readonly role?: PoolRole }>;
  /** The routing sidecar's `--kv-connector` (pkg/sidecar/constants/constants.go). */
  readonly sidecarConnector: string;
  /** The sidecar's variables. */
  readonly sidecarEnv: k8s.EnvVar[];
  /** Why the transfer needs RDMA, when it does. */
  readonly needsRdma?: string;
  /** Why a decode pool cannot run as groups (`nodes` > 1), when it cannot. */
  readonly decodeGroups?: string;
  /**
   * Why the decode engine cannot serve a request whole (one no prefill pod was paired with), when it cannot: every
   * request must then reach it through the Endpoint Picker, which disaggregates all of them.
   */
  readonly decodeNeedsPrefill?: string;
  /** Why these tensor-parallel sizes cannot exchange blocks, or undefined when they can. */
  tensorParallel(prefill: number, decode: number): string | undefined;
}

/** How an engine serves disaggregated: the transfers it speaks, and the flags the construct then owns. */
export interface DisaggFacts {
  readonly transfers: Partial<Record<KvTransfer, TransferFacts>>;
  /** Flags `extraArgs` must not set on a disaggregated service, and why. */
  readonly ownedFlags: readonly string[];
  readonly source: string;
}

/** A disaggregation, checked against the engine. */
export interface ResolvedDisaggregation {
  readonly transfer: KvTransfer;
  readonly facts: TransferFacts;
  readonly source: string;
  readonly options: DisaggregationOptions;
  /** The decider's threshold; undefined when every request is disaggregated (`decodeNeedsPrefill`). */
  readonly nonCachedTokens?: number;
  readonly sidecarImage: string;
}

/** The decider's documented example threshold. */
export const DEFAULT_DISAGGREGATE_FROM_TOKENS = 512;

const OPTION_KEYS: ReadonlyArray<keyof DisaggregationOptions> = [
  'prefillReplicas',
  'prefillGpusPerReplica',
  'prefillNodes',
  'prefillAutoscaling',
  'disaggregateFromTokens',
  'rdma',
  'sidecarImage',
];

/** `disaggregation`, checked against what the engine can do. */
export function resolveDisaggregation(
  v: Validator,
  given: Disaggregation | undefined,
  o: { facts: DisaggFacts | string; sidecarImage: string },
): ResolvedDisaggregation | undefined {
  if (given === undefined) return undefined;
  if (!(given instanceof Disaggregation))
    v.fail('disaggregation', 'must be made with Disaggregation.nixl() or Disaggregation.mooncake()', given);
  if (typeof o.facts === 'string') v.fail('disaggregation', o.facts, given.transfer);
  v.knownProps('disaggregation', given.options, OPTION_KEYS);
  const facts = o.facts.transfers[given.transfer];
  if (facts === undefined)
    v.fail(
      'disaggregation',
      `must use a transfer the engine speaks (${Object.keys(o.facts.transfers).join(', ')}; ${o.facts.source})`,
      given.transfer,
    );
  if (facts.needsRdma && given.options.rdma === undefined)
    v.fail('disaggregation.rdma', `must be given with ${given.transfer}: ${facts.needsRdma}`, undefined);
  if (facts.decodeNeedsPrefill && given.options.disaggregateFromTokens !== undefined)
    v.fail(
      'disaggregation.disaggregateFromTokens',
      `must be left out: ${facts.decodeNeedsPrefill}, so the picker disaggregates every request`,
      given.options.disaggregateFromTokens,
    );
  const nonCachedTokens = facts.decodeNeedsPrefill
    ? undefined
    : v.wholeNumber(
        'disaggregation.disaggregateFromTokens',
        given.options.disaggregateFromTokens ?? DEFAULT_DISAGGREGATE_FROM_TOKENS,
        1,
      );
  return {
    transfer: given.transfer,
    facts,
    source: o.facts.source,
    options: given.options,
    nonCachedTokens,
    sidecarImage: v.image('disaggregation.sidecarImage', given.options.sidecarImage ?? o.sidecarImage),
  };
}
