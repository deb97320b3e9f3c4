import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { escapeKubeletExpansion } from '../common/kubelet-expansion';
import { versionedName } from '../common/names';
import { PodTemplate } from '../common/pod-template';
import { Validator } from '../validation/validate';
import { CACHE_WAIT_CONTAINER, filledDownload } from './cache-fill-job';
import { DOWNLOAD_CONTAINER } from './model-download';
import { modelIdOf, revisionOf } from './serving-inputs';

/** A LoRA adapter the server loads at start, selected by the OpenAI `model` field. */
export interface LoraAdapter {
  /**
   * The adapter's name, without whitespace, `=` or `,`; with `/`, its directory in the cache nests (no empty, `.` or
   * `..` segment). vLLM serves it as `model: "<name>"`, SGLang as `model: "<served model name>:<name>"` (SGLang answers
   * a bare adapter name with the base model); see docs/routing.md.
   */
  readonly name: string;
  /**
   * The adapter's HuggingFace repository (downloaded into the model cache with the base model, before the server
   * starts, so the offline server finds it), or an absolute path on a volume (then nothing is downloaded).
   */
  readonly modelId: string;
  /**
   * The adapter repository's revision. Pin a commit for reproducible deploys.
   * @default - the repository's default branch
   */
  readonly revision?: string;
}

/** A checked adapter and the path the server loads it from. */
export interface ResolvedAdapter extends LoraAdapter {
  /** Where the server reads it: the volume path, or the link the download makes to its cached snapshot. */
  readonly path: string;
  readonly download: boolean;
}

/** Under the model cache: one directory of adapter links per workload, so versions on a shared cache never race. */
const ADAPTERS_DIR = 'lora';

/** The adapters of a serving construct, checked, with their paths under the cache mounted at `cachePath`. */
export function resolveAdapters(
  v: Validator,
  adapters: LoraAdapter[] | undefined,
  o: {
    cachePath: string;
    name: string;
    version?: number;
    baseModelId: string;
    /** The names the base model answers to, when an adapter's bare name would collide with them (vLLM). */
    servedNames?: readonly string[];
  },
): ResolvedAdapter[] {
  if (adapters === undefined) return [];
  if (!Array.isArray(adapters) || adapters.length === 0)
    v.fail('loraAdapters', 'must list at least one adapter (or be left out)', adapters);
  const names = new Set<string>();
  return adapters.map((a, i) => {
    const at = `loraAdapters[${i}]`;
    if (a === null || typeof a !== 'object' || Array.isArray(a))
      v.fail(at, 'must be an adapter ({ name, modelId, revision? })', a);
    v.knownProps(`${at}.`, a, ['name', 'modelId', 'revision']);
    const name = v.word(`${at}.name`, a.name);
    if (names.has(name)) v.fail(`${at}.name`, 'must not repeat a name', name);
    if (o.servedNames?.includes(name))
      v.fail(`${at}.name`, 'must differ from the names the base model is served by, which clients also request', name);
    // vLLM's LoRAParserAction (cli_args.py) splits `name=path` at its one "=" and reads an item with a "," as JSON;
    // SGLang's LoRAPathAction splits at the first "=".
    if (/[=,]/.test(name)) v.fail(`${at}.name`, 'must not contain "=" or "," (the engines read name=path)', name);
    // The name is the adapter's directory under the workload's in the cache: no segment may leave it.
    if (name.split('/').some(seg => seg === '' || seg === '.' || seg === '..'))
      v.fail(
        `${at}.name`,
        'must not have an empty, "." or ".." path segment: it names the adapter\'s directory in the cache',
        name,
      );
    // One adapter's directory would hold the other's link (or replace it): the download fails or links the wrong files.
    const nested = [...names].find(n => n.startsWith(`${name}/`) || name.startsWith(`${n}/`));
    if (nested !== undefined)
      v.fail(
        `${at}.name`,
        `must not be a path prefix of another adapter's name, or have one (${nested}): each names a directory in the cache`,
        name,
      );
    names.add(name);
    const modelId = modelIdOf(v, a.modelId, undefined, `${at}.modelId`);
    const revision = revisionOf(v, a.revision, `${at}.revision`);
    const download = !modelId.startsWith('/');
    // vLLM's LoRAParserAction (cli_args.py) reads `name=path` only without a "," and with one "=" (else as JSON);
    // SGLang's documented form is `<NAME>=<PATH>` too.
    if (!download && /[=,]/.test(modelId))
      v.fail(`${at}.modelId`, 'must not contain "=" or "," (the engines read name=path)', modelId);
    if (!download && revision !== undefined)
      v.fail(`${at}.revision`, 'needs a hub adapter: with a local path nothing is downloaded', revision);
    if (download && o.baseModelId.startsWith('/')) {
      v.fail(
        `${at}.modelId`,
        'must be a local path when the base model is: nothing downloads into the cache then',
        modelId,
      );
    }
    const path = download ? `${o.cachePath}/${ADAPTERS_DIR}/${versionedName(o.name, o.version)}/${name}` : modelId;
    return { name, modelId, ...(revision !== undefined ? { revision } : {}), path, download };
  });
}

/**
 * One init container per hub adapter, after the base model's download and like it (the same image, script, env,
 * credentials, mounts and limits), that fetches the adapter into the cache, checks its rank against `maxRank` when
 * the server has one, and links its complete snapshot at the path the server loads. Init containers run in order
 * and all finish before the server starts.
 */
export function addAdapterDownloads(
  template: PodTemplate,
  adapters: readonly ResolvedAdapter[],
  maxRank: number | undefined,
): void {
  const hub = adapters.filter(a => a.download);
  if (hub.length === 0) return;
  const init = template.spec.initContainers ?? [];
  // On a shared cache a fill Job downloads and the pod waits for it (cache-fill-job.ts): so for adapters.
  const base = init.findIndex(c => c.name === DOWNLOAD_CONTAINER || c.name === CACHE_WAIT_CONTAINER);
  const download = init[base];
  // The base download's command: python3 <script> <engine> <model> <revision>.
  const [python, script, engine] = download.command!;
  const containers: k8s.Container[] = hub.map((a, i) => {
    const name = `${download.name}-lora-${i}`;
    const command = [
      python,
      script,
      engine,
      escapeKubeletExpansion(a.modelId),
      escapeKubeletExpansion(a.revision ?? ''),
      escapeKubeletExpansion(a.path),
      maxRank === undefined ? '' : String(maxRank),
    ];
    return filledDownload(template, command, name) ?? { ...download, name, command };
  });
  template.spec.initContainers = [...init.slice(0, base + 1), ...containers, ...init.slice(base + 1)];
}
