import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { containerSecurityContext } from '../common/security';

/**
 * llm-d-router's routing sidecar for decode pods, as facts, from llm-d/llm-d-router v0.10.0 (commit 71f4f0999f95):
 * cmd/pd-sidecar, pkg/sidecar/proxy (options.go, proxy.go, connector_nixlv2.go, connector_sglang.go) and
 * Dockerfile.sidecar.
 * It listens on the pod's API port, forwards everything to the engine beside it, and for a completion that carries
 * the `x-prefiller-host-port` header (which the Endpoint Picker's `disagg-profile-handler` sets to a prefill pod's
 * address and the pool's target port) first sends the prefill leg there, then the decode leg to its engine.
 */

/** .github/workflows/ci-release.yaml: `sidecar_name=${repo}-disagg-sidecar`, tagged with the release. */
export const DISAGG_SIDECAR_IMAGE = 'ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0';

/** Dockerfile.sidecar: `gcr.io/distroless/static:nonroot`, `USER 65532:65532`. */
export const DISAGG_SIDECAR_UID = 65532;

/**
 * options.go `defaultVLLMPort = "8200"`: where the sidecar forwards (`--model-server-port`); the engine of a decode
 * pod listens there, and the sidecar takes the API port.
 */
export const ENGINE_PORT_BEHIND_SIDECAR = 8200;

/**
 * Where the sidecar's Kubernetes client (in-cluster config, pkg/sidecar/proxy/allowlist.go) reads its token, CA and
 * namespace: a projected volume mounted into the sidecar alone, so the engine beside it holds no API credential.
 */
export const SIDECAR_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_VOLUME = 'routing-sidecar-token';

/** The projected token volume of the sidecar (the pod mounts no token of its own). */
export function sidecarTokenVolume(): k8s.Volume {
  return {
    name: TOKEN_VOLUME,
    projected: {
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardApi: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
}

/**
 * The sidecar's SSRF protection (options.go `--enable-ssrf-protection`, off by default upstream): it sends a prefill
 * leg only to pods of its InferencePool, which it watches through the API (allowlist.go: the pool by name, then its
 * selector's pods), so a client that reaches a decode pod cannot make it POST to any other host.
 */
export function ssrfProtectionArgs(pool: { namespace: string; name: string }): string[] {
  return ['--enable-ssrf-protection', `--inference-pool=${pool.namespace}/${pool.name}`];
}

/** What the sidecar reads through the API with SSRF protection (allowlist.go): its pool, and the pool's pods. */
export const SIDECAR_RULES = [
  { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
];

/** The sidecar's container: HTTP on the API port, forwarding to the engine on ENGINE_PORT_BEHIND_SIDECAR. */
export function disaggSidecar(o: {
  image: string;
  port: number;
  portName: string;
  connector: string;
  env: k8s.EnvVar[];
  guaranteed: boolean;
}): k8s.Container {
  const cpu = k8s.Quantity.fromString('250m');
  const memory = k8s.Quantity.fromString('256Mi');
  return {
    name: 'routing-sidecar',
    image: o.image,
    imagePullPolicy: 'IfNotPresent',
    // A native sidecar: it starts before the engine and stops after it, so it forwards through the engine's drain.
    restartPolicy: 'Always',
    args: [
      `--port=${o.port}`,
      `--model-server-port=${ENGINE_PORT_BEHIND_SIDECAR}`,
      `--kv-connector=${o.connector}`,
      // `SecureServing: true` by default (options.go): a self-signed HTTPS listener, which the gateway, the picker's
      // metrics scrape and Prometheus would all speak HTTP to.
      '--secure-proxy=false',
      '--zap-encoder=json',
    ],
    ...(o.env.length > 0 ? { env: o.env } : {}),
    ports: [{ name: o.portName, containerPort: o.port, protocol: 'TCP' }],
    volumeMounts: [{ name: TOKEN_VOLUME, mountPath: SIDECAR_TOKEN_PATH, readOnly: true }],
    // proxy.go: `GET /health` answers 200 without asking the engine: it says the proxy listens, so the pod's
    // readiness includes the sidecar while the engine's own probe says the engine serves.
    readinessProbe: {
      httpGet: { path: '/health', port: k8s.IntOrString.fromString(o.portName) },
      periodSeconds: 10,
      timeoutSeconds: 5,
    },
    resources: o.guaranteed
      ? { requests: { cpu, memory }, limits: { cpu, memory } }
      : { requests: { cpu, memory }, limits: { memory: k8s.Quantity.fromString('1Gi') } },
    securityContext: {
      ...containerSecurityContext({
        runAsRoot: false,
        uid: DISAGG_SIDECAR_UID,
        addCapabilities: [],
        readOnlyRootFilesystem: true,
      }),
      runAsUser: DISAGG_SIDECAR_UID,
      runAsGroup: DISAGG_SIDECAR_UID,
    },
  };
}
