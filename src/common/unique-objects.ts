import { ApiObject, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { addAppCheck } from './app-checks';

/** Kinds without a namespace: two of them clash by name alone. */
const CLUSTER_SCOPED = new Set([
  'Namespace', 'Node', 'PersistentVolume', 'StorageClass', 'PriorityClass', 'RuntimeClass', 'IngressClass', 'ClusterRole',
  'ClusterRoleBinding', 'CustomResourceDefinition', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration',
  'CSIDriver', 'VolumeSnapshotClass', 'ClusterQueue', 'ResourceFlavor', 'APIService',
]);

const SHARED = new WeakMap<IConstruct, Map<string, ApiObject>>();

/**
 * Registers, once per app, a synth-time check that no two objects share a kind, namespace and
 * name: `kubectl apply` would let the later one silently replace the earlier (two Services
 * `tgi`, two StatefulSets). Objects shared by design are emitted once by their constructs.
 */
export function checkUniqueObjectsAtSynth(scope: IConstruct): void {
  addAppCheck(scope, 'unique-objects', duplicateObjects);
}

function duplicateObjects(_root: IConstruct, nodes: readonly IConstruct[]): string[] {
  const seen = new Map<string, ApiObject>();
  const errors: string[] = [];
  for (const c of nodes) {
    if (!(c instanceof ApiObject)) continue;
    const group = c.apiGroup === 'core' ? '' : c.apiGroup;
    const namespace = CLUSTER_SCOPED.has(c.kind) ? '' : (c.metadata.namespace ?? '');
    const key = `${group}/${c.kind}/${namespace}/${c.name}`;
    const first = seen.get(key);
    if (!first) {
      seen.set(key, c);
      continue;
    }
    const where = namespace ? ` in namespace "${namespace}"` : '';
    errors.push(`${ownerOf(c)}: name must make objects unique, but ${c.kind} "${c.name}"${where} is also made by ${ownerOf(first)} (${first.node.path}); on apply the later one would silently replace the other (got ${JSON.stringify(c.name)})`);
  }
  return errors;
}

/** The construct that made an object, as the library's messages name it: `<Construct> '<id>'`. */
export function ownerOf(obj: ApiObject): string {
  const parent = obj.node.scope;
  const maker = parent && parent.node.scope && !Chart.isChart(parent) && !(parent instanceof ApiObject) ? parent : obj;
  return `${maker.constructor.name} '${maker.node.id}'`;
}

/**
 * An object shared by design between constructs of one app, keyed by kind, namespace and name:
 * the client Service that two versions of a serving construct share during a version bump (or an
 * engine switch) is made by the first and reused by the second, so it is emitted once and the
 * app-wide duplicate check holds. `make` runs only for the first.
 */
export function sharedObject<T extends ApiObject>(scope: IConstruct, kind: string, name: string, make: () => T): T {
  const root = scope.node.root;
  let objects = SHARED.get(root);
  if (!objects) SHARED.set(root, objects = new Map());
  const key = `${kind}/${Chart.of(scope).namespace ?? ''}/${name}`;
  const found = objects.get(key);
  if (found) return found as T;
  const made = make();
  objects.set(key, made);
  return made;
}
