import { ApiObject, Chart, Size } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct, IConstruct } from 'constructs';
import { nameHash } from '../common/hash';
import { ARGOCD_SYNC_WAVE, CACHE_FILL_COMPONENT, workloadLabels } from '../common/labels';
import { KIND, ManifestObject } from '../common/manifest-object';
import { PodTemplate } from '../common/pod-template';
import { sizeQuantity } from '../common/quantity';
import { scriptConfigMap, scriptHash, scriptVolumeName } from '../common/runtime-scripts';
import { hubDownloadScript } from './engine';
import { DOWNLOAD_CONTAINER, DownloadResources } from './model-download';

/** The init container of a serving pod on a filled shared cache: it waits for the fill, offline. */
export const CACHE_WAIT_CONTAINER = 'model-cache-wait';
/** hub-download.py's DOWNLOAD_DEADLINE_SECONDS default: the whole download's deadline. */
export const DEFAULT_DOWNLOAD_DEADLINE_SECONDS = 6 * 3600;
/**
 * Pod restarts of a fill before the Job fails. Each restart resumes: the download keeps every
 * verified file, and its private partial files live under the pod's name (restartPolicy OnFailure
 * keeps the pod, and so the name).
 */
const FILL_BACKOFF_LIMIT = 4;
/**
 * A fill Job's CPU and memory unless `downloadResources` says otherwise. Unlike the init download,
 * whose request hides under the server's (a pod reserves the larger of its init containers' and its
 * containers'), the Job is a pod of its own, so it asks for what the download does: hub-download.py
 * fetches one file at a time and hashes it in 1 MiB chunks (one core hashes SHA-256 faster than a
 * hub link delivers), and Python with huggingface_hub stays well under 1 GiB; the rest is room for
 * the page cache the writes go through.
 */
export const FILL_DEFAULT_RESOURCES = { cpu: 1, memoryGiB: 2 };
/**
 * The Job controller labels its pods `batch.kubernetes.io/job-name: <name>`, and label values are
 * limited to 63 characters.
 */
const JOB_NAME_MAX = 63;

/** What one serving pod's fills are made from: its download, and the pod settings a download needs. */
interface Filler {
  readonly scope: Construct;
  readonly claimName: string;
  readonly prototype: k8s.Container;
  readonly pod: Pick<
    k8s.PodSpec,
    'securityContext' | 'imagePullSecrets' | 'serviceAccountName' | 'automountServiceAccountToken'
  >;
  readonly volumes: k8s.Volume[];
  /** The serving container's env (offline, no credentials): the wait runs with it. */
  readonly offlineEnv: k8s.EnvVar[];
  readonly waitSeconds: number;
  /** The service's `downloadResources`, if given: the fill Job's CPU and memory, field by field. */
  readonly resources: DownloadResources | undefined;
}

const FILLERS = new WeakMap<PodTemplate, Filler>();
/** The fill Jobs of an app, by namespace, claim and what they fill (engine selection, model, revision). */
const JOBS = new WeakMap<IConstruct, Map<string, { name: string; job: ApiObject }>>();

/** The fill of a shared cache: the Job, its name, and how long the serving pods wait for it. */
export interface CacheFill {
  readonly job: ApiObject;
  readonly jobName: string;
  readonly waitSeconds: number;
}

/**
 * Moves the download of a serving pod on a shared (ReadWriteMany) cache into a CPU-only Job (the
 * pattern of NIM's NIMCache and KServe's LocalModelCache), so no GPU idles during a download and the
 * cache is filled once for every replica and version: the pod's `model-download` init container
 * becomes `model-cache-wait`, the same script in wait mode, which polls the cache for the filler's
 * completion marker with the hub offline and no credentials. Services whose fills are identical
 * (claim, engine, model, revision, image and pod settings) share one Job; each other service has its
 * own, named from its own fill only, so dropping one version never renames the Job another waits for.
 *
 * The Job has no `ttlSecondsAfterFinished`: a GitOps tool would re-create a Job the TTL deleted, and
 * run the fill again. Its name hashes what it fills and its pod spec, so a changed spec is a new Job
 * (a Job's template is immutable) and a pruning sync removes the old one; a re-run on a complete cache
 * finds the marker and exits at once.
 */
export function fillSharedCache(
  scope: Construct,
  template: PodTemplate,
  o: { claimName: string; waitSeconds: number; resources: DownloadResources | undefined },
): CacheFill {
  const init = template.spec.initContainers ?? [];
  const at = init.findIndex(c => c.name === DOWNLOAD_CONTAINER);
  if (at < 0) throw new Error(`no ${DOWNLOAD_CONTAINER} init container to move into a fill Job`);
  const prototype = init[at];
  const mounted = new Set((prototype.volumeMounts ?? []).map(m => m.name));
  const spec = template.spec;
  const filler: Filler = {
    scope,
    claimName: o.claimName,
    prototype,
    pod: {
      securityContext: spec.securityContext,
      imagePullSecrets: spec.imagePullSecrets,
      serviceAccountName: spec.serviceAccountName,
      automountServiceAccountToken: spec.automountServiceAccountToken,
    },
    volumes: spec.volumes.filter(vol => mounted.has(vol.name)),
    offlineEnv: [...template.main.env],
    waitSeconds: o.waitSeconds,
    resources: o.resources,
  };
  FILLERS.set(template, filler);
  const { job, name, wait } = fill(filler, prototype.command!, CACHE_WAIT_CONTAINER);
  init[at] = wait;
  return { job, jobName: name, waitSeconds: o.waitSeconds };
}

/**
 * For a pod whose base model a fill Job fills: the wait container of one more download (a LoRA
 * adapter), whose own fill Job is made (or shared) beside the base model's. `command` is the
 * download's full command (with the adapter's link and rank check, which the wait runs offline).
 */
export function filledDownload(
  template: PodTemplate,
  command: string[],
  containerName: string,
): k8s.Container | undefined {
  const filler = FILLERS.get(template);
  return filler ? fill(filler, command, containerName).wait : undefined;
}

/** The Job that runs `command`'s download (made once per app, namespace, claim and fill), and the pod's wait for it. */
function fill(f: Filler, command: string[], waitName: string): { job: ApiObject; name: string; wait: k8s.Container } {
  // python3 <script> <engine> <model> <revision> [<link> <max rank>]: the Job fills the cache only;
  // the link and the rank check are the serving pod's (its wait runs them, offline).
  const fillCommand = command.slice(0, 5);
  const [, , engine, model, revision] = fillCommand;
  const key = `${f.claimName}\n${engine}\n${model}\n${revision}`;
  const podSpec: k8s.PodSpec = {
    // OnFailure: a failed download restarts in the same pod, under the same name, and resumes.
    restartPolicy: 'OnFailure',
    ...defined(f.pod),
    containers: [
      {
        ...f.prototype,
        name: DOWNLOAD_CONTAINER,
        command: fillCommand,
        resources: fillResources(f),
      },
    ],
    // The download script from a ConfigMap of the Job's own (named as the Job, made beside it): the serving
    // workload's is named after that workload, and a Job shared by identical fills belongs to none of them.
    volumes: f.volumes.map(vol =>
      vol.name === scriptVolumeName(hubDownloadScript())
        ? { ...vol, configMap: { ...vol.configMap, name: scriptHash(hubDownloadScript()) } }
        : vol,
    ),
  };
  // The name is made from this pod's own fill only, never from which other services exist or their
  // order: dropping one version of a service must not rename the Job another version waits for (its pod
  // template names it, so a rename would restart it). Services whose fills are identical share one Job.
  const name = jobName(model, nameHash({ key, spec: JSON.stringify(podSpec) }));
  const root = f.scope.node.root;
  let jobs = JOBS.get(root);
  if (!jobs) JOBS.set(root, (jobs = new Map()));
  const namespace = Chart.of(f.scope).namespace ?? '';
  for (const vol of podSpec.volumes ?? [])
    if (vol.name === scriptVolumeName(hubDownloadScript())) (vol.configMap as { name?: string }).name = name;
  let made = jobs.get(`${namespace}\n${name}`);
  if (!made) {
    scriptConfigMap(f.scope, name, hubDownloadScript(), { name, instance: name });
    const labels = workloadLabels({ name, instance: name, component: CACHE_FILL_COMPONENT });
    const job = new ManifestObject(f.scope, `CacheFill-${name}`, KIND.Job, {
      metadata: {
        name,
        labels,
        // Argo CD: the fill is applied, and complete, before the serving workload (wave 0) is applied.
        // Flux has no per-object order: see docs/serving.md (a Kustomization of its own, dependsOn).
        annotations: { [ARGOCD_SYNC_WAVE]: '-1' },
      },
      spec: {
        backoffLimit: FILL_BACKOFF_LIMIT,
        activeDeadlineSeconds: downloadDeadline(f.prototype),
        template: { metadata: { labels }, spec: podSpec },
      },
    });
    made = { name, job };
    jobs.set(`${namespace}\n${name}`, made);
  }
  const wait: k8s.Container = {
    ...f.prototype,
    name: waitName,
    command,
    // The server's env: the hub offline, no credentials (the Job has them).
    env: [
      ...f.offlineEnv,
      { name: 'MODEL_CACHE_WAIT_SECONDS', value: String(f.waitSeconds) },
      { name: 'MODEL_CACHE_FILL_JOB', value: made.name },
    ],
  };
  return { job: made.job, name: made.name, wait };
}

/** `<model slug>-fill-<hash>`, at most 63 characters. */
function jobName(model: string, hash: string): string {
  const suffix = `-fill-${hash}`;
  const slug =
    model
      .toLowerCase()
      .replace(/\$\$\(/g, '$(')
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, JOB_NAME_MAX - suffix.length)
      .replace(/^-+|-+$/g, '') || 'model';
  return `${slug}${suffix}`;
}

/** The download's own deadline (a literal DOWNLOAD_DEADLINE_SECONDS in its env, else the script's default). */
function downloadDeadline(download: k8s.Container): number {
  const set = download.env?.find(e => e.name === 'DOWNLOAD_DEADLINE_SECONDS')?.value;
  const seconds = set === undefined ? NaN : Math.ceil(Number(set));
  return Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_DOWNLOAD_DEADLINE_SECONDS;
}

/** The download's CPU and memory (`downloadResources`, else the fill's defaults); no GPU is requested or limited. */
function fillResources(f: Filler): k8s.ResourceRequirements {
  const cpu = k8s.Quantity.fromString(String(f.resources?.cpu ?? FILL_DEFAULT_RESOURCES.cpu));
  const memory = sizeQuantity(f.resources?.memory ?? Size.gibibytes(FILL_DEFAULT_RESOURCES.memoryGiB));
  return { requests: { cpu, memory }, limits: { memory } };
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, value]) => value !== undefined)) as Partial<T>;
}
