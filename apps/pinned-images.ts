import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  GpuTrainingJob,
  GpuTrainingStatefulSet,
  InferenceGateway,
  InferenceServiceMonitoring,
  NetworkAccess,
  NetworkPeer,
  Reload,
  RotatingGpuSecret,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
} from '../src';

/**
 * A private registry holding copies of the public images (docs/security.md, "Mirroring images"). The
 * digests are placeholders: pin the digest your mirror reports (`crane digest`, `docker buildx
 * imagetools inspect`), which is the upstream image's digest when the copy keeps the manifest.
 */
const MIRROR = 'registry.example.internal/mirror';
const pinned = (image: string, fill: string) => `${MIRROR}/${image}@sha256:${fill.repeat(64)}`;
const VLLM = pinned('vllm/vllm-openai:v0.31.0', 'a');
const SGLANG = pinned('lmsysorg/sglang:v0.5.20', 'b');
const TGI = pinned('huggingface/text-generation-inference:3.3.7', 'c');
const EPP = pinned('llm-d/llm-d-router-endpoint-picker:v0.10.0', 'd');
const BUSYBOX = pinned('busybox:1.36.1', 'e');
const ROTATOR = `registry.example.internal/platform/cred-rotator@sha256:${'f'.repeat(64)}`;
const TRAINER = `registry.example.internal/ml/trainer@sha256:${'0'.repeat(64)}`;

/** The API server's endpoint as NetworkPolicies see it (after Service translation): the rotator writes there. */
const API_SERVER = NetworkPeer.cidr('10.0.0.1/32');
/** The credential provider the rotator calls. */
const PROVIDER = NetworkPeer.cidr('203.0.113.0/24');

/**
 * A regulated cluster: every image the library runs is pulled from a private mirror by digest (the
 * engines and their download init containers, the Endpoint Picker, the reload sidecars of each mode,
 * the rotator, the trainers), every workload has its NetworkPolicy (serving pods admit the gateway's
 * data plane and the picker on the API port and Prometheus on metrics; trainers admit only their own
 * job; the rotator reaches only the API server, its provider and DNS), and the servers require an API key.
 */
export class PinnedImagesChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'regulated', ...props });
    const serving = {
      name: 'qwen',
      modelId: 'Qwen/Qwen2.5-7B-Instruct',
      revision: 'a09a35458c702b33eeacc393d103063234e8bc28',
      modelSize: Size.gibibytes(16),
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      apiKeySecret: { name: 'qwen-api-key', key: 'key' },
      port: 8000,
      networkPolicy: NetworkAccess.restricted({
        clients: [NetworkPeer.namespace('gateway-system')],
        monitoringNamespace: 'monitoring',
      }),
    };
    const vllm = new VllmInferenceService(this, 'vllm', { ...serving, version: 1, image: VLLM });
    const sglang = new SglangInferenceService(this, 'sglang', { ...serving, version: 2, image: SGLANG });
    new InferenceGateway(this, 'gateway', {
      name: 'qwen',
      services: [vllm, sglang],
      gateway: { name: 'inference-gateway', namespace: 'gateway-system' },
      endpointPickerImage: EPP,
    });
    // Alerts and a dashboard run no image: nothing to pin.
    new InferenceServiceMonitoring(this, 'monitoring', vllm);
    new TgiInferenceService(this, 'tgi', {
      name: 'qwen-tgi',
      modelId: 'Qwen/Qwen2.5-7B-Instruct',
      modelSize: Size.gibibytes(16),
      image: TGI,
      apiKeySecret: { name: 'qwen-api-key', key: 'key' },
    });

    const trainer = new GpuTrainingStatefulSet(this, 'trainer', {
      name: 'pinned-trainer',
      image: TRAINER,
      replicas: 2,
      gpusPerPod: 1,
      args: ['train.py'],
    });
    new GpuTrainingJob(this, 'job', {
      name: 'pinned-job',
      image: TRAINER,
      nodes: 2,
      gpusPerPod: 1,
      args: ['train.py'],
    });

    const rotation = {
      image: ROTATOR,
      every: Duration.hours(6),
      credentialTtl: Duration.hours(24),
      egress: [API_SERVER, PROVIDER],
    };
    // One rotating secret per reload mode that runs a sidecar: each sidecar image pinned.
    const modes: Array<[string, Reload]> = [
      ['sync', Reload.sync({ image: BUSYBOX })],
      ['http', Reload.httpPost('http://localhost:8080/-/reload', { image: BUSYBOX })],
      ['exec', Reload.exec(['/bin/sh', '-c', 'kill -HUP 1'], { image: BUSYBOX })],
      ['signal', Reload.signal('SIGHUP', { process: 'python3', image: BUSYBOX, exposeWorkloadToSidecar: true })],
    ];
    for (const [mode, onRotation] of modes) {
      const secret = new RotatingGpuSecret(this, `${mode}-secret`, { name: `pinned-${mode}`, rotation });
      secret.mountInto(trainer, { path: `/etc/${mode}`, onRotation });
    }
  }
}

export function addPinnedImages(app: App): PinnedImagesChart {
  return new PinnedImagesChart(app, 'pinned-images');
}
