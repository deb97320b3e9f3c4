import type { GuardOptions } from './diff';
import type { KubeObject } from './normalize';
import type { PlanResult } from './plan';

/**
 * What an update from `before` (a live export or the last applied manifests) to `after` (the new
 * manifests) will do: which workloads restart and why, how many pods, how long (the drain and
 * startup budgets the manifests carry, sequenced by the update strategy), the GPUs held during the
 * rollout, the objects a pruning sync deletes, and the guard's findings. Throws GuardInputError as
 * `guard` does.
 */
export function plan(before: KubeObject[], after: KubeObject[], options?: GuardOptions): PlanResult {
  // Required here: the engine loads only when a plan is made.
  return (require('./plan') as typeof import('./plan')).plan(before, after, options);
}
