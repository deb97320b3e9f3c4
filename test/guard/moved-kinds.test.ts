import { Chart, Testing } from 'cdk8s';
import { guard, InferenceGateway, plan, VllmInferenceService } from '../../src';

/** The routing objects of one gateway with an objective and a model rewrite, as the library emits them now. */
function routing(): any[] {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  const svc = new VllmInferenceService(chart, 'v1', {
    name: 'qwen',
    modelId: 'Qwen/Qwen2.5-7B-Instruct',
    version: 1,
    image: 'vllm/vllm-openai:v0.31.0',
    loraAdapters: [{ name: 'sql', modelId: 'org/sql-lora' }],
  });
  new InferenceGateway(chart, 'gw', {
    name: 'qwen-pool',
    services: [svc],
    gateway: { name: 'igw' },
    objectives: [{ name: 'interactive', priority: 10 }],
    modelRewrites: [{ model: 'qwen-sql', targets: [{ model: 'sql' }] }],
  });
  return Testing.synth(chart);
}

const MOVED = /^Inference(Objective|ModelRewrite)$/;
/** The same output with the two kinds in GIE v1.5.0's group, as release 0.1 emitted them. */
const inGieGroup = (objects: any[]) =>
  objects.map(o => (MOVED.test(o.kind) ? { ...o, apiVersion: 'inference.networking.x-k8s.io/v1alpha2' } : o));

describe('InferenceObjective and InferenceModelRewrite moved from inference.networking.x-k8s.io to llm-d.ai', () => {
  const after = routing();
  const before = inGieGroup(after);

  test('upgrading: each moved object is a kind-moved warning that says to install the CRD first, not a plain removal', () => {
    const result = guard(before, after);
    expect(result.errors).toBe(0);
    const moved = result.findings.filter(f => f.code === 'kind-moved');
    expect(moved.map(f => [f.kind, f.name, f.before, f.after])).toEqual([
      ['InferenceObjective', 'interactive', 'inference.networking.x-k8s.io/v1alpha2', 'llm-d.ai/v1alpha2'],
      ['InferenceModelRewrite', 'qwen-pool', 'inference.networking.x-k8s.io/v1alpha2', 'llm-d.ai/v1alpha2'],
    ]);
    expect(moved[0].message).toMatch(/refused unless llm-d\.ai's CRD is installed/);
    expect(moved[0].message).toMatch(/watches only llm-d\.ai objects/);
    expect(moved[0].remedy).toMatch(
      /^install llm-d-router v0\.10\.0's config\/crd\/bases\/llm-d\.ai_inferenceobjectives\.yaml before applying; then delete the old object \(kubectl delete inferenceobjectives\.inference\.networking\.x-k8s\.io interactive -n serving\)/,
    );
    expect(result.findings.filter(f => f.code === 'object-removed')).toEqual([]);
  });

  test('a live export (namespaced) against a manifest without a namespace: still a move, as the guard matches objects', () => {
    const bare = after.map(o => ({ ...o, metadata: { ...o.metadata, namespace: undefined } }));
    const result = guard(before, bare);
    expect(result.findings.filter(f => f.code === 'kind-moved').map(f => f.name)).toEqual(['interactive', 'qwen-pool']);
    expect(result.findings.filter(f => f.code === 'object-removed')).toEqual([]);
    // Another namespace is another object: a plain removal.
    const elsewhere = after.map(o =>
      MOVED.test(o.kind) ? { ...o, metadata: { ...o.metadata, namespace: 'other' } } : o,
    );
    expect(guard(before, elsewhere).findings.filter(f => f.code === 'kind-moved')).toEqual([]);
  });

  test('the plan lists each old object once, pruned, with the move in its note', () => {
    const p = plan(before, after);
    const pruned = p.pruned.filter(o => MOVED.test(o.kind));
    expect(pruned.map(o => o.object)).toEqual([
      'InferenceObjective/serving/interactive',
      'InferenceModelRewrite/serving/qwen-pool',
    ]);
    for (const o of pruned) expect(o.note).toMatch(/^moved to llm-d\.ai\/v1alpha2/);
    // Nothing restarts: the serving pods' label and annotation are not part of this pair.
    expect(p.restarting).toBe(0);
  });

  test('an old-group object kept beside new-group ones is ignored by the picker, and the guard says so', () => {
    const extra = {
      ...after.find(o => o.kind === 'InferenceObjective'),
      metadata: { name: 'batch', namespace: 'serving' },
    };
    const mixed = [...after, { ...extra, apiVersion: 'inference.networking.x-k8s.io/v1alpha2' }];
    const moved = guard(after, mixed).findings.filter(f => f.code === 'kind-moved');
    expect(moved.map(f => [f.name, f.after])).toEqual([['batch', 'inference.networking.x-k8s.io/v1alpha2']]);
    expect(moved[0].message).toMatch(/is ignored/);
    expect(moved[0].remedy).toBe('write it as llm-d.ai/v1alpha2 (same fields)');
  });

  test('an old-group object removed with no successor is a plain removal; one in the old group alone is no warning', () => {
    const gone = after.filter(o => o.kind !== 'InferenceObjective');
    const codes = guard(before, inGieGroup(gone)).findings.map(f => f.code);
    expect(codes).toEqual(['object-removed']);
    expect(guard(before, before).findings.filter(f => f.code === 'kind-moved')).toEqual([]);
  });
});
