import type { Finding } from './diff';
import type { KubeObject } from './normalize';
import { describe, groupOf, identity } from './object';

const LABEL_NAME = 'app.kubernetes.io/name';
const LABEL_COMPONENT = 'app.kubernetes.io/component';
/** The component of the library's serving workloads (inference-service.ts). */
const SERVING = 'inference';

/** The kinds the library serves from (a multi-node group is a LeaderWorkerSet), as `<group>/<kind>`. */
const SERVING_KINDS = new Set(['apps/StatefulSet', 'apps/Deployment', 'leaderworkerset.x-k8s.io/LeaderWorkerSet']);

const isServing = (o: KubeObject) =>
  SERVING_KINDS.has(`${groupOf(o)}/${o.kind}`) &&
  o.metadata.labels?.[LABEL_COMPONENT] === SERVING &&
  o.metadata.labels?.[LABEL_NAME] !== undefined;
const modelOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.labels![LABEL_NAME]}`;

/**
 * A serving version dropped in the same change that adds its successor (a one-step `version` bump). A pruning
 * sync (Argo CD with pruning, Flux's `prune: true`, `kubectl apply --prune`) deletes the old version at once,
 * while the new one is still downloading and loading its weights, so the model serves nothing for that long. No
 * warning when another version of the model was in the old output and stays: it is already serving.
 */
export function servingBumpWarnings(
  before: readonly KubeObject[],
  matched: Set<KubeObject>,
  created: readonly KubeObject[],
  out: Finding[],
): void {
  const staying = new Set(before.filter(o => isServing(o) && matched.has(o)).map(modelOf));
  for (const old of before) {
    if (!isServing(old) || matched.has(old) || staying.has(modelOf(old))) continue;
    const successor = created.find(c => isServing(c) && modelOf(c) === modelOf(old));
    if (!successor) continue;
    const model = old.metadata.labels![LABEL_NAME];
    const ns = old.metadata.namespace ? ` -n ${old.metadata.namespace}` : '';
    // kubectl rollout status knows only built-in kinds; LWS reports condition Available once every
    // group is updated and ready (kubernetes-sigs/lws api/leaderworkerset/v1 LeaderWorkerSetAvailable).
    const target = `${successor.kind.toLowerCase()}/${successor.metadata.name}${ns}`;
    const wait =
      successor.kind === 'LeaderWorkerSet'
        ? `kubectl wait --for=condition=Available ${target}`
        : `kubectl rollout status ${target}`;
    out.push({
      severity: 'warning',
      code: 'serving-version-gap',
      ...identity(old),
      path: '',
      before: old.metadata.name,
      after: successor.metadata.name,
      message: `${describe(old)} is dropped in the change that adds ${describe(successor)}, and no other version of ${model} stays: a pruning sync (Argo CD with pruning, Flux with prune: true, kubectl apply --prune) deletes ${old.metadata.name} at once, while ${successor.metadata.name} still downloads and loads the model, so ${model} serves nothing until it is Ready`,
      remedy: `bump in two steps: keep ${old.metadata.name} in the output beside ${successor.metadata.name} (construct both versions; the client Service and an InferencePool select both), sync, wait for ${wait}, then drop ${old.metadata.name} in a second change (docs/routing.md)`,
      source: undefined,
    });
  }
}
