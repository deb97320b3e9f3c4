import { Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { sizeQuantity } from '../common/quantity';
import { show, Validator } from '../validation/validate';

const VOLUME = 'model-cache';
/** Room beside the weights for the download's `.incomplete` files, tokenizer and config files. */
const HEADROOM = 1.2;

/** How the cache volume reaches the pod. */
export interface BoundModelCache {
  readonly volumeName: string;
  /** A pod volume (emptyDir or the shared claim). */
  readonly volume?: k8s.Volume;
  /** A per-replica claim template. */
  readonly claimTemplate?: k8s.KubePersistentVolumeClaimProps;
  /** Mounted by every replica at once (ReadWriteMany). */
  readonly shared: boolean;
}

/**
 * Where a model server keeps downloaded weights. An init container downloads into the cache before
 * the server starts (for a shared claim, a fill Job does and the init container waits for it), where
 * no probe can kill a long download; the server then reads the cache with the hub offline
 * (`HF_HUB_OFFLINE=1`), so its startup probe covers loading only.
 */
export class ModelCache {
  /**
   * A ReadWriteOnce claim per replica: a restarted pod finds its weights and starts in seconds
   * instead of downloading again. Each replica downloads once, the first time.
   */
  static persistentClaim(o: { readonly size: Size; readonly storageClassName?: string }): ModelCache {
    return new ModelCache('claim', o?.size, o?.storageClassName, undefined, o, ['size', 'storageClassName']);
  }

  /** An emptyDir: every pod start downloads the weights again. Good for small models. */
  static emptyDir(o: { readonly sizeLimit?: Size } = {}): ModelCache {
    return new ModelCache('emptyDir', o?.sizeLimit, undefined, undefined, o, ['sizeLimit']);
  }

  /**
   * An existing ReadWriteMany claim (NFS, EFS, Filestore, CephFS, Azure Files...) mounted by every
   * replica and every version: the weights are downloaded once for the whole service, by a CPU-only
   * Job (`<model>-fill-<hash>`, Argo CD sync wave -1) per distinct fill (services with the same claim,
   * engine, model, revision, image and pod settings share one; a version with a new image has its own, which
   * finds the cache complete and exits); the serving pods wait for its completion marker with the hub offline, and hold
   * no GPU idle during a download. Concurrent fillers (two Jobs, or a Job and a per-pod download)
   * never corrupt the cache: each writes verified files by rename under its own lock files, which work
   * without `flock` (NFS `nolock`). The claim's files must be writable by the pod's UID (NFS drivers do
   * not apply fsGroup), and every service on the claim runs as one UID.
   */
  static sharedClaim(o: { readonly claimName: string }): ModelCache {
    return new ModelCache('shared', undefined, undefined, o?.claimName, o, ['claimName']);
  }

  private constructor(
    private readonly kind: 'claim' | 'emptyDir' | 'shared',
    private readonly size: Size | undefined,
    private readonly storageClassName: string | undefined,
    private readonly claimName: string | undefined,
    private readonly options: object | undefined,
    private readonly optionKeys: string[],
  ) {}

  /** @internal */
  _bind(v: Validator, modelSize: Size | undefined): BoundModelCache {
    if (this.options !== undefined && this.options !== null) v.knownProps('modelCache', this.options, this.optionKeys);
    const sizeProp = this.kind === 'emptyDir' ? 'modelCache.sizeLimit' : 'modelCache.size';
    if (this.kind === 'claim' && this.size === undefined)
      v.fail(sizeProp, 'is required for a persistent claim', this.size);
    if (this.size !== undefined) {
      v.positiveSize(sizeProp, this.size);
      if (modelSize !== undefined && this.size.toKibibytes() < modelSize.toKibibytes() * HEADROOM) {
        v.fail(
          sizeProp,
          `must hold modelSize (${show(modelSize)}) with ${Math.round((HEADROOM - 1) * 100)}% headroom for partial downloads and tokenizer files, at least ${Math.ceil((modelSize.toKibibytes() * HEADROOM) / 1024 ** 2)}Gi`,
          this.size,
        );
      }
    }
    switch (this.kind) {
      case 'emptyDir':
        return {
          volumeName: VOLUME,
          volume: { name: VOLUME, emptyDir: this.size ? { sizeLimit: sizeQuantity(this.size) } : {} },
          shared: false,
        };
      case 'shared':
        v.dnsSubdomain('modelCache.claimName', this.claimName as string);
        return {
          volumeName: VOLUME,
          volume: { name: VOLUME, persistentVolumeClaim: { claimName: this.claimName as string } },
          shared: true,
        };
      default:
        if (this.storageClassName !== undefined) v.dnsSubdomain('modelCache.storageClassName', this.storageClassName);
        return {
          volumeName: VOLUME,
          shared: false,
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
}
