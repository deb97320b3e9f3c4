import * as fs from 'fs';
import * as path from 'path';
import { ApiObject } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { IConstruct } from 'constructs';
import { sharedObject } from '../checks/unique-objects';
import { nameHash } from './hash';
import {
  LABEL_INSTANCE,
  LABEL_NAME,
  PREREQUISITE_ANNOTATIONS,
  RUNTIME_SCRIPT_COMPONENT,
  workloadLabels,
} from './labels';
import { KIND, ManifestObject } from './manifest-object';
import { PodTemplate } from './pod-template';
import { Validator } from '../validation/validate';

/**
 * A program the library runs in pods, too large to repeat in every pod template that runs it. It
 * ships once per workload, in an immutable ConfigMap named by a hash of its content
 * (`<workload>-<name>-<hash>`), and each container that runs it mounts it read-only at `path`:
 *
 * - a reviewer reads a pod template without scrolling past the program (the download is 23 KB, and
 *   a serving pod with LoRA adapters ran it from several init containers, and its fill Job again);
 * - a change to the program changes the ConfigMap's name, and so every pod template that mounts it:
 *   it still rolls out, and `guard` and `plan` still report it (the pods' `volumes[...].configMap.name`
 *   and a new ConfigMap);
 * - immutable, so the kubelet does not watch it, and an old pod keeps the version it started with.
 *
 * See docs/design.md "Runtime scripts".
 */
export interface RuntimeScript {
  /** The ConfigMap's name part and the pod volume's name (`cdk8s-gpu-<name>`). */
  readonly name: string;
  /** The file's name in the ConfigMap and under the mount. */
  readonly file: string;
  readonly content: string;
}

/** Where a script's volume is mounted: one directory per script, read-only. Reserved: no user mount goes there. */
export const MOUNT_ROOT = '/opt/cdk8s-gpu';
/** The prefix of the scripts' pod volumes. Reserved: no user volume is named so. */
export const VOLUME_PREFIX = 'cdk8s-gpu-';

const loaded = new Map<string, RuntimeScript>();

/** A script file that sits beside the library's compiled code (copied there by the build). */
export function runtimeScript(name: string, dir: string, file: string): RuntimeScript {
  const key = path.join(dir, file);
  let script = loaded.get(key);
  if (!script) loaded.set(key, (script = { name, file, content: fs.readFileSync(key, 'utf8') }));
  return script;
}

/** The path a container runs the script from. */
export function scriptPath(script: RuntimeScript): string {
  return `${MOUNT_ROOT}/${script.name}/${script.file}`;
}

/**
 * The command that runs a shell script from its mount as if it were inline (`sh -c <script> <argv0>`):
 * the `-c` string sources it, so `$0` is still `argv0` and `"$@"` the container's args.
 */
export function sourcedCommand(script: RuntimeScript, argv0: string): string[] {
  return ['sh', '-c', `. ${scriptPath(script)}`, argv0];
}

/** The pod volume that holds a script. */
export function scriptVolumeName(script: RuntimeScript): string {
  return `${VOLUME_PREFIX}${script.name}`;
}

/** Refuses a user volume name or mount path the scripts' volumes and mounts own. */
export function refuseReserved(v: Validator, prop: string, o: { volumeName?: string; mountPath?: string }): void {
  if (o.volumeName?.startsWith(VOLUME_PREFIX))
    v.fail(
      prop,
      `must not start with ${VOLUME_PREFIX}: the library names the volumes of its runtime scripts so`,
      o.volumeName,
    );
  const p = o.mountPath;
  if (p !== undefined && (p === MOUNT_ROOT || p.startsWith(`${MOUNT_ROOT}/`) || MOUNT_ROOT.startsWith(`${p}/`)))
    v.fail(prop, `must not be ${MOUNT_ROOT}, under it or above it: the library mounts its runtime scripts there`, p);
}

/** A short digest of the script: in each ConfigMap name that holds it, so a new version is a new object. */
export function scriptHash(script: RuntimeScript): string {
  return nameHash({ [script.file]: script.content });
}

/**
 * The ConfigMap's name for one workload: `<workload>-<script>-<hash>`. Per workload, not per
 * namespace: two apps (two Argo CD Applications, two Flux Kustomizations) deploying into one
 * namespace never emit the same object, so neither prunes what the other's pods mount (a fill Job's,
 * shared by identical fills within one app, is the exception: docs/design.md).
 */
export function scriptConfigMapName(script: RuntimeScript, owner: string): string {
  return `${owner}-${script.name}-${scriptHash(script)}`;
}

/**
 * The immutable ConfigMap `name` holding `script` for the workload (or fill Job) whose `app.kubernetes.io`
 * name and instance are `owner`'s, made once per app and namespace; labelled as the owner's, so a
 * selector of its version finds it.
 */
export function scriptConfigMap(
  scope: IConstruct,
  name: string,
  script: RuntimeScript,
  owner: { name: string; instance: string },
): ApiObject {
  return sharedObject(scope, 'ConfigMap', name, () => {
    const labels = workloadLabels({ ...owner, component: RUNTIME_SCRIPT_COMPONENT });
    return new ManifestObject(scope, `Script-${name}`, KIND.ConfigMap, {
      // PruneLast: Argo CD prunes the old version once every wave is synced and healthy, so a pod the old
      // template still makes during the rollout (an evicted pod's replacement) finds it.
      metadata: {
        name,
        labels,
        annotations: { ...PREREQUISITE_ANNOTATIONS },
      },
      immutable: true,
      data: { [script.file]: script.content },
    });
  });
}

/**
 * Mounts `script` into every container of `template` whose command or args run it (`scriptPath`,
 * or `sourcedCommand`), from the ConfigMap `<instance>-<script>-<hash>` made in `scope` (once per
 * app and namespace), `instance` being the pods' `app.kubernetes.io/instance` (the versioned
 * workload). Safe to call again after containers were added: containers already mounting it are
 * left as they are.
 */
export function shipScript(scope: IConstruct, template: PodTemplate, script: RuntimeScript): ApiObject | undefined {
  const file = scriptPath(script);
  const volumeName = scriptVolumeName(script);
  const runs = (c: k8s.Container) =>
    [...(c.command ?? []), ...(c.args ?? [])].some(arg => arg === file || arg === `. ${file}`);
  const users = [...(template.spec.initContainers ?? []), ...template.spec.containers].filter(runs);
  if (users.length === 0) return undefined;
  const instance = template.labels[LABEL_INSTANCE];
  if (!instance) throw new Error(`a pod template that runs ${script.file} has no ${LABEL_INSTANCE} label to name it`);
  const owner = { name: template.labels[LABEL_NAME] ?? instance, instance };
  const configMapName = scriptConfigMapName(script, instance);
  const configMap = scriptConfigMap(scope, configMapName, script, owner);
  const existing = template.spec.volumes.find(vol => vol.name === volumeName);
  if (!existing) template.addVolume({ name: volumeName, configMap: { name: configMapName, defaultMode: 0o444 } });
  // User volumes cannot take the name (refuseReserved): this is the library's own, made once.
  else if (existing.configMap?.name !== configMapName)
    throw new Error(`volume '${volumeName}' already holds another ConfigMap than ${configMapName}`);
  for (const c of users) {
    const mounts = ((c as { volumeMounts?: k8s.VolumeMount[] }).volumeMounts ??= []);
    if (!mounts.some(m => m.name === volumeName))
      mounts.push({ name: volumeName, mountPath: `${MOUNT_ROOT}/${script.name}`, readOnly: true });
  }
  return configMap;
}
