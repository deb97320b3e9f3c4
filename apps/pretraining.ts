import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuTrainingJob, Rdma, TrainingMonitoring } from '../src';

/**
 * A finite pre-training run as a JobSet admitted by Kueue: 4 p5.48xlarge nodes (8 H100 and 32 EFA
 * interfaces each) placed in one topology block by Kueue's topology-aware scheduling, checkpoints on
 * a ReadWriteMany claim, whole-gang restarts (3; a preemption or drain is not counted, a launcher
 * the image cannot run fails the run at once), a 72 h deadline per attempt, and the GPUs and quota released when the
 * run completes or fails; alerts and a dashboard from the job's own numbers.
 */
export class PretrainingChart extends Chart {
  readonly job: GpuTrainingJob;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    this.job = new GpuTrainingJob(this, 'pretrain', {
      // Not `llm-pretrain`, the production app's StatefulSet trainer in the same namespace: its headless
      // Service has that name, which the JobSet controller would give the JobSet's own.
      name: 'llm-pretrain-job',
      image: 'nvcr.io/nvidia/pytorch:24.08-py3',
      gpusPerPod: 8,
      nodes: 4,
      args: ['/workspace/train.py', '--checkpoint-dir', '/checkpoints/llm-pretrain-job'],
      checkpoints: { claimName: 'training-checkpoints' },
      rdma: Rdma.efa(32),
      memory: Size.gibibytes(640),
      cpu: 88,
      queueName: 'gpu-training',
      priorityClass: 'research-high',
      // A level of the cluster's Kueue Topology (the label of Kueue's own examples).
      topology: { required: 'cloud.provider.com/topology-block' },
      maxRestarts: 3,
      activeDeadline: Duration.hours(72),
      gpuConfig: { NCCL_DEBUG: 'WARN', TORCH_NCCL_ASYNC_ERROR_HANDLING: '1' },
      nodeSelector: { 'node.kubernetes.io/instance-type': 'p5.48xlarge' },
    });
    // Alerts when the run fails, restarts its gang, waits for a node in the rendezvous, hangs at exit
    // or outlives its deadline; thresholds from the job's own restarts, grace period and deadline.
    new TrainingMonitoring(this, 'monitoring', this.job);
  }
}

export function addPretraining(app: App): PretrainingChart {
  return new PretrainingChart(app, 'pretraining', { namespace: 'ml' });
}
