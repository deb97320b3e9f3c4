import { ApiObject, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';

const REGISTRY = new WeakMap<IConstruct, Map<string, ApiObject>>();

/**
 * An object shared by design between constructs of one app, keyed by kind, namespace and name:
 * the client Service that two versions of a serving construct share during a version bump (or an
 * engine switch) is made by the first and reused by the second, so it is emitted once and the
 * app-wide duplicate check holds. `make` runs only for the first.
 */
export function sharedObject<T extends ApiObject>(scope: IConstruct, kind: string, name: string, make: () => T): T {
  const root = scope.node.root;
  let objects = REGISTRY.get(root);
  if (!objects) REGISTRY.set(root, objects = new Map());
  const key = `${kind}/${Chart.of(scope).namespace ?? ''}/${name}`;
  const found = objects.get(key);
  if (found) return found as T;
  const made = make();
  objects.set(key, made);
  return made;
}
