import { Chart, Testing } from 'cdk8s';
import { guard, VllmInferenceService } from '../../src';

/** The output of one chart serving `qwen` with the given versions. */
function output(...versions: number[]): any[] {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
  for (const version of versions)
    new VllmInferenceService(chart, `v${version}`, { name: 'qwen', modelId: 'Qwen/Qwen2.5-7B-Instruct', version });
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
