import { ConfigurationError, PodSecurityLevel, Rdma } from '../../src';
import { Validator } from '../../src/validation/validate';

const resolve = (rdma: Rdma) => rdma._resolve(new Validator('GpuTrainingStatefulSet', 't'), 'rdma');
const env = (rdma: Rdma) => Object.fromEntries(resolve(rdma).env.map(e => [e.name, e.value]));

describe('Rdma', () => {
  test('sharedDevice: one shared device, IB verbs forced, IPC_LOCK', () => {
    expect(resolve(Rdma.sharedDevice())).toEqual({
      resources: { 'rdma/rdma_shared_device_a': 1 },
      env: [{ name: 'NCCL_NET', value: 'IB' }],
      capabilities: ['IPC_LOCK'],
      annotations: {},
    });
    expect(resolve(Rdma.sharedDevice({ resourceName: 'rdma/hca_pool' })).resources).toEqual({ 'rdma/hca_pool': 1 });
    expect(env(Rdma.sharedDevice({ hca: '=mlx5_0:1,mlx5_1:1', gidIndex: 3 }))).toEqual({
      NCCL_NET: 'IB',
      NCCL_IB_HCA: '=mlx5_0:1,mlx5_1:1',
      NCCL_IB_GID_INDEX: '3',
    });
  });

  test('sharedDevice over RoCE: the macvlan network through Multus, bootstrap kept on eth0', () => {
    const parts = resolve(
      Rdma.sharedDevice({ resourceName: 'rdma/rdma_shared_device_eth', networks: ['rdmashared-net'], gidIndex: 3 }),
    );
    expect(parts.annotations).toEqual({ 'k8s.v1.cni.cncf.io/networks': 'rdmashared-net' });
    expect(parts.resources).toEqual({ 'rdma/rdma_shared_device_eth': 1 });
    expect(Object.fromEntries(parts.env.map(e => [e.name, e.value]))).toEqual({
      NCCL_NET: 'IB',
      NCCL_IB_GID_INDEX: '3',
      NCCL_SOCKET_IFNAME: 'eth0',
    });
  });

  test('sriov: the Multus annotation lists the networks in order; VFs default to one per network', () => {
    const parts = resolve(Rdma.sriov({ networks: ['a', 'ns/b', 'c@net3'], resourceName: 'nvidia.com/sriov_rdma_vf' }));
    expect(parts.annotations).toEqual({ 'k8s.v1.cni.cncf.io/networks': 'a,ns/b,c@net3' });
    expect(parts.resources).toEqual({ 'nvidia.com/sriov_rdma_vf': 3 });
    expect(parts.capabilities).toEqual(['IPC_LOCK']);
    expect(resolve(Rdma.sriov({ networks: ['a'], resourceName: 'nvidia.com/vf', count: 2 })).resources).toEqual({
      'nvidia.com/vf': 2,
    });
  });

  test('efa: the EFA resource, NCCL bound to the aws-ofi-nccl plugin (no silent TCP fallback), libfabric settings, no capability', () => {
    expect(resolve(Rdma.efa(32))).toEqual({
      resources: { 'vpc.amazonaws.com/efa': 32 },
      env: [
        { name: 'NCCL_NET', value: 'AWS Libfabric' },
        { name: 'FI_PROVIDER', value: 'efa' },
        { name: 'FI_EFA_USE_HUGE_PAGE', value: '0' },
      ],
      capabilities: [],
      annotations: {},
    });
  });

  test('efa never forces device RDMA, which aborts libfabric on EFA devices without RDMA read (g5, g6, p3dn)', () => {
    expect(env(Rdma.efa(1)).FI_EFA_USE_DEVICE_RDMA).toBeUndefined();
  });

  test('the Pod Security level each implies', () => {
    expect(Rdma.sharedDevice().podSecurityLevel).toBe(PodSecurityLevel.PRIVILEGED);
    expect(Rdma.sriov({ networks: ['a'], resourceName: 'nvidia.com/vf' }).podSecurityLevel).toBe(
      PodSecurityLevel.PRIVILEGED,
    );
    expect(Rdma.efa(1).podSecurityLevel).toBe(PodSecurityLevel.RESTRICTED);
  });

  test.each<[string, Rdma, RegExp]>([
    ['a non-numeric EFA count', Rdma.efa('4' as any), /rdma \(Rdma.efa count\) must be a whole number/],
    ['an HCA with spaces', Rdma.sharedDevice({ hca: 'mlx5 0' }), /rdma.hca must be an NCCL_IB_HCA value/],
    [
      'networks that are not an array',
      Rdma.sriov({ networks: 'a' as any, resourceName: 'nvidia.com/vf' }),
      /rdma.networks must be an array of strings/,
    ],
    [
      'a VF count of 0',
      Rdma.sriov({ networks: ['a'], resourceName: 'nvidia.com/vf', count: 0 }),
      /rdma.count must be a whole number from 1 to 64/,
    ],
    ['options that are not an object', Rdma.sharedDevice('mlx5' as any), /rdma must be an object/],
    [
      'shared-device networks that are empty',
      Rdma.sharedDevice({ networks: [] }),
      /rdma.networks must name at least one NetworkAttachmentDefinition/,
    ],
    [
      'a bad shared-device network',
      Rdma.sharedDevice({ networks: ['ns/Bad'] }),
      /rdma.networks\[0\] must be a NetworkAttachmentDefinition/,
    ],
  ])('%s is refused', (_label, rdma, message) => {
    expect(() => resolve(rdma)).toThrow(ConfigurationError);
    expect(() => resolve(rdma)).toThrow(message);
  });
});
