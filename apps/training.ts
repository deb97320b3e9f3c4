import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuTrainingStatefulSet, TrainingMonitoring } from '../src';

/**
 * Seed 000 after the fix: the multi-GPU ONNX Runtime upgrade ships as version 2, a new
 * StatefulSet beside v1, with its `gpu-pvc` checkpoint claims, as a non-root pod. It behaves as
 * one job: a failed rank restarts every rank's workers together (up to 3 times), a finished run
 * stays finished (its completion marker is on the checkpoint claims), and torchrun gets the whole
 * grace period to checkpoint on SIGTERM.
 */
export class TrainingChart extends Chart {
  readonly trainer: GpuTrainingStatefulSet;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    this.trainer = new GpuTrainingStatefulSet(this, 'trainer', {
      name: 'onnx-trainer',
      image: 'onnxruntime/multi-gpu:1.3.0',
      version: 2,
      replicas: 3,
      gpusPerPod: 2,
      storage: { claimName: 'gpu-pvc', size: Size.gibibytes(100), mountPath: '/checkpoints' },
      command: ['torchrun'],
      args: ['train.py'],
      maxRestarts: 3,
      // TORCH_NCCL_ASYNC_ERROR_HANDLING is the current name (NCCL_ASYNC_ERROR_HANDLING is the
      // deprecated one): a hung collective aborts the process, so torchrun can restart the gang.
      gpuConfig: { NCCL_DEBUG: 'WARN', TORCH_NCCL_ASYNC_ERROR_HANDLING: '1' },
    });
    // The seed's job that could not start: alerts when a rank is missing from the rendezvous.
    new TrainingMonitoring(this, 'monitoring', this.trainer);
  }
}

export function addTraining(app: App): TrainingChart {
  return new TrainingChart(app, 'onnx-trainer');
}
