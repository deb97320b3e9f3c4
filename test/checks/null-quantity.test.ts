import { nullQuantityErrors } from '../../src/checks/null-quantity';

describe('null resource quantities (the API server stores them as 0)', () => {
  test('a null limit or request anywhere in an object is named by its path', () => {
    const o = {
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'c', resources: { limits: { 'nvidia.com/gpu': null, cpu: '1' }, requests: { memory: null } } },
            ],
          },
        },
      },
    };
    expect(nullQuantityErrors(o)).toEqual([
      'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu: null is stored as the quantity 0; give the amount, or leave the resource out',
      'spec.template.spec.containers[0].resources.requests.memory: null is stored as the quantity 0; give the amount, or leave the resource out',
    ]);
  });

  test('quantities with values, and nulls elsewhere, are not its business', () => {
    expect(nullQuantityErrors({ resources: { limits: { 'nvidia.com/gpu': 8 } }, spec: { replicas: null } })).toEqual(
      [],
    );
  });
});
