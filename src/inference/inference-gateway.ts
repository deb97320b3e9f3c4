import { ApiObject, Chart, Duration, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_NAME, LABEL_WORKLOAD, labelSelector, labelSet } from '../common/labels';
import { DEPLOYMENT } from '../common/deployment';
import { customKind, KIND, ManifestObject } from '../common/manifest-object';
import { NAMESPACE_NAME_LABEL, NetworkPeer, resolvePeers } from '../common/network-policy';
import { containerSecurityContext, podSecurityContext, ProcessIdentity } from '../common/security';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../validation/validate';
import { PER_POD_ENDPOINTS_LABEL, scrapeIntervalOf, serviceMonitor } from './service-monitor';
import { KEDA_POLLING_SECONDS } from './autoscaling';
import {
  endpointPickerArgs,
  endpointPickerConfig,
  endpointPickerRules,
  EPP_DEFAULT_IMAGE,
  EPP_ENGINE_EXTRAS,
  EPP_GRPC_PORT,
  EPP_HEALTH_PORT,
  EPP_METRICS_PORT,
  EPP_DRAIN_SECONDS,
  EPP_UID,
  EppDisaggregation,
  EppEngineMetrics,
  EppPrecisePrefix,
  EppFlowControl,
  FLOW_CONTROL_DEFAULT_TTL_SECONDS,
  LLMD_API_VERSION,
} from './endpoint-picker';
import type { InferenceService } from './inference-service';
import { SIDECAR_RULES } from './disagg-sidecar';
import { SglangInferenceService } from './sglang-inference-service';
import { TgiInferenceService } from './tgi-inference-service';
import { VllmInferenceService } from './vllm-inference-service';

export { EPP_DEFAULT_IMAGE } from './endpoint-picker';

/** A custom resource's props: its API JSON. */
type CustomResource = { readonly metadata: k8s.ObjectMeta; readonly spec: Record<string, unknown> };
const INFERENCE_POOL = customKind<CustomResource>('inference.networking.k8s.io/v1', 'InferencePool');
const INFERENCE_OBJECTIVE = customKind<CustomResource>(LLMD_API_VERSION, 'InferenceObjective');
const INFERENCE_MODEL_REWRITE = customKind<CustomResource>(LLMD_API_VERSION, 'InferenceModelRewrite');
const HTTP_ROUTE = customKind<CustomResource>('gateway.networking.k8s.io/v1', 'HTTPRoute');

/** The component label of the serving pods (inference-service.ts): with the name, what every version shares. */
const SERVING_COMPONENT = 'inference';
const EPP_COMPONENT = 'endpoint-picker';
/** llm-d-router config/charts/llm-d-router-gateway/values.yaml `httpRoute.requestTimeout`: long generations. */
const DEFAULT_REQUEST_TIMEOUT_SECONDS = 300;
/**
 * The picker's size grows with the endpoints it watches: it scrapes every pod's metrics every 50 ms
 * (`--refresh-metrics-interval`), scores every candidate pod per request, and keeps a prefix-cache index per
 * pod. GIE v1.5.0's chart asked for 4 CPU and 8 GiB, sized by that project's scale tests (p90 scheduling latency
 * within 100 ms at high QPS over many pods): that is the ceiling here, reached at 32 endpoints. llm-d-router
 * v0.10.0's chart (config/charts/routerlib/values.yaml) asks 8 CPU and 8 GiB with a 16 GiB limit for any pool;
 * give `endpointPickerResources` to match it. Below the ceiling: half a core and 1 GiB per 4 endpoints, at least
 * 0.5 CPU and 1 GiB (one 8B pool of a few pods). The memory limit is twice the request; no CPU limit, so
 * scheduling bursts are not throttled.
 */
export const EPP_SIZING = { endpointsPerStep: 4, cpuPerStep: 0.5, memoryGiBPerStep: 1, maxCpu: 4, maxMemoryGiB: 8 };

/** CPU and memory of the Endpoint Picker, from the most endpoints its pool holds. */
export function endpointPickerSize(endpoints: number): { cpu: number; memoryGiB: number } {
  const steps = Math.max(1, Math.ceil(endpoints / EPP_SIZING.endpointsPerStep));
  return {
    cpu: Math.min(EPP_SIZING.maxCpu, steps * EPP_SIZING.cpuPerStep),
    memoryGiB: Math.min(EPP_SIZING.maxMemoryGiB, steps * EPP_SIZING.memoryGiBPerStep),
  };
}

/** CPU and memory of the Endpoint Picker. */
export interface EndpointPickerResources {
  /**
   * CPU cores requested (not limited: scheduling bursts are not throttled).
   * @default - from the pool's endpoints
   */
  readonly cpu?: number;
  /**
   * Memory requested; the limit is twice it.
   * @default - from the pool's endpoints
   */
  readonly memory?: Size;
}

/** What the gateway does when the Endpoint Picker does not answer. */
export enum FailureMode {
  /** Route to any ready pod of the pool: requests keep flowing, without load-aware picking, priorities or rewrites. */
  FAIL_OPEN = 'FailOpen',
  /** Reject the request: nothing bypasses the picker (priorities, rewrites), at the cost of availability. */
  FAIL_CLOSE = 'FailClose',
}

/** The Gateway an HTTPRoute attaches to. */
export interface GatewayRef {
  /** The Gateway's name. */
  readonly name: string;
  /**
   * Its namespace; a Gateway in another namespace must allow routes from this one (`allowedRoutes`).
   * @default - the route's namespace
   */
  readonly namespace?: string;
  /**
   * The listener to attach to.
   * @default - every listener that allows the route
   */
  readonly sectionName?: string;
}

/**
 * An InferenceObjective: a priority that requests naming it (header `x-llm-d-inference-objective`) get.
 */
export interface InferenceObjectiveSpec {
  /** The objective's name, a DNS-1123 subdomain; clients send it in the `x-llm-d-inference-objective` header. */
  readonly name: string;
  /**
   * A request's priority; requests without an objective have 0. With `flowControl`, queued requests leave the
   * picker's queue in priority order, higher first. Without it (the picker's default admission,
   * `LegacyAdmissionController` in llm-d-router v0.10.0), a negative priority makes the request sheddable: refused
   * (429) while the pool is saturated; zero and positive priorities are admitted alike.
   */
  readonly priority: number;
}

/** One weighted target of a model rewrite. */
export interface ModelRewriteTarget {
  /** The model (or LoRA adapter) name the request is rewritten to; the pool's servers must serve it. */
  readonly model: string;
  /**
   * A relative weight among the rule's targets (1 to 1,000,000).
   * @default 1
   */
  readonly weight?: number;
}

/** Requests naming `model` are rewritten to one of `targets`, by weight: a canary between model names. */
export interface ModelRewriteRule {
  /** The model name clients send in the OpenAI `model` field. */
  readonly model: string;
  readonly targets: ModelRewriteTarget[];
}

/** Props of `InferenceGateway`. */
export interface InferenceGatewayProps {
  /** The InferencePool's and HTTPRoute's name, a DNS-1035 label; the Endpoint Picker's objects are `<name>-epp`. */
  readonly name: string;
  /**
   * The serving constructs behind the pool: every version and engine of one model (one `name`), vLLM or SGLang,
   * all listening on one port. The pool selects the pods of every version of that name, in this chart too.
   */
  readonly services: InferenceService[];
  /** The Gateway the HTTPRoute attaches to (made by the cluster's gateway implementation, not here). */
  readonly gateway: GatewayRef;
  /**
   * Hostnames the route answers for.
   * @default - every hostname of the Gateway's listener
   */
  readonly hostnames?: string[];
  /**
   * The HTTPRoute's request timeout (`timeouts.request`).
   * @default Duration.seconds(300) - the router chart's default, long generations included; with `flowControl`, the
   * queue's TTL plus that, since a request may wait its TTL before it generates
   */
  readonly requestTimeout?: Duration;
  /**
   * @default FailureMode.FAIL_OPEN - the chart's default: a restarting picker (its Deployment is recreated on
   * update) does not drop traffic; FailureMode.FAIL_CLOSE for a disaggregated SGLang service, whose decode pods fail
   * a request no prefill pod was paired with (FAIL_OPEN is then refused)
   */
  readonly failureMode?: FailureMode;
  /**
   * Endpoint Picker replicas. Above 1 they elect a leader (`--ha-enable-leader-election`, a Lease): only the leader
   * is Ready and picks, the others stand by.
   * @default 1 - the project's recommendation: one active picker keeps its prefix-cache state whole
   */
  readonly endpointPickerReplicas?: number;
  /** @default EPP_DEFAULT_IMAGE - the Endpoint Picker of llm-d-router v0.10.0 */
  readonly endpointPickerImage?: string;
  /**
   * CPU (request) and memory (request; the limit is twice it) of each Endpoint Picker replica.
   * @default - from the most endpoints the pool holds (the services' `maxReplicas`): 0.5 CPU and 1 GiB per 4
   * endpoints, at least 0.5 CPU and 1 GiB, at most the upstream chart's 4 CPU and 8 GiB (reached at 32)
   */
  readonly endpointPickerResources?: EndpointPickerResources;
  /**
   * InferenceObjectives on the pool: priorities clients ask for by header.
   * @default - none
   */
  readonly objectives?: InferenceObjectiveSpec[];
  /**
   * Rewrites of the requested model name, weighted (an InferenceModelRewrite): a canary between base models or
   * adapters the pool serves.
   * @default - none
   */
  readonly modelRewrites?: ModelRewriteRule[];
  /**
   * Where the Gateway's data plane (its proxies) runs: each service's NetworkPolicy admits these peers on
   * the API port, since the proxies send requests straight to the pods the picker chose. Name them where
   * the proxies run elsewhere: Envoy Gateway's in its controller's namespace (`envoy-gateway-system`)
   * unless its Gateway-namespace mode is on; a cloud's managed proxies (GKE) from the proxy-only subnet
   * (`NetworkPeer.cidr()`).
   * @default - every pod of the Gateway's namespace, where Istio, kgateway and NGINX Gateway Fabric deploy
   * a Gateway's proxies; without it a restricted NetworkPolicy (the serving default) would refuse the gateway
   */
  readonly gatewayPeers?: NetworkPeer[];
  /**
   * A prometheus-operator ServiceMonitor for the Endpoint Picker's metrics (port 9090, `llm_d_epp_*`), which
   * `InferenceGatewayMonitoring` reads. The picker's pods carry `prometheus.io/scrape` annotations either way.
   * @default false - the ServiceMonitor CRD may not be installed
   */
  readonly serviceMonitor?: boolean;
  /**
   * Extra labels of the ServiceMonitor, which the Prometheus `serviceMonitorSelector` matches.
   * @default - none
   */
  readonly serviceMonitorLabels?: Record<string, string>;
  /**
   * The ServiceMonitor's scrape interval.
   * @default Duration.seconds(30)
   */
  readonly serviceMonitorInterval?: Duration;
  /**
   * How the picker scores pods by the prompt's prefix they have cached. PRECISE subscribes to the vLLM pods' KV-cache
   * events (the gateway turns them on, with the render endpoints its tokenizer calls: a pod template change), so it
   * knows the blocks each pod really holds, in GPU memory and in a `KvCacheOffload.cpu()` tier (LMCache's tiers report
   * nothing: their events stay off).
   * @default - PrefixCacheScoring.PRECISE where a service offloads its KV cache (`KvCacheOffload.cpu()`) and every
   * service can publish its events (vLLM, one model name, an endpoint per rank): the approximate record cannot see the
   * prefixes a pod holds in host memory, so it would send their requests elsewhere. Otherwise
   * PrefixCacheScoring.APPROXIMATE, the picker's own record of the prefixes it routed, which needs nothing from the
   * pods
   */
  readonly prefixCacheScoring?: PrefixCacheScoring;
  /**
   * The picker's flow control: while the pool is saturated, requests wait in the picker's queue and leave it in
   * their objective's priority order (higher first), instead of all going to the servers at once. Without it, the
   * picker's default admission only sheds requests of a negative priority while saturated.
   * @default - off, as in the picker
   */
  readonly flowControl?: FlowControlOptions;
}

/** The Endpoint Picker's flow control. */
/** How the Endpoint Picker learns which prefixes each pod has cached. */
export enum PrefixCacheScoring {
  /** From the requests it routed (llm-d-router's approx-prefix-cache-producer): no signal from the pods. */
  APPROXIMATE = 'approximate',
  /**
   * From the pods' KV-cache events (vLLM only): evictions and blocks moved between pools are seen, not guessed.
   * Every pod publishes on port 5557 (with an endpoint per rank, each rank on 5557 + its rank), which the pods'
   * NetworkPolicy opens to the picker.
   */
  PRECISE = 'precise',
}

export interface FlowControlOptions {
  /**
   * How long a request may wait in the queue; then it is refused, 429 with `x-llm-d-request-dropped-reason:
   * rejected-ttl-expired` (503 and `rejected-no-endpoints` while the pool has no endpoint). Shorter than
   * `requestTimeout`, so the client sees the picker's answer, not the gateway's timeout; longer than the cold start
   * of a service that scales to zero.
   * @default Duration.seconds(60) - the picker's default; with a service that scales to zero, its cold start (the
   * picker's scrape interval + KEDA's 30 s poll + the replica's capacity delay) + 300 s for scheduling, a node
   * scale-up and the image pull (`PLACEMENT_ALLOWANCE_SECONDS`)
   */
  readonly requestTtl?: Duration;
}

const KEYS: ReadonlyArray<keyof InferenceGatewayProps> = [
  'name',
  'services',
  'gateway',
  'hostnames',
  'requestTimeout',
  'failureMode',
  'endpointPickerReplicas',
  'endpointPickerImage',
  'endpointPickerResources',
  'objectives',
  'modelRewrites',
  'gatewayPeers',
  'serviceMonitor',
  'serviceMonitorLabels',
  'serviceMonitorInterval',
  'flowControl',
  'prefixCacheScoring',
];

/**
 * Inference-aware routing for one model's serving constructs: an InferencePool (Gateway API Inference
 * Extension, `inference.networking.k8s.io/v1`) that selects the serving pods of every version and engine of the
 * model, the Endpoint Picker of llm-d-router v0.10.0 that picks a pod per request from what the servers report
 * (queue, KV-cache use, prefix-cache affinity, loaded adapters) with its Service, account and namespaced
 * read-only Role, an HTTPRoute with the pool as its backend under a Gateway the cluster provides, and optional
 * InferenceObjectives (priorities) and an InferenceModelRewrite (weighted canaries between model or adapter
 * names), both `llm-d.ai/v1alpha2`. The picker runs at the restricted Pod Security level.
 *
 * Every vLLM and SGLang pod carries the label `llm-d.ai/engine-type` (`vllm` or `sglang`), by which the picker
 * reads its metrics by its engine's names, and the annotation `llm-d.ai/active-ports` naming its one endpoint
 * port; both are set with or without a gateway, so adding one does not roll the serving pods. TGI is refused: it
 * exports no KV-cache utilization gauge, which the picker's model server protocol requires, and the picker has no
 * metric mapping for it.
 */
export class InferenceGateway extends Construct {
  /** The InferencePool's name. */
  readonly poolName: string;
  /** The Endpoint Picker's Deployment, Service, account and Role name. */
  readonly endpointPickerName: string;
  /** The labels the pool selects: the serving pods of every version and engine of the model. */
  readonly poolSelector: Readonly<Record<string, string>>;
  readonly inferencePool: ApiObject;
  readonly endpointPicker: ApiObject;
  readonly endpointPickerService: ApiObject;
  readonly serviceAccount: ApiObject;
  readonly role: ApiObject;
  readonly roleBinding: ApiObject;
  /** The Role of disaggregated services' routing sidecars: read the pool and its pods (SSRF protection). */
  readonly routingSidecarRole?: ApiObject;
  readonly routingSidecarRoleBinding?: ApiObject;
  readonly httpRoute: ApiObject;
  readonly objectives: ApiObject[];
  readonly modelRewrite?: ApiObject;
  /** The picker's ServiceMonitor, when `serviceMonitor` is set. */
  readonly serviceMonitor?: ApiObject;
  /** How often the picker's metrics are scraped (the ServiceMonitor's interval), in seconds. */
  readonly scrapeIntervalSeconds: number;
  /** What the gateway does when the picker does not answer. */
  readonly failureMode: FailureMode;
  /** The picker's termination grace period: its drain plus the longest request it may hold, in seconds. */
  readonly endpointPickerGracePeriodSeconds: number;
  /** The longest time a serving replica of the pool takes to be capacity (the services' `capacitySeconds`). */
  readonly endpointCapacitySeconds: number;
  /** How long a request may wait in the picker's queue, in seconds, with `flowControl`. */
  readonly flowControlRequestTtlSeconds?: number;
  /** Whether a service of the pool scales to zero (its `autoscaling.minReplicas` is 0). */
  readonly scalesToZero: boolean;

  constructor(scope: Construct, id: string, props: InferenceGatewayProps) {
    super(scope, id);
    const v = new Validator('InferenceGateway', id);
    const r = resolveGateway(v, this, props);
    this.poolName = r.name;
    this.endpointPickerName = r.epp;
    this.poolSelector = r.selector;
    this.failureMode = r.failureMode;
    this.endpointPickerGracePeriodSeconds = r.gracePeriodSeconds;
    this.endpointCapacitySeconds = Math.max(...r.members.map(m => m.service.capacitySeconds));
    this.flowControlRequestTtlSeconds = r.flowControl?.requestTtlSeconds;
    this.scalesToZero = r.members.some(m => m.scalesToZero);

    const labels = labelSet({ name: r.name, instance: r.name, component: 'inference-pool' }).labels;
    const epp = labelSet({ name: r.epp, instance: r.epp, component: EPP_COMPONENT });
    // The picker scrapes every endpoint's metrics on its target port: each service's NetworkPolicy admits it.
    // The gateway's proxies send each request to the pod the picker chose, on the API port.
    for (const { service } of r.members) {
      service._allowClient?.({ podSelector: { matchLabels: epp.selector } });
      for (const peer of r.gatewayPeers) service._allowClient?.(peer);
    }
    if (r.precise)
      r.members.forEach(({ service }, i) => {
        const refused = service._publishKvEvents({ podSelector: { matchLabels: epp.selector } });
        if (refused) v.fail(`services[${i}]`, refused, service.node.path);
      });
    this.inferencePool = new ManifestObject(this, 'Pool', INFERENCE_POOL, {
      metadata: { name: r.name, labels },
      spec: {
        selector: { matchLabels: r.selector },
        targetPorts: r.targetPorts.map(number => ({ number })),
        endpointPickerRef: { name: r.epp, port: { number: EPP_GRPC_PORT }, failureMode: r.failureMode },
      },
    });
    this.serviceAccount = new ManifestObject(this, 'Account', KIND.ServiceAccount, {
      metadata: { name: r.epp, labels: epp.labels },
      // The token is mounted by the pod that needs it, not by every pod that names the account.
      automountServiceAccountToken: false,
    });
    this.role = new ManifestObject(this, 'Role', KIND.Role, {
      metadata: { name: r.epp, labels: epp.labels },
      rules: endpointPickerRules(r.leaderElection),
    });
    this.roleBinding = new ManifestObject(this, 'RoleBinding', KIND.RoleBinding, {
      metadata: { name: r.epp, labels: epp.labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: r.epp },
      subjects: [{ kind: 'ServiceAccount', name: r.epp }],
    });
    // The routing sidecars of disaggregated services read this pool and its pods (SSRF protection).
    const sidecars = [...new Set(r.members.flatMap(m => m.service.sidecarServiceAccountName ?? []))];
    if (sidecars.length > 0) {
      const sidecarRole = `${r.name}-routing-sidecar`;
      this.routingSidecarRole = new ManifestObject(this, 'SidecarRole', KIND.Role, {
        metadata: { name: sidecarRole, labels },
        rules: SIDECAR_RULES,
      });
      this.routingSidecarRoleBinding = new ManifestObject(this, 'SidecarRoleBinding', KIND.RoleBinding, {
        metadata: { name: sidecarRole, labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sidecarRole },
        subjects: sidecars.map(name => ({ kind: 'ServiceAccount', name })),
      });
    }
    const monitor = serviceMonitor(this, v, {
      ...props,
      autoscaled: false,
      name: r.epp,
      labels: epp.labels,
      portNames: ['http-metrics'],
      metricsPath: '/metrics',
    });
    this.serviceMonitor = monitor.object;
    this.scrapeIntervalSeconds = monitor.interval;
    this.endpointPicker = new ManifestObject(this, 'EndpointPicker', DEPLOYMENT, {
      metadata: { name: r.epp, labels: epp.labels },
      spec: {
        replicas: r.replicas,
        // The chart's choice: the old picker stops before the new one starts, so a leader never blocks its own
        // replacement and two pickers never split one pool's prefix-cache state.
        strategy: { type: 'Recreate' },
        selector: { matchLabels: epp.selector },
        template: {
          metadata: {
            labels: epp.labels,
            // One scrape path: beside a ServiceMonitor, a Prometheus that honours these counts each series twice.
            ...(monitor.object
              ? {}
              : {
                  annotations: {
                    'prometheus.io/scrape': 'true',
                    'prometheus.io/port': String(EPP_METRICS_PORT),
                    'prometheus.io/path': '/metrics',
                  },
                }),
          },
          spec: eppPodSpec(r),
        },
      },
    });
    this.endpointPickerService = new ManifestObject(this, 'EndpointPickerService', KIND.Service, {
      // The labels a ServiceMonitor selects by: the library's own, which GitOps tools leave alone.
      metadata: { name: r.epp, labels: { ...epp.labels, [PER_POD_ENDPOINTS_LABEL]: 'true', [LABEL_WORKLOAD]: r.epp } },
      spec: {
        type: 'ClusterIP',
        selector: epp.selector,
        ports: [
          {
            name: 'grpc-ext-proc',
            port: EPP_GRPC_PORT,
            targetPort: k8s.IntOrString.fromString('grpc'),
            protocol: 'TCP',
          },
          {
            name: 'http-metrics',
            port: EPP_METRICS_PORT,
            targetPort: k8s.IntOrString.fromString('metrics'),
            protocol: 'TCP',
          },
        ],
      },
    });
    const poolRef = { group: 'inference.networking.k8s.io', kind: 'InferencePool', name: r.name };
    this.httpRoute = new ManifestObject(this, 'Route', HTTP_ROUTE, {
      metadata: { name: r.name, labels },
      spec: {
        parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', ...r.gateway }],
        ...(r.hostnames.length > 0 ? { hostnames: r.hostnames } : {}),
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/' } }],
            backendRefs: [poolRef],
            timeouts: { request: `${r.requestTimeoutSeconds}s` },
          },
        ],
      },
    });
    this.objectives = r.objectives.map(
      o =>
        new ManifestObject(this, `Objective-${o.name}`, INFERENCE_OBJECTIVE, {
          metadata: { name: o.name, labels },
          spec: { priority: o.priority, poolRef },
        }),
    );
    if (r.rewrites.length > 0) {
      this.modelRewrite = new ManifestObject(this, 'ModelRewrite', INFERENCE_MODEL_REWRITE, {
        metadata: { name: r.name, labels },
        spec: {
          poolRef,
          rules: r.rewrites.map(rule => ({
            matches: [{ model: { type: 'Exact', value: rule.model } }],
            targets: rule.targets.map(t => ({ modelRewrite: t.model, weight: t.weight ?? 1 })),
          })),
        },
      });
    }
  }
}

interface Member {
  readonly service: VllmInferenceService | SglangInferenceService;
  /** Whether the service scales to zero (autoscaling.minReplicas 0). */
  readonly scalesToZero: boolean;
  /** The picker's engine name for the service's pods. */
  readonly engine: 'vllm' | 'sglang';
}

interface ResolvedGateway {
  readonly name: string;
  readonly epp: string;
  readonly namespace?: string;
  readonly members: readonly Member[];
  readonly selector: Record<string, string>;
  readonly port: number;
  /**
   * Every member's endpoint ports (`port`, and each rank's with RankEndpoints.PER_RANK): each pod's
   * `llm-d.ai/active-ports` names its own among them.
   */
  readonly targetPorts: number[];
  readonly engines: EppEngineMetrics[];
  /** When the pool holds a disaggregated service's prefill and decode pods. */
  readonly disaggregation?: EppDisaggregation;
  /** Precise prefix-cache scoring. */
  readonly precise?: EppPrecisePrefix;
  readonly failureMode: FailureMode;
  readonly replicas: number;
  readonly leaderElection: boolean;
  readonly image: string;
  readonly resources: k8s.ResourceRequirements;
  readonly flowControl?: EppFlowControl;
  readonly gateway: { name: string; namespace?: string; sectionName?: string };
  readonly gatewayPeers: k8s.NetworkPolicyPeer[];
  readonly hostnames: string[];
  readonly requestTimeoutSeconds: number;
  readonly gracePeriodSeconds: number;
  readonly objectives: readonly InferenceObjectiveSpec[];
  readonly rewrites: readonly ModelRewriteRule[];
}

function resolveGateway(v: Validator, scope: Construct, props: InferenceGatewayProps): ResolvedGateway {
  v.knownProps('', props, KEYS);
  const name = v.serviceName('name', props.name, 63 - '-epp'.length);
  const namespace = Chart.of(scope).namespace;
  if (!Array.isArray(props.services) || props.services.length === 0)
    v.fail('services', 'must list at least one serving construct', props.services);
  // A disaggregated service brings its prefill pool: the pool holds both, and the picker routes between them.
  const members = props.services.flatMap((service, i) => {
    const member = memberOf(v, `services[${i}]`, service, namespace);
    if (service.role === 'prefill')
      v.fail(
        `services[${i}]`,
        'must not be a prefill pool: list the disaggregated service, whose prefill pool the gateway adds',
        service.node.path,
      );
    const prefill = service.prefill;
    return prefill ? [member, memberOf(v, `services[${i}].prefill`, prefill, namespace)] : [member];
  });
  const gateway = gatewayRef(v, props.gateway);
  if (new Set(props.services).size !== props.services.length)
    v.fail(
      'services',
      'must not list a construct twice',
      props.services.map(s => s.node.path),
    );
  const model = members[0].service.serviceName;
  const other = members.find(m => m.service.serviceName !== model);
  if (other) {
    v.failDescribed(
      'services',
      'must all serve one model (one `name`): a pool selects pods by that name, so it cannot hold two',
      `${model} and ${other.service.serviceName}`,
    );
  }
  const port = members[0].service.port;
  const otherPort = members.find(m => m.service.port !== port);
  if (otherPort) {
    v.failDescribed(
      'services',
      "must listen on one port (set `port` on them): an InferencePool's target ports apply to every pod it selects",
      `${port} and ${otherPort.service.port} (${otherPort.service.node.id})`,
    );
  }
  const replicas = v.wholeNumber('endpointPickerReplicas', props.endpointPickerReplicas ?? 1, 1);
  const decisions = members.flatMap(m => m.service._disaggregation ?? []);
  const thresholds = [...new Set(decisions.map(d => d.nonCachedTokens ?? 'every request'))];
  if (thresholds.length > 1)
    v.failDescribed(
      'services',
      "must disaggregate from one prompt length (disaggregation.disaggregateFromTokens): the pool's one picker decides for every request",
      thresholds.join(' and '),
    );
  props.services.forEach((s, i) => {
    const refused = s._routedByGateway({ namespace, name });
    if (refused) v.fail(`services[${i}]`, refused, s.node.path);
  });
  // Decode pods that serve only paired requests fail every request the picker did not choose for them.
  const needsPicker = decisions.find(d => d.needsPicker)?.needsPicker;
  if (needsPicker && props.failureMode === FailureMode.FAIL_OPEN)
    v.fail(
      'failureMode',
      `must be FailureMode.FAIL_CLOSE for a disaggregated SGLang service: ${needsPicker}, and without the picker the gateway would send requests to any pod unpaired`,
      props.failureMode,
    );
  const failureMode =
    props.failureMode ??
    (members.some(m => m.service._disaggregation?.needsPicker) ? FailureMode.FAIL_CLOSE : FailureMode.FAIL_OPEN);
  if (!Object.values(FailureMode).includes(failureMode))
    v.fail('failureMode', `must be one of ${Object.values(FailureMode).join(', ')}`, failureMode);
  const resolved = {
    name,
    epp: `${name}-epp`,
    namespace,
    members,
    // Name and component: what every version and engine of the model shares and nothing else carries (the
    // client Service selects the same; the picker's pods have their own name and component).
    selector: { [LABEL_NAME]: model, [LABEL_COMPONENT]: SERVING_COMPONENT },
    port,
    // Every member's ranks count from the one port, so the union is the widest member's range: at most
    // MAX_POOL_TARGET_PORTS, which each service checked.
    targetPorts: [...new Set(members.flatMap(m => m.service.endpointPorts))].sort((a, b) => a - b),
    engines: engineConfigs(members),
    disaggregation: decisions.length > 0 ? { nonCachedTokens: decisions[0].nonCachedTokens } : undefined,
    precise: preciseOf(v, props.prefixCacheScoring, members),
    failureMode,
    replicas,
    leaderElection: replicas > 1,
    image: v.image('endpointPickerImage', props.endpointPickerImage ?? EPP_DEFAULT_IMAGE),
    resources: pickerResources(
      v,
      props.endpointPickerResources,
      members.reduce((n, m) => n + m.service.maxReplicas, 0),
    ),
    gateway,
    gatewayPeers: resolvePeers(v, 'gatewayPeers', props.gatewayPeers) ?? [
      // A Gateway without a namespace is in the route's: every pod of this namespace.
      gateway.namespace === undefined
        ? { podSelector: labelSelector({}) }
        : { namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: gateway.namespace } } },
    ],
    hostnames: (v.stringArray('hostnames', props.hostnames) ?? []).map((h, i) => v.dnsSubdomain(`hostnames[${i}]`, h)),
    requestTimeoutSeconds:
      props.requestTimeout === undefined ? undefined : v.seconds('requestTimeout', props.requestTimeout, 1),
    // On SIGTERM the picker waits its drain out, then lets every open stream finish: at most as long as the servers
    // it routes to drain theirs.
    gracePeriodSeconds: EPP_DRAIN_SECONDS + Math.max(...members.map(m => m.service.terminationGracePeriodSeconds)),
    objectives: objectivesOf(v, props.objectives),
    rewrites: servedTargets(v, rewritesOf(v, props.modelRewrites), members),
  };
  const flowControl = flowControlOf(v, props.flowControl, {
    ...resolved,
    scrapeSeconds: scrapeIntervalOf(v, props.serviceMonitorInterval),
  });
  // A queued request waits up to its TTL, then generates: the route's timeout holds both.
  const requestTimeoutSeconds =
    resolved.requestTimeoutSeconds ??
    (flowControl ? flowControl.requestTtlSeconds + DEFAULT_REQUEST_TIMEOUT_SECONDS : DEFAULT_REQUEST_TIMEOUT_SECONDS);
  if (flowControl && requestTimeoutSeconds <= flowControl.requestTtlSeconds)
    v.fail(
      'flowControl.requestTtl',
      `must be shorter than requestTimeout (${requestTimeoutSeconds}s): a gateway that counts the wait in the picker's queue in its timeout would end a queued request first, and the client would see its timeout instead of the picker's 429 or 503`,
      `${flowControl.requestTtlSeconds}s`,
    );
  if (flowControl) {
    // The picker now queues what the engines would have: an autoscaler that does not read its queue misses demand.
    for (const [i, m] of members.entries()) {
      if (m.service.horizontalPodAutoscaler)
        v.fail(
          `services[${i}]`,
          "must scale with Autoscaler.keda() (or not autoscale) under flowControl: the picker holds requests back in its queue, which an HPA on the engines' gauges never sees, so the fleet would not grow",
          m.service.workloadName,
        );
    }
    const keda = members.filter(m => m.service.scaledObject);
    if (keda.length > 0) {
      if (namespace === undefined)
        v.fail(
          'flowControl',
          "needs the chart's namespace with KEDA-scaled services: KEDA reads the picker's queue by namespace and pool, or it would count pools of the same name in every namespace",
          undefined,
        );
      if (props.serviceMonitor !== true)
        v.fail(
          'serviceMonitor',
          `must be true with flowControl and KEDA-scaled services (${keda[0].service.workloadName}): KEDA reads the picker's queue from Prometheus, and without it a service at zero never wakes`,
          props.serviceMonitor,
        );
      for (const m of keda) m.service._countPickerQueue(name, namespace);
    }
  }
  return { ...resolved, requestTimeoutSeconds, flowControl };
}

/** Precise scoring's model and tokenizer: the services' one client model, rendered by their client Service. */
function preciseOf(
  v: Validator,
  scoring: PrefixCacheScoring | undefined,
  members: readonly Member[],
): EppPrecisePrefix | undefined {
  if (scoring !== undefined && !Object.values(PrefixCacheScoring).includes(scoring))
    v.fail('prefixCacheScoring', `must be one of ${Object.values(PrefixCacheScoring).join(', ')}`, scoring);
  const model = members[0].service._modelNames[0];
  const aliased = members.find(m => m.service._modelNames.length > 1);
  const other = members.find(m => m.service._modelNames[0] !== model);
  // Unset: precise where a service keeps blocks in host memory, whose prefixes the approximate record cannot see,
  // and every service can publish its events.
  const chosen =
    scoring ??
    (members.some(m => m.service._offloadsKvCache) &&
    !aliased &&
    !other &&
    members.every(m => m.service._kvEventsRefusal() === undefined)
      ? PrefixCacheScoring.PRECISE
      : PrefixCacheScoring.APPROXIMATE);
  if (chosen !== PrefixCacheScoring.PRECISE) return undefined;
  if (aliased)
    v.fail(
      'prefixCacheScoring',
      "needs services that serve the model under one name (servedModelNames): the pods' events carry one, and the picker keys a request's blocks by the name it asks for, so requests naming another would never match",
      aliased.service.node.path,
    );
  if (other)
    v.failDescribed(
      'prefixCacheScoring',
      "needs every service of the pool to serve the model under one first name (servedModelNames[0]): the pods' KV events carry it, and the picker matches it to the request's model",
      `${model} and ${other.service._modelNames[0]}`,
    );
  // The client Service (port 80) reaches the services' pods, which serve the render endpoints.
  return { model, renderUrl: members[0].service.url };
}

/**
 * The picker's flow control, with the queue's byte bound at the picker's memory request: queued bodies live in its
 * memory (the chart's default is 1 GB a priority band, more than the smallest picker's limit).
 */
function flowControlOf(
  v: Validator,
  given: FlowControlOptions | undefined,
  r: { members: readonly Member[]; resources: k8s.ResourceRequirements; scrapeSeconds: number },
): EppFlowControl | undefined {
  const cold = r.members.filter(m => m.scalesToZero);
  if (given === undefined) {
    if (cold.length > 0)
      v.fail(
        'flowControl',
        `is needed for ${cold[0].service.workloadName}, which scales to zero (autoscaling.minReplicas 0): only the picker's queue holds a request through its cold start and wakes KEDA`,
        undefined,
      );
    return undefined;
  }
  v.knownProps('flowControl', given, ['requestTtl']);
  // At zero, a request waits for the picker's queue to be scraped, KEDA's next poll, and a replica to be capacity.
  const coldStart = Math.max(0, ...cold.map(m => r.scrapeSeconds + KEDA_POLLING_SECONDS + m.service.capacitySeconds));
  const ttl =
    given.requestTtl === undefined
      ? Math.max(FLOW_CONTROL_DEFAULT_TTL_SECONDS, coldStart > 0 ? coldStart + PLACEMENT_ALLOWANCE_SECONDS : 0)
      : v.seconds('flowControl.requestTtl', given.requestTtl, 1);
  if (ttl <= coldStart)
    v.fail(
      'flowControl.requestTtl',
      `must be longer than the cold start of a service at zero (${coldStart}s: the picker's scrape interval, KEDA's ${KEDA_POLLING_SECONDS}s poll and the replica's capacity delay), or the first request after an idle spell is refused (503, rejected-no-endpoints) before a replica serves it`,
      `${ttl}s`,
    );
  return { requestTtlSeconds: ttl, maxBytes: String(r.resources.requests!.memory.value) };
}

/**
 * What a cold start takes beyond the replica's capacity delay, which counts from its container's start: scheduling,
 * often a GPU node scaled up for it (scaling to zero frees the node), the device plugin's readiness and the pull of
 * an engine image of 10 GB or more. Five minutes holds a warm node pool's pull and a typical cloud node scale-up;
 * give `flowControl.requestTtl` for slower ones.
 */
export const PLACEMENT_ALLOWANCE_SECONDS = 300;

function memberOf(v: Validator, prop: string, service: InferenceService, namespace: string | undefined): Member {
  if (service instanceof TgiInferenceService) {
    v.fail(
      prop,
      "must be a vLLM or SGLang service: TGI exports no KV-cache utilization gauge, which the Endpoint Picker's model server protocol requires (GIE docs/proposals/003-model-server-protocol), and the picker (llm-d-router v0.10.0) has no metric mapping for TGI",
      service.node.path,
    );
  }
  const engine =
    service instanceof VllmInferenceService ? 'vllm' : service instanceof SglangInferenceService ? 'sglang' : undefined;
  if (engine === undefined) v.fail(prop, 'must be a VllmInferenceService or SglangInferenceService', service);
  if (Chart.of(service).namespace !== namespace) {
    v.failDescribed(
      prop,
      "must be in the gateway's namespace: an InferencePool selects pods in its own",
      `${Chart.of(service).namespace ?? '(none)'} vs ${namespace ?? '(none)'}`,
    );
  }
  return { service, engine, scalesToZero: service.autoscalingLimits?.minReplicas === 0 };
}

/** The picker's requests and memory limit: the prop's, else sized from the endpoints it watches. */
function pickerResources(
  v: Validator,
  given: EndpointPickerResources | undefined,
  endpoints: number,
): k8s.ResourceRequirements {
  if (given !== undefined) v.knownProps('endpointPickerResources', given, ['cpu', 'memory']);
  const sized = endpointPickerSize(endpoints);
  const cpu = given?.cpu === undefined ? sized.cpu : v.positive('endpointPickerResources.cpu', given.cpu);
  const memoryKiB =
    given?.memory === undefined
      ? sized.memoryGiB * 1024 ** 2
      : v.positiveSize('endpointPickerResources.memory', given.memory).toKibibytes();
  return {
    requests: { cpu: k8s.Quantity.fromString(String(cpu)), memory: sizeQuantity(Size.kibibytes(memoryKiB)) },
    limits: { memory: sizeQuantity(Size.kibibytes(memoryKiB * 2)) },
  };
}

/** The picker's metric names per engine, from the engine facts the serving constructs expose. */
function engineConfigs(members: readonly Member[]): EppEngineMetrics[] {
  const byEngine = new Map<string, EppEngineMetrics>();
  for (const { service, engine } of members) {
    if (byEngine.has(engine)) continue;
    byEngine.set(engine, {
      name: engine,
      queuedRequestsSpec: service.queueMetric,
      runningRequestsSpec: service.engineMetrics.running,
      kvUsageSpec: service.engineMetrics.kvCacheUsage!,
      ...EPP_ENGINE_EXTRAS[engine],
    });
  }
  return [...byEngine.values()];
}

function gatewayRef(v: Validator, g: GatewayRef): ResolvedGateway['gateway'] {
  if (g === null || typeof g !== 'object') v.fail('gateway', 'must name a Gateway ({ name })', g);
  v.knownProps('gateway.', g, ['name', 'namespace', 'sectionName']);
  return {
    name: v.dnsSubdomain('gateway.name', g.name),
    ...(g.namespace !== undefined ? { namespace: v.dnsLabel('gateway.namespace', g.namespace) } : {}),
    ...(g.sectionName !== undefined ? { sectionName: v.dnsSubdomain('gateway.sectionName', g.sectionName) } : {}),
  };
}

function objectivesOf(v: Validator, objectives: InferenceObjectiveSpec[] | undefined): InferenceObjectiveSpec[] {
  if (objectives === undefined) return [];
  if (!Array.isArray(objectives)) v.fail('objectives', 'must be a list', objectives);
  const names = new Set<string>();
  return objectives.map((o, i) => {
    v.knownProps(`objectives[${i}].`, o, ['name', 'priority']);
    const name = v.dnsSubdomain(`objectives[${i}].name`, o.name);
    if (names.has(name)) v.fail(`objectives[${i}].name`, 'must not repeat a name', name);
    names.add(name);
    if (!Number.isInteger(o.priority) || Math.abs(o.priority) > 2147483647)
      v.fail(`objectives[${i}].priority`, 'must be a whole number (int32)', o.priority);
    return { name, priority: o.priority };
  });
}

function rewritesOf(v: Validator, rules: ModelRewriteRule[] | undefined): ModelRewriteRule[] {
  if (rules === undefined) return [];
  if (!Array.isArray(rules)) v.fail('modelRewrites', 'must be a list', rules);
  const models = new Set<string>();
  return rules.map((rule, i) => {
    const at = `modelRewrites[${i}]`;
    v.knownProps(`${at}.`, rule, ['model', 'targets']);
    const model = v.nonEmpty(`${at}.model`, rule.model);
    if (models.has(model)) v.fail(`${at}.model`, 'must not repeat a model: the first rule would win', model);
    models.add(model);
    if (!Array.isArray(rule.targets) || rule.targets.length === 0)
      v.fail(`${at}.targets`, 'must list at least one target', rule.targets);
    const targets = rule.targets.map((t, j) => {
      v.knownProps(`${at}.targets[${j}].`, t, ['model', 'weight']);
      return {
        model: v.nonEmpty(`${at}.targets[${j}].model`, t.model),
        ...(t.weight !== undefined
          ? { weight: v.wholeNumber(`${at}.targets[${j}].weight`, t.weight, 1, 1000000) }
          : {}),
      };
    });
    return { model, targets };
  });
}

/** Rewrite targets every server of the pool serves: the picker may send the rewritten request to any of them. */
function servedTargets(v: Validator, rules: ModelRewriteRule[], members: readonly Member[]): ModelRewriteRule[] {
  rules.forEach((rule, i) =>
    rule.targets.forEach((t, j) => {
      const missing = members.find(m => !m.service.servedModelNames.includes(t.model));
      if (missing) {
        v.failDescribed(
          `modelRewrites[${i}].targets[${j}].model`,
          'must be served by every service of the pool (a served model name or LoRA adapter name): the picker may send the request to any of them',
          `${t.model}, which ${missing.service.workloadName} does not serve`,
        );
      }
    }),
  );
  return rules;
}

function eppPodSpec(r: ResolvedGateway): k8s.PodSpec {
  const identity: ProcessIdentity = {
    runAsRoot: false,
    uid: EPP_UID,
    addCapabilities: [],
    readOnlyRootFilesystem: true,
  };
  const probe = (service: string, extra: Partial<k8s.Probe>): k8s.Probe => ({
    grpc: { port: EPP_HEALTH_PORT, service },
    ...extra,
  });
  const defaultEngine = r.members[0].engine;
  return {
    serviceAccountName: r.epp,
    automountServiceAccountToken: true, // it watches pods and the pool through the API
    enableServiceLinks: false,
    terminationGracePeriodSeconds: r.gracePeriodSeconds,
    securityContext: podSecurityContext(identity),
    containers: [
      {
        name: 'epp',
        image: r.image,
        imagePullPolicy: 'IfNotPresent',
        args: endpointPickerArgs({
          pool: r.name,
          namespace: r.namespace,
          leaderElection: r.leaderElection,
          config: endpointPickerConfig(r.engines, defaultEngine, r.flowControl, r.disaggregation, r.precise),
        }),
        env: [
          { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
        ports: [
          { name: 'grpc', containerPort: EPP_GRPC_PORT, protocol: 'TCP' },
          { name: 'grpc-health', containerPort: EPP_HEALTH_PORT, protocol: 'TCP' },
          { name: 'metrics', containerPort: EPP_METRICS_PORT, protocol: 'TCP' },
        ],
        // cmd/epp/runner/health.go: with leader election, `liveness` passes on every replica and `readiness` only on
        // the leader once the pool has synced; without it, every service name means "the pool has synced".
        livenessProbe: probe(r.leaderElection ? 'liveness' : 'inference-extension', {
          initialDelaySeconds: 5,
          periodSeconds: 10,
        }),
        readinessProbe: probe(r.leaderElection ? 'readiness' : 'inference-extension', { periodSeconds: 2 }),
        resources: r.resources,
        securityContext: containerSecurityContext(identity),
        volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
      },
    ],
    // A writable /tmp under a read-only root filesystem.
    volumes: [{ name: 'tmp', emptyDir: { sizeLimit: k8s.Quantity.fromString('64Mi') } }],
  };
}
