import { stringify } from 'yaml';

/**
 * The Endpoint Picker (EPP) of the Gateway API Inference Extension, as facts: its image, ports,
 * flags, configuration and the API access it needs. All from kubernetes-sigs/gateway-api-inference-extension
 * at v1.5.0 (commit df9f8909fe06): cmd/epp/runner, pkg/epp/server/options.go and controller_manager.go,
 * config/charts/epplib and config/charts/inferencepool. v1.5.0 is the last release of that repository with the
 * EPP (v1.6.0 moved it to llm-d/llm-d-router and keeps only the InferencePool API), and the release whose
 * InferenceObjective and InferenceModelRewrite CRDs are vendored; its EPP reads `inference.networking.k8s.io/v1`
 * InferencePools, the version the vendored v1.6.0 CRD serves.
 */

/** config/charts/inferencepool/values.yaml at v1.5.0: `registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0`. */
export const EPP_DEFAULT_IMAGE = 'registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0';

/** options.go: `DefaultGrpcPort = 9002`, the ext-proc port the gateway calls. */
export const EPP_GRPC_PORT = 9002;
/** options.go: `GRPCHealthPort: 9003`, the gRPC health service the probes call. */
export const EPP_HEALTH_PORT = 9003;
/** options.go: `MetricsPort: 9090`. */
export const EPP_METRICS_PORT = 9090;

/**
 * The image's user: the Dockerfile's base is `gcr.io/distroless/static:nonroot`, whose `nonroot` user is
 * UID 65532.
 */
export const EPP_UID = 65532;

/**
 * The pod label the EPP's metrics extractor reads to pick a pod's metric names
 * (pkg/epp/framework/plugins/datalayer/extractor/metrics/mapping_registry.go, `DefaultEngineTypeLabelKey`), so
 * one pool can hold vLLM and SGLang pods.
 */
export const ENGINE_TYPE_LABEL = 'inference.networking.k8s.io/engine-type';

/**
 * The request header that names an InferenceObjective (pkg/epp/metadata/consts.go, `ObjectiveKey`); its
 * priority then orders the request against others when the pool is saturated.
 */
export const OBJECTIVE_HEADER = 'x-gateway-inference-objective';

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
 * The EPP's configuration (`--config-text`): the chart's default profile (config/charts/epplib/templates/
 * _config.yaml at v1.5.0), queue, KV-cache and prefix-cache scorers weighted 2:2:3, with the metrics scraped from
 * each pod's `/metrics` and read through the engine's own metric names.
 */
export function endpointPickerConfig(engines: readonly EppEngineMetrics[], defaultEngine: string): string {
  return stringify({
    apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
    kind: 'EndpointPickerConfig',
    plugins: [
      { type: 'queue-scorer' },
      { type: 'kv-cache-utilization-scorer' },
      { type: 'prefix-cache-scorer' },
      { type: 'metrics-data-source', parameters: { scheme: 'http', path: '/metrics' } },
      { type: 'core-metrics-extractor', parameters: { defaultEngine, engineConfigs: engines } },
    ],
    schedulingProfiles: [
      {
        name: 'default',
        plugins: [
          { pluginRef: 'queue-scorer', weight: 2 },
          { pluginRef: 'kv-cache-utilization-scorer', weight: 2 },
          { pluginRef: 'prefix-cache-scorer', weight: 3 },
        ],
      },
    ],
  });
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
 * InferencePool, and InferenceObjectives and InferenceModelRewrites when their CRDs are installed (found by
 * discovery: without the permission its cache would never sync). With leader election (controller-runtime,
 * `LeaderElectionResourceLock: leases`) it reads and renews a Lease and records an event when it leads.
 */
export function endpointPickerRules(leaderElection: boolean) {
  const read = ['get', 'list', 'watch'];
  return [
    { apiGroups: [''], resources: ['pods'], verbs: read },
    { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: read },
    {
      apiGroups: ['inference.networking.x-k8s.io'],
      resources: ['inferenceobjectives', 'inferencemodelrewrites'],
      verbs: read,
    },
    ...(leaderElection
      ? [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
          { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        ]
      : []),
  ];
}
