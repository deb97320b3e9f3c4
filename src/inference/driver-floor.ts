import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { ImageRef } from '../common/image-ref';
import { PodTemplate } from '../common/pod-template';
import { Validator } from '../validation/validate';

/**
 * The NVIDIA driver branch a published image needs: its CUDA major's minimum under minor-version
 * compatibility (NVIDIA, docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html:
 * CUDA 13.x >= 580, CUDA 12.x >= 525). On an older driver the server fails at its first CUDA call,
 * after the download: the pod crash-loops on a node it should never have been scheduled to.
 */
export interface DriverFact {
  /** The repository, as Docker normalizes it. */
  readonly repository: string;
  /** The fact holds for tags matching this (e.g. `-cu129` variants), checked before the release ranges. */
  readonly tagPattern?: RegExp;
  /** The fact holds from this release on (every release when omitted). */
  readonly from?: readonly [number, number, number];
  /** The lowest driver major version (branch) that runs the image. */
  readonly driverMajor: number;
  /** Why, with the source. */
  readonly why: string;
}

/** CUDA 13.x needs a 580 driver or later; CUDA 12.x one of 525 or later (NVIDIA's compatibility table). */
export const CUDA13_DRIVER_MAJOR = 580;
export const CUDA12_DRIVER_MAJOR = 525;

/**
 * The driver major version the GPU operator's feature discovery (GFD) publishes on each GPU node
 * (NVIDIA/k8s-device-plugin, internal/lm: `nvidia.com/cuda.driver-version.major`), and the name
 * older releases used, which GFD still writes as deprecated (`nvidia.com/cuda.driver.major`).
 */
export const DRIVER_MAJOR_LABEL = 'nvidia.com/cuda.driver-version.major';
export const DEPRECATED_DRIVER_MAJOR_LABEL = 'nvidia.com/cuda.driver.major';

/** The driver floor of `image`: `minDriverVersion` when given (0: none), else the engine's facts for its tag. */
export function driverFloorOf(
  v: Validator,
  facts: readonly DriverFact[],
  image: string,
  given: number | undefined,
): number | undefined {
  if (given !== undefined) {
    const major = v.wholeNumber('minDriverVersion', given, 0);
    return major === 0 ? undefined : major;
  }
  const ref = ImageRef.parse(image);
  const mine = facts.filter(f => f.repository === ref.repository);
  if (!ref.version) return undefined; // `latest` or a digest: no release to read a floor from
  const fact =
    mine.find(f => f.tagPattern && ref.tag !== undefined && f.tagPattern.test(ref.tag)) ??
    mine.find(f => !f.tagPattern && (!f.from || !ref.isBefore(f.from)));
  return fact?.driverMajor;
}

/**
 * A required node affinity for a driver of `major` or later, read from GFD's label, or from its
 * deprecated one where the new one is missing; a node with neither (no GPU operator) is allowed, so
 * the rule only keeps pods off nodes known to be too old. ANDed with the pod's own required terms.
 */
export function requireDriver(template: PodTemplate, major: number): void {
  const gt = (key: string): k8s.NodeSelectorRequirement => ({ key, operator: 'Gt', values: [String(major - 1)] });
  const absent = (key: string): k8s.NodeSelectorRequirement => ({ key, operator: 'DoesNotExist' });
  const driverTerms: k8s.NodeSelectorRequirement[][] = [
    [gt(DRIVER_MAJOR_LABEL)],
    [absent(DRIVER_MAJOR_LABEL), gt(DEPRECATED_DRIVER_MAJOR_LABEL)],
    [absent(DRIVER_MAJOR_LABEL), absent(DEPRECATED_DRIVER_MAJOR_LABEL)],
  ];
  // The template stays mutable until synthesis (pod-template.ts); PodSpec's typings are readonly.
  const spec = template.spec as { affinity?: k8s.Affinity };
  const affinity = spec.affinity ?? {};
  const required = affinity.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  // Terms are ORed, the expressions of one term ANDed: (user term) AND (driver term) for each pair.
  const userTerms = required?.nodeSelectorTerms ?? [{}];
  const nodeSelectorTerms = userTerms.flatMap(u =>
    driverTerms.map(d => ({ ...u, matchExpressions: [...(u.matchExpressions ?? []), ...d] })),
  );
  spec.affinity = {
    ...affinity,
    nodeAffinity: {
      ...affinity.nodeAffinity,
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms },
    },
  };
}
