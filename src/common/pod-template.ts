import { ApiObject } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { podSecurityLevel } from './pod-security';
import { PodSecurityLevel } from './security';
import { ANNOTATIONS_MAX_BYTES, annotationBytes, Validator } from '../validation/validate';

type MainContainer = k8s.Container & { env: k8s.EnvVar[]; volumeMounts: k8s.VolumeMount[] };
type MutablePodSpec = k8s.PodSpec & {
  containers: k8s.Container[];
  volumes: k8s.Volume[];
  initContainers?: k8s.Container[];
};

/**
 * The pod template of a workload, kept mutable until synthesis so that other constructs
 * (e.g. `RotatingGpuSecret.mountInto`) can add volumes, sidecars and annotations to it.
 * The StatefulSet holds references to these arrays and objects, and cdk8s reads them at synth.
 *
 * Every addition is checked against what is already there, because the API server refuses
 * duplicate volume names, container names and mount paths, and a pod volume named like a claim
 * template is silently replaced by the claim (`/dev/shm` on a network disk).
 */
export class PodTemplate {
  private readonly metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  readonly spec: MutablePodSpec;
  /** The container that runs the workload (trainer, model server). */
  readonly main: MainContainer;
  /** Whether the pod must be Guaranteed (`guaranteedQos`): containers added later request what they limit. */
  guaranteedQos = false;
  /** The annotations the user set, to refuse the construct setting them again (made when one is). */
  private userAnnotations?: Map<string, { v: Validator; value: string }>;
  /** Volume names the StatefulSet controller adds from its claim templates (made when one is). */
  private claimVolumes?: Set<string>;

  constructor(
    labels: Record<string, string>,
    main: MainContainer,
    spec: Omit<k8s.PodSpec, 'containers' | 'volumes'> & { volumes: k8s.Volume[] },
  ) {
    this.metadata = { labels };
    this.main = main;
    this.spec = { ...spec, containers: [main] };
  }

  get labels(): Readonly<Record<string, string>> {
    return this.metadata.labels;
  }

  /** Adds a pod-template label that no selector uses. */
  label(key: string, value: string): void {
    this.metadata.labels[key] = value;
  }

  /** Adds a pod-template annotation; changing its value rolls the pods under the update strategy. */
  annotate(key: string, value: string): void {
    // A user's annotation the construct then sets for its own mechanism would be silently replaced.
    const user = this.userAnnotations?.get(key);
    if (user)
      user.v.fail(`pod.annotations.${key}`, 'is set by the construct for its own mechanism: leave it out', user.value);
    (this.metadata.annotations ??= {})[key] = value;
    this.checkAnnotationSize();
  }

  /** A pod-template annotation from the user's `pod.annotations`: the construct may not set it too. */
  userAnnotate(v: Validator, key: string, value: string): void {
    this.annotate(key, value);
    (this.userAnnotations ??= new Map()).set(key, { v, value });
    this.checkAnnotationSize();
  }

  /**
   * The API server allows 256 KiB of annotations on the template, the construct's own included. Only
   * the user's can be large, so the user's prop is named.
   */
  private checkAnnotationSize(): void {
    const [user] = this.userAnnotations?.values() ?? [];
    if (!user || !this.metadata.annotations) return;
    const bytes = annotationBytes(this.metadata.annotations);
    if (bytes > ANNOTATIONS_MAX_BYTES)
      user.v.failDescribed(
        'pod.annotations',
        "must total at most 256 KiB with the construct's own pod annotations",
        `${bytes} bytes`,
      );
  }

  /** A claim template's name: the controller adds a volume of that name to every pod. */
  reserveClaimVolume(name: string, v: Validator, prop: string): void {
    if (this.hasVolume(name)) v.fail(prop, "must differ from the names of the pod's other volumes", name);
    (this.claimVolumes ??= new Set()).add(name);
  }

  /**
   * The strictest Pod Security Standard the pod meets as it is now: worked out when asked, so it
   * includes what was added after the construct (a reload sidecar, an init container).
   */
  securityLevel(): PodSecurityLevel {
    return podSecurityLevel(this.spec, this.metadata.annotations) as PodSecurityLevel;
  }

  /** Every volume name of the pod, claim templates included. */
  volumeNames(): Set<string> {
    return new Set([...this.spec.volumes.map(vol => vol.name), ...(this.claimVolumes ?? [])]);
  }

  /** Whether the pod has a volume of that name, claim templates included. */
  hasVolume(name: string): boolean {
    return this.claimVolumes?.has(name) === true || this.spec.volumes.some(vol => vol.name === name);
  }

  addVolume(volume: k8s.Volume, v?: Validator, prop = 'volume'): void {
    if (this.hasVolume(volume.name)) {
      const why = `must not reuse a volume name the pod already has (${[...this.volumeNames()].join(', ')})`;
      if (v) v.fail(prop, why, volume.name);
      throw new Error(`volume '${volume.name}' is already in the pod template`);
    }
    this.spec.volumes.push(volume);
  }

  /** Mounts a volume into a container, refusing a mount path the container already uses. */
  mount(container: k8s.Container, mount: k8s.VolumeMount, v: Validator, prop: string): void {
    v.absolutePath(prop, mount.mountPath);
    const mounts = ((container as { volumeMounts?: k8s.VolumeMount[] }).volumeMounts ??= []);
    const clash = mounts.find(m => m.mountPath === mount.mountPath);
    if (clash)
      v.fail(
        prop,
        `must not be a path container '${container.name}' already mounts (volume '${clash.name}' is there)`,
        mount.mountPath,
      );
    if (!this.hasVolume(mount.name)) v.fail(prop, 'must name a volume of the pod', mount.name);
    mounts.push(mount);
  }

  /** Paths the main container mounts, for messages. */
  mountPaths(container: k8s.Container = this.main): string[] {
    return (container.volumeMounts ?? []).map(m => m.mountPath);
  }

  private allContainers(): k8s.Container[] {
    return [...(this.spec.initContainers ?? []), ...this.spec.containers];
  }

  addContainer(container: k8s.Container, v?: Validator, prop = 'container'): void {
    this.checkContainerName(container, v, prop);
    this.checkPorts(container, v, prop.replace(/\.name$/, ''));
    this.spec.containers.push(container);
  }

  /**
   * The pod's containers share one network namespace: a second container on a port another one
   * listens on cannot bind it (torchrun's rendezvous store, the model server), and a second port of
   * one name leaves the Services and probes that find the port by name to pick one.
   */
  private checkPorts(container: k8s.Container, v: Validator | undefined, prop: string): void {
    const fail = (at: string, rule: string, got: unknown) => {
      if (v) v.fail(at, rule, got);
      throw new Error(`${at} ${rule} (got ${String(got)})`);
    };
    const taken = this.runningContainers().flatMap(c => (c.ports ?? []).map(p => ({ owner: c.name, port: p })));
    (container.ports ?? []).forEach((p, j) => {
      const clash = taken.find(
        t => t.port.containerPort === p.containerPort && (t.port.protocol ?? 'TCP') === (p.protocol ?? 'TCP'),
      );
      if (clash)
        fail(
          `${prop}.ports[${j}].containerPort`,
          `must differ from the port container '${clash.owner}' listens on: the pod's containers share one network namespace, so one of them could not bind it`,
          p.containerPort,
        );
      const named = p.name === undefined ? undefined : taken.find(t => t.port.name === p.name);
      if (named)
        fail(
          `${prop}.ports[${j}].name`,
          `must differ from the port names of container '${named.owner}': Services and probes find a port by name`,
          p.name,
        );
    });
  }

  /** Adds an init container; one with restartPolicy Always is a native sidecar, running beside the others. */
  addInitContainer(container: k8s.Container, v?: Validator, prop = 'initContainer'): void {
    this.checkContainerName(container, v, prop);
    if (isNativeSidecar(container)) this.checkPorts(container, v, prop.replace(/\.name$/, ''));
    (this.spec.initContainers ??= []).push(container);
  }

  /** The containers that run together: the regular ones and the native sidecars. */
  private runningContainers(): k8s.Container[] {
    return [...(this.spec.initContainers ?? []).filter(isNativeSidecar), ...this.spec.containers];
  }

  private checkContainerName(container: k8s.Container, v: Validator | undefined, prop: string): void {
    if (this.allContainers().some(c => c.name === container.name)) {
      if (v)
        v.fail(
          prop,
          `must not reuse a container name the pod already has (${this.allContainers()
            .map(c => c.name)
            .join(', ')})`,
          container.name,
        );
      throw new Error(`container '${container.name}' is already in the pod template`);
    }
  }

  /**
   * Sets a pod fsGroup if there is none, so that non-root sidecars can read group-readable volumes.
   * `OnRootMismatch` skips the recursive re-own of a large model cache or checkpoint volume on
   * every start once it is right.
   */
  ensureFsGroup(gid: number): void {
    const spec = this.spec as { securityContext?: k8s.PodSecurityContext };
    if (spec.securityContext?.fsGroup === undefined) {
      spec.securityContext = { ...spec.securityContext, fsGroup: gid, fsGroupChangePolicy: 'OnRootMismatch' };
    }
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

/** An init container with restartPolicy Always: it runs beside the main container and stops after it. */
export function isNativeSidecar(c: k8s.Container): boolean {
  return c.restartPolicy === 'Always';
}

/** Anything whose pods a secret can be mounted into. */
export interface IGpuWorkload {
  /**
   * @internal The object whose pod template `_podTemplate` is (a StatefulSet, a JobSet): the pods'
   * namespace is its namespace, and Stakater Reloader's annotation goes on it.
   */
  readonly _podOwner: ApiObject;
  /** @internal */
  readonly _podTemplate: PodTemplate;
  /** @internal */
  readonly _securityUid: number | undefined;
  /**
   * @internal Process names (as in /proc/<pid>/comm) that are really a known program in this pod,
   * e.g. `{ python3: 'torchrun' }` for `python3 -m torch.distributed.run`: a signal to the name
   * is judged as a signal to the program.
   */
  readonly _processAliases?: Readonly<Record<string, string>>;
  /**
   * @internal Whether a pod-template change reaches running pods by itself (RollingUpdate), or
   * only when the pods are deleted (OnDelete).
   */
  readonly _templateChangesRollOut: boolean;
  /**
   * @internal Why a pod-template change does not reach running pods, for the error that refuses
   * Reload.restart() (when `_templateChangesRollOut` is false).
   */
  readonly _templateChangesStay?: string;
  /**
   * @internal Every pod template a mounted Secret goes into, when there are several: a serving
   * group's leader (first) and workers.
   * @default [_podTemplate]
   */
  readonly _podTemplates?: readonly PodTemplate[];
}
