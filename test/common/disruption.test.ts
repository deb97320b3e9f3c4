import { DisruptionBudget, podDisruptionBudget } from '../../src/common/disruption';
import { synthValid, testChart } from '../support/synth';

describe('PodDisruptionBudget helper', () => {
  test.each([
    [DisruptionBudget.maxUnavailable(1), { maxUnavailable: 1 }],
    [DisruptionBudget.minAvailable(2), { minAvailable: 2 }],
    [DisruptionBudget.blockVoluntaryEvictions(), { maxUnavailable: 0 }],
  ])('%j', (budget, expected) => {
    const chart = testChart();
    podDisruptionBudget(chart, 'pdb', { name: 'x', labels: { a: 'b' }, selector: { a: 'b' }, budget });
    const [pdb] = synthValid(chart);
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec).toEqual({
      ...expected,
      selector: { matchLabels: { a: 'b' } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
  });

  test('none emits nothing', () => {
    const chart = testChart();
    expect(
      podDisruptionBudget(chart, 'pdb', { name: 'x', labels: {}, selector: {}, budget: DisruptionBudget.none() }),
    ).toBeUndefined();
    expect(synthValid(chart)).toEqual([]);
  });
});
