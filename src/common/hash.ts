import { createHash } from 'crypto';

/** A short, stable digest of a string map, independent of key order: for pod-template annotations. */
export function contentHash(data: Record<string, string>): string {
  const canonical = JSON.stringify(
    Object.keys(data)
      .sort()
      .map(k => [k, data[k]]),
  );
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/**
 * The hash in the name of an object named by its content (a fill Job, a runtime script's ConfigMap, a
 * GPU claim template): long enough to tell versions apart, short enough to leave the rest of the name
 * room in 63 characters.
 */
export function nameHash(data: Record<string, string>): string {
  return contentHash(data).slice(0, 10);
}
