import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { KIND, ManifestObject } from './manifest-object';
import { Validator } from '../validation/validate';

/** A choice of PodDisruptionBudget. */
export class DisruptionBudget {
  /** At most `n` pods may be evicted voluntarily at once; survives replica changes. */
  static maxUnavailable(n: number): DisruptionBudget {
    return new DisruptionBudget('maxUnavailable', n);
  }

  /** At least `n` pods must stay available. */
  static minAvailable(n: number): DisruptionBudget {
    return new DisruptionBudget('minAvailable', n);
  }

  /**
   * No voluntary eviction of a healthy pod: node drains and autoscaler scale-downs wait until the
   * pods are deleted by hand. Right for a gang-scheduled job, where losing one rank kills the run.
   */
  static blockVoluntaryEvictions(): DisruptionBudget {
    return new DisruptionBudget('maxUnavailable', 0);
  }

  /** No PodDisruptionBudget at all. */
  static none(): DisruptionBudget {
    return new DisruptionBudget(undefined, 0);
  }

  private constructor(
    /** @internal */ readonly _field: 'maxUnavailable' | 'minAvailable' | undefined,
    /** @internal */ readonly _count: number,
  ) {}

  /** @internal */
  _describe(): string {
    return this._field === undefined ? 'none' : `${this._field}: ${this._count}`;
  }
}

export interface PodDisruptionBudgetOptions {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly budget: DisruptionBudget;
  /** With `replicas`, checks the budget against the workload, naming `prop` in errors. */
  readonly validator?: Validator;
  /** The workload's pods: a `minAvailable` above it would block every eviction forever. */
  readonly replicas?: number;
  /** @default 'disruptionBudget' */
  readonly prop?: string;
}

/**
 * Refuses a budget that is not a `DisruptionBudget`, a count that is not a whole number, and a
 * `minAvailable` above the replica count (the PDB could never be satisfied, so even a broken pod's
 * drain would wait on it; `maxUnavailable: 0` is the way to block evictions on purpose).
 */
export function validateDisruptionBudget(v: Validator, prop: string, budget: DisruptionBudget, replicas: number): void {
  if (!(budget instanceof DisruptionBudget)) {
    v.fail(
      prop,
      'must be made with DisruptionBudget.maxUnavailable(), minAvailable(), blockVoluntaryEvictions() or none()',
      budget,
    );
  }
  if (budget._field === undefined) return;
  v.wholeNumber(`${prop} (${budget._field})`, budget._count, 0);
  if (budget._field === 'minAvailable' && budget._count > replicas) {
    v.fail(
      prop,
      `minAvailable must be at most replicas (${replicas}); use DisruptionBudget.blockVoluntaryEvictions() to block every eviction`,
      budget._count,
    );
  }
}

/**
 * A policy/v1 PodDisruptionBudget. `unhealthyPodEvictionPolicy: AlwaysAllow` lets drains evict
 * pods that are not Ready anyway, so a crash-looping pod never blocks a node upgrade.
 */
export function podDisruptionBudget(
  scope: Construct,
  id: string,
  o: PodDisruptionBudgetOptions,
): ApiObject | undefined {
  if (o.validator && o.replicas !== undefined)
    validateDisruptionBudget(o.validator, o.prop ?? 'disruptionBudget', o.budget, o.replicas);
  const field = o.budget._field;
  if (field === undefined) return undefined;
  return new ManifestObject(scope, id, KIND.PodDisruptionBudget, {
    metadata: { name: o.name, labels: o.labels },
    spec: {
      [field]: k8s.IntOrString.fromNumber(o.budget._count),
      selector: { matchLabels: o.selector },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  });
}
