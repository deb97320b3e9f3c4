import { contentHash } from '../common/hash';

/** The CronJob name limit: its Jobs are named `<cronjob>-<11 characters>` and copied into a 63-character label. */
export const CRONJOB_NAME_MAX = 52;
/** Job and container names, volume names and label values. */
export const LABEL_MAX = 63;

/**
 * `stem + suffix` when it fits in `max` characters, else the stem shortened and followed by a hash
 * of the whole stem, so that two long names never shorten to the same one.
 */
export function fitName(stem: string, suffix: string, max: number): string {
  if (stem.length + suffix.length <= max) return stem + suffix;
  const hash = contentHash({ stem }).slice(0, 8);
  return `${stem.slice(0, max - suffix.length - hash.length - 1).replace(/-+$/, '')}-${hash}${suffix}`;
}

/**
 * The default when a prop is left out. Only `undefined` means "left out": a `null` from JavaScript
 * is a wrong value, which the prop's check then refuses by name.
 */
export function unset<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}
