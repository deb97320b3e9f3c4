import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { checkAfterPatch, KubeStatefulSet } from './kube';
import { checkUniqueObjectsAtSynth } from './unique-objects';

// apimachinery's quantity grammar (`k8s.io/apimachinery/pkg/api/resource`, `ParseQuantity`).
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$/;

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

// A patched number or quantity string is the quantity meant; anything else fails synth.
checkAfterPatch(GpuStatefulSet, json => {
  try {
    checkQuantities(json.spec, `StatefulSet/${json.metadata?.name} spec`);
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
});

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
