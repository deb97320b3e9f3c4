import { stringify } from 'yaml';

/**
 * The Endpoint Picker (EPP), as facts: its image, ports, flags, configuration and the API access it needs. All
 * from llm-d/llm-d-router at v0.10.0 (commit 71f4f0999f95): cmd/epp/runner, pkg/epp/server/options.go,
 * controller_config.go and controller_manager.go, config/charts/routerlib. The EPP lived in
 * kubernetes-sigs/gateway-api-inference-extension (GIE) up to v1.5.0; GIE v1.6.0 removed it, with
 * InferenceObjective, InferenceModelRewrite and the EndpointPickerConfig API (#2967, #2973), and keeps only the
 * InferencePool API (`inference.networking.k8s.io/v1`), which llm-d-router v0.10.0 reads (its go.mod pins GIE
 * v1.5.0 for those types; the vendored v1.6.0 CRD serves the same version).
 */

/**
 * Makefile `IMAGE_REGISTRY ?= ghcr.io/llm-d`, `EPP_IMAGE_NAME ?= llm-d-router-endpoint-picker`, tagged with the
 * release tag by .github/workflows/ci-release.yaml (and named so in .github/ISSUE_TEMPLATE/new-release.md).
 */
export const EPP_DEFAULT_IMAGE = 'ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0';

/** options.go: `DefaultGrpcPort = 9002`, the ext-proc port the gateway calls. */
export const EPP_GRPC_PORT = 9002;
/** options.go: `GRPCHealthPort: 9003`, the gRPC health service the probes call. */
export const EPP_HEALTH_PORT = 9003;
/** options.go: `MetricsPort: 9090`. */
export const EPP_METRICS_PORT = 9090;

/**
 * The image's user: Dockerfile.epp's base is `gcr.io/distroless/static:nonroot` and it sets
 * `USER 65532:65532`.
 */
export const EPP_UID = 65532;

/**
 * options.go `DefaultDrainTimeout = 30 * time.Second`: on SIGTERM the picker releases its lease, reports NOT_SERVING
 * and keeps answering the gateway's open connections this long, then stops its gRPC server gracefully, waiting for
 * every open stream (cmd/epp/runner/runner.go). Its pod's grace period must hold the drain and the longest request.
 */
export const EPP_DRAIN_SECONDS = 30;

/**
 * The pod label the EPP's metrics extractor reads to pick a pod's metric names
 * (pkg/epp/framework/plugins/datalayer/extractor/metrics/mapping_registry.go, `DefaultEngineTypeLabelKey`), so
 * one pool can hold vLLM and SGLang pods. GIE's `inference.networking.k8s.io/engine-type` is still read when it
 * is absent (`legacyGAIEEngineTypeLabelKey`, deprecated).
 */
export const ENGINE_TYPE_LABEL = 'llm-d.ai/engine-type';

/**
 * The pod annotation that lists, comma-separated, which of the pool's target ports on the pod are inference
 * endpoints (pkg/epp/datastore/datastore.go, `activePortsAnnotation`): absent, every target port is; present,
 * only those listed (an empty or unparsable value gives the pod no endpoint). A pod serving one port on one
 * rank names that port.
 */
export const ACTIVE_PORTS_ANNOTATION = 'llm-d.ai/active-ports';

/**
 * The request header that names an InferenceObjective (pkg/epp/metadata/consts.go, `ObjectiveKey`); its
 * priority then orders the request against others when the pool is saturated. GIE's
 * `x-gateway-inference-objective` is still accepted (`OldObjectiveKey`).
 */
export const OBJECTIVE_HEADER = 'x-llm-d-inference-objective';

/**
 * The API group and version of InferenceObjective and InferenceModelRewrite (config/crd/bases/llm-d.ai_*.yaml).
 * GIE v1.5.0 served them as `inference.networking.x-k8s.io/v1alpha2`, the same schema.
 */
export const LLMD_API_VERSION = 'llm-d.ai/v1alpha2';
/** GIE's group of the two kinds, which the picker still reads when the `llm-d.ai` CRDs are not installed. */
export const LEGACY_INFERENCE_GROUP = 'inference.networking.x-k8s.io';

/**
 * The gauge of requests held in the flow-control queue, by `inference_pool` (pkg/epp/metrics/llm_d_router_metrics.go):
 * what wakes a service scaled to zero.
 */
export const EPP_FLOW_CONTROL_QUEUE = 'llm_d_epp_flow_control_queue_size';

/** pkg/epp/flowcontrol/config.go: `FeatureGate = "flowControl"`. */
export const FLOW_CONTROL_GATE = 'flowControl';
/** pkg/epp/flowcontrol/controller/config.go: `defaultRequestTTL = 60 * time.Second`. */
export const FLOW_CONTROL_DEFAULT_TTL_SECONDS = 60;

/**
 * The picker's flow control (apix/config/v1alpha1 FlowControlConfig): requests wait in its queue while the pool is
 * saturated and leave it in priority order; `defaultRequestTTL` (a Go duration) bounds the wait, `maxBytes` (a
 * quantity) the bodies held in the picker's memory.
 */
export interface EppFlowControl {
  readonly requestTtlSeconds: number;
  readonly maxBytes: string;
}

/** What the EPP reads from one engine's pods (one `engineConfigs` entry of the core metrics extractor). */
export interface EppEngineMetrics {
  /** The extractor's engine name, also the value of ENGINE_TYPE_LABEL on the engine's pods. */
  readonly name: string;
  readonly queuedRequestsSpec: string;
  readonly runningRequestsSpec: string;
  readonly kvUsageSpec: string;
  /** `''` disables it: the engine reports no loaded adapters in the shape the EPP parses. */
  readonly loraSpec: string;
  readonly cacheInfoSpec: string;
  readonly cacheBlockSizeLabelName?: string;
  readonly cacheNumBlocksLabelName?: string;
}

/**
 * What an engine exports beyond the library's engine facts, as the EPP reads it (factories.go
 * `defaultEngineConfigs`, and docs/proposals/003-model-server-protocol): the adapter gauge (vLLM only) and the
 * cache-geometry info gauge the prefix-cache scorer sizes itself from.
 */
export const EPP_ENGINE_EXTRAS: Readonly<
  Record<
    'vllm' | 'sglang',
    Pick<EppEngineMetrics, 'loraSpec' | 'cacheInfoSpec' | 'cacheBlockSizeLabelName' | 'cacheNumBlocksLabelName'>
  >
> = {
  vllm: { loraSpec: 'vllm:lora_requests_info', cacheInfoSpec: 'vllm:cache_config_info' },
  sglang: {
    loraSpec: '',
    cacheInfoSpec: 'sglang:cache_config_info',
    cacheBlockSizeLabelName: 'page_size',
    cacheNumBlocksLabelName: 'num_pages',
  },
};

/**
 * The EPP's configuration (`--config-text`): the chart's default profile (config/charts/routerlib/templates/
 * _config.yaml), queue, KV-cache and prefix-cache scorers weighted 2:2:3, with the metrics scraped from each pod's
 * `/metrics` and read through the engine's own metric names. The picker decodes every plugin's parameters strictly
 * (pkg/epp/framework/interface/plugin/registry.go, `DisallowUnknownFields`): an unknown field stops it at start.
 */
export function endpointPickerConfig(
  engines: readonly EppEngineMetrics[],
  defaultEngine: string,
  flowControl?: EppFlowControl,
  disaggregation?: EppDisaggregation,
  precise?: EppPrecisePrefix,
): string {
  // Fresh objects for each profile: a shared one would be written as a YAML alias.
  const scorers = () => [
    { pluginRef: 'queue-scorer', weight: 2 },
    { pluginRef: 'kv-cache-utilization-scorer', weight: 2 },
    { pluginRef: 'prefix-cache-scorer', weight: 3 },
  ];
  return stringify({
    // llm-d.ai/v1alpha1: GIE's inference.networking.x-k8s.io/v1alpha1 still loads, with a deprecation log.
    apiVersion: 'llm-d.ai/v1alpha1',
    kind: 'EndpointPickerConfig',
    ...(flowControl
      ? {
          // The gate is off by default (cmd/epp/runner/runner.go RegisterFeatureGate(flowcontrol.FeatureGate, false)).
          featureGates: [FLOW_CONTROL_GATE],
          flowControl: { defaultRequestTTL: `${flowControl.requestTtlSeconds}s`, maxBytes: flowControl.maxBytes },
        }
      : {}),
    plugins: [
      { type: 'queue-scorer' },
      { type: 'kv-cache-utilization-scorer' },
      precise
        ? { type: 'prefix-cache-scorer', parameters: { prefixMatchInfoProducerName: PRECISE_PRODUCER } }
        : { type: 'prefix-cache-scorer' },
      { type: 'metrics-data-source', parameters: { scheme: 'http', path: '/metrics' } },
      { type: 'core-metrics-extractor', parameters: { defaultEngine, engineConfigs: engines } },
      ...(precise
        ? [
            // The producer reads the prompt's tokens under this exact name: another name leaves it an estimate.
            {
              type: 'token-producer',
              parameters: { modelName: precise.model, vllm: { url: precise.renderUrl, timeout: '5s' } },
            },
            { type: 'endpoint-notification-source' },
            {
              type: PRECISE_PRODUCER,
              parameters: {
                tokenProcessorConfig: { blockSizeTokens: PRECISE_BLOCK_TOKENS },
                kvEventsConfig: {
                  topicFilter: 'kv@',
                  concurrency: 4,
                  discoverPods: true,
                  podDiscoveryConfig: { socketPort: KV_EVENTS_PORT },
                },
              },
            },
          ]
        : []),
      ...(disaggregation
        ? [
            { type: 'prefill-filter' },
            { type: 'decode-filter' },
            disaggregation.nonCachedTokens === undefined
              ? { type: ALWAYS_DISAGG_DECIDER }
              : { type: DISAGG_DECIDER, parameters: { nonCachedTokens: disaggregation.nonCachedTokens } },
            {
              type: 'disagg-profile-handler',
              parameters: {
                deciders: {
                  prefill: disaggregation.nonCachedTokens === undefined ? ALWAYS_DISAGG_DECIDER : DISAGG_DECIDER,
                },
              },
            },
          ]
        : []),
    ],
    // Listed whole once one is: the metrics source the picker would wire itself, and the pods' KV events.
    ...(precise
      ? {
          dataLayer: {
            sources: [
              { pluginRef: 'metrics-data-source', extractors: [{ pluginRef: 'core-metrics-extractor' }] },
              { pluginRef: 'endpoint-notification-source', extractors: [{ pluginRef: PRECISE_PRODUCER }] },
            ],
          },
        }
      : {}),
    schedulingProfiles: disaggregation
      ? [
          // The profile names disagg-profile-handler looks for by default (disagg_profile_handler.go).
          { name: 'decode', plugins: [{ pluginRef: 'decode-filter' }, ...scorers()] },
          { name: 'prefill', plugins: [{ pluginRef: 'prefill-filter' }, ...scorers()] },
        ]
      : [{ name: 'default', plugins: scorers() }],
  });
}

/**
 * llm-d-router's decider (pkg/epp/framework/plugins/scheduling/profilehandler/disagg): disaggregate when the prompt's
 * suffix the chosen decode pod has not cached is at least `nonCachedTokens` (0 would turn it off). It reads the
 * prefix-cache producer the prefix-cache scorer brings, and counts tokens with the `estimate` token producer the
 * picker makes when none is configured. All the plugins here are Beta: no `--allow-experimental-plugins`.
 */
export const DISAGG_DECIDER = 'prefix-based-pd-decider';

/**
 * Precise prefix-cache scoring (llm-d-router v0.10.0 pkg/epp/framework/plugins/.../precise): the picker subscribes to
 * every pool pod's KV-cache events, dialling `tcp://<pod IP>:<KV_EVENTS_PORT + the target port's index>`, keeps an
 * index of the blocks each pod holds, and scores pods by the prompt's blocks they really hold; the prompt's tokens come
 * from the `token-producer`, which renders it through vLLM's `/v1/completions/render` at `renderUrl`. Events whose
 * topic does not start `kv@` or whose model part is not the request's model are dropped without an error.
 */
export interface EppPrecisePrefix {
  /** The model clients name (the topic's model part, and the token producer's modelName). */
  readonly model: string;
  /** A Service of vLLM pods started with --enable-scale-out, which serve the render endpoints. */
  readonly renderUrl: string;
}

/** The precise producer's plugin type and name (prefix-cache-scorer's prefixMatchInfoProducerName names it). */
export const PRECISE_PRODUCER = 'precise-prefix-cache-producer';
/** podDiscoveryConfig.socketPort's default: where each pod's events publisher binds. */
export const KV_EVENTS_PORT = 5557;
/**
 * tokenProcessorConfig.blockSizeTokens: vLLM's default block size on CUDA (16); the index realigns the events of a
 * larger block size (some attention backends raise it) to it.
 */
export const PRECISE_BLOCK_TOKENS = 16;

/** The decider that disaggregates every request (no parameters), for engines whose decode pods need a prefill. */
export const ALWAYS_DISAGG_DECIDER = 'always-disagg-pd-decider';

/** A pool with prefill and decode pods (pods labelled ROLE_LABEL): when to disaggregate a request. */
export interface EppDisaggregation {
  /** The prefix-based decider's threshold; undefined to disaggregate every request. */
  readonly nonCachedTokens?: number;
}

/**
 * The EPP's flags. `--metrics-endpoint-auth=false`: with auth on, the EPP reviews every scrape's token, which
 * needs a ClusterRole (tokenreviews, subjectaccessreviews); this keeps it to a namespaced Role. `--tracing=false`:
 * the default true exports spans to an OTLP collector on localhost that the pod does not have.
 */
export function endpointPickerArgs(o: { pool: string; namespace?: string; leaderElection: boolean; config: string }) {
  return [
    '--pool-name',
    o.pool,
    // Without it the EPP reads the NAMESPACE variable (set from the pod's namespace).
    ...(o.namespace ? ['--pool-namespace', o.namespace] : []),
    '--pool-group',
    'inference.networking.k8s.io',
    '--grpc-port',
    String(EPP_GRPC_PORT),
    '--grpc-health-port',
    String(EPP_HEALTH_PORT),
    '--metrics-port',
    String(EPP_METRICS_PORT),
    '--metrics-endpoint-auth=false',
    '--tracing=false',
    '--zap-encoder',
    'json',
    ...(o.leaderElection ? ['--ha-enable-leader-election'] : []),
    '--config-text',
    o.config,
  ];
}

/**
 * The API access the EPP needs in its namespace, and nothing beyond it. controller_manager.go caches pods and the
 * InferencePool, and InferenceObjectives and InferenceModelRewrites when a group serving them is installed:
 * controller_config.go asks discovery for `llm-d.ai/v1alpha2` first, then GIE's `inference.networking.x-k8s.io/
 * v1alpha2`, and watches the first found. Both groups are granted, as the chart's Role does: a cluster that still
 * has only GIE's CRDs makes the picker watch those, and without the permission its cache would never sync. With
 * leader election (controller-runtime, `LeaderElectionResourceLock: leases`) it reads and renews a Lease and
 * records an event when it leads.
 */
export function endpointPickerRules(leaderElection: boolean) {
  const read = ['get', 'list', 'watch'];
  const objectives = ['inferenceobjectives', 'inferencemodelrewrites'];
  return [
    { apiGroups: [''], resources: ['pods'], verbs: read },
    { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: read },
    { apiGroups: [LLMD_API_VERSION.split('/')[0]], resources: objectives, verbs: read },
    { apiGroups: [LEGACY_INFERENCE_GROUP], resources: objectives, verbs: read },
    ...(leaderElection
      ? [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
          { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        ]
      : []),
  ];
}
