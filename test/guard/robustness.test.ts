// Malformed input (a number where a list belongs, null where an object belongs) gets findings or an
// input error, never a JavaScript TypeError: the guard must not crash on what the server rejects.
import { guard } from '../../src';
import { liveExport } from './live-export';
import { seed000 } from './fixtures';

const objects = [
  seed000('1.2.0'),
  {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j' },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'c', image: 'i', env: [{ name: 'A', value: 'b' }], ports: [{ containerPort: 1 }] }],
          volumes: [{ name: 'v', secret: { secretName: 's' } }],
        },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's' },
    spec: { type: 'NodePort', ports: [{ port: 80 }], selector: { a: 'b' } },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: {
      containers: [{ name: 'c', image: 'i' }],
      tolerations: [{ key: 'a', operator: 'Exists' }],
      volumes: [{ name: 'kube-api-access-1', projected: { sources: [] } }],
    },
  },
  {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'pvc' },
    spec: { resources: { requests: { storage: '1Gi' } } },
  },
];

function paths(o: any, prefix: string[] = []): string[][] {
  if (!o || typeof o !== 'object') return [];
  return Object.keys(o).flatMap(k => [[...prefix, k], ...paths(o[k], [...prefix, k])]);
}

test.each(objects.map(o => [o.kind, o]))(
  '%s: any subtree replaced by a wrong type is compared without a crash',
  (_kind, o) => {
    const crashes: string[] = [];
    for (const p of paths(o).filter(q => !['apiVersion', 'kind', 'metadata'].includes(q[0]))) {
      for (const wrong of [5, null, 'x', {}, [5]]) {
        const m = JSON.parse(JSON.stringify(o));
        let t = m;
        for (const k of p.slice(0, -1)) t = t[k];
        t[p[p.length - 1]] = wrong;
        for (const [b, a] of [
          [liveExport(o), m],
          [m, o],
        ]) {
          try {
            guard([b], [a]);
          } catch (e) {
            if ((e as Error).name !== 'GuardInputError')
              crashes.push(`${p.join('.')} = ${JSON.stringify(wrong)}: ${(e as Error).message}`);
          }
        }
      }
    }
    expect(crashes).toEqual([]);
  },
);
