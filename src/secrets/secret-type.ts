/**
 * The `type` of a RotatingGpuSecret, with what the API server requires of its data
 * (kubernetes/kubernetes pkg/apis/core/validation ValidateSecret, on create and on update):
 * `kubernetes.io/dockerconfigjson` needs a `.dockerconfigjson` key holding JSON,
 * `kubernetes.io/tls` needs `tls.crt` and `tls.key`, `kubernetes.io/basic-auth` needs `username`
 * or `password`. `Opaque` needs nothing.
 *
 * A Secret of a type that needs data cannot be created empty, and the manifests cannot hold its
 * data: `kubectl apply` (client-side) patches every field whose live value differs from the
 * manifest (CreateThreeWayMergePatch diffs the live object against the manifest), and server-side
 * apply either conflicts with the rotator's field manager or, forced, takes the field back, so a
 * placeholder in the manifests would undo each rotation on the next apply. Such a Secret is
 * therefore created by whoever writes it (the rotator, or an operator such as External Secrets),
 * never by the manifests.
 */
export class SecretType {
  /** Any keys; created empty by the manifests and filled by the rotator. */
  static readonly OPAQUE = new SecretType('Opaque', ['credentials.json'], []);
  /** A registry credential, for `imagePullSecrets`: one `.dockerconfigjson` key. */
  static readonly DOCKER_CONFIG_JSON = new SecretType(
    'kubernetes.io/dockerconfigjson',
    ['.dockerconfigjson'],
    [['.dockerconfigjson']],
  );
  /** A TLS pair: `tls.crt` and `tls.key`, rotated together (Reload.sync swaps both at once). */
  static readonly TLS = new SecretType('kubernetes.io/tls', ['tls.crt', 'tls.key'], [['tls.crt'], ['tls.key']]);
  /** A user name and a password; the API server needs at least one of them. */
  static readonly BASIC_AUTH = new SecretType(
    'kubernetes.io/basic-auth',
    ['username', 'password'],
    [['username', 'password']],
  );

  private constructor(
    /** The `type` field. */
    readonly type: string,
    /** The keys when `keys` is left out. */
    readonly defaultKeys: readonly string[],
    /** Each entry: one of these keys must be among `keys`. */
    readonly requiredKeys: readonly (readonly string[])[],
  ) {}

  /** Whether the API server refuses this type without data, so the manifests cannot create it. */
  get needsDataAtCreation(): boolean {
    return this.requiredKeys.length > 0;
  }
}
