// What server-side apply refuses that a client-side `kubectl apply` sends through: checked only when the
// guard answers for server-side apply (`serverSideApply`, `--server-side`). Each rule was found by the
// differential test against a real API server (test/cluster/guard-differential.test.ts) and reproduced
// by hand on Kubernetes 1.32.13 and 1.36.3.
import type { CrdSchema } from '../validation/crd-registry';
import { FLOOR_API } from '../validation/kube-versions';
import { definitionNameOf, definitionsOf, resolveRef, type Schema } from '../validation/strict-schema';
import type { KubeObject } from './normalize';
import { isObject } from './object';

/** An update server-side apply refuses, in the server's words. */
export interface ServerSideApplyError {
  readonly path: string;
  readonly message: string;
  readonly remedy: string;
  readonly source: string;
}

/**
 * The value server-side apply gives a list-map key the item leaves out: the typed model's default
 * (a port's `protocol` is keyed as "TCP" when absent: two ports of one number, one without a protocol
 * and one with TCP, are duplicates).
 */
const KEY_DEFAULTS: Readonly<Record<string, unknown>> = { protocol: 'TCP' };

/** A schema of either source, as far as this walk reads it. */
type Node = Schema | CrdSchema;

/**
 * Errors server-side apply gives updating `previous` (what this manager applied before: the earlier
 * manifest, or the fields its managedFields entry owns) to `after`, for a built-in kind (its schema from
 * the floor's API definitions) or a custom resource whose CRD schema is known.
 */
export function serverSideApplyErrors(
  previous: unknown,
  after: KubeObject,
  crdSchema: CrdSchema | undefined,
  builtIn: boolean,
): ServerSideApplyError[] {
  const defs = definitionsOf(FLOOR_API);
  const name = builtIn ? definitionNameOf(FLOOR_API, after.apiVersion, after.kind) : undefined;
  const root: Node | undefined = name ? defs[name] : crdSchema;
  if (!root) return [];
  const resolve = (s: Node | undefined): Node | undefined => (s && '$ref' in s && s.$ref ? resolveRef(s, defs) : s);
  const out: ServerSideApplyError[] = [];
  walk(after, previous, resolve(root), '', resolve, { builtIn, granular: true }, out);
  return out;
}

/**
 * Where the walk is: in a built-in kind or a custom resource, and whether every structure above is
 * merged field by field (granular). Server-side apply replaces an atomic list or map whole, as written.
 */
interface Place {
  readonly builtIn: boolean;
  readonly granular: boolean;
}

function walk(
  value: unknown,
  previous: unknown,
  schema: Node | undefined,
  at: string,
  resolve: (s: Node | undefined) => Node | undefined,
  place: Place,
  out: ServerSideApplyError[],
): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    const keys = schema['x-kubernetes-list-type'] === 'map' ? schema['x-kubernetes-list-map-keys'] : undefined;
    const items = resolve(schema.items);
    if (keys?.length) duplicateKeys(value, keys, items, at, !place.builtIn, out);
    // A CRD's list without a list type is atomic; a built-in one without it is too (it has none).
    const inside = { ...place, granular: place.granular && keys !== undefined && keys.length > 0 };
    value.forEach((item, i) => {
      // The item the same manager applied before: by its key in a keyed list, else by position.
      const before = Array.isArray(previous)
        ? keys?.length
          ? previous.find(
              p => isObject(p) && isObject(item) && keys.every(k => keyValue(p, k, items) === keyValue(item, k, items)),
            )
          : previous[i]
        : undefined;
      walk(item, before, items, `${at}[${i}]`, resolve, inside, out);
    });
    return;
  }
  if (!isObject(value)) return;
  const was = isObject(previous) ? previous : undefined;
  const granular = place.granular && (schema as CrdSchema)['x-kubernetes-map-type'] !== 'atomic';
  // A custom resource's object the manager emptied, merged field by field: server-side apply removes
  // the children it owned and stores null, which the CRD's structural schema refuses (a built-in
  // kind's Go types take it). Inside an atomic list or map the value is stored as written.
  if (
    !place.builtIn &&
    granular &&
    at !== '' &&
    Object.keys(value).length === 0 &&
    was !== undefined &&
    Object.keys(was).length > 0 &&
    (schema as CrdSchema).nullable !== true
  ) {
    out.push({
      path: at,
      message: `${at}: Invalid value: "null": ${at} in body must be of type object: "null" (server-side apply stores an object whose owned fields it removed as null)`,
      remedy: `leave \`${at.split('.').pop()}\` out of the manifest instead of writing it empty, or keep one of its fields`,
      source: 'server-side apply (sigs.k8s.io/structured-merge-diff) and the CRD structural schema',
    });
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const child =
      schema.properties?.[k] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined);
    walk(v, was?.[k], resolve(child), at ? `${at}.${k}` : k, resolve, { ...place, granular }, out);
  }
}

function keyValue(item: Record<string, unknown>, key: string, items: Node | undefined): unknown {
  if (item[key] !== undefined && item[key] !== null) return item[key];
  const declared = (items?.properties?.[key] as CrdSchema | undefined)?.default;
  return declared ?? KEY_DEFAULTS[key];
}

/** Items of a keyed list that repeat a key: server-side apply cannot build its typed object. */
function duplicateKeys(
  list: unknown[],
  keys: readonly string[],
  items: Node | undefined,
  at: string,
  keyless: boolean,
  out: ServerSideApplyError[],
): void {
  const seen = new Set<string>();
  for (const item of list) {
    if (!isObject(item)) continue;
    // An item without any key: refused in a custom resource; a built-in kind's list merges it (seen on
    // 1.32 and 1.35 for a StatefulSet's env).
    if (keyless && keys.every(k => keyValue(item, k, items) === undefined)) {
      out.push({
        path: at,
        message: `${at}: an element omits all key fields [${keys.join(', ')}] (server-side apply cannot build the typed object, and applies nothing)`,
        remedy: `give each item of \`${at.split('.').pop()}\` its ${keys.join(' and ')}`,
        source: 'server-side apply (sigs.k8s.io/structured-merge-diff): x-kubernetes-list-map-keys of the list',
      });
      return;
    }
    const shown = `[${keys.map(k => `${k}=${JSON.stringify(keyValue(item, k, items) ?? null)}`).join(',')}]`;
    if (seen.has(shown)) {
      out.push({
        path: at,
        message: `${at}: duplicate entries for key ${shown} (server-side apply cannot build the typed object, and applies nothing)`,
        remedy: `give each item of \`${at.split('.').pop()}\` its own ${keys.join(' and ')}`,
        source: 'server-side apply (sigs.k8s.io/structured-merge-diff): x-kubernetes-list-map-keys of the list',
      });
      return;
    }
    seen.add(shown);
  }
}
