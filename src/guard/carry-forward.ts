// Fields the server, its admission plugins and controllers keep on update when a manifest leaves
// them out: copied from the old object before the comparison.
import { lastAppliedOf, serverSideApplied } from './apply';
import { arr, clone, isLiveExport, KubeObject } from './normalize';
import { get, isObject, set } from './object';

/** Fields the server keeps when a manifest leaves them out, copied from the old object. */
export function carryForward(kindKey: string, beforeRaw: KubeObject, b: KubeObject, a: KubeObject): void {
  const live = isLiveExport(beforeRaw);
  const lastApplied = lastAppliedOf(beforeRaw) ?? serverSideApplied(beforeRaw);
  // kubectl apply keeps a live field that the manifest omits unless it applied the field itself.
  const keptByApply = (path: string) => live && (lastApplied === undefined || get(lastApplied, path) === undefined);
  const carry = (path: string, when: boolean) => {
    if (when && get(a, path) === undefined && get(b, path) !== undefined) set(a, path, clone(get(b, path)));
  };
  switch (kindKey) {
    case '/Service': {
      // The Service REST strategy (patchAllocatedValues, initIPFamilyFields) keeps allocated IPs,
      // families and node ports whatever the manifest says, while the type needs them.
      const keep = a.spec?.type !== 'ExternalName' && b.spec?.type !== 'ExternalName';
      for (const p of [
        'spec.clusterIP',
        'spec.clusterIPs',
        'spec.ipFamilies',
        'spec.ipFamilyPolicy',
        'spec.healthCheckNodePort',
      ])
        carry(p, keep);
      const bPorts = arr(b.spec?.ports).filter(isObject);
      for (const p of arr(a.spec?.ports)) {
        if (!isObject(p)) continue;
        const old = bPorts.find(q => q.port === p.port && q.protocol === p.protocol);
        if (
          keep &&
          p.nodePort === undefined &&
          old?.nodePort !== undefined &&
          (a.spec.type === 'NodePort' || a.spec.type === 'LoadBalancer')
        )
          p.nodePort = old.nodePort;
      }
      break;
    }
    case '/PersistentVolumeClaim':
      // Set by the binder and the DefaultStorageClass admission plugin, not by the manifest.
      carry('spec.volumeName', keptByApply('spec.volumeName'));
      carry('spec.storageClassName', keptByApply('spec.storageClassName'));
      break;
    case 'batch/Job':
      // SetDefaults_Job sets completions only when parallelism is unset too; the defaulted value
      // stays when a later manifest sets parallelism alone.
      carry('spec.completions', keptByApply('spec.completions') && beforeRaw.spec?.completions !== undefined);
      break;
    case '/PersistentVolume':
      carry('spec.claimRef', keptByApply('spec.claimRef'));
      break;
    case '/Pod': {
      // Set by the scheduler and by admission (Priority, RuntimeClass, and ServiceAccount, which adds
      // the account's imagePullSecrets).
      for (const p of [
        'spec.nodeName',
        'spec.priority',
        'spec.priorityClassName',
        'spec.preemptionPolicy',
        'spec.runtimeClassName',
        'spec.overhead',
        'spec.imagePullSecrets',
      ])
        carry(p, keptByApply(p));
      // Added by the ServiceAccount admission plugin: the kube-api-access projected volume and its mounts.
      const injected = new Set<string>(
        arr(b.spec?.volumes)
          .filter((v: any) => /^kube-api-access-/.test(v?.name ?? ''))
          .map((v: any) => v.name),
      );
      if (live && injected.size > 0 && isObject(a.spec)) {
        const has = new Set(arr(a.spec.volumes).map((v: any) => v?.name));
        a.spec.volumes = [
          ...arr(a.spec.volumes),
          ...arr(b.spec.volumes).filter((v: any) => injected.has(v.name) && !has.has(v.name)),
        ];
        for (const list of ['initContainers', 'containers']) {
          arr(a.spec[list]).forEach((c: any, i: number) => {
            if (!isObject(c)) return;
            const old = arr(b.spec[list])[i];
            const mounts = arr(old?.volumeMounts).filter(
              (m: any) => injected.has(m?.name) && !arr(c.volumeMounts).some((n: any) => n?.name === m.name),
            );
            if (mounts.length > 0) c.volumeMounts = [...arr(c.volumeMounts), ...mounts];
          });
        }
      }
      // Added by the DefaultTolerationSeconds admission plugin, and by ExtendedResourceToleration
      // (on create and on update, plugin/pkg/admission/extendedresourcetoleration; on in GKE and
      // AKS): `<resource> Exists NoSchedule` for each extended resource the containers request.
      if (live && isObject(a.spec)) {
        const extended = new Set<string>(
          ['initContainers', 'containers']
            .flatMap(l => arr(a.spec[l]))
            .flatMap((c: any) => [
              ...Object.keys(c?.resources?.requests ?? {}),
              ...Object.keys(c?.resources?.limits ?? {}),
            ])
            .filter(r => r.includes('/') && !/(^|\.)kubernetes\.io\//.test(r)),
        );
        const defaultTol = (t: any) =>
          (['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].includes(t?.key) &&
            t?.effect === 'NoExecute') ||
          (extended.has(t?.key) && t?.operator === 'Exists' && t?.effect === 'NoSchedule');
        const add = arr(b.spec?.tolerations).filter(
          (t: any) =>
            defaultTol(t) && !arr(a.spec.tolerations).some((u: any) => u?.key === t.key && u?.effect === t.effect),
        );
        if (add.length > 0) a.spec.tolerations = [...arr(a.spec.tolerations), ...add];
      }
      break;
    }
    default:
      break;
  }
}
