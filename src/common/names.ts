import { Validator } from '../validation/validate';

/**
 * Pods of a StatefulSet carry the label `controller-revision-hash: <name>-<10 chars>`, and label
 * values are limited to 63 characters, so a longer StatefulSet name makes pod creation fail
 * (kubernetes/kubernetes#64023).
 */
export const STATEFUL_SET_NAME_MAX = 52;

/**
 * The name of a workload generation: `base` for version 1 or no version, `base-vN` otherwise.
 * A breaking change (one that touches an immutable field) is shipped as a new version, which is
 * a new StatefulSet beside the old one instead of an update the API server rejects.
 */
export function versionedName(base: string, version?: number): string {
  return version === undefined ? base : `${base}-v${version}`;
}

/**
 * Validates a base name and version and returns the versioned StatefulSet name. The name also
 * names the Services, so it must be a DNS-1035 label.
 */
export function statefulSetName(v: Validator, base: string, version: number | undefined): string {
  v.serviceName('name', base);
  if (version !== undefined) v.wholeNumber('version', version, 1);
  const full = versionedName(base, version);
  if (full.length > STATEFUL_SET_NAME_MAX) {
    const why = version === undefined ? '' : ` once "-v${version}" is added`;
    v.failDescribed(
      'name',
      `must leave the StatefulSet name at most ${STATEFUL_SET_NAME_MAX} characters${why}, because pods carry a controller-revision-hash label "<name>-<hash>" limited to 63`,
      `${full.length} characters: ${full}`,
    );
  }
  return full;
}

/**
 * The claim a StatefulSet's claim template makes (and looks for) at an ordinal:
 * `<template>-<statefulSet>-<ordinal>` (the StatefulSet controller's getPersistentVolumeClaimName).
 */
export function claimNameFor(claimTemplate: string, statefulSet: string, ordinal: number): string {
  return `${claimTemplate}-${statefulSet}-${ordinal}`;
}

/**
 * k8s.io/apimachinery util/rand's alphabet (no vowels, no 0, 1, 3): a ReplicaSet's
 * pod-template-hash is the template hash's decimal digits mapped onto it (rand.SafeEncodeString,
 * 1-10 characters), and a pod's generated suffix is 5 of its characters (SimpleNameGenerator).
 */
const SAFE = '[bcdfghjklmnpqrstvwxz2456789]';

/**
 * A regular expression (anchored, as PromQL matches `=~`) for the names of the pods of a workload:
 * a StatefulSet's are `<name>-<ordinal>`, a Deployment's `<name>-<pod-template-hash>-<suffix>`, a
 * LeaderWorkerSet's leaders `<name>-<group>` and workers `<name>-<group>-<index>`.
 * One home for every query, rule and scaler that finds a workload's pods by name.
 */
export function podNamePattern(kind: string, name: string): string {
  switch (kind) {
    case 'StatefulSet':
      return `${name}-[0-9]+`;
    case 'Deployment':
      return `${name}-${SAFE}{1,10}-${SAFE}{5}`;
    case 'LeaderWorkerSet':
      return `${name}-[0-9]+(-[0-9]+)?`;
    default:
      throw new Error(`no pod name pattern for kind ${kind}`);
  }
}
