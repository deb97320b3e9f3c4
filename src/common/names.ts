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
