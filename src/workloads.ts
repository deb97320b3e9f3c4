import type { InferenceService } from './inference/inference-service';
import type { GpuTrainingJob } from './training/gpu-training-job';
import type { GpuTrainingStatefulSet } from './training/gpu-training-stateful-set';

/**
 * A workload of this library that other constructs attach to (`RotatingGpuSecret.mountInto`). A
 * union of the library's classes, not an interface: what they share lives in the library, so an
 * object of another class could type-check and then fail at synth.
 */
export type GpuWorkload = GpuTrainingStatefulSet | GpuTrainingJob | InferenceService;
