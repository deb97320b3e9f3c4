import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  InferenceGateway,
  InferenceGatewayMonitoring,
  InferenceServiceMonitoring,
  KvCacheOffload,
  SglangInferenceService,
  VllmInferenceService,
} from '../src';

const BASE_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
/**
 * Two published adapters of Llama 3.1 8B Instruct, the ones SGLang's LoRA guide serves
 * (docs/advanced_features/lora). Their ranks were not read here: maxLoraRank 64 covers them unless one is larger,
 * and then its download init container stops with the rank it found, before the server starts.
 */
const ADAPTERS = [
  { name: 'fact-generation', modelId: 'algoprog/fact-generation-llama-3.1-8b-instruct-lora' },
  { name: 'humaneval-json', modelId: 'Nutanix/Meta-Llama-3.1-8B-Instruct_SFT_lora_4_alpha_16_humaneval_raw_json' },
];
/** The Gateway the cluster's implementation (Istio, kgateway, NGINX Gateway Fabric, GKE, ...) provides. */
const GATEWAY = { name: 'inference-gateway', namespace: 'gateway-system' };

/**
 * One model served by vLLM and by SGLang, each with the same two LoRA adapters, behind one InferencePool whose
 * Endpoint Picker routes each request by the servers' queues, KV-cache use and prefix affinity, and one HTTPRoute
 * under the cluster's Gateway. SGLang listens on vLLM's port, since a pool's target port applies to every pod.
 * Requests name the base model or an adapter in the OpenAI `model` field; `batch` requests (header
 * `x-llm-d-inference-objective: batch`, a negative priority) are refused (429) while the pool is saturated, and
 * the others admitted; `interactive` (10) is admitted as unnamed requests are (see InferenceObjectiveSpec).
 */
export class RoutingChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, { namespace: 'serving', ...props });
    const common = {
      name: 'llama',
      modelId: BASE_MODEL,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      modelSize: Size.gibibytes(15),
      loraAdapters: ADAPTERS,
      maxLoraRank: 64,
    };
    const vllm = new VllmInferenceService(this, 'vllm', {
      ...common,
      version: 1,
      replicas: 2,
      maxLoras: 2,
      // Shared system prompts and multi-turn chats: evicted prefixes wait in host memory instead of being recomputed.
      kvCacheOffload: KvCacheOffload.cpu(Size.gibibytes(32)),
    });
    const sglang = new SglangInferenceService(this, 'sglang', { ...common, version: 2, port: 8000 });
    new InferenceServiceMonitoring(this, 'vllm-monitoring', vllm);
    new InferenceServiceMonitoring(this, 'sglang-monitoring', sglang);
    const gateway = new InferenceGateway(this, 'gateway', {
      name: 'llama',
      services: [vllm, sglang],
      gateway: GATEWAY,
      objectives: [
        { name: 'interactive', priority: 10 },
        { name: 'batch', priority: -10 },
      ],
      // The picker's metrics, which its alerts read.
      serviceMonitor: true,
      // Saturated: interactive requests leave the picker's queue before unnamed ones, batch ones last.
      flowControl: {},
    });
    new InferenceGatewayMonitoring(this, 'gateway-monitoring', gateway);
  }
}

/**
 * A version bump that a pruning GitOps sync (Argo CD with pruning, Flux with `prune: true`) survives, as two
 * commits. Step one keeps `version: 1` in the output beside `version: 2`: the client Service and the pool select
 * both, so traffic moves to v2's pods as they become Ready. Step two, once v2 is Ready, drops v1. (Each step is in
 * its own namespace here only so that both snapshots come from one app.)
 */
export class BumpChart extends Chart {
  constructor(scope: Construct, id: string, versions: number[], props: ChartProps = {}) {
    super(scope, id, props);
    const services = versions.map(
      version =>
        new VllmInferenceService(this, `v${version}`, {
          name: 'llama',
          modelId: BASE_MODEL,
          hfTokenSecret: { name: 'hf-token', key: 'token' },
          modelSize: Size.gibibytes(15),
          version,
          // v2 changes the context length: a new StatefulSet, since the old pods keep serving until it is Ready.
          maxModelLen: version === 1 ? 8192 : 16384,
        }),
    );
    services.forEach(service => new InferenceServiceMonitoring(this, `${service.node.id}-monitoring`, service));
    new InferenceGateway(this, 'gateway', { name: 'llama', services, gateway: GATEWAY });
  }
}

export function addRouting(app: App): void {
  new RoutingChart(app, 'routing');
  new BumpChart(app, 'bump-step-1', [1, 2], { namespace: 'bump-step-1' });
  new BumpChart(app, 'bump-step-2', [2], { namespace: 'bump-step-2' });
}
