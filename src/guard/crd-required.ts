// A custom resource's update is checked against its CRD schema as it will be stored: a field the schema
// requires and the apply leaves out is refused ("Required value"). A create can pass where the update
// fails: a mutating webhook that decodes the object into its Go types on create (LeaderWorkerSet's,
// JobSet's) writes the field's zero value back (an env entry without `name` comes back with `name: ""`).
// Found by the differential test against the LeaderWorkerSet v0.9.0 webhooks.
import type { CrdSchema } from '../validation/crd-registry';
import { isObject } from './object';

/** The paths of required fields missing from `value`, by the schema (defaulted fields excepted). */
export function missingRequired(value: unknown, schema: CrdSchema | undefined, at = ''): string[] {
  if (!schema || value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => missingRequired(item, schema.items, `${at}[${i}]`));
  if (!isObject(value)) return [];
  const path = (k: string) => (at ? `${at}.${k}` : k);
  const missing = (schema.required ?? [])
    .filter(k => value[k] === undefined && schema.properties?.[k]?.default === undefined)
    .map(path);
  return [
    ...missing,
    ...Object.entries(value).flatMap(([k, v]) =>
      missingRequired(
        v,
        schema.properties?.[k] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined),
        path(k),
      ),
    ),
  ];
}

/** Whether `value` has something at a path in the form missingRequired gives (`a.b[0].c`). */
export function hasPath(value: unknown, path: string): boolean {
  let v: unknown = value;
  for (const part of path.match(/[^.[\]]+/g) ?? []) {
    if (Array.isArray(v) && /^\d+$/.test(part)) v = v[Number(part)];
    else if (isObject(v)) v = v[part];
    else return false;
    if (v === undefined) return false;
  }
  return true;
}
