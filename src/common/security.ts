import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Validator } from '../validation/validate';

/**
 * The UID and GID a non-root pod runs as. 1000 is the first regular user on Debian and Ubuntu
 * based images (NGC PyTorch, the TGI images); any non-zero value satisfies the restricted profile.
 */
export const DEFAULT_NON_ROOT_UID = 1000;

/** The Pod Security Standard a pod template meets. */
export enum PodSecurityLevel {
  /** Non-root, no capabilities beyond NET_BIND_SERVICE, RuntimeDefault seccomp, no escalation. */
  RESTRICTED = 'restricted',
  /** No privileged containers, host namespaces or extra capabilities; may run as root. */
  BASELINE = 'baseline',
  /** Anything else, e.g. the IPC_LOCK capability that RDMA needs. */
  PRIVILEGED = 'privileged',
}

/** How a pod's processes run. */
export interface ProcessIdentity {
  /** Run as the image's user (usually root) instead of a fixed non-root UID. */
  readonly runAsRoot: boolean;
  /** The UID, GID and fsGroup when not running as root. */
  readonly uid: number;
  /** Capabilities to add after dropping ALL, e.g. IPC_LOCK for RDMA. */
  readonly addCapabilities: readonly string[];
  /** Mount the image's root filesystem read-only. */
  readonly readOnlyRootFilesystem?: boolean;
}

/**
 * Resolves the `runAsRoot` / `runAsUser` props every workload takes into the identity its pods run
 * with, the Pod Security level that gives, and the UID sidecars must share (undefined for root).
 */
export function resolveProcessIdentity(
  v: Validator,
  o: { runAsRoot: boolean; runAsUser?: number; defaultUid?: number; addCapabilities?: string[] },
): { identity: ProcessIdentity; level: PodSecurityLevel; uid: number | undefined } {
  // A UID the pod would not run as: the user meant a non-root pod, and would silently get root.
  if (o.runAsRoot && o.runAsUser !== undefined)
    v.fail('runAsUser', 'must be left out when the pod runs as root (runAsRoot: true)', o.runAsUser);
  const uid = v.wholeNumber('runAsUser', o.runAsUser ?? o.defaultUid ?? DEFAULT_NON_ROOT_UID, 1);
  const identity: ProcessIdentity = { runAsRoot: o.runAsRoot, uid, addCapabilities: o.addCapabilities ?? [] };
  return { identity, level: securityLevel(identity), uid: o.runAsRoot ? undefined : uid };
}

/** Capabilities the baseline profile allows to be added. IPC_LOCK is not among them. */
export const BASELINE_CAPABILITIES: ReadonlySet<string> = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

/** The strictest Pod Security Standard that a pod running this way meets. */
export function securityLevel(p: ProcessIdentity): PodSecurityLevel {
  if (p.addCapabilities.some(c => !BASELINE_CAPABILITIES.has(c))) return PodSecurityLevel.PRIVILEGED;
  if (p.runAsRoot || p.addCapabilities.some(c => c !== 'NET_BIND_SERVICE')) return PodSecurityLevel.BASELINE;
  return PodSecurityLevel.RESTRICTED;
}

/**
 * The pod-level context. A non-root pod gets a fixed UID/GID and an `fsGroup`, so claims and
 * emptyDirs are writable; `OnRootMismatch` skips the recursive chown of a large checkpoint
 * volume on every start.
 */
export function podSecurityContext(p: ProcessIdentity): k8s.PodSecurityContext {
  const seccompProfile = { type: 'RuntimeDefault' };
  if (p.runAsRoot) return { seccompProfile };
  return {
    runAsNonRoot: true,
    runAsUser: p.uid,
    runAsGroup: p.uid,
    fsGroup: p.uid,
    fsGroupChangePolicy: 'OnRootMismatch',
    seccompProfile,
  };
}

/** The container-level context: drop ALL, no privilege escalation, RuntimeDefault seccomp. */
export function containerSecurityContext(p: ProcessIdentity): k8s.SecurityContext {
  return {
    allowPrivilegeEscalation: false,
    privileged: false,
    capabilities: { drop: ['ALL'], ...(p.addCapabilities.length > 0 ? { add: [...p.addCapabilities] } : {}) },
    ...(p.runAsRoot ? {} : { runAsNonRoot: true }),
    ...(p.readOnlyRootFilesystem === undefined ? {} : { readOnlyRootFilesystem: p.readOnlyRootFilesystem }),
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/**
 * Pod spec fields every workload here sets:
 * - no service-account token, since none of these workloads calls the API server;
 * - no service links, since Kubernetes would otherwise inject `<SERVICE>_PORT=tcp://...` for every
 *   Service in the namespace, and a Service named `master` then overwrites torchrun's MASTER_PORT.
 */
export const POD_HARDENING = { automountServiceAccountToken: false, enableServiceLinks: false } as const;
