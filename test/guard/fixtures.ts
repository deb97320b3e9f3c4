/** Seed 000's StatefulSet, as the v1.2.0 manifest had it. */
export function seed000(version: '1.2.0' | '1.3.0', claim = 'data-pvc', securityContext?: object): any {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'onnx-trainer' },
    spec: {
      serviceName: 'onnx-trainer-svc',
      replicas: 3,
      updateStrategy: { type: 'RollingUpdate' },
      selector: { matchLabels: { app: 'onnx-trainer' } },
      volumeClaimTemplates: [
        {
          metadata: { name: claim },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } },
        },
      ],
      template: {
        metadata: { labels: { app: 'onnx-trainer' } },
        spec: {
          ...(securityContext ? { securityContext } : {}),
          containers: [
            { name: 'onnx', image: `onnxruntime/multi-gpu:${version}`, resources: { limits: { 'nvidia.com/gpu': 2 } } },
          ],
        },
      },
    },
  };
}

export { liveExport, list } from './live-export';
