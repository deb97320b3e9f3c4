import { ApiObject } from 'cdk8s';
import { IConstruct } from 'constructs';
import { sharedObject } from '../checks/unique-objects';
import { GPU_RESOURCE_PATTERN } from './gpu-names';
import { nameHash } from './hash';
import { GPU_CLAIM_COMPONENT, LABEL_INSTANCE, LABEL_NAME, PREREQUISITE_ANNOTATIONS, workloadLabels } from './labels';
import { customKind, ManifestObject } from './manifest-object';
import { API_SINCE_MINOR, DRA_API } from '../validation/kube-versions';
import { show, Validator } from '../validation/validate';

/**
 * GPUs through Dynamic Resource Allocation (`resource.k8s.io/v1`) instead of a device plugin's
 * extended resource: each pod gets a ResourceClaim made from a ResourceClaimTemplate, and the
 * scheduler allocates its GPUs from the ResourceSlices a DRA driver publishes (NVIDIA's
 * k8s-dra-driver-gpu, or another vendor's).
 */
export interface DynamicResourceAllocation {
  /**
   * The Kubernetes minor the cluster runs, `'1.34'` or newer. The v1 API is GA, and the
   * DynamicResourceAllocation feature gate on by default, from 1.34 (KEP-4381); on 1.32 and 1.33 the
   * gate is off, the API server serves no `resource.k8s.io/v1` and drops a pod's `resourceClaims`
   * (pkg/api/pod/util.go dropDisabledDynamicResourceAllocationFields), so the pods would start
   * without GPUs. Stated here so the requirement is read where the app is written; `cdk8s-gpu guard`
   * refuses the output for an older `--server-version`.
   */
  readonly kubernetesVersion: string;
  /**
   * The DeviceClass to allocate from.
   * @default 'gpu.nvidia.com' - the class NVIDIA's DRA driver (k8s-dra-driver-gpu) installs for whole GPUs
   */
  readonly deviceClassName?: string;
  /**
   * Which devices of the class qualify, all of them at once (for example one GPU product).
   * @default - any device of the class
   */
  readonly selectors?: DeviceSelector[];
}

/** The attribute domain of NVIDIA's DRA driver (its driver name). */
export const NVIDIA_DRA_DOMAIN = 'gpu.nvidia.com';
/** The DeviceClass NVIDIA's DRA driver installs for whole GPUs. */
export const DEFAULT_DEVICE_CLASS = 'gpu.nvidia.com';
/** The first minor that serves `resource.k8s.io/v1` and keeps a pod's claims. */
export const DRA_MIN_MINOR = API_SINCE_MINOR[DRA_API];
/** The name of the pod's claim, the container's reference to it and the template's one request. */
export const GPU_CLAIM = 'gpus';

/**
 * resource.k8s.io/v1 limits (pkg/apis/resource/types.go): at most 32 selectors per request
 * (DeviceSelectorsMaxSize); the scheduler's allocator gives one claim at most 32 devices
 * (AllocationResultsMaxSize), which bounds an ExactCount the API server itself lets through.
 */
const SELECTORS_MAX = 32;
export const DRA_DEVICES_MAX = 32;
/** An attribute's identifier is a C identifier of at most 32 characters; its domain a DNS subdomain of at most 63. */
const ATTRIBUTE_ID = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
const DOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A string attribute's value holds at most 64 bytes (DeviceAttributeMaxValueLength). */
const STRING_VALUE_MAX = 64;

/**
 * Attributes NVIDIA's DRA driver publishes as versions (cmd/gpu-kubelet-plugin/partitions.go), not
 * strings: compared with a string, the scheduler's evaluation fails and the allocation aborts.
 */
const NVIDIA_VERSION_ATTRIBUTES = ['driverVersion', 'cudaDriverVersion', 'cudaComputeCapability'];

/**
 * A condition on a device's attributes, as the CEL expression the scheduler evaluates. Built from
 * typed parts, so the API server compiles it: the attribute is read by map index (a name such as
 * `in` would be a CEL keyword after a dot), and only where the device has it, since reading an
 * attribute a device lacks is an evaluation error that aborts the allocation, not a mismatch.
 */
export class DeviceSelector {
  /**
   * Devices whose attribute (`<domain>/<name>`, e.g. `gpu.nvidia.com/productName`) equals `value`.
   */
  static attributeEquals(attribute: string, value: string | number | boolean): DeviceSelector {
    return new DeviceSelector(attribute, value);
  }

  /** NVIDIA GPUs of one product, as the driver reports it (`NVIDIA H100 80GB HBM3`). */
  static nvidiaProduct(productName: string): DeviceSelector {
    return new DeviceSelector(`${NVIDIA_DRA_DOMAIN}/productName`, productName);
  }

  private constructor(
    readonly attribute: string,
    readonly value: string | number | boolean,
  ) {}

  /** The CEL expression, after checking the parts the API server would refuse or the scheduler never match. */
  _expression(v: Validator, prop: string): string {
    const slash = typeof this.attribute === 'string' ? this.attribute.indexOf('/') : -1;
    const domain = slash > 0 ? this.attribute.slice(0, slash) : '';
    const id = slash > 0 ? this.attribute.slice(slash + 1) : '';
    if (!DOMAIN.test(domain) || domain.length > 63 || !ATTRIBUTE_ID.test(id))
      v.fail(
        prop,
        'must name an attribute as <domain>/<identifier>: a DNS subdomain of at most 63 characters, then a C identifier of at most 32 (resource.k8s.io QualifiedName)',
        this.attribute,
      );
    const value = this.value;
    let literal: string;
    if (typeof value === 'string') {
      if (domain === NVIDIA_DRA_DOMAIN && NVIDIA_VERSION_ATTRIBUTES.includes(id))
        v.fail(
          prop,
          "must not compare NVIDIA's version attribute with a string: the driver publishes it as a version, and the scheduler's evaluation fails and aborts the allocation",
          this.attribute,
        );
      // Go counts bytes (DeviceAttributeMaxValueLength); CEL refuses a lone surrogate ("invalid unicode code point").
      const bytes = Buffer.byteLength(value, 'utf8');
      if (bytes === 0 || bytes > STRING_VALUE_MAX || !isWellFormed(value))
        v.fail(
          `${prop} value`,
          `must be well-formed text of 1 to ${STRING_VALUE_MAX} bytes: a device's string attribute holds at most ${STRING_VALUE_MAX} (UTF-8), so no device would match a longer one`,
          value,
        );
      literal = JSON.stringify(value);
    } else if (typeof value === 'number') {
      if (!Number.isSafeInteger(value))
        v.fail(`${prop} value`, 'must be a whole number: device attributes hold int64 integers', value);
      literal = String(value);
    } else if (typeof value === 'boolean') literal = String(value);
    else v.fail(`${prop} value`, 'must be a string, a whole number or a boolean', value);
    const attributes = `device.attributes[${JSON.stringify(domain)}]`;
    const name = JSON.stringify(id);
    return `${name} in ${attributes} && ${attributes}[${name}] == ${literal}`;
  }
}

/** No lone UTF-16 surrogate (String.prototype.isWellFormed, which Node 20 has). */
const isWellFormed = (s: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

/** A checked DRA request: the class, the selectors' expressions and the devices per pod. */
export interface DeviceClaim {
  readonly deviceClassName: string;
  readonly selectors: readonly string[];
  readonly count: number;
}

const KNOWN_KEYS = ['kubernetesVersion', 'deviceClassName', 'selectors'];

/**
 * Checks `dynamicResourceAllocation` for a pod of `gpus` GPUs; undefined when the pods use the
 * device plugin. `gpuResource` is the device plugin's alternative and is refused beside it.
 */
export function resolveDeviceClaim(
  v: Validator,
  dra: DynamicResourceAllocation | undefined,
  pod: { gpus: number; gpuResource: string | undefined; queueName: string | undefined; extended: readonly string[] },
): DeviceClaim | undefined {
  if (dra === undefined) return undefined;
  const prop = 'dynamicResourceAllocation';
  v.plainObject(prop, dra);
  v.knownProps(prop, dra, KNOWN_KEYS);
  const version = dra.kubernetesVersion;
  const minor = typeof version === 'string' && /^1\.\d{1,3}$/.test(version) ? Number(version.slice(2)) : undefined;
  if (minor === undefined)
    v.fail(`${prop}.kubernetesVersion`, "must be the cluster's Kubernetes minor, such as '1.34'", version);
  if (minor < DRA_MIN_MINOR)
    v.fail(
      `${prop}.kubernetesVersion`,
      `must be 1.${DRA_MIN_MINOR} or newer: resource.k8s.io/v1 is served, and the DynamicResourceAllocation gate on, from 1.${DRA_MIN_MINOR}; an older API server drops the pods' resourceClaims and they start without GPUs (use the device plugin's gpuResource there)`,
      version,
    );
  const { gpus, gpuResource } = pod;
  if (pod.queueName !== undefined)
    v.fail(
      'queueName',
      `must not be set with ${prop}: Kueue charges DRA devices to a ClusterQueue's quota only from v0.18 (KueueDRAIntegration), and only for the device classes its configuration maps (resources.deviceClassMappings); before that a queued workload's claimed GPUs are admitted outside the quota (kueue pkg/features/kube_features.go)`,
      pod.queueName,
    );
  if (gpuResource !== undefined)
    v.fail(
      'gpuResource',
      `must not be set with ${prop}: the pods' GPUs come from the claim, and a device plugin's resource beside it would ask for the GPUs twice`,
      gpuResource,
    );
  const gpuDevice = pod.extended.find(name => GPU_RESOURCE_PATTERN.test(name));
  if (gpuDevice !== undefined)
    v.fail(
      `extendedResources.${gpuDevice}`,
      `must not be set with ${prop}: it is a GPU device plugin's resource, and the pods would ask for GPUs twice`,
      gpuDevice,
    );
  if (gpus > DRA_DEVICES_MAX)
    v.fail(
      prop,
      `takes at most ${DRA_DEVICES_MAX} GPUs per pod: the scheduler allocates at most ${DRA_DEVICES_MAX} devices to one claim ("exceeds the claim limit", k8s.io/dynamic-resource-allocation structured allocator), and the pod would stay Pending`,
      gpus,
    );
  const deviceClassName = v.dnsSubdomain(`${prop}.deviceClassName`, dra.deviceClassName ?? DEFAULT_DEVICE_CLASS);
  const list = dra.selectors ?? [];
  if (!Array.isArray(list)) v.fail(`${prop}.selectors`, 'must be an array of DeviceSelector', list);
  if (list.length > SELECTORS_MAX)
    v.failDescribed(
      `${prop}.selectors`,
      `must hold at most ${SELECTORS_MAX} selectors (resource.k8s.io DeviceSelectorsMaxSize)`,
      `${list.length}`,
    );
  const selectors = list.map((s, i) => {
    if (!(s instanceof DeviceSelector))
      v.fail(`${prop}.selectors[${i}]`, 'must be made with DeviceSelector.attributeEquals() or nvidiaProduct()', s);
    return s._expression(v, `${prop}.selectors[${i}]`);
  });
  const repeated = selectors.find((s, i) => selectors.indexOf(s) !== i);
  if (repeated !== undefined) v.fail(`${prop}.selectors`, `must not repeat a selector`, show(repeated));
  return { deviceClassName, selectors, count: gpus };
}

/** The ResourceClaimTemplate's `spec`: one request of `count` devices of the class. */
function claimSpec(claim: DeviceClaim) {
  return {
    spec: {
      devices: {
        requests: [
          {
            name: GPU_CLAIM,
            exactly: {
              deviceClassName: claim.deviceClassName,
              allocationMode: 'ExactCount',
              count: claim.count,
              ...(claim.selectors.length > 0
                ? { selectors: claim.selectors.map(expression => ({ cel: { expression } })) }
                : {}),
            },
          },
        ],
      },
    },
  };
}

/**
 * The template's name for one workload: `<instance>-gpus-<hash>`. A template's spec is immutable
 * (ValidateResourceClaimTemplateUpdate), so a changed request is a new template, which changes the
 * pod template's reference and rolls the pods, where an update in place would be refused.
 */
function claimTemplateName(claim: DeviceClaim, instance: string): string {
  const hash = nameHash({ spec: JSON.stringify(claimSpec(claim)) });
  return `${instance}-${GPU_CLAIM}-${hash}`;
}

type ClaimTemplateProps = { metadata: any; spec: ReturnType<typeof claimSpec> };
const RESOURCE_CLAIM_TEMPLATE = customKind<ClaimTemplateProps>(DRA_API, 'ResourceClaimTemplate');

/**
 * The ResourceClaimTemplate of a workload's pods, made once per app and namespace (a LeaderWorkerSet's
 * leader and workers share it), labelled as the workload's.
 */
export function claimTemplate(scope: IConstruct, claim: DeviceClaim, labels: Record<string, string>): string {
  const instance = labels[LABEL_INSTANCE];
  const name = claimTemplateName(claim, instance);
  sharedObject<ApiObject>(scope, 'ResourceClaimTemplate', name, () => {
    const owner = { name: labels[LABEL_NAME] ?? instance, instance, component: GPU_CLAIM_COMPONENT };
    return new ManifestObject(scope, `GpuClaim-${name}`, RESOURCE_CLAIM_TEMPLATE, {
      metadata: {
        name,
        labels: workloadLabels(owner),
        annotations: { ...PREREQUISITE_ANNOTATIONS },
      },
      spec: claimSpec(claim),
    });
  });
  return name;
}
