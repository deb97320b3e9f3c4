import { Chart, Testing } from 'cdk8s';
import { guard, ModelCache, plan, Reload, RotatingGpuSecret, VllmInferenceService } from '../../src';
import { formatPlan, formatPlanMarkdown, planToJson } from '../../src/guard/plan-report';

/** The output of one chart serving `qwen` with the given versions (each with its own image, as a bump has). */
function output(...versions: number[]): any[] {
  return serving({}, ...versions);
}

function serving(o: { shared?: boolean; secret?: boolean }, ...versions: number[]): any[] {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  const secret = o.secret ? new RotatingGpuSecret(chart, 'creds', { name: 'creds' }) : undefined;
  for (const version of versions) {
    const svc = new VllmInferenceService(chart, `v${version}`, {
      name: 'qwen',
      modelId: 'Qwen/Qwen2.5-7B-Instruct',
      version,
      image: `vllm/vllm-openai:v0.${19 + version}.0`,
      ...(o.shared ? { modelCache: ModelCache.sharedClaim({ claimName: 'models' }) } : {}),
    });
    secret?.mountInto(svc, { path: '/etc/creds', onRotation: Reload.httpPost('http://localhost:8000/reload') });
  }
  return Testing.synth(chart);
}

const gaps = (before: any[], after: any[]) =>
  guard(before, after).findings.filter(f => f.code === 'serving-version-gap');

describe('a serving version dropped while its successor is not yet serving', () => {
  test('a one-step bump warns: a pruning sync deletes v1 while v2 still loads', () => {
    const [w] = gaps(output(1), output(2));
    expect(w.severity).toBe('warning');
    expect(w.object).toBe('StatefulSet/serving/qwen-v1');
    expect(w.message).toMatch(
      /a pruning sync \(Argo CD with pruning, Flux with prune: true, kubectl apply --prune\) deletes qwen-v1 at once, while qwen-v2 still downloads and loads the model, so qwen serves nothing until it is Ready/,
    );
    expect(w.remedy).toMatch(/bump in two steps: keep qwen-v1 in the output beside qwen-v2/);
    expect(w.remedy).toMatch(/kubectl rollout status statefulset\/qwen-v2 -n serving/);
  });

  test('a two-step bump does not: step one keeps v1 beside v2, step two drops v1 once v2 was already in the output', () => {
    expect(gaps(output(1), output(1, 2))).toEqual([]);
    expect(gaps(output(1, 2), output(2))).toEqual([]);
    // Step one removes nothing at all.
    expect(guard(output(1), output(1, 2)).findings.filter(f => f.severity === 'warning')).toEqual([]);
  });

  test('removing the model altogether is not a bump: only the removal warnings', () => {
    expect(gaps(output(1), [])).toEqual([]);
  });

  test('a Deployment-shaped serving workload is covered too', () => {
    const asDeployment = (objects: any[]) =>
      objects.map(o => (o.kind === 'StatefulSet' ? { ...o, kind: 'Deployment' } : o));
    expect(gaps(asDeployment(output(1)), asDeployment(output(2))).map(f => f.object)).toEqual([
      'Deployment/serving/qwen-v1',
    ]);
  });
});

describe('step two of a two-step bump restarts nothing', () => {
  // Whatever v2's pod template names or holds depends on v2's own inputs only: dropping v1 leaves it as it was.
  test.each([
    ['a per-replica cache', { shared: false }],
    ['a shared cache filled by a Job', { shared: true }],
    // The Secret was mounted into v1 first: v2's volume and sidecar names must not depend on it.
    ['a rotating Secret mounted into each version', { shared: true, secret: true }],
  ])('with %s, dropping v1 plans no restart and prunes only v1 objects', (_, o) => {
    const result = plan(serving(o, 1, 2), serving(o, 2));
    const restarting = result.workloads.filter(w => w.restarts);
    expect(restarting.map(w => `${w.object}: ${w.changes.join(', ')}`)).toEqual([]);
    expect(result.restarting).toBe(0);
    expect(result.pruned.length).toBeGreaterThan(0);
    for (const p of result.pruned) expect(p.name).toMatch(/-v1\b|-fill-/);
  });

  test('each version fills the shared cache with a Job of its own, named from its own fill only', () => {
    const fills = (objects: any[]) => objects.filter(o => o.kind === 'Job').map(o => o.metadata.name as string);
    const both = fills(serving({ shared: true }, 1, 2));
    const v2 = fills(serving({ shared: true }, 2));
    expect(both).toHaveLength(2);
    expect(both).toEqual(expect.arrayContaining(v2));
    // The order the constructs are made in changes nothing.
    const reversed = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    for (const version of [2, 1])
      new VllmInferenceService(reversed, `v${version}`, {
        name: 'qwen',
        modelId: 'Qwen/Qwen2.5-7B-Instruct',
        version,
        image: `vllm/vllm-openai:v0.${19 + version}.0`,
        modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      });
    expect(fills(Testing.synth(reversed)).sort()).toEqual([...both].sort());
  });

  test('services whose fills are identical share one Job', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    for (const name of ['a', 'b'])
      new VllmInferenceService(chart, name, {
        name,
        modelId: 'Qwen/Qwen2.5-7B-Instruct',
        modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      });
    expect(Testing.synth(chart).filter(o => o.kind === 'Job')).toHaveLength(1);
  });
});

describe('a plan a reviewer reads', () => {
  const a = 'vllm/vllm-openai:v0.20.0';
  const b = 'vllm/vllm-openai:v0.21.0';
  function shared(image: string, ...versions: number[]): any[] {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
    for (const version of versions)
      new VllmInferenceService(chart, `v${version}`, {
        name: 'qwen',
        modelId: 'Qwen/Qwen2.5-7B-Instruct',
        version,
        image,
        modelCache: ModelCache.sharedClaim({ claimName: 'models' }),
      });
    return Testing.synth(chart);
  }

  test('each pruned object appears once, as PRUNED, in text, Markdown and JSON', () => {
    const result = plan(shared(a, 1, 2), shared(a, 2));
    expect(result.pruned.map(p => p.object).sort()).toEqual([
      expect.stringMatching(/^ConfigMap\/serving\/qwen-v1-hub-download-[0-9a-f]{10}$/),
      'Deployment/serving/qwen-v1',
      'NetworkPolicy/serving/qwen-v1',
      'PodDisruptionBudget/serving/qwen-v1',
      'Service/serving/qwen-v1-headless',
    ]);
    expect(result.guard.findings).toEqual([]);
    expect(result.guard.warnings).toBe(0);
    const text = formatPlan(result);
    for (const p of result.pruned) expect(text.split(p.object).length - 1).toBe(1);
    const md = formatPlanMarkdown(result);
    for (const p of result.pruned) expect(md.split(p.object).length - 1).toBe(1);
    expect(JSON.stringify((planToJson(result) as any).guard.findings)).toBe('[]');
    // The guard alone, with no PRUNED list, still warns of each removal.
    expect(guard(shared(a, 1, 2), shared(a, 2)).findings.map(f => f.code)).toEqual(Array(4).fill('object-removed'));
  });

  test('the outage comes first: a one-step bump leads with serving-version-gap, before restarts and prunes', () => {
    const result = plan(shared(a, 1), shared(a, 2));
    const text = formatPlan(result);
    expect(text.split('\n').slice(0, 4).join('\n')).toMatch(
      /^WARNING Deployment\/serving\/qwen-v1\n.*\n.*\n {2}note: .*no other version of qwen stays/,
    );
    expect(text.indexOf('WARNING')).toBeLessThan(text.indexOf('NEW Deployment/serving/qwen-v2'));
    expect(text.indexOf('NEW Deployment/serving/qwen-v2')).toBeLessThan(text.indexOf('PRUNED'));
    const md = formatPlanMarkdown(result);
    expect(md.indexOf('#### Guard')).toBeGreaterThan(0);
    expect(md.indexOf('#### Guard')).toBeLessThan(md.indexOf('| Workload |'));
  });

  test('a routine image bump: the old fill Job is replaced by design, not "renamed by mistake"', () => {
    const before = shared(a, 1);
    const after = shared(b, 1);
    expect(guard(before, after).findings).toEqual([]);
    const result = plan(before, after);
    // The fill Job and its script ConfigMap (named as the Job) are replaced; the workload's script is unchanged.
    expect(result.pruned.map(p => p.kind).sort()).toEqual(['ConfigMap', 'Job']);
    const old = result.pruned.find(p => p.kind === 'Job')!;
    const next = after.find(o => o.kind === 'Job').metadata.name;
    expect(result.pruned.find(p => p.kind === 'ConfigMap')!.note).toBe(
      `a runtime script, named by a hash of its content: ConfigMap/serving/${next} holds the new version, which the changed pods mount; a pruning sync deletes this one, and pods still running keep their mounted copy`,
    );
    expect(old.note).toBe(
      `a fill Job, named by a hash of what it fills: Job/serving/${next} replaces it (for the same revision it finds the cache complete and exits at once); a pruning sync deletes this one, and the filled cache stays on its claim`,
    );
    expect(formatPlan(result)).not.toMatch(/renamed by mistake/);
  });
});
