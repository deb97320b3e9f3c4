import { App, Chart, ChartProps, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuTrainingStatefulSet } from '../src';

/**
 * Seed 000 after the fix: the multi-GPU ONNX Runtime upgrade ships as version 2, a new
 * StatefulSet beside v1, with its `gpu-pvc` checkpoint claims, as a non-root pod.
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
      gpuConfig: { NCCL_DEBUG: 'WARN', NCCL_ASYNC_ERROR_HANDLING: '1' },
    });
  }
}

export function addTraining(app: App): TrainingChart {
  return new TrainingChart(app, 'onnx-trainer');
}
