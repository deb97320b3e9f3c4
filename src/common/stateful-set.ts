import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { kindOf } from './manifest-object';
import { isWholeQuantity, QUANTITY } from '../validation/strict-schema';
import { isExtendedResourceName } from './gpu';

/**
 * The StatefulSet of every workload construct. A JsonPatch applies to its API JSON (see
 * ManifestObject); beyond the schema, the patched object must keep the rules of ValidateStatefulSet
 * and ValidatePodSpec that a patch most easily breaks: quantities where quantities belong, a
 * selector its template matches, unique names, extended resources requested as they are limited.
 */
export const STATEFUL_SET = kindOf(k8s.KubeStatefulSet.GVK, k8s.toJson_KubeStatefulSetProps, podControllerRules);

/**
 * The rules a JsonPatch most easily breaks on any object with a pod template and a selector (a
 * StatefulSet, a Deployment): quantities, the selector, unique names, extended resources.
 */
export function podControllerRules(json: any): string[] {
  try {
    checkQuantities(json.spec, `${json.kind}/${json.metadata?.name} spec`);
  } catch (e) {
    return [(e as Error).message];
  }
  return statefulSetRules(json.spec ?? {});
}

/** The API server's rules for a StatefulSet spec that a JsonPatch can break (messages name the path). */
function statefulSetRules(spec: any): string[] {
  const errors: string[] = [];
  if (typeof spec.replicas === 'number' && spec.replicas < 0)
    errors.push(`spec.replicas must be at least 0 (got ${spec.replicas})`);
  const selector = spec.selector?.matchLabels ?? {};
  const labels = spec.template?.metadata?.labels ?? {};
  for (const [k, val] of Object.entries(selector)) {
    if (labels[k] !== val)
      errors.push(
        `spec.template.metadata.labels must match spec.selector (${k}=${String(val)}; got ${JSON.stringify(labels[k] ?? null)})`,
      );
  }
  const pod = spec.template?.spec ?? {};
  const unique = (at: string, names: unknown[]) => {
    const seen = new Set<unknown>();
    for (const n of names) {
      if (seen.has(n)) errors.push(`${at} must not repeat ${JSON.stringify(n)}`);
      seen.add(n);
    }
  };
  const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  unique(
    'spec.template.spec container names',
    containers.map((c: any) => c?.name),
  );
  unique(
    'spec.template.spec.volumes names',
    (pod.volumes ?? []).map((x: any) => x?.name),
  );
  for (const c of containers) {
    const at = `spec.template.spec container '${c?.name}'`;
    unique(
      `${at} env names`,
      (c?.env ?? []).map((e: any) => e?.name),
    );
    unique(
      `${at} mount paths`,
      (c?.volumeMounts ?? []).map((m: any) => m?.mountPath),
    );
    for (const p of c?.ports ?? []) {
      if (typeof p?.containerPort === 'number' && (p.containerPort < 1 || p.containerPort > 65535))
        errors.push(`${at} containerPort must be 1-65535 (got ${p.containerPort})`);
    }
    // Extended resources cannot be overcommitted: the request, if any, equals the limit.
    const limits = c?.resources?.limits ?? {};
    const requests = c?.resources?.requests ?? {};
    for (const r of Object.keys({ ...limits, ...requests })) {
      if (!isExtendedResourceName(r)) continue;
      for (const [kind, q] of [
        ['limit', limits[r]],
        ['request', requests[r]],
      ] as const) {
        if (q !== undefined && !isWholeQuantity(q))
          errors.push(`${at} extended resource ${r} ${kind} must be a whole number (got ${JSON.stringify(q)})`);
      }
      if (limits[r] === undefined || (requests[r] !== undefined && String(requests[r]) !== String(limits[r]))) {
        errors.push(
          `${at} extended resource ${r} needs a limit equal to its request (got request ${JSON.stringify(requests[r] ?? null)}, limit ${JSON.stringify(limits[r] ?? null)})`,
        );
      }
    }
  }
  return errors;
}

function checkQuantities(spec: any, at: string): void {
  if (!spec || typeof spec !== 'object') return;
  const podSpec = spec.template?.spec;
  if (podSpec) {
    for (const kind of ['initContainers', 'containers']) {
      (podSpec[kind] ?? []).forEach((c: any, i: number) => {
        for (const part of ['requests', 'limits'])
          repairMap(c?.resources?.[part], `${at}.template.spec.${kind}[${i}].resources.${part}`);
      });
    }
    (podSpec.volumes ?? []).forEach((vol: any, i: number) => {
      if (vol?.emptyDir && 'sizeLimit' in vol.emptyDir)
        check(vol.emptyDir.sizeLimit, `${at}.template.spec.volumes[${i}].emptyDir.sizeLimit`);
    });
    repairMap(podSpec.overhead, `${at}.template.spec.overhead`);
  }
  (spec.volumeClaimTemplates ?? []).forEach((t: any, i: number) => {
    for (const part of ['requests', 'limits'])
      repairMap(t?.spec?.resources?.[part], `${at}.volumeClaimTemplates[${i}].spec.resources.${part}`);
  });
}

function repairMap(map: any, at: string): void {
  if (map === undefined) return;
  if (map === null || typeof map !== 'object')
    throw new Error(`${at} must be a map of quantities (got ${JSON.stringify(map)})`);
  for (const key of Object.keys(map)) check(map[key], `${at}.${key}`);
}

/** The API server takes a quantity as a JSON number or a quantity string. */
function check(value: unknown, at: string): void {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return;
  if (typeof value === 'string' && QUANTITY.test(value)) return;
  throw new Error(
    `${at} must be a Kubernetes quantity such as 1, "500m" or "16Gi" (got ${JSON.stringify(value) ?? String(value)})`,
  );
}
