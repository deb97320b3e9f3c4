import type { KubeObject } from './normalize';

/** Errors are changes the API server rejects; warnings need attention but apply. */
export type Severity = 'error' | 'warning';

/** One thing the guard found. Every key is present in `--json` output (null where absent). */
export interface Finding {
  readonly severity: Severity;
  /**
   * What was found: `immutable-field` or `invalid-field` (errors: a field that may not change, or a
   * new value the server refuses), `object-removed`, `kind-moved`, `statefulset-replaced` or
   * `ondelete-replicas` (warnings).
   */
  readonly code: string;
  /** `kind/namespace/name`, or `kind/name` without a namespace. */
  readonly object: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** The field path the server names, e.g. `spec.volumeClaimTemplates`; empty for a whole object. */
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
  /** The API server's words for the rejection (for the target version), or the warning. */
  readonly message: string;
  readonly remedy: string;
  /** The Kubernetes function the rule comes from (errors only). */
  readonly source?: string;
}

/** How many objects the guard read from each side. */
export interface GuardObjectCounts {
  readonly before: number;
  readonly after: number;
}

/**
 * What the guard found. `serverVersion` and `objects` are read like any field but are not
 * enumerable, so a result still deep-equals `{ findings, errors, warnings }`.
 */
export interface GuardResult {
  /** The server version the rules were taken for, `1.NN`. */
  readonly serverVersion: string;
  /** The Kueue version whose webhook rules were applied, as given (`0.NN` or `0.NN.P`). */
  readonly kueueVersion: string;
  readonly objects: GuardObjectCounts;
  /**
   * `group/Kind` of the custom resources compared with no CRD in the input or `--crds` and no rules of
   * the guard's own: their CEL transition rules were not checked.
   */
  readonly uncheckedKinds: readonly string[];
  readonly findings: Finding[];
  readonly errors: number;
  readonly warnings: number;
}

export interface GuardOptions {
  /**
   * The Kubernetes minor version of the API server that will receive the change, `1.NN`: rules and
   * messages differ between releases.
   * @default '1.32' (the library's API floor)
   */
  readonly serverVersion?: string;
  /**
   * The Kueue release installed on the cluster, `0.NN` (its newest patch) or `0.NN.P`: Kueue's
   * admission webhooks for StatefulSets, Jobs, JobSets and LeaderWorkerSets refuse more changes than
   * the API server (the queue name and priority class labels, replicas, the pod templates' resources
   * and scheduling fields), differently per release. Its rules apply to objects labelled
   * `kueue.x-k8s.io/queue-name`, and its label rules to any Job, JobSet or LeaderWorkerSet whose Kueue
   * labels change; other objects are unaffected.
   * @default '0.10' (the library's Kueue floor for StatefulSets, where `pod-group-serving` exists)
   */
  readonly kueueVersion?: string;
  /**
   * CustomResourceDefinitions whose `x-kubernetes-validations` rules (`self == oldSelf`) apply to
   * the custom resources compared, e.g. JobSet or LeaderWorkerSet CRDs installed apart from the
   * manifests. CRDs inside `before` or `after` are read too.
   * @default none beyond those in the inputs
   */
  readonly customResourceDefinitions?: KubeObject[];
  /**
   * The change is applied with server-side apply (`kubectl apply --server-side`, Argo CD's
   * `ServerSideApply=true`, Flux) rather than client-side `kubectl apply`. The two differ where
   * kubectl computes its patch on the client: an item of a merge-keyed list without its key
   * (an `env` entry without `name`) stops a client-side apply and not a server-side one.
   * @default false (client-side `kubectl apply`, the most common way manifests reach a cluster)
   */
  readonly serverSideApply?: boolean;
}

/**
 * Compares two sets of objects (before: the live export or the last applied manifests; after: the
 * new manifests) and reports every change the API server would reject on update (errors), and
 * objects left behind or replaced (warnings). Throws GuardInputError for an unsupported server
 * or Kueue version or an object that appears twice on one side.
 */
export function guard(before: KubeObject[], after: KubeObject[], options?: GuardOptions): GuardResult {
  // Required here: the engine, its rules and normalization load only when the guard runs.
  return (require('./engine') as typeof import('./engine')).runGuard(before, after, options);
}
