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
  /** The server stores the object but refuses every pod made from its template (a StatefulSet before 1.34). */
  readonly podsOnly?: boolean;
}

/** While walking: an error of the pod spec's own validation (a handler), which some servers skip. */
type WalkError = ServerSideApplyError & { readonly podValidation?: boolean };

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
  minor: number,
): ServerSideApplyError[] {
  const defs = definitionsOf(FLOOR_API);
  const name = builtIn ? definitionNameOf(FLOOR_API, after.apiVersion, after.kind) : undefined;
  const root: Node | undefined = name ? defs[name] : crdSchema;
  if (!root) return [];
  const resolve = (s: Node | undefined): Node | undefined => (s && '$ref' in s && s.$ref ? resolveRef(s, defs) : s);
  const out: WalkError[] = [];
  walk(after, previous, resolve(root), '', resolve, { builtIn, granular: true }, out);
  // A StatefulSet's pod template is validated only from 1.34 (kubernetes#131790; 1.32.13 takes a preStop
  // with no handler, 1.35.4 refuses it): before, the StatefulSet is stored, and each pod made from it refused.
  const unvalidated =
    builtIn && after.kind === 'StatefulSet' && minor < STATEFULSET_TEMPLATE_VALIDATED_FROM
      ? 'spec.template.'
      : undefined;
  return out.map(({ podValidation, ...e }) =>
    podValidation && unvalidated && e.path.startsWith(unvalidated) ? { ...e, podsOnly: true } : e,
  );
}

/**
 * Where the walk is: in a built-in kind or a custom resource, and whether every structure above is
 * merged field by field (granular). Server-side apply replaces an atomic list or map whole, as written.
 */
interface Place {
  readonly builtIn: boolean;
  readonly granular: boolean;
}

/**
 * Built-in objects that must hold one of several members, as the API server validates them. Server-side
 * apply removes the fields the manager owned from a member it now writes empty (`sleep: {}`); a member
 * left with nothing is stored as null, which a built-in kind's Go types read as absent, so none may be
 * left. A member the server defaults a field into (httpGet's `scheme`, grpc's `service`) is never left
 * empty: it stays, without its port. Each case was reproduced on a real API server (1.35.4).
 */
const HANDLER_SOURCE = 'validateHandler (pkg/apis/core/validation/validation.go)';
/** The first minor whose API server validates a StatefulSet's pod template (ValidatePodTemplateSpecForStatefulSet). */
const STATEFULSET_TEMPLATE_VALIDATED_FROM = 34;
const ONE_OF_REQUIRED: ReadonlyArray<{ at: RegExp; members: readonly string[]; defaulted: readonly string[] }> = [
  {
    at: /\.lifecycle\.(postStart|preStop)$/,
    members: ['exec', 'httpGet', 'tcpSocket', 'sleep'],
    defaulted: ['httpGet'],
  },
  {
    at: /(^|\.)(livenessProbe|readinessProbe|startupProbe)$/,
    members: ['exec', 'httpGet', 'tcpSocket', 'grpc'],
    defaulted: ['httpGet', 'grpc'],
  },
];

/** Whether the manager emptied `key`: written `{}` now, with fields it owned before. */
const emptied = (value: Record<string, unknown>, was: Record<string, unknown> | undefined, key: string) =>
  isObject(value[key]) &&
  Object.keys(value[key] as object).length === 0 &&
  isObject(was?.[key]) &&
  Object.keys(was[key] as object).length > 0;

function walk(
  value: unknown,
  previous: unknown,
  schema: Node | undefined,
  at: string,
  resolve: (s: Node | undefined) => Node | undefined,
  place: Place,
  out: WalkError[],
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
  const rule = place.builtIn && granular ? ONE_OF_REQUIRED.find(r => r.at.test(at)) : undefined;
  const cleared = rule ? rule.members.filter(k => emptied(value, was, k)) : [];
  if (rule && cleared.length > 0) {
    const source = `server-side apply (sigs.k8s.io/structured-merge-diff), the API server's defaults and ${HANDLER_SOURCE}`;
    const portless = cleared.find(k => rule.defaulted.includes(k));
    const left = rule.members.filter(k => value[k] !== undefined && value[k] !== null && !cleared.includes(k));
    if (portless !== undefined) {
      out.push({
        path: `${at}.${portless}.port`,
        message: `${at}.${portless}.port: Invalid value: 0: must be between 1 and 65535, inclusive (server-side apply removed the fields it owned from ${portless}, and the default the server filled in keeps it)`,
        remedy: `keep \`${portless}\`'s port in the manifest`,
        source,
        podValidation: true,
      });
      return;
    }
    if (left.length === 0) {
      out.push({
        path: at,
        message: `${at}: Required value: must specify a handler type (server-side apply stores the emptied ${cleared.join(', ')} as null, which leaves none)`,
        remedy: `keep the handler's fields in the manifest (or leave \`${at.split('.').pop()}\` out altogether)`,
        source,
        podValidation: true,
      });
      return;
    }
  }
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
