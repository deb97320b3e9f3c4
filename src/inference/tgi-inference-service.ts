import { ApiObject, Chart, Duration, Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { DisruptionBudget, podDisruptionBudget } from '../common/disruption';
import { defaultHostResources, gpuResources, gpuTolerations, shmVolume } from '../common/gpu';
import { headlessService } from '../common/headless-service';
import { LABEL_COMPONENT, LABEL_NAME, labelSet, workloadLabels } from '../common/labels';
import { statefulSetName } from '../common/names';
import { IGpuWorkload, PodTemplate } from '../common/pod-template';
import { scratchSpace } from '../common/scratch';
import { containerSecurityContext, podSecurityContext, POD_HARDENING, PodSecurityLevel, resolveProcessIdentity } from '../common/security';
import { Validator } from '../common/validate';
import { ModelCache } from './model-cache';
import { TgiQuantization } from './quantization';

/**
 * The default image: a pinned TGI release (tags are `MAJOR.MINOR.PATCH`, no `v`). From 3.1 on,
 * the image cannot start as a non-root UID (huggingface/text-generation-inference#3082).
 */
export const TGI_DEFAULT_IMAGE = 'ghcr.io/huggingface/text-generation-inference:3.3.7';
/** The launcher's `--graceful-termination-timeout` default. */
export const TGI_DRAIN_SECONDS = 90;
/** Time for endpoints, kube-proxy and load balancers to stop sending new requests to a terminating pod. */
export const DEFAULT_PRESTOP_SLEEP_SECONDS = 15;
/** Slack for the shards to exit after the router has drained, and for the kubelet's own delays. */
export const TERMINATION_MARGIN_SECONDS = 15;
/** Long enough for a preStop + TGI's drain + margin: 15 + 90 + 15. */
export const DEFAULT_TGI_GRACE_SECONDS = 120;
/**
 * Model download and load budget for the startup probe: a 13 GB model at a modest 25 MB/s is
 * about 9 minutes, plus shard load and warm-up onto the GPUs. The image pull happens before the
 * container starts and does not count.
 */
export const DEFAULT_MAX_MODEL_LOAD_SECONDS = 900;
const STARTUP_PERIOD_SECONDS = 10;
/** The unprivileged port TGI listens on (the image defaults to 80, which needs NET_BIND_SERVICE). */
export const TGI_PORT = 8080;
const TGI_HOME = '/home/tgi';
const PER_POD_ENDPOINTS_LABEL = 'cdk8s-gpu.io/per-pod-endpoints';
const MODEL_CACHE_PATH = '/data';
const COMPONENT = 'inference';
const CONTAINER = 'tgi';

/** A key of a Secret, e.g. a HuggingFace token. */
export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

export interface TgiInferenceServiceProps {
  /** The base name, a DNS-1035 label. The client Service is `name`; the StatefulSet `name` or `name-v<version>`. */
  readonly name: string;
  /** The HuggingFace model id, e.g. `EleutherAI/gpt-neox-20b`, or a path under /data. */
  readonly modelId: string;
  /**
   * The model revision (branch, tag or commit). Pin a commit for reproducible deploys.
   * @default - the repository's default branch
   */
  readonly revision?: string;
  /** @default 1 */
  readonly replicas?: number;
  /**
   * GPUs per replica; also TGI's `NUM_SHARD` (tensor-parallel shards).
   * @default 1
   */
  readonly gpusPerReplica?: number;
  /** @default - no suffix. Same meaning as for GpuTrainingStatefulSet. */
  readonly version?: number;
  /**
   * A Secret key holding a HuggingFace token, for gated models; becomes env HF_TOKEN.
   * @default - no token
   */
  readonly hfTokenSecret?: SecretKeyRef;
  /** @default TGI_DEFAULT_IMAGE, a pinned release */
  readonly image?: string;
  /** @default - none */
  readonly quantize?: TgiQuantization;
  /** @default - TGI's default (128) */
  readonly maxConcurrentRequests?: number;
  /** @default - TGI's default, derived from the model */
  readonly maxInputTokens?: number;
  /** @default - TGI's default, derived from the model */
  readonly maxTotalTokens?: number;
  /** @default - TGI's default */
  readonly maxBatchPrefillTokens?: number;
  /**
   * Extra launcher arguments, e.g. `['--json-output']`.
   * @default - none
   */
  readonly extraArgs?: string[];
  /**
   * Where downloaded weights live (`/data`, HF_HOME).
   * @default ModelCache.persistentClaim({ size: Size.gibibytes(100) }) - per-replica claim, so a restart does not download again
   */
  readonly modelCache?: ModelCache;
  /**
   * How long a preStop hook sleeps before the container gets SIGTERM, so that endpoints and load
   * balancers stop routing to the pod first. TGI's /health stays 200 while it drains.
   * @default Duration.seconds(15)
   */
  readonly preStopSleep?: Duration;
  /**
   * TGI's drain timeout (GRACEFUL_TERMINATION_TIMEOUT): how long in-flight requests may finish.
   * @default Duration.seconds(90) - the launcher's default
   */
  readonly drainTimeout?: Duration;
  /**
   * Must be at least preStopSleep + drainTimeout + 15 s.
   * @default Duration.seconds(120)
   */
  readonly terminationGracePeriod?: Duration;
  /**
   * The longest model download, load and warm-up the startup probe allows before it restarts the
   * container. At least one minute.
   * @default Duration.minutes(15) - a 13 GB model on a cold node
   */
  readonly maxModelLoadTime?: Duration;
  /** @default 4 × gpusPerReplica */
  readonly cpu?: number;
  /** @default 16 GiB × gpusPerReplica */
  readonly memory?: Size;
  /**
   * `/dev/shm` for NCCL between shards.
   * @default Size.gibibytes(1) - the TGI docs' `--shm-size 1g`
   */
  readonly sharedMemory?: Size;
  /** @default - any GPU node */
  readonly nodeSelector?: Record<string, string>;
  /**
   * Run as the image's user (root). TGI images from 3.1 on can only run this way. Set `false`
   * for an image built to run as non-root (e.g. `UV_PYTHON_INSTALL_DIR` outside /root).
   * @default true - the upstream image cannot start as non-root; see README "TGI and Pod Security"
   */
  readonly runAsRoot?: boolean;
  /** @default 1000 */
  readonly runAsUser?: number;
  /**
   * Emit a Prometheus-operator ServiceMonitor (needs its CRD in the cluster).
   * @default false - pods carry prometheus.io/* scrape annotations instead
   */
  readonly serviceMonitor?: boolean;
  /** @default 'cluster.local' */
  readonly clusterDomain?: string;
}

/**
 * HuggingFace text-generation-inference as a StatefulSet with a per-replica model cache,
 * upgrades that drain instead of dropping requests, a startup probe for model load, a PDB and
 * metrics.
 */
export class TgiInferenceService extends Construct implements IGpuWorkload {
  /** The client Service: stable across versions, port 80. */
  readonly serviceName: string;
  /** The StatefulSet's name: `name` or `name-v<version>`. */
  readonly statefulSetName: string;
  /** The governing headless Service. */
  readonly headlessServiceName: string;
  /** `http://<service>.<namespace>.svc.<domain>` when the chart has a namespace, else `http://<service>`. */
  readonly url: string;
  /** The pod's grace period: at least preStop + drain + margin. */
  readonly terminationGracePeriodSeconds: number;
  /** The strictest Pod Security Standard the pod template meets. */
  readonly podSecurityLevel: PodSecurityLevel;
  /** The StatefulSet, for escape hatches through its typed API object. */
  readonly statefulSet: k8s.KubeStatefulSet;
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** @internal */
  readonly _securityUid: number | undefined;
  /** @internal */
  readonly _templateChangesRollOut = true;

  constructor(scope: Construct, id: string, props: TgiInferenceServiceProps) {
    super(scope, id);
    const v: Validator = new Validator('TgiInferenceService', id);

    const name = this.statefulSetName = statefulSetName(v, props.name, props.version);
    this.serviceName = props.name;
    this.headlessServiceName = `${name}-headless`;
    const modelId = v.nonEmpty('modelId', props.modelId);
    const replicas = v.wholeNumber('replicas', props.replicas ?? 1, 1);
    const gpus = v.wholeNumber('gpusPerReplica', props.gpusPerReplica ?? 1, 1);
    const image = v.nonEmpty('image', props.image ?? TGI_DEFAULT_IMAGE);
    const host = defaultHostResources(gpus);
    const cpu = v.positive('cpu', props.cpu ?? host.cpu);
    const memory = v.positiveSize('memory', props.memory ?? host.memory);
    const shm = v.sharedMemory(props.sharedMemory ?? Size.gibibytes(1), memory);
    const clusterDomain = v.dnsSubdomain('clusterDomain', props.clusterDomain ?? 'cluster.local');

    const preStop = v.seconds('preStopSleep', props.preStopSleep ?? Duration.seconds(DEFAULT_PRESTOP_SLEEP_SECONDS), 0);
    const drain = v.seconds('drainTimeout', props.drainTimeout ?? Duration.seconds(TGI_DRAIN_SECONDS), 1);
    const grace = v.seconds('terminationGracePeriod', props.terminationGracePeriod ?? Duration.seconds(DEFAULT_TGI_GRACE_SECONDS), 1);
    const needed = preStop + drain + TERMINATION_MARGIN_SECONDS;
    if (grace < needed) {
      v.fail('terminationGracePeriod', `must be at least preStopSleep + drainTimeout + margin = ${preStop}s + ${drain}s + ${TERMINATION_MARGIN_SECONDS}s = ${needed}s, or SIGKILL cuts the drain short`, Duration.seconds(grace));
    }
    this.terminationGracePeriodSeconds = grace;
    const loadBudget = v.seconds('maxModelLoadTime', props.maxModelLoadTime ?? Duration.seconds(DEFAULT_MAX_MODEL_LOAD_SECONDS), 60);

    const tgiEnv: k8s.EnvVar[] = [];
    const setEnv = (key: string, value: string | number | undefined) => {
      if (value !== undefined) tgiEnv.push({ name: key, value: String(value) });
    };
    setEnv('MODEL_ID', modelId);
    setEnv('REVISION', props.revision);
    setEnv('NUM_SHARD', gpus);
    setEnv('QUANTIZE', props.quantize);
    const tokens = (prop: string, value: number | undefined) => (value === undefined ? undefined : v.wholeNumber(prop, value, 1));
    setEnv('MAX_CONCURRENT_REQUESTS', tokens('maxConcurrentRequests', props.maxConcurrentRequests));
    const maxInput = tokens('maxInputTokens', props.maxInputTokens);
    const maxTotal = tokens('maxTotalTokens', props.maxTotalTokens);
    const maxPrefill = tokens('maxBatchPrefillTokens', props.maxBatchPrefillTokens);
    if (maxInput !== undefined && maxTotal !== undefined && maxInput >= maxTotal) {
      v.fail('maxInputTokens', `must be less than maxTotalTokens (${maxTotal}), which counts input and generated tokens`, maxInput);
    }
    if (maxInput !== undefined && maxPrefill !== undefined && maxPrefill < maxInput) {
      v.fail('maxBatchPrefillTokens', `must be at least maxInputTokens (${maxInput}), or no full-length prompt can be prefilled`, maxPrefill);
    }
    setEnv('MAX_INPUT_TOKENS', maxInput);
    setEnv('MAX_TOTAL_TOKENS', maxTotal);
    setEnv('MAX_BATCH_PREFILL_TOKENS', maxPrefill);
    setEnv('GRACEFUL_TERMINATION_TIMEOUT', drain);
    setEnv('PORT', TGI_PORT);
    // The runtime sets HOSTNAME to the pod name, which TGI would try to bind to.
    setEnv('HOSTNAME', '0.0.0.0');
    setEnv('HF_HOME', MODEL_CACHE_PATH);
    setEnv('HUGGINGFACE_HUB_CACHE', `${MODEL_CACHE_PATH}/hub`);
    if (props.hfTokenSecret) {
      v.dnsSubdomain('hfTokenSecret.name', props.hfTokenSecret.name);
      v.nonEmpty('hfTokenSecret.key', props.hfTokenSecret.key);
      tgiEnv.push({ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: props.hfTokenSecret.name, key: props.hfTokenSecret.key } } });
    }

    const { identity, level, uid } = resolveProcessIdentity(v, { runAsRoot: props.runAsRoot ?? true, runAsUser: props.runAsUser });
    this.podSecurityLevel = level;
    this._securityUid = uid;

    const { labels, selector } = labelSet({ name: props.name, instance: name, component: COMPONENT });

    const shmParts = shmVolume(shm);
    const scratch = scratchSpace(TGI_HOME);
    const cache = (props.modelCache ?? ModelCache.persistentClaim({ size: Size.gibibytes(100) }))._bind(v);
    const volumes: k8s.Volume[] = [shmParts.volume, ...scratch.volumes, ...(cache.volume ? [cache.volume] : [])];
    const mounts: k8s.VolumeMount[] = [shmParts.mount, ...scratch.mounts, { name: cache.volumeName, mountPath: MODEL_CACHE_PATH }];

    const health = (extra: Partial<k8s.Probe>): k8s.Probe => ({ httpGet: { path: '/health', port: k8s.IntOrString.fromString('http') }, ...extra });
    const main = {
      name: CONTAINER,
      image,
      imagePullPolicy: 'IfNotPresent', // a multi-GB image: pull once per node and tag
      ...(props.extraArgs ? { args: props.extraArgs } : {}),
      ports: [{ name: 'http', containerPort: TGI_PORT, protocol: 'TCP' }],
      env: [...tgiEnv, ...scratch.env, { name: 'OUTLINES_CACHE_DIR', value: `${TGI_HOME}/.cache/outlines` }],
      resources: gpuResources({ gpus, cpu: k8s.Quantity.fromString(String(cpu)), memory }),
      volumeMounts: mounts,
      securityContext: containerSecurityContext(identity),
      // The HTTP port stays closed while weights download and load: only the startup probe waits.
      startupProbe: health({ periodSeconds: STARTUP_PERIOD_SECONDS, timeoutSeconds: 5, failureThreshold: Math.ceil(loadBudget / STARTUP_PERIOD_SECONDS) }),
      readinessProbe: health({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3, successThreshold: 1 }),
      // A busy server answers /health slowly; only a server that fails for 3 minutes is restarted.
      livenessProbe: health({ periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 6 }),
      lifecycle: { preStop: { exec: { command: ['sleep', String(preStop)] } } },
    };

    this._podTemplate = new PodTemplate(labels, main, {
      ...POD_HARDENING,
      terminationGracePeriodSeconds: grace,
      securityContext: podSecurityContext(identity),
      tolerations: gpuTolerations(),
      ...(props.nodeSelector ? { nodeSelector: props.nodeSelector } : {}),
      // Spread replicas over nodes so one node drain or failure takes one replica; ScheduleAnyway
      // because GPU nodes are scarce and a skewed placement beats a Pending replica.
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } }],
      volumes,
    });
    this._podTemplate.annotate('prometheus.io/scrape', 'true');
    this._podTemplate.annotate('prometheus.io/port', String(TGI_PORT));
    this._podTemplate.annotate('prometheus.io/path', '/metrics');

    // The ServiceMonitor finds the per-pod endpoints through this label, never the client Service,
    // which would scrape the same pods a second time.
    const headlessLabels = { ...labels, [PER_POD_ENDPOINTS_LABEL]: 'true' };
    headlessService(this, 'Headless', {
      name: this.headlessServiceName, labels: headlessLabels, selector,
      ports: [{ name: 'http', port: TGI_PORT, targetPort: k8s.IntOrString.fromString('http') }],
    });

    // Clients use one Service across versions: it selects every version of this name, so during
    // a version bump both StatefulSets serve until the old one is deleted.
    const clientSelector = { [LABEL_NAME]: props.name, [LABEL_COMPONENT]: COMPONENT };
    const clientLabels = workloadLabels({ name: props.name, instance: props.name, component: COMPONENT });
    new k8s.KubeService(this, 'Service', {
      metadata: { name: this.serviceName, labels: clientLabels },
      spec: {
        type: 'ClusterIP',
        selector: clientSelector,
        ports: [{ name: 'http', port: 80, targetPort: k8s.IntOrString.fromString('http'), protocol: 'TCP' }],
      },
    });
    const namespace = Chart.of(this).namespace;
    this.url = namespace ? `http://${this.serviceName}.${namespace}.svc.${clusterDomain}` : `http://${this.serviceName}`;

    this.statefulSet = new k8s.KubeStatefulSet(this, 'Resource', {
      metadata: { name, labels },
      spec: {
        serviceName: this.headlessServiceName,
        replicas,
        // Parallel only changes scaling (all replicas start at once); it is immutable, so it is
        // set from creation. Rolling updates still replace one pod at a time.
        podManagementPolicy: 'Parallel',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
        selector: { matchLabels: selector },
        template: this._podTemplate.toTemplate(),
        ...(cache.claimTemplate ? { volumeClaimTemplates: [{ ...cache.claimTemplate, metadata: { ...cache.claimTemplate.metadata, labels } }] } : {}),
        // A model cache is re-downloadable: delete claims with the StatefulSet or on scale-down.
        ...(cache.claimTemplate ? { persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' } } : {}),
      },
    });

    // maxUnavailable 1 keeps n-1 serving while replicas change. With one replica it still lets a
    // drain evict the pod (a short outage) instead of blocking node maintenance forever.
    podDisruptionBudget(this, 'Budget', { name, labels, selector, budget: DisruptionBudget.maxUnavailable(1) });

    if (props.serviceMonitor) {
      new ApiObject(this, 'ServiceMonitor', {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name, labels },
        spec: {
          selector: { matchLabels: { ...selector, [PER_POD_ENDPOINTS_LABEL]: 'true' } },
          endpoints: [{ port: 'http', path: '/metrics', interval: '30s' }],
        },
      });
    }
  }
}
