import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { KIND, ManifestObject } from '../common/manifest-object';
import { claimNameFor } from '../common/names';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../validation/validate';
import type { CheckpointStorage } from './gpu-training-stateful-set';

/** Existing PersistentVolumes that a new StatefulSet version should mount instead of empty disks. */
export interface AdoptedVolumes {
  /**
   * One PersistentVolume per ordinal, in ordinal order: `persistentVolumes[i]` becomes the
   * checkpoint volume of pod `<statefulSet>-<i>`. Their reclaim policy must be Retain, and their
   * `claimRef` pre-bound to the new claim (`claimNames[i]`) before you apply, so that no other claim
   * can take a volume in between (docs/runbooks.md, "Adoption"). `storage.storageClassName` must
   * name their class.
   */
  readonly persistentVolumes: string[];
}

export interface AdoptVolumesOptions {
  readonly statefulSetName: string;
  readonly claimName: string;
  readonly replicas: number;
  readonly labels: Record<string, string>;
  readonly storage: CheckpointStorage;
  readonly adopt: AdoptedVolumes;
}

/**
 * Pre-creates the claims the StatefulSet controller will look for, each bound to an existing
 * volume with `spec.volumeName`. The controller finds them by name and creates none of its own,
 * so the new version mounts the old checkpoints.
 */
export function adoptVolumes(scope: Construct, v: Validator, o: AdoptVolumesOptions): ApiObject[] {
  v.knownProps('adoptVolumes', o.adopt, ['persistentVolumes']);
  const pvs = v.stringArray('adoptVolumes.persistentVolumes', o.adopt.persistentVolumes) ?? [];
  if (pvs.length !== o.replicas) {
    v.fail('adoptVolumes.persistentVolumes', `must name exactly one PersistentVolume per replica (${o.replicas})`, pvs);
  }
  pvs.forEach((pv, i) => v.dnsSubdomain(`adoptVolumes.persistentVolumes[${i}]`, pv));
  const dup = pvs.find((pv, i) => pvs.indexOf(pv) !== i);
  if (dup !== undefined)
    v.fail('adoptVolumes.persistentVolumes', 'must not name a volume twice: a volume binds to one claim', dup);

  return pvs.map(
    (pv, ordinal) =>
      new ManifestObject(scope, `Adopted${ordinal}`, KIND.PersistentVolumeClaim, {
        metadata: { name: claimNameFor(o.claimName, o.statefulSetName, ordinal), labels: o.labels },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: sizeQuantity(o.storage.size) } },
          ...(o.storage.storageClassName ? { storageClassName: o.storage.storageClassName } : {}),
          volumeName: pv,
        },
      }),
  );
}
