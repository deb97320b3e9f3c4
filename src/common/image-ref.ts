/**
 * A container image reference, split as the image facts need it: the repository as Docker
 * normalizes it (`vllm/vllm-openai` is `docker.io/vllm/vllm-openai`, `ubuntu` is
 * `docker.io/library/ubuntu`) and the release its tag names, if the tag is a version
 * (`v0.18.0`, `3.0.1`, `v0.5.20-cu126`). A digest-only reference has no tag and no version.
 */
export class ImageRef {
  static parse(ref: string): ImageRef {
    const at = ref.indexOf('@');
    const name = at >= 0 ? ref.slice(0, at) : ref;
    const slash = name.lastIndexOf('/');
    const colon = name.lastIndexOf(':');
    const tag = colon > slash ? name.slice(colon + 1) : undefined;
    let repository = colon > slash ? name.slice(0, colon) : name;
    const first = repository.split('/')[0];
    const hasRegistry =
      repository.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
    if (!hasRegistry) repository = `docker.io/${repository.includes('/') ? repository : `library/${repository}`}`;
    return new ImageRef(repository, tag);
  }

  /** The release the tag names, as [major, minor, patch], if it names one. */
  readonly version?: readonly [number, number, number];

  private constructor(
    readonly repository: string,
    readonly tag: string | undefined,
  ) {
    const m = tag === undefined ? null : /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:$|[-+._a-z])/i.exec(tag);
    if (m) this.version = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  }

  /** Whether the tag names a release before `version` (false when it names none). */
  isBefore(version: readonly [number, number, number]): boolean {
    if (!this.version) return false;
    for (let i = 0; i < 3; i++) if (this.version[i] !== version[i]) return this.version[i] < version[i];
    return false;
  }
}
