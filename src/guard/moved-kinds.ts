// Kinds that moved to another API group: to kubectl and the API server the new group's object is a
// different object, so a manifest that moves one creates the new object and leaves (or, pruning, deletes)
// the old one. What the reader needs is what the consumer of the kind does with each.
import type { Finding } from './diff';
import { describe, groupOf, identity, namespacesMatch } from './object';
import type { KubeObject } from './normalize';

/** A kind served under a new API group, and what reads it. */
export interface MovedKind {
  readonly kind: string;
  readonly from: string;
  readonly to: string;
  /** Where the new group's CRD comes from. */
  readonly crds: string;
  /** What happens to objects of the old group once the new group's CRD is installed, with its source. */
  readonly oldIgnored: string;
}

const ENDPOINT_PICKER_READS =
  'the Endpoint Picker asks discovery at its start for llm-d.ai first and, when that CRD is installed, watches only llm-d.ai objects, so one in inference.networking.x-k8s.io is ignored (llm-d-router v0.10.0 pkg/epp/server/controller_config.go; a picker started before the CRD was installed reads the old group until it restarts)';

/**
 * Gateway API Inference Extension v1.6.0 removed InferenceObjective and InferenceModelRewrite with the Endpoint
 * Picker (#2967, #2973); llm-d-router serves them, same schema, as `llm-d.ai/v1alpha2`.
 */
export const MOVED_KINDS: readonly MovedKind[] = ['InferenceObjective', 'InferenceModelRewrite'].map(kind => ({
  kind,
  from: 'inference.networking.x-k8s.io',
  to: 'llm-d.ai',
  crds: `llm-d-router v0.10.0's config/crd/bases/llm-d.ai_${kind.toLowerCase()}s.yaml`,
  oldIgnored: ENDPOINT_PICKER_READS,
}));

const movedFrom = (o: KubeObject) => MOVED_KINDS.find(m => m.kind === o.kind && m.from === groupOf(o));
const movedTo = (o: KubeObject) => MOVED_KINDS.find(m => m.kind === o.kind && m.to === groupOf(o));
/** Same name and namespace, as the guard matches objects. */
const samePlace = (a: KubeObject, b: KubeObject) =>
  a.metadata.name === b.metadata.name && namespacesMatch(a.metadata.namespace, b.metadata.namespace);

/** The object of the new group that replaces `old` (same kind, namespace and name), if it moved. */
export function movedSuccessor(old: KubeObject, created: readonly KubeObject[]): KubeObject | undefined {
  const m = movedFrom(old);
  return m && created.find(c => movedTo(c) === m && samePlace(c, old));
}

/**
 * A moved object (in the old set under the old group, in the new one under the new group), and an object of
 * the old group kept beside objects of the new group, whose CRDs must then both be installed.
 */
export function movedKindWarnings(
  before: readonly KubeObject[],
  after: readonly KubeObject[],
  matched: ReadonlySet<KubeObject>,
  created: readonly KubeObject[],
  out: Finding[],
): void {
  for (const old of before) {
    if (matched.has(old)) continue;
    const successor = movedSuccessor(old, created);
    if (!successor) continue;
    const m = movedFrom(old)!;
    const ns = old.metadata.namespace ? ` -n ${old.metadata.namespace}` : '';
    out.push({
      severity: 'warning',
      code: 'kind-moved',
      ...identity(old),
      path: 'apiVersion',
      before: old.apiVersion,
      after: successor.apiVersion,
      message: `${describe(old)} moved from ${m.from} to ${m.to}: a new object to the API server, refused unless ${m.to}'s CRD is installed ("no matches for kind"); ${m.oldIgnored}, so kubectl apply without --prune leaves it behind, unused (a pruning sync deletes it)`,
      remedy: `install ${m.crds} before applying; then delete the old object (kubectl delete ${m.kind.toLowerCase()}s.${m.from} ${old.metadata.name}${ns}) or apply with --prune`,
      source: undefined,
    });
  }
  // Both groups in one manifest: the new group's CRD is installed, so the old group's objects do nothing.
  const newGroups = new Set(after.map(movedTo).filter(m => m !== undefined));
  for (const o of after) {
    const m = movedFrom(o);
    if (!m || !newGroups.has(m)) continue;
    out.push({
      severity: 'warning',
      code: 'kind-moved',
      ...identity(o),
      path: 'apiVersion',
      before: null,
      after: o.apiVersion,
      message: `${describe(o)} is in ${m.from} beside ${m.kind}s in ${m.to}, which need ${m.to}'s CRD installed: ${m.oldIgnored}`,
      remedy: `write it as ${m.to}/${o.apiVersion.split('/')[1]} (same fields)`,
      source: undefined,
    });
  }
}
