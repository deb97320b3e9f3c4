import { ApiObject, GroupVersionKind, JsonPatch, Lazy } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { outputErrors } from '../checks/output-rules';
import { oldestApiFor } from '../validation/kube-versions';
import { registerObject } from '../checks/unique-objects';
import { ConfigurationError } from '../validation/validate';

/**
 * A kind the library makes: its group, version and kind, the cdk8s-plus-32 converter from the
 * typed props the library composes to the API JSON, and the API server's rules beyond the schema
 * that a JsonPatch most easily breaks.
 */
export interface ManifestKind<P> {
  readonly gvk: GroupVersionKind;
  readonly toJson: (props: P) => Record<string, unknown> | undefined;
  readonly afterPatch?: (json: any) => string[];
}

/** The typed props of every kind: metadata plus the kind's own top-level fields. */
type TypedProps = { readonly metadata?: k8s.ObjectMeta };

/**
 * One object the library makes, as a plain cdk8s `ApiObject` whose body is the Kubernetes API JSON.
 *
 * The library composes objects from cdk8s-plus-32's typed structs (`k8s.PodSpec`, quantities as
 * `k8s.Quantity`), and converts them with cdk8s-plus-32's exported `toJson_*` converters when the
 * object is synthesized, so what other constructs add later (`RotatingGpuSecret.mountInto` adds a
 * volume and a sidecar) is in the output. Because the body handed to cdk8s is already API JSON,
 * cdk8s applies a JsonPatch to the JSON users read in the output: cdk8s-plus-32's own `Kube*`
 * classes apply it to the typed props before converting them, where a patched `targetPort: 8080`
 * or `maxUnavailable: 0` (a plain number where an IntOrString belongs) vanished. A patched object is
 * then checked strictly against the Kubernetes 1.28 API, and every object against the output rules
 * (see checks/output-rules.ts), when cdk8s synthesizes it: once per synth, from its own JSON.
 */
export class ManifestObject<P extends TypedProps = TypedProps> extends ApiObject {
  /** The typed props the body is converted from; other constructs of the library may add to them. */
  readonly typedProps: P;
  private readonly manifestKind: ManifestKind<any>;
  private patched = false;

  /** The body converted for the synth under way: one conversion per object and synth. */
  private converted?: Record<string, unknown>;

  constructor(scope: Construct, id: string, kind: ManifestKind<P>, props: NoInfer<P>) {
    // The body's top-level fields (spec, data, rules, ...) are those the typed props have when the
    // object is made (typed and API names are the same at this level), each a lazy value that
    // cdk8s resolves at synth from one conversion of the props as they are then. Constructs add
    // to the structures beneath them, never a new top-level field.
    const made: { object?: ManifestObject<P> } = {};
    const body: Record<string, unknown> = {};
    for (const key of Object.keys(props)) {
      if (key === 'metadata' || (props as Record<string, unknown>)[key] === undefined) continue;
      body[key] = Lazy.any({ produce: () => made.object!.bodyField(key) });
    }
    super(scope, id, { ...kind.gvk, metadata: props.metadata, ...body });
    made.object = this;
    this.typedProps = props;
    this.manifestKind = kind;
    registerObject(this);
  }

  private bodyField(key: string): unknown {
    this.converted ??= this.manifestKind.toJson(this.typedProps) ?? {};
    return this.converted[key];
  }

  /** Whether a JsonPatch escape hatch was added: the typed props then no longer tell the whole object. */
  get isPatched(): boolean {
    return this.patched;
  }

  addJsonPatch(...ops: JsonPatch[]): void {
    this.patched = true;
    super.addJsonPatch(...ops);
  }

  toJson(): any {
    this.converted = undefined;
    let json: any;
    try {
      json = super.toJson();
    } finally {
      this.converted = undefined;
    }
    const errors = this.patched ? patchErrors(this.manifestKind, json) : [];
    if (errors.length > 0) {
      throw new ConfigurationError(
        `${json.kind}/${json.metadata?.name} is invalid after a JsonPatch escape hatch: ${errors.join('; ')}`,
      );
    }
    const broken = outputErrors(this, json);
    // The library's error type, as a construct's own refusal: each line names the construct it is about.
    if (broken.length > 0) throw new ConfigurationError(broken.join('\n'));
    return json;
  }
}

function patchErrors<P>(kind: ManifestKind<P>, json: any): string[] {
  // Loaded on first use: an app without escape hatches never reads the API definitions.
  const { crdErrors, isVendoredKind } =
    require('../validation/crd-schema') as typeof import('../validation/crd-schema');
  const { strictErrors } = require('../validation/strict-schema') as typeof import('../validation/strict-schema');
  const schema = isVendoredKind(json.apiVersion, json.kind)
    ? crdErrors(json)
    : strictErrors(json, oldestApiFor(json.apiVersion));
  return [...(kind.afterPatch?.(json) ?? []), ...schema];
}

/**
 * A custom resource kind the library makes (JobSet, LeaderWorkerSet, InferencePool, ...): its
 * props are already the API JSON, checked against the vendored CRD (validation/crds) in tests and
 * after a JsonPatch.
 */
export function customKind<P extends TypedProps>(
  apiVersion: string,
  kind: string,
  afterPatch?: (json: any) => string[],
): ManifestKind<P> {
  return {
    gvk: { apiVersion, kind },
    toJson: props => (props === undefined ? undefined : withoutMetadata(props)),
    afterPatch,
  };
}

function withoutMetadata(props: TypedProps): Record<string, unknown> {
  const { metadata: _metadata, ...body } = props as Record<string, unknown>;
  return body;
}

/** A kind the library makes, from cdk8s-plus-32's GVK and converter for it. */
export function kindOf<P>(
  gvk: GroupVersionKind,
  toJson: (props: P | undefined) => Record<string, unknown> | undefined,
  afterPatch?: (json: any) => string[],
): ManifestKind<P> {
  return { gvk: { apiVersion: gvk.apiVersion, kind: gvk.kind }, toJson, afterPatch };
}

/** The built-in kinds the library makes, each converted by cdk8s-plus-32's own converter. */
export const KIND = {
  ConfigMap: kindOf(k8s.KubeConfigMap.GVK, k8s.toJson_KubeConfigMapProps),
  CronJob: kindOf(k8s.KubeCronJob.GVK, k8s.toJson_KubeCronJobProps),
  HorizontalPodAutoscaler: kindOf(k8s.KubeHorizontalPodAutoscalerV2.GVK, k8s.toJson_KubeHorizontalPodAutoscalerV2Props),
  Job: kindOf(k8s.KubeJob.GVK, k8s.toJson_KubeJobProps),
  NetworkPolicy: kindOf(k8s.KubeNetworkPolicy.GVK, k8s.toJson_KubeNetworkPolicyProps),
  PersistentVolumeClaim: kindOf(k8s.KubePersistentVolumeClaim.GVK, k8s.toJson_KubePersistentVolumeClaimProps),
  PodDisruptionBudget: kindOf(k8s.KubePodDisruptionBudget.GVK, k8s.toJson_KubePodDisruptionBudgetProps),
  Role: kindOf(k8s.KubeRole.GVK, k8s.toJson_KubeRoleProps),
  RoleBinding: kindOf(k8s.KubeRoleBinding.GVK, k8s.toJson_KubeRoleBindingProps),
  Secret: kindOf(k8s.KubeSecret.GVK, k8s.toJson_KubeSecretProps),
  Service: kindOf(k8s.KubeService.GVK, k8s.toJson_KubeServiceProps),
  ServiceAccount: kindOf(k8s.KubeServiceAccount.GVK, k8s.toJson_KubeServiceAccountProps),
} as const;
