import { Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-32';
import { gpuResources, gpuTolerations, shmVolume } from '../../src/common/gpu';
import { sizeQuantityString } from '../../src/common/quantity';

const json = (x: any) => JSON.parse(JSON.stringify(x, (_k, v) => (v instanceof k8s.Quantity ? v.value : v)));

describe('gpu building blocks', () => {
  test('GPU counts are real numbers in requests and limits, never null', () => {
    const r = json(gpuResources({ gpus: 2, cpu: k8s.Quantity.fromString('8'), memory: Size.gibibytes(32) }));
    expect(r.limits['nvidia.com/gpu']).toBe(2);
    expect(r.requests['nvidia.com/gpu']).toBe(2);
    expect(r.limits.memory).toBe('32Gi');
    expect(r.limits.cpu).toBeUndefined();
  });

  test('tolerates the usual GPU taint', () => {
    expect(gpuTolerations()).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
  });

  test('/dev/shm is a sized memory emptyDir', () => {
    const { volume, mount } = json(shmVolume(Size.mebibytes(1536)));
    expect(volume).toEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '1536Mi' } });
    expect(mount).toEqual({ name: 'dshm', mountPath: '/dev/shm' });
  });

  test('sizes become whole-unit quantities', () => {
    expect(sizeQuantityString(Size.gibibytes(100))).toBe('100Gi');
    expect(sizeQuantityString(Size.tebibytes(2))).toBe('2Ti');
    expect(sizeQuantityString(Size.gibibytes(0.5))).toBe('512Mi');
  });
});
