import { nullQuantityErrors } from './null-quantity';
import { numberLikeErrors } from './number-like';
import { DATA_OWNER_ANNOTATION, rotatingEnvErrors, RotatingSecretRef } from './rotating-env';
import { duplicateMessage, objectKey } from './unique-objects';

/**
 * The output rules over a whole app's synthesized objects, the user's own included: no two objects
 * share a kind, namespace and name; no string kubectl would read back as a number; no null resource
 * quantity (stored as 0); no container
 * reads a rotating Secret (one the library made, found by its data-owner annotation) through env,
 * envFrom or a subPath mount. The library's own objects already obey them when cdk8s synthesizes
 * them; this is the one pass that also sees everything else. The `StrictSchemaValidation` plugin
 * runs it under `cdk8s synth`; call it on `Testing.synth(chart)` or the parsed output of
 * `app.synthYaml()` elsewhere. Returns the errors, or none.
 */
export function checkManifests(objects: readonly unknown[]): string[] {
  const manifests = objects.filter(isManifest);
  const errors: string[] = [];
  const seen = new Map<string, Manifest>();
  const rotating = new Map<string | undefined, RotatingSecretRef[]>();
  for (const o of manifests) {
    const { name, namespace, annotations } = o.metadata;
    const key = objectKey({ apiVersion: o.apiVersion, kind: o.kind, namespace, name });
    const first = seen.get(key);
    if (first) errors.push(duplicateMessage(describe(o), o.kind, name, namespace, describe(first), 'the same output'));
    else seen.set(key, o);
    for (const e of numberLikeErrors(o)) errors.push(`${describe(o)} ${e}`);
    for (const e of nullQuantityErrors(o)) errors.push(`${describe(o)} ${e}`);
    if (o.kind === 'Secret' && o.apiVersion === 'v1' && annotations?.[DATA_OWNER_ANNOTATION] !== undefined) {
      const list = rotating.get(namespace) ?? [];
      list.push({ who: `rotating ${describe(o)}`, name, namespace });
      rotating.set(namespace, list);
    }
  }
  for (const o of manifests) errors.push(...rotatingEnvErrors(o, rotating.get(o.metadata.namespace) ?? []));
  return errors;
}

interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly annotations?: Record<string, string>;
  };
}

function isManifest(o: unknown): o is Manifest {
  const m = o as Partial<Manifest> | null;
  return typeof m?.apiVersion === 'string' && typeof m.kind === 'string' && typeof m.metadata?.name === 'string';
}

function describe(o: Manifest): string {
  return `${o.kind}/${o.metadata.name}`;
}
