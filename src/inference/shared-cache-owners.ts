import { Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { Validator } from '../validation/validate';

/** Who fills and reads each shared model cache of an app: the claim's namespace and name, to its first user. */
const OWNERS = new WeakMap<IConstruct, Map<string, { uid: number; who: string }>>();

/**
 * One UID per shared model cache claim, across every serving construct of the app. The download
 * writes the hub cache with the process's UID and a 022 umask, and the server (and the next
 * download, which takes its locks and renames there) must write beside it. On NFS, EFS, Filestore
 * and most other ReadWriteMany volumes `fsGroup` changes nothing, and root is squashed to `nobody`,
 * so a root SGLang and a UID-2000 vLLM on one claim leave files the other cannot write.
 */
export function claimSharedCache(
  scope: IConstruct,
  v: Validator,
  o: { claimName: string; uid: number | undefined; who: string },
): void {
  const root = scope.node.root;
  let owners = OWNERS.get(root);
  if (!owners) OWNERS.set(root, (owners = new Map()));
  const key = `${Chart.of(scope).namespace ?? ''}/${o.claimName}`;
  const uid = o.uid ?? 0;
  const first = owners.get(key);
  if (!first) {
    owners.set(key, { uid, who: o.who });
    return;
  }
  if (first.uid !== uid) {
    const as = (n: number) => (n === 0 ? 'root (UID 0)' : `UID ${n}`);
    v.fail(
      'modelCache',
      `shares claim ${o.claimName} with ${first.who}, which runs as ${as(first.uid)}, but this one runs as ${as(uid)}: each would leave cache files the other cannot write (ReadWriteMany volumes ignore fsGroup, and squash root); run both as one UID (runAsUser, runAsRoot) or give each its own claim`,
      o.claimName,
    );
  }
}
