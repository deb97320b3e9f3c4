import { selectorLabels, workloadLabels } from '../../src/common/labels';

test('selectors use only the explicit app.kubernetes.io labels; managed-by stays out of them', () => {
  const id = { name: 'tgi', instance: 'tgi-v2', component: 'inference' };
  expect(selectorLabels(id)).toEqual({
    'app.kubernetes.io/name': 'tgi',
    'app.kubernetes.io/instance': 'tgi-v2',
    'app.kubernetes.io/component': 'inference',
  });
  expect(workloadLabels(id)).toEqual({ ...selectorLabels(id), 'app.kubernetes.io/managed-by': 'cdk8s-gpu' });
});
