import { ApiObject, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { apiGroupOf, isClusterScoped } from './kinds';
import { ownerOf } from './output-rules';

/** The library's objects of one app by kind, namespace and name, in the order they were made. */
const OBJECTS = new WeakMap<IConstruct, Map<string, ApiObject[]>>();
const SHARED = new WeakMap<IConstruct, Map<string, ApiObject>>();

/** What makes two objects the same object to the API server: group, kind, namespace and name. */
export function objectKey(o: { apiVersion: string; kind: string; namespace?: string; name: string }): string {
  const group = apiGroupOf(o.apiVersion);
  const namespace = isClusterScoped(o.kind) ? '' : (o.namespace ?? '');
  return `${group}/${o.kind}/${namespace}/${o.name}`;
}

/** Records one of the library's objects, for the check below. */
export function registerObject(obj: ApiObject): void {
  const root = obj.node.root;
  let objects = OBJECTS.get(root);
  if (!objects) OBJECTS.set(root, (objects = new Map()));
  const key = keyOf(obj);
  const list = objects.get(key);
  if (list) list.push(obj);
  else objects.set(key, [obj]);
}

function keyOf(obj: ApiObject): string {
  return objectKey({ apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata.namespace, name: obj.name });
}

/**
 * The error when another of the library's objects in the app has this one's kind, namespace and
 * name: `kubectl apply` would let the later one silently replace the earlier (two Services `tgi`,
 * two StatefulSets). Only objects still in the tree count, so a chart removed before synth is no
 * clash. The later-made object is named first, whichever of the two is written first. The user's
 * own objects are checked with the whole output (checks/manifests.ts, the validation plugin).
 */
export function duplicateOf(obj: ApiObject): string | undefined {
  const same = OBJECTS.get(obj.node.root)?.get(keyOf(obj));
  if (!same || same.length < 2) return undefined;
  const live = same.filter(inTree);
  if (live.length < 2 || !live.includes(obj)) return undefined;
  const [first, later] = live[0] === obj ? [obj, live[1]] : [live[0], obj];
  return duplicateMessage(
    ownerOf(later),
    later.kind,
    later.name,
    later.metadata.namespace,
    ownerOf(first),
    first.node.path,
  );
}

export function duplicateMessage(
  who: string,
  kind: string,
  name: string,
  namespace: string | undefined,
  first: string,
  firstPath: string,
): string {
  const where = namespace && !isClusterScoped(kind) ? ` in namespace "${namespace}"` : '';
  return `${who}: name must make objects unique, but ${kind} "${name}"${where} is also made by ${first} (${firstPath}); on apply the later one would silently replace the other (got ${JSON.stringify(name)})`;
}

/** Whether a construct is still attached to its root: `tryRemoveChild` detaches a subtree. */
function inTree(c: IConstruct): boolean {
  for (let child = c, parent = c.node.scope; parent; child = parent, parent = parent.node.scope) {
    if (parent.node.tryFindChild(child.node.id) !== child) return false;
  }
  return true;
}

/**
 * An object shared by design between constructs of one app, keyed by kind, namespace and name:
 * the client Service that two versions of a serving construct share during a version bump (or an
 * engine switch) is made by the first and reused by the second, so it is emitted once and the
 * duplicate check holds. `make` runs only for the first.
 */
export function sharedObject<T extends ApiObject>(scope: IConstruct, kind: string, name: string, make: () => T): T {
  const root = scope.node.root;
  let objects = SHARED.get(root);
  if (!objects) SHARED.set(root, (objects = new Map()));
  const key = `${kind}/${Chart.of(scope).namespace ?? ''}/${name}`;
  const found = objects.get(key);
  if (found) return found as T;
  const made = make();
  objects.set(key, made);
  return made;
}
