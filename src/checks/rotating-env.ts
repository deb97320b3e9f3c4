import type * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { podsOf } from './kinds';

/**
 * The annotation on a Secret the library rotates: who owns its data. The library writes it, and
 * the whole-output check finds rotating Secrets by it (checks/manifests.ts).
 */
export const DATA_OWNER_ANNOTATION = 'cdk8s-gpu.io/data-owner';

/** A rotating Secret, as the env rule needs it. */
export interface RotatingSecretRef {
  /** Who reports the error: `RotatingGpuSecret '<id>'`, or the Secret in whole-output checks. */
  readonly who: string;
  readonly name: string;
  readonly namespace?: string;
}

const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);

/**
 * Every read of a rotating Secret that never sees a rotation, in one object's final JSON: env and
 * envFrom (read once at container start) and subPath mounts (never updated), in every container
 * list of every pod template the object holds. `secrets` are those of the object's namespace.
 */
export function rotatingEnvErrors(json: any, secrets: readonly RotatingSecretRef[]): string[] {
  if (secrets.length === 0) return [];
  const { podSpec, anywhere } = podsOf(json);
  const where = podSpec ?? anywhere;
  if (where === undefined) return [];
  // One look for the Secret names the object refers to at all: an app may hold hundreds of
  // rotating Secrets, and the precise walk runs only for those this object names.
  const named = new Set<string>();
  secretNamesIn(where, named);
  if (named.size === 0) return [];
  const errors: string[] = [];
  for (const s of secrets) {
    if (!named.has(s.name)) continue;
    const found: string[] = [];
    envReadsIn(where, s.name, found);
    for (const e of found) errors.push(`${s.who}: ${json.kind}/${json.metadata?.name}: ${e}`);
  }
  return errors;
}

/** Every Secret name below a node of JSON: env and envFrom references, secret and projected volumes. */
function secretNamesIn(node: unknown, out: Set<string>): void {
  if (Array.isArray(node)) {
    for (const item of node) secretNamesIn(item, out);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (value === null || typeof value !== 'object') continue;
    if (key === 'secretKeyRef' || key === 'secretRef' || key === 'secret') {
      const ref = value as { name?: unknown; secretName?: unknown };
      if (typeof ref.name === 'string') out.add(ref.name);
      if (typeof ref.secretName === 'string') out.add(ref.secretName);
    }
    secretNamesIn(value, out);
  }
}

/** Reads of one Secret through env, envFrom or subPath below a node of JSON (a pod spec or more). */
export function envReadsIn(node: unknown, secret: string, out: string[], volumes: Set<string> = new Set()): void {
  if (Array.isArray(node)) {
    for (const item of node) envReadsIn(item, secret, out, volumes);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  // A pod spec: the names of its volumes that carry this Secret, for its containers' mounts.
  const obj = node as Record<string, unknown>;
  const here = Array.isArray(obj.volumes) ? secretVolumes(obj.volumes, secret) : volumes;
  for (const [key, value] of Object.entries(obj)) {
    if (value === null || typeof value !== 'object') continue;
    if (CONTAINER_LISTS.has(key) && Array.isArray(value)) {
      for (const c of value) out.push(...containerEnvReads(c, secret), ...subPathReads(c, secret, here));
    } else {
      envReadsIn(value, secret, out, here);
    }
  }
}

function secretVolumes(volumes: unknown[], secret: string): Set<string> {
  const names = new Set<string>();
  for (const vol of volumes as k8s.Volume[]) {
    const projected = (vol?.projected?.sources ?? []).some(src => src?.secret?.name === secret);
    if (vol?.secret?.secretName === secret || projected) names.add(vol.name);
  }
  return names;
}

function subPathReads(c: { name?: string; volumeMounts?: unknown }, secret: string, volumes: Set<string>): string[] {
  const out: string[] = [];
  for (const m of (Array.isArray(c?.volumeMounts) ? c.volumeMounts : []) as k8s.VolumeMount[]) {
    if (volumes.has(m?.name) && (m.subPath !== undefined || m.subPathExpr !== undefined)) {
      out.push(
        `container '${c.name}' mounts rotating Secret '${secret}' through subPath at ${m.mountPath}: a subPath mount never sees an update; remove the mount, and read the files RotatingGpuSecret.mountInto mounts instead`,
      );
    }
  }
  return out;
}

function containerEnvReads(c: { name?: string; env?: unknown; envFrom?: unknown }, secret: string): string[] {
  // The fix is to take the read out of the workload (its `env` or `envFrom`) and read the files that
  // mountInto mounts: pointing at mountInto alone misleads when it is already called.
  const why =
    'environment variables are read once at container start and never see a rotation; read the files RotatingGpuSecret.mountInto mounts instead';
  const out: string[] = [];
  for (const e of (Array.isArray(c?.env) ? c.env : []) as k8s.EnvVar[]) {
    if (e?.valueFrom?.secretKeyRef?.name === secret)
      out.push(
        `container '${c.name}' reads rotating Secret '${secret}' through env ${e.name}: remove ${e.name} from the container's env (the workload's \`env\` prop, for a container the library makes): ${why}`,
      );
  }
  for (const e of (Array.isArray(c?.envFrom) ? c.envFrom : []) as k8s.EnvFromSource[]) {
    if (e?.secretRef?.name === secret)
      out.push(
        `container '${c.name}' reads rotating Secret '${secret}' through envFrom: remove the envFrom entry of the Secret from the container: ${why}`,
      );
  }
  return out;
}
