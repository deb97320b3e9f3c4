import { Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { sizeQuantity } from '../common/quantity';
import { Validator } from '../common/validate';

const VOLUME = 'model-cache';

/** Where a model server keeps downloaded weights. */
export class ModelCache {
  /**
   * A ReadWriteOnce claim per replica: a restarted pod finds its weights and starts in seconds
   * instead of downloading again.
   */
  static persistentClaim(o: { readonly size: Size; readonly storageClassName?: string }): ModelCache {
    return new ModelCache('claim', o.size, o.storageClassName);
  }

  /** An emptyDir: every pod start downloads the weights again. Good for small models. */
  static emptyDir(o: { readonly sizeLimit?: Size } = {}): ModelCache {
    return new ModelCache('emptyDir', o.sizeLimit, undefined);
  }

  private constructor(private readonly kind: 'claim' | 'emptyDir', private readonly size: Size | undefined, private readonly storageClassName: string | undefined) {}

  /** @internal */
  _bind(v: Validator): { volumeName: string; volume?: k8s.Volume; claimTemplate?: k8s.KubePersistentVolumeClaimProps } {
    if (this.size !== undefined) v.positiveSize('modelCache.size', this.size);
    if (this.kind === 'emptyDir') {
      return { volumeName: VOLUME, volume: { name: VOLUME, emptyDir: this.size ? { sizeLimit: sizeQuantity(this.size) } : {} } };
    }
    if (this.storageClassName !== undefined) v.dnsSubdomain('modelCache.storageClassName', this.storageClassName);
    return {
      volumeName: VOLUME,
      claimTemplate: {
        metadata: { name: VOLUME },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: sizeQuantity(this.size!) } },
          ...(this.storageClassName ? { storageClassName: this.storageClassName } : {}),
        },
      },
    };
  }
}
