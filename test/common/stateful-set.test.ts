import { JsonPatch, Testing } from 'cdk8s';
import { findOne, synthValid, testChart } from '../support/synth';
import { TestWorkload } from '../support/test-workload';

function patched(...ops: JsonPatch[]) {
  const chart = testChart();
  const w = new TestWorkload(chart, 'w', { name: 'w', claim: { name: 'data', mountPath: '/data' } });
  w.statefulSet.addJsonPatch(...ops);
  return chart;
}

const LIMITS = '/spec/template/spec/containers/0/resources/limits';

describe('GpuStatefulSet: JsonPatch escape hatches cannot silently break quantities', () => {
  test.each([
    [1, 1],
    ['2', '2'],
    ['1k', '1k'],
  ])('a patched device resource %j synthesizes as the quantity %j, never null', (value, expected) => {
    const chart = patched(JsonPatch.add(`${LIMITS}/rdma~1rdma_shared_device_a`, value));
    const main = findOne(synthValid(chart), 'StatefulSet').spec.template.spec.containers[0];
    expect(main.resources.limits['rdma/rdma_shared_device_a']).toBe(expected);
    expect(main.resources.limits['nvidia.com/gpu']).toBe(1);
  });

  test('a patched claim size and emptyDir size limit synthesize too', () => {
    const chart = patched(
      JsonPatch.replace('/spec/volumeClaimTemplates/0/spec/resources/requests/storage', '200Gi'),
      JsonPatch.replace('/spec/template/spec/volumes/0/emptyDir/sizeLimit', '8Gi'),
    );
    const sts = findOne(synthValid(chart), 'StatefulSet');
    expect(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('200Gi');
    expect(sts.spec.template.spec.volumes[0].emptyDir.sizeLimit).toBe('8Gi');
  });

  test.each([null, 'lots', -1, true, { amount: 1 }])(
    'a patched value %j that is no quantity fails synth naming object and field',
    value => {
      const chart = patched(JsonPatch.add(`${LIMITS}/vpc.amazonaws.com~1efa`, value));
      expect(() => Testing.synth(chart)).toThrow(
        /StatefulSet\/w spec\.template\.spec\.containers\[0\]\.resources\.limits\.vpc\.amazonaws\.com\/efa must be a Kubernetes quantity/,
      );
    },
  );

  test('a patch that adds a field the API does not have fails synth', () => {
    const chart = patched(JsonPatch.add('/spec/template/spec/preStop', { exec: { command: ['sleep', '5'] } }));
    expect(() => Testing.synth(chart)).toThrow(
      /StatefulSet\/w is invalid after a JsonPatch escape hatch: .*unknown field "preStop"/,
    );
  });

  test('an unpatched StatefulSet synthesizes exactly as k8s.KubeStatefulSet would', () => {
    const chart = testChart();
    new TestWorkload(chart, 'w', { name: 'w' });
    const sts = findOne(synthValid(chart), 'StatefulSet');
    expect(sts.apiVersion).toBe('apps/v1');
    expect(sts.spec.template.spec.containers[0].resources.requests).toEqual({
      cpu: '4',
      memory: '16Gi',
      'nvidia.com/gpu': 1,
    });
  });
});

describe('GpuStatefulSet: a patch cannot break the rules the API server applies beyond the schema', () => {
  const C = '/spec/template/spec/containers/0';
  test.each([
    [
      'a duplicate variable',
      [JsonPatch.add(`${C}/env/-`, { name: 'WORLD_SIZE', value: '2' })],
      /container 'main' env names must not repeat "WORLD_SIZE"/,
    ],
    [
      'a second container of the same name',
      [JsonPatch.add('/spec/template/spec/containers/-', { name: 'main', image: 'busybox' })],
      /container names must not repeat "main"/,
    ],
    [
      'a duplicate volume',
      [JsonPatch.add('/spec/template/spec/volumes/-', { name: 'home', emptyDir: {} })],
      /volumes names must not repeat "home"/,
    ],
    [
      'template labels that no longer match the selector',
      [JsonPatch.replace('/spec/template/metadata/labels', { app: 'other' })],
      /spec\.template\.metadata\.labels must match spec\.selector/,
    ],
    ['negative replicas', [JsonPatch.replace('/spec/replicas', -1)], /spec\.replicas must be at least 0/],
    [
      'a port above 65535',
      [JsonPatch.add(`${C}/ports`, [{ containerPort: 70000 }])],
      /containerPort must be 1-65535 \(got 70000\)/,
    ],
    [
      'an extended resource whose limit differs from its request',
      [
        JsonPatch.add(`${C}/resources/limits/example.com~1fpga`, 2),
        JsonPatch.add(`${C}/resources/requests/example.com~1fpga`, 1),
      ],
      /extended resource example\.com\/fpga needs a limit equal to its request/,
    ],
    [
      'half a device',
      [JsonPatch.add(`${C}/resources/limits/example.com~1fpga`, '500m')],
      /extended resource example\.com\/fpga limit must be a whole number \(got "500m"\)/,
    ],
  ])('%s fails synth, naming the StatefulSet', (_what, ops, message) => {
    const chart = patched(...ops);
    expect(() => Testing.synth(chart)).toThrow(/^StatefulSet\/w is invalid after a JsonPatch escape hatch: /);
    expect(() => Testing.synth(chart)).toThrow(message);
  });
});
