import { guard } from '../../src';
import { goDecoded } from '../../src/guard/go-fields';
import { normalize } from '../../src/guard/normalize';

const decoded = (x: any, holder: string, outer = '') => goDecoded(JSON.parse(JSON.stringify(x)), holder, outer);

describe('go-fields: what Go decodes a zero value to depends on the field (k8s.io/api types.go, *T or T)', () => {
  test('the same JSON key is a value in one struct and a pointer in another', () => {
    const podSpec = {
      hostNetwork: false, // PodSpec: bool
      shareProcessNamespace: false, // *bool
      restartPolicy: '', // PodSpec: RestartPolicy string
      resources: {}, // PodSpec: *ResourceRequirements (pod-level)
      containers: [{ name: 'c', restartPolicy: '', resources: {}, stdin: false }], // *string, a struct, bool
      volumes: [
        { name: 'a', csi: { driver: 'd', readOnly: false, fsType: '' } }, // CSIVolumeSource: *bool, *string
        { name: 'b', persistentVolumeClaim: { claimName: 'x', readOnly: false } }, // bool
        { name: 'h', hostPath: { path: '/x', type: '' } }, // *HostPathType
      ],
    };
    expect(decoded(podSpec, 'spec', 'template')).toEqual({
      shareProcessNamespace: false,
      resources: {},
      containers: [{ name: 'c', restartPolicy: '' }],
      volumes: [
        { name: 'a', csi: { driver: 'd', readOnly: false, fsType: '' } },
        { name: 'b', persistentVolumeClaim: { claimName: 'x' } },
        { name: 'h', hostPath: { path: '/x', type: '' } },
      ],
    });
    // A PersistentVolume's CSI source has a bool readOnly and a string fsType.
    const pv = { spec: { csi: { driver: 'd', volumeHandle: 'v', readOnly: false, fsType: '' }, storageClassName: '' } };
    expect(decoded(pv, 'PersistentVolume')).toEqual({ spec: { csi: { driver: 'd', volumeHandle: 'v' } } });
    // A claim's storageClassName is a *string: "" asks for no class, unlike absent.
    const pvc = { spec: { storageClassName: '', resources: {} } };
    expect(decoded(pvc, 'PersistentVolumeClaim')).toEqual({ spec: { storageClassName: '' } });
  });

  test("a map's entries are data; an empty map is none, an empty pointer struct is not", () => {
    expect(decoded({ metadata: { labels: { a: '' } }, spec: { selector: { app: '' } } }, 'Service')).toEqual({
      metadata: { labels: { a: '' } },
      spec: { selector: { app: '' } },
    });
    expect(decoded({ spec: { selector: {}, ports: [] } }, 'Service')).toEqual({});
    // A Job's selector is a *LabelSelector: `{}` selects everything.
    expect(decoded({ spec: { selector: {} } }, 'Job')).toEqual({ spec: { selector: {} } });
  });

  test('a value quantity at 0 is none (divisor); replicas is *int32 in apps/v1 and int32 in a ReplicatedJob', () => {
    const env = { valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '0' } } };
    expect(decoded(env, 'env')).toEqual({ valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } });
    expect(decoded({ spec: { replicas: 0 } }, 'StatefulSet')).toEqual({ spec: { replicas: 0 } });
    expect(decoded([{ name: 'w', replicas: 0, template: { metadata: {} } }], 'replicatedJobs', 'spec')).toEqual([
      { name: 'w' },
    ]);
  });

  test('normalize reads a built-in object through the same table', () => {
    const pod = normalize({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { hostNetwork: false, resources: {}, containers: [{ name: 'c', image: 'i:1', resources: {} }] },
    });
    expect(pod.spec.hostNetwork).toBeUndefined();
    expect(pod.spec.resources).toEqual({});
    expect(pod.spec.containers[0].resources).toBeUndefined();
  });

  test("a Job's pod volume with csi readOnly: false written out differs from none (*bool); a claim volume's does not (bool)", () => {
    const job = (volume: object) => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j', namespace: 'ml' },
      spec: {
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'c', image: 'i:1' }],
            volumes: [{ name: 'v', ...volume }],
          },
        },
      },
    });
    const errors = (before: any, after: any) =>
      guard([before], [after])
        .findings.filter(f => f.severity === 'error')
        .map(f => f.path);
    expect(errors(job({ csi: { driver: 'd' } }), job({ csi: { driver: 'd', readOnly: false } }))).toEqual([
      'spec.template',
    ]);
    expect(
      errors(
        job({ persistentVolumeClaim: { claimName: 'x' } }),
        job({ persistentVolumeClaim: { claimName: 'x', readOnly: false } }),
      ),
    ).toEqual([]);
  });
});
