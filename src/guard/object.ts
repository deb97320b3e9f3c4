// Small readers of a Kubernetes object shared by the guard's modules: its group, identity and dotted paths.
import type { KubeObject } from './normalize';

export const groupOf = (o: KubeObject) => {
  const slash = o.apiVersion.indexOf('/');
  return slash < 0 ? '' : o.apiVersion.slice(0, slash);
};
export const versionOf = (o: KubeObject) => o.apiVersion.split('/').pop()!;
export const describe = (o: KubeObject) =>
  `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
/** Whether two objects' namespaces match as the guard matches objects: a manifest without one matches any. */
export const namespacesMatch = (a: string | undefined, b: string | undefined) =>
  a === undefined || b === undefined || a === b;
export const isObject = (x: unknown): x is Record<string, any> =>
  x !== null && typeof x === 'object' && !Array.isArray(x);
export const show = (v: unknown) => (v === undefined ? 'null' : JSON.stringify(v));
/** The longest value a report quotes whole: a longer one (a JobSet's replicatedJobs) is abbreviated. */
export const MAX_QUOTED = 200;
/** A value as a person reads it in a report: its JSON, cut after 120 characters with its length said. */
export const shortShow = (v: unknown) => {
  const json = show(v);
  return json.length <= MAX_QUOTED ? json : `${json.slice(0, 120)}… (${json.length} characters)`;
};

export function get(obj: any, path: string): unknown {
  let o = obj;
  for (const k of path.split('.')) {
    if (o === undefined || o === null) return undefined;
    o = o[k];
  }
  return o;
}

export function set(obj: any, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = isObject(o[k]) ? o[k] : (o[k] = {});
  o[keys[keys.length - 1]] = value;
}

export const lastKey = (path: string) => path.slice(path.lastIndexOf('.') + 1);

/** A finding's object identity. */
export const identity = (o: KubeObject) => ({
  object: describe(o),
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name,
});
