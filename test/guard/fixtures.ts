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
      volumeClaimTemplates: [{ metadata: { name: claim }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } } }],
      template: {
        metadata: { labels: { app: 'onnx-trainer' } },
        spec: {
          ...(securityContext ? { securityContext } : {}),
          containers: [{ name: 'onnx', image: `onnxruntime/multi-gpu:${version}`, resources: { limits: { 'nvidia.com/gpu': 2 } } }],
        },
      },
    },
  };
}

/** The same object as `kubectl get -o yaml` returns it: status, managedFields, server defaults. */
export function liveExport(manifest: any): any {
  const live = JSON.parse(JSON.stringify(manifest));
  live.metadata = {
    ...live.metadata, namespace: 'ml', uid: '2f6a', resourceVersion: '81234', generation: 4, creationTimestamp: '2026-11-01T10:00:00Z',
    managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: {} }],
    annotations: { ...(live.metadata.annotations ?? {}), 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(manifest) },
  };
  if (live.kind === 'StatefulSet') {
    live.spec.podManagementPolicy ??= 'OrderedReady';
    live.spec.revisionHistoryLimit ??= 10;
    live.spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
    live.spec.volumeClaimTemplates = (live.spec.volumeClaimTemplates ?? []).map((t: any) => ({
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: { ...t.metadata, creationTimestamp: null },
      spec: { ...t.spec, volumeMode: 'Filesystem' },
      status: { phase: 'Pending' },
    }));
    const pod = live.spec.template.spec;
    Object.assign(pod, { dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', schedulerName: 'default-scheduler', securityContext: pod.securityContext ?? {} });
    pod.terminationGracePeriodSeconds ??= 30;
    for (const c of pod.containers) Object.assign(c, { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: c.imagePullPolicy ?? 'IfNotPresent' });
    live.status = { replicas: 3, readyReplicas: 3, currentRevision: 'onnx-trainer-7d9', updateRevision: 'onnx-trainer-7d9', observedGeneration: 4 };
  }
  if (live.kind === 'Service') {
    live.spec = { ...live.spec, clusterIP: live.spec.clusterIP ?? '10.96.12.34', clusterIPs: live.spec.clusterIPs ?? [live.spec.clusterIP ?? '10.96.12.34'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', sessionAffinity: 'None', type: live.spec.type ?? 'ClusterIP' };
    live.status = { loadBalancer: {} };
  }
  if (live.kind === 'PersistentVolumeClaim') {
    live.spec = { ...live.spec, volumeMode: 'Filesystem', volumeName: 'pvc-7f3e', storageClassName: live.spec.storageClassName ?? 'standard' };
    live.status = { phase: 'Bound', capacity: { storage: live.spec.resources.requests.storage } };
  }
  return live;
}

export const list = (items: any[]) => ({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items });
