import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { kindOf, ManifestObject } from './manifest-object';
import { podControllerRules } from './stateful-set';

/**
 * The Deployment of every construct that makes one. A JsonPatch applies to its API JSON (see
 * ManifestObject); the patched object must keep the rules a patch most easily breaks (the
 * StatefulSet's: quantities, a selector its template matches, unique names, extended resources).
 */
export const DEPLOYMENT = kindOf(k8s.KubeDeployment.GVK, k8s.toJson_KubeDeploymentProps, podControllerRules);

/** A Deployment that replaces its pods by surge: a new pod is Ready before an old one goes. */
export interface SurgeDeploymentOptions {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  /** Undefined when an autoscaler owns the count: an apply then never resets what it chose. */
  readonly replicas?: number;
  readonly template: k8s.PodTemplateSpec;
  /**
   * How long one replacement may take before the rollout is reported failed
   * (`ProgressDeadlineExceeded`): at least the time a new pod takes to be Ready plus an old one's drain.
   */
  readonly progressDeadlineSeconds: number;
}

/**
 * `maxSurge: 1, maxUnavailable: 0`: an update starts one new pod beside the old ones and removes an
 * old pod only once the new one is Ready (deployment/util.go MaxUnavailable / MaxSurge), so a
 * one-replica service keeps serving through every change. A pod on a dead node is replaced as soon
 * as it is marked for deletion, with no force-delete (a StatefulSet waits for the old pod to be gone,
 * for its identity). The surge needs room for one more pod: one more replica's GPUs during an update.
 */
export function surgeDeployment(scope: Construct, id: string, o: SurgeDeploymentOptions): ManifestObject {
  return new ManifestObject(scope, id, DEPLOYMENT, {
    metadata: { name: o.name, labels: o.labels },
    spec: {
      ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
      strategy: {
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: k8s.IntOrString.fromNumber(1), maxUnavailable: k8s.IntOrString.fromNumber(0) },
      },
      progressDeadlineSeconds: o.progressDeadlineSeconds,
      selector: { matchLabels: o.selector },
      template: o.template,
    },
  });
}
