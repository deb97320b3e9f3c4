import { ApiObject } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { checkUniqueObjectsAtSynth } from './unique-objects';

// apimachinery's quantity grammar (`k8s.io/apimachinery/pkg/api/resource`, `ParseQuantity`).
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$/;

/**
 * The StatefulSet of every workload construct. It synthesizes like `k8s.KubeStatefulSet`, and
 * makes the common escape hatch safe: a JsonPatch that writes a plain number or string where a
 * quantity belongs (`resources.limits`, claim sizes, `emptyDir.sizeLimit`) is synthesized as the
 * quantity meant, where cdk8s would silently drop it; anything else there fails synth naming the
 * object and the field. A patched object is also checked strictly against the Kubernetes 1.28
 * API, so a patch cannot add a field a strict API server would refuse.
 */
export class GpuStatefulSet extends k8s.KubeStatefulSet {
  constructor(scope: Construct, id: string, props: k8s.KubeStatefulSetProps) {
    super(scope, id, props);
    checkUniqueObjectsAtSynth(this);
  }

  toJson(): any {
    // The patched object before the typed conversion: patched values are still as the user wrote them.
    const raw = ApiObject.prototype.toJson.call(this);
    const who = `StatefulSet/${raw.metadata?.name}`;
    repairQuantities(raw.spec, `${who} spec`);
    const json = { ...k8s.KubeStatefulSet.GVK, ...k8s.toJson_KubeStatefulSetProps(raw) };
    if (((this as unknown as { patches: unknown[] }).patches ?? []).length > 0) {
      const { strictErrors } = require('../validation/strict-schema') as typeof import('../validation/strict-schema');
      const errors = strictErrors(json, '1.28.0');
      if (errors.length > 0) throw new Error(`${who} is invalid after a JsonPatch escape hatch: ${errors.join('; ')}`);
    }
    return json;
  }
}

function repairQuantities(spec: any, at: string): void {
  if (!spec || typeof spec !== 'object') return;
  const podSpec = spec.template?.spec;
  if (podSpec) {
    for (const kind of ['initContainers', 'containers']) {
      (podSpec[kind] ?? []).forEach((c: any, i: number) => {
        for (const part of ['requests', 'limits']) repairMap(c?.resources?.[part], `${at}.template.spec.${kind}[${i}].resources.${part}`);
      });
    }
    (podSpec.volumes ?? []).forEach((vol: any, i: number) => {
      if (vol?.emptyDir && 'sizeLimit' in vol.emptyDir) vol.emptyDir.sizeLimit = repair(vol.emptyDir.sizeLimit, `${at}.template.spec.volumes[${i}].emptyDir.sizeLimit`);
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
  for (const key of Object.keys(map)) map[key] = repair(map[key], `${at}.${key}`);
}

function repair(value: unknown, at: string): { value: string | number } {
  if (value && typeof value === 'object' && 'value' in value) value = (value as { value: unknown }).value;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return { value };
  if (typeof value === 'string' && QUANTITY.test(value)) return { value };
  throw new Error(`${at} must be a Kubernetes quantity such as 1, "500m" or "16Gi" (got ${JSON.stringify(value) ?? String(value)})`);
}
