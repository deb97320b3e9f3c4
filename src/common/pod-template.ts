import { ApiObject } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';

/**
 * The pod template of a workload, kept mutable until synthesis so that other constructs
 * (e.g. `RotatingGpuSecret.mountInto`) can add volumes, sidecars and annotations to it.
 * The StatefulSet holds references to these arrays and objects, and cdk8s reads them at synth.
 */
export class PodTemplate {
  private readonly metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  readonly spec: k8s.PodSpec & { containers: k8s.Container[]; volumes: k8s.Volume[] };
  /** The container that runs the workload (trainer, TGI). */
  readonly main: k8s.Container & { env: k8s.EnvVar[]; volumeMounts: k8s.VolumeMount[] };

  constructor(labels: Record<string, string>, main: k8s.Container & { env: k8s.EnvVar[]; volumeMounts: k8s.VolumeMount[] }, spec: Omit<k8s.PodSpec, 'containers' | 'volumes'> & { volumes: k8s.Volume[] }) {
    this.metadata = { labels };
    this.main = main;
    this.spec = { ...spec, containers: [main] };
  }

  get labels(): Readonly<Record<string, string>> {
    return this.metadata.labels;
  }

  /** Adds a pod-template annotation; changing its value rolls the pods under the update strategy. */
  annotate(key: string, value: string): void {
    (this.metadata.annotations ??= {})[key] = value;
  }

  addVolume(volume: k8s.Volume): void {
    if (this.spec.volumes.some(v => v.name === volume.name)) {
      throw new Error(`volume '${volume.name}' is already in the pod template`);
    }
    this.spec.volumes.push(volume);
  }

  addContainer(container: k8s.Container): void {
    if (this.spec.containers.some(c => c.name === container.name)) {
      throw new Error(`container '${container.name}' is already in the pod template`);
    }
    this.spec.containers.push(container);
  }

  addInitContainer(container: k8s.Container): void {
    const spec = this.spec as { initContainers?: k8s.Container[] };
    (spec.initContainers ??= []).push(container);
  }

  /** Sets a pod fsGroup if there is none, so that non-root sidecars can read group-readable volumes. */
  ensureFsGroup(gid: number): void {
    const spec = this.spec as { securityContext?: k8s.PodSecurityContext };
    if (spec.securityContext?.fsGroup === undefined) spec.securityContext = { ...spec.securityContext, fsGroup: gid };
  }

  /** Lets containers see and signal each other's processes (needed for Reload.signal). */
  shareProcessNamespace(): void {
    (this.spec as { shareProcessNamespace?: boolean }).shareProcessNamespace = true;
  }

  /** The object a workload puts in `spec.template`. */
  toTemplate(): k8s.PodTemplateSpec {
    return { metadata: this.metadata, spec: this.spec };
  }
}

/** Anything whose pods a secret can be mounted into. */
export interface IGpuWorkload {
  /** The name the workload's objects are derived from (the versioned StatefulSet name). */
  readonly statefulSetName: string;
  /** The StatefulSet, e.g. for annotations. */
  readonly statefulSet: ApiObject;
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** @internal */
  readonly _securityUid: number | undefined;
}
