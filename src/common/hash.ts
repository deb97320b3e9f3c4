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
