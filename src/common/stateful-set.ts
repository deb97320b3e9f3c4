import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { checkAfterPatch, KubeStatefulSet } from './kube';
import { isWholeQuantity, QUANTITY } from '../validation/strict-schema';
import { isExtendedResourceName } from './gpu';
import { checkUniqueObjectsAtSynth } from './unique-objects';


/**
 * The StatefulSet of every workload construct. It synthesizes like `k8s.KubeStatefulSet`, and
 * makes the common escape hatch safe. cdk8s applies a JsonPatch to the typed props *before* they
 * are converted to API JSON, so a plain number where a quantity belongs (`resources.limits`) is
 * silently dropped, and a field the typed props do not know vanishes. Here patches apply to the
 * API JSON, as users read it in the output: a number or quantity string synthesizes as the
 * quantity meant; anything else where a quantity belongs fails synth naming the object and the
 * field; and the patched object is checked strictly against the Kubernetes 1.28 API, so a patch
 * cannot add a field a strict API server would refuse.
 */
export class GpuStatefulSet extends KubeStatefulSet {
  constructor(scope: Construct, id: string, props: k8s.KubeStatefulSetProps) {
    super(scope, id, props);
    checkUniqueObjectsAtSynth(this);
  }
}

// A patched number or quantity string is the quantity meant; anything else fails synth. Beyond
// the schema, the rules of ValidateStatefulSet and ValidatePodSpec a patch most easily breaks.
checkAfterPatch(GpuStatefulSet, json => {
  try {
    checkQuantities(json.spec, `StatefulSet/${json.metadata?.name} spec`);
  } catch (e) {
    return [(e as Error).message];
  }
  return statefulSetRules(json.spec ?? {});
});

/** The API server's rules for a StatefulSet spec that a JsonPatch can break (messages name the path). */
function statefulSetRules(spec: any): string[] {
  const errors: string[] = [];
  if (typeof spec.replicas === 'number' && spec.replicas < 0) errors.push(`spec.replicas must be at least 0 (got ${spec.replicas})`);
  const selector = spec.selector?.matchLabels ?? {};
  const labels = spec.template?.metadata?.labels ?? {};
  for (const [k, val] of Object.entries(selector)) {
    if (labels[k] !== val) errors.push(`spec.template.metadata.labels must match spec.selector (${k}=${String(val)}; got ${JSON.stringify(labels[k] ?? null)})`);
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
  unique('spec.template.spec container names', containers.map((c: any) => c?.name));
  unique('spec.template.spec.volumes names', (pod.volumes ?? []).map((x: any) => x?.name));
  for (const c of containers) {
    const at = `spec.template.spec container '${c?.name}'`;
    unique(`${at} env names`, (c?.env ?? []).map((e: any) => e?.name));
    unique(`${at} mount paths`, (c?.volumeMounts ?? []).map((m: any) => m?.mountPath));
    for (const p of c?.ports ?? []) {
      if (typeof p?.containerPort === 'number' && (p.containerPort < 1 || p.containerPort > 65535)) errors.push(`${at} containerPort must be 1-65535 (got ${p.containerPort})`);
    }
    // Extended resources cannot be overcommitted: the request, if any, equals the limit.
    const limits = c?.resources?.limits ?? {};
    const requests = c?.resources?.requests ?? {};
    for (const r of Object.keys({ ...limits, ...requests })) {
      if (!isExtendedResourceName(r)) continue;
      for (const [kind, q] of [['limit', limits[r]], ['request', requests[r]]] as const) {
        if (q !== undefined && !isWholeQuantity(q)) errors.push(`${at} extended resource ${r} ${kind} must be a whole number (got ${JSON.stringify(q)})`);
      }
      if (limits[r] === undefined || (requests[r] !== undefined && String(requests[r]) !== String(limits[r]))) {
        errors.push(`${at} extended resource ${r} needs a limit equal to its request (got request ${JSON.stringify(requests[r] ?? null)}, limit ${JSON.stringify(limits[r] ?? null)})`);
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
        for (const part of ['requests', 'limits']) repairMap(c?.resources?.[part], `${at}.template.spec.${kind}[${i}].resources.${part}`);
      });
    }
    (podSpec.volumes ?? []).forEach((vol: any, i: number) => {
      if (vol?.emptyDir && 'sizeLimit' in vol.emptyDir) check(vol.emptyDir.sizeLimit, `${at}.template.spec.volumes[${i}].emptyDir.sizeLimit`);
    });
    repairMap(podSpec.overhead, `${at}.template.spec.overhead`);
  }
  (spec.volumeClaimTemplates ?? []).forEach((t: any, i: number) => {
    for (const part of ['requests', 'limits']) repairMap(t?.spec?.resources?.[part], `${at}.volumeClaimTemplates[${i}].spec.resources.${part}`);
  });
}

function repairMap(map: any, at: string): void {
  if (map === undefined) return;
  if (map === null || typeof map !== 'object') throw new Error(`${at} must be a map of quantities (got ${JSON.stringify(map)})`);
  for (const key of Object.keys(map)) check(map[key], `${at}.${key}`);
}

/** The API server takes a quantity as a JSON number or a quantity string. */
function check(value: unknown, at: string): void {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return;
  if (typeof value === 'string' && QUANTITY.test(value)) return;
  throw new Error(`${at} must be a Kubernetes quantity such as 1, "500m" or "16Gi" (got ${JSON.stringify(value) ?? String(value)})`);
}
