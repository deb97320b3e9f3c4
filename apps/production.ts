import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-32';
import { Construct } from 'constructs';
import {
  EnvValue,
  GpuTrainingStatefulSet,
  InferenceServiceMonitoring,
  Rdma,
  TgiInferenceService,
  TrainingMonitoring,
} from '../src';

/**
 * A production cluster, with no JSON patch: GPU nodes in a pool tainted `sku=gpu:NoSchedule` and
 * labelled by product, images from a private NGC registry, AWS access through IRSA (an annotated
 * ServiceAccount; the pod identity webhook injects its own token, so the API token stays
 * unmounted), a priority class per workload, EFA with its libfabric settings and Guaranteed QoS for
 * the trainer, and
 * pod labels for cost reports.
 */
export class ProductionChart extends Chart {
  readonly trainer: GpuTrainingStatefulSet;
  readonly tgi: TgiInferenceService;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    const gpuPool = {
      tolerations: [{ key: 'sku', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      imagePullSecrets: ['ngc-pull'],
      labels: { team: 'nlp', 'cost-center': 'research' },
    };

    new k8s.KubeServiceAccount(this, 'trainer-sa', {
      metadata: {
        name: 'llm-trainer',
        annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/llm-trainer' },
      },
      automountServiceAccountToken: false,
    });
    this.trainer = new GpuTrainingStatefulSet(this, 'trainer', {
      name: 'llm-pretrain',
      image: 'nvcr.io/nvidia/pytorch:24.08-py3',
      gpusPerPod: 8,
      replicas: 4,
      command: ['torchrun'],
      args: ['/workspace/train.py', '--checkpoint-dir', '/checkpoints'],
      storage: { size: Size.gibibytes(500), storageClassName: 'gp3' },
      memory: Size.gibibytes(640),
      cpu: 88,
      guaranteedQos: true,
      // p5.48xlarge: 8 H100 and 32 EFA interfaces; the pod takes the whole node, so all 32.
      rdma: Rdma.efa(32),
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
      env: { WANDB_API_KEY: EnvValue.fromSecretKey('wandb', 'api-key'), AWS_REGION: 'us-east-1' },
      volumes: [
        {
          volume: { name: 'datasets', persistentVolumeClaim: { claimName: 'datasets', readOnly: true } },
          mountPath: '/datasets',
          readOnly: true,
        },
      ],
      pod: { ...gpuPool, serviceAccountName: 'llm-trainer', priorityClassName: 'training-high' },
    });

    this.tgi = new TgiInferenceService(this, 'tgi', {
      name: 'chat',
      modelId: 'meta-llama/Llama-3.1-8B-Instruct',
      image: 'nvcr.io/myorg/text-generation-inference:3.3.7',
      replicas: 2,
      hfTokenSecret: { name: 'hf-token', key: 'token' },
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-L40S' },
      env: { HF_HUB_ENABLE_HF_TRANSFER: '1' },
      pod: { ...gpuPool, priorityClassName: 'serving-critical' },
    });

    new TrainingMonitoring(this, 'trainer-monitoring', this.trainer, { deadline: Duration.days(14) });
    new InferenceServiceMonitoring(this, 'chat-monitoring', this.tgi, { queueTimeTarget: Duration.seconds(1) });
  }
}

export function addProduction(app: App): ProductionChart {
  return new ProductionChart(app, 'production', { namespace: 'ml' });
}
