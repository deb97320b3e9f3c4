import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Validator } from './validate';

// The API server's rules (kubernetes pkg/apis/core/validation/validation.go) for the parts of a pod
// a user hands the library whole: extra containers, volumes, affinity, spread constraints. The
// shape is checked first (typed-input.ts); these are the value rules a strict schema cannot see,
// so that an input the API server would refuse is refused at construction, naming the prop.

const NODE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'];
const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const WHEN_UNSATISFIABLE = ['DoNotSchedule', 'ScheduleAnyway'];
const INCLUSION_POLICIES = ['Honor', 'Ignore'];
const MAX_MODE = 0o777;
// IsValidPortName: an IANA service name.
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-))*[a-z0-9]$|^[a-z]$/;

function oneOf(v: Validator, prop: string, value: unknown, allowed: readonly string[]): void {
  if (value !== undefined && !allowed.includes(value as string))
    v.fail(prop, `must be one of ${allowed.join(', ')}`, value);
}

/** `ValidateAffinity`: node selector terms, label selectors, topology keys, weights. */
export function checkAffinity(v: Validator, prop: string, a: k8s.Affinity): void {
  const node = a.nodeAffinity;
  if (node?.requiredDuringSchedulingIgnoredDuringExecution) {
    const terms = node.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms ?? [];
    const at = `${prop}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
    if (terms.length === 0) v.fail(at, 'must have at least one term', terms);
    terms.forEach((t, i) => nodeSelectorTerm(v, `${at}[${i}]`, t));
  }
  (node?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((p, i) => {
    const at = `${prop}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    v.wholeNumber(`${at}.weight`, p.weight, 1, 100);
    nodeSelectorTerm(v, `${at}.preference`, p.preference);
  });
  for (const kind of ['podAffinity', 'podAntiAffinity'] as const) {
    const pa = a[kind];
    (pa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t, i) =>
      podAffinityTerm(v, `${prop}.${kind}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`, t),
    );
    (pa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((p, i) => {
      const at = `${prop}.${kind}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
      v.wholeNumber(`${at}.weight`, p.weight, 1, 100);
      if (p.podAffinityTerm === undefined) v.fail(`${at}.podAffinityTerm`, 'is required', p.podAffinityTerm);
      podAffinityTerm(v, `${at}.podAffinityTerm`, p.podAffinityTerm);
    });
  }
}

function nodeSelectorTerm(v: Validator, at: string, t: k8s.NodeSelectorTerm): void {
  const reqs = [
    ...(t.matchExpressions ?? []).map((r, i) => [`${at}.matchExpressions[${i}]`, r] as const),
    ...(t.matchFields ?? []).map((r, i) => [`${at}.matchFields[${i}]`, r] as const),
  ];
  if (reqs.length === 0) v.fail(at, 'must have matchExpressions or matchFields (an empty term matches no node)', t);
  for (const [p, r] of reqs) {
    v.qualifiedName(`${p}.key`, r.key);
    oneOf(v, `${p}.operator`, r.operator, NODE_SELECTOR_OPERATORS);
    const values = r.values ?? [];
    if ((r.operator === 'In' || r.operator === 'NotIn') && values.length === 0)
      v.fail(`${p}.values`, `must be non-empty for ${r.operator}`, r.values);
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && values.length > 0)
      v.fail(`${p}.values`, `must be empty for ${r.operator}`, r.values);
    if ((r.operator === 'Gt' || r.operator === 'Lt') && (values.length !== 1 || !/^-?\d+$/.test(values[0])))
      v.fail(`${p}.values`, `must be one integer for ${r.operator}`, r.values);
  }
}

function podAffinityTerm(v: Validator, at: string, t: k8s.PodAffinityTerm): void {
  if (typeof t.topologyKey !== 'string' || t.topologyKey === '')
    v.fail(`${at}.topologyKey`, 'must be a non-empty label key (e.g. kubernetes.io/hostname)', t.topologyKey);
  v.qualifiedName(`${at}.topologyKey`, t.topologyKey);
  if (t.labelSelector) labelSelector(v, `${at}.labelSelector`, t.labelSelector);
  if (t.namespaceSelector) labelSelector(v, `${at}.namespaceSelector`, t.namespaceSelector);
}

function labelSelector(v: Validator, at: string, s: k8s.LabelSelector): void {
  v.labels(`${at}.matchLabels`, s.matchLabels);
  (s.matchExpressions ?? []).forEach((r, i) => {
    const p = `${at}.matchExpressions[${i}]`;
    v.qualifiedName(`${p}.key`, r.key);
    oneOf(v, `${p}.operator`, r.operator, LABEL_SELECTOR_OPERATORS);
    const values = r.values ?? [];
    if ((r.operator === 'In' || r.operator === 'NotIn') && values.length === 0)
      v.fail(`${p}.values`, `must be non-empty for ${r.operator}`, r.values);
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && values.length > 0)
      v.fail(`${p}.values`, `must be empty for ${r.operator}`, r.values);
    values.forEach((x, j) => v.labelValue(`${p}.values[${j}]`, x));
  });
}

/**
 * `validateTopologySpreadConstraints`, over the pod's whole list (the construct's own constraints
 * first): no two constraints with one topologyKey and whenUnsatisfiable.
 */
export function checkSpreadConstraints(
  v: Validator,
  prop: string,
  mine: readonly k8s.TopologySpreadConstraint[],
  all: readonly k8s.TopologySpreadConstraint[],
): void {
  const seen = new Set(all.slice(0, all.length - mine.length).map(c => `${c.topologyKey}/${c.whenUnsatisfiable}`));
  mine.forEach((c, i) => {
    const at = `${prop}[${i}]`;
    v.wholeNumber(`${at}.maxSkew`, c.maxSkew, 1);
    if (typeof c.topologyKey !== 'string' || c.topologyKey === '')
      v.fail(`${at}.topologyKey`, 'must be a non-empty label key', c.topologyKey);
    v.qualifiedName(`${at}.topologyKey`, c.topologyKey);
    if (c.whenUnsatisfiable === undefined)
      v.fail(`${at}.whenUnsatisfiable`, `is required: one of ${WHEN_UNSATISFIABLE.join(', ')}`, c.whenUnsatisfiable);
    oneOf(v, `${at}.whenUnsatisfiable`, c.whenUnsatisfiable, WHEN_UNSATISFIABLE);
    if (c.minDomains !== undefined) {
      v.wholeNumber(`${at}.minDomains`, c.minDomains, 1);
      if (c.whenUnsatisfiable !== 'DoNotSchedule')
        v.fail(`${at}.minDomains`, 'is only allowed with whenUnsatisfiable DoNotSchedule', c.minDomains);
    }
    oneOf(v, `${at}.nodeAffinityPolicy`, c.nodeAffinityPolicy, INCLUSION_POLICIES);
    oneOf(v, `${at}.nodeTaintsPolicy`, c.nodeTaintsPolicy, INCLUSION_POLICIES);
    if (c.labelSelector) labelSelector(v, `${at}.labelSelector`, c.labelSelector);
    const key = `${c.topologyKey}/${c.whenUnsatisfiable}`;
    if (seen.has(key))
      v.fail(
        at,
        `must not repeat a constraint on topologyKey ${c.topologyKey} with whenUnsatisfiable ${c.whenUnsatisfiable} (the pod already has one, perhaps the construct's own)`,
        c,
      );
    seen.add(key);
  });
}

/**
 * Ports, env, mounts, probes, pull policy, identity of an extra container (`validateContainers`,
 * `validateInitContainers`).
 */
export function checkContainer(v: Validator, prop: string, c: k8s.Container, init: boolean): void {
  oneOf(v, `${prop}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES);
  const portNames = new Set<string>();
  (c.ports ?? []).forEach((p, i) => {
    const at = `${prop}.ports[${i}]`;
    v.wholeNumber(`${at}.containerPort`, p.containerPort, 1, 65535);
    if (p.hostPort !== undefined && p.hostPort !== 0) v.wholeNumber(`${at}.hostPort`, p.hostPort, 1, 65535);
    oneOf(v, `${at}.protocol`, p.protocol, PROTOCOLS);
    if (p.name !== undefined) {
      if (typeof p.name !== 'string' || p.name.length > 15 || !PORT_NAME.test(p.name)) {
        v.fail(
          `${at}.name`,
          'must be a port name: at most 15 lower-case letters, digits and single "-", with at least one letter, starting and ending with a letter or digit',
          p.name,
        );
      }
      if (portNames.has(p.name)) v.fail(`${at}.name`, 'must not repeat a port name of the container', p.name);
      portNames.add(p.name);
    }
  });
  const envNames = new Set<string>();
  (c.env ?? []).forEach((e, i) => {
    // Server-side apply refuses duplicate keys of this list (it is keyed by name).
    if (envNames.has(e.name)) v.fail(`${prop}.env[${i}].name`, 'must not repeat a variable of the container', e.name);
    envNames.add(e.name);
  });
  const paths = new Set<string>();
  (c.volumeMounts ?? []).forEach((m, i) => {
    const at = `${prop}.volumeMounts[${i}].mountPath`;
    v.absolutePath(at, m.mountPath);
    if (paths.has(m.mountPath)) v.fail(at, 'must not repeat a mount path of the container', m.mountPath);
    paths.add(m.mountPath);
  });
  const sc = c.securityContext;
  for (const id of ['runAsUser', 'runAsGroup'] as const) {
    if (sc?.[id] !== undefined) v.wholeNumber(`${prop}.securityContext.${id}`, sc[id], 0);
  }
  // restartPolicy Always makes an init container a native sidecar (beta and on from 1.29, GA in
  // 1.33): at the 1.32 floor that is the only value, and only init containers take it (restart
  // rules of regular containers are alpha in 1.34).
  if (c.restartPolicy !== undefined) {
    if (!init)
      v.fail(
        `${prop}.restartPolicy`,
        'must be left out on a regular container: only an init container takes one (Always, a native sidecar); per-container restart rules are alpha in Kubernetes 1.34',
        c.restartPolicy,
      );
    if (c.restartPolicy !== 'Always')
      v.fail(
        `${prop}.restartPolicy`,
        'must be Always (a native sidecar, which runs beside the main container and stops after it) or left out (an init container that runs to completion)',
        c.restartPolicy,
      );
  }
  // A native sidecar runs beside the application: probes and lifecycle hooks are allowed on it.
  const runsToCompletion = init && c.restartPolicy !== 'Always';
  for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const probe = c[kind];
    if (!probe) continue;
    if (runsToCompletion)
      v.fail(`${prop}.${kind}`, 'is not allowed on an init container, which runs to completion', kind);
    probeRules(v, `${prop}.${kind}`, probe, kind !== 'readinessProbe');
  }
  if (runsToCompletion && c.lifecycle)
    v.fail(`${prop}.lifecycle`, 'is not allowed on an init container, which runs to completion', c.lifecycle);
}

function probeRules(v: Validator, at: string, p: k8s.Probe, successIsOne: boolean): void {
  if (p.initialDelaySeconds !== undefined) v.wholeNumber(`${at}.initialDelaySeconds`, p.initialDelaySeconds, 0);
  for (const f of ['timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
    if (p[f] !== undefined) v.wholeNumber(`${at}.${f}`, p[f], 1);
  }
  if (successIsOne && p.successThreshold !== undefined && p.successThreshold !== 1)
    v.fail(`${at}.successThreshold`, 'must be 1 for liveness and startup probes', p.successThreshold);
  const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter(
    h => (p as Record<string, unknown>)[h] !== undefined,
  );
  if (handlers.length !== 1)
    v.fail(at, 'must have exactly one handler: exec, httpGet, tcpSocket or grpc', handlers.join(', ') || 'none');
}

/** Key-to-path projections and file modes of a volume source (`validateKeyToPath`, `ValidateVolumes`). */
export function checkVolumeSource(v: Validator, prop: string, vol: k8s.Volume): void {
  const mode = (at: string, m: number | undefined) => {
    if (m !== undefined) v.wholeNumber(at, m, 0, MAX_MODE);
  };
  const items = (at: string, list: k8s.KeyToPath[] | undefined) =>
    (list ?? []).forEach((it, i) => {
      v.nonEmpty(`${at}[${i}].key`, it.key);
      relativePath(v, `${at}[${i}].path`, it.path);
      mode(`${at}[${i}].mode`, it.mode);
    });
  if (vol.secret) {
    mode(`${prop}.secret.defaultMode`, vol.secret.defaultMode);
    items(`${prop}.secret.items`, vol.secret.items);
  }
  if (vol.configMap) {
    mode(`${prop}.configMap.defaultMode`, vol.configMap.defaultMode);
    items(`${prop}.configMap.items`, vol.configMap.items);
  }
  if (vol.projected) {
    mode(`${prop}.projected.defaultMode`, vol.projected.defaultMode);
    (vol.projected.sources ?? []).forEach((s, i) => {
      if (s.secret) items(`${prop}.projected.sources[${i}].secret.items`, s.secret.items);
      if (s.configMap) items(`${prop}.projected.sources[${i}].configMap.items`, s.configMap.items);
      (s.downwardApi?.items ?? []).forEach((it, j) =>
        relativePath(v, `${prop}.projected.sources[${i}].downwardAPI.items[${j}].path`, it.path),
      );
    });
  }
  if (vol.downwardApi) {
    mode(`${prop}.downwardAPI.defaultMode`, vol.downwardApi.defaultMode);
    (vol.downwardApi.items ?? []).forEach((it, i) => relativePath(v, `${prop}.downwardAPI.items[${i}].path`, it.path));
  }
  if (vol.persistentVolumeClaim)
    v.nonEmpty(`${prop}.persistentVolumeClaim.claimName`, vol.persistentVolumeClaim.claimName);
}

function relativePath(v: Validator, at: string, p: string): void {
  if (typeof p !== 'string' || p === '' || p.startsWith('/') || p.split('/').includes('..')) {
    v.fail(at, 'must be a relative path without ".." segments', p);
  }
}

/** `ValidateTolerations`: a value is a label value, tolerationSeconds a whole number. */
export function checkTolerationValues(v: Validator, prop: string, t: k8s.Toleration): void {
  if (t.value !== undefined && t.value !== '') v.labelValue(`${prop}.value`, t.value);
  if (
    t.tolerationSeconds !== undefined &&
    (typeof t.tolerationSeconds !== 'number' || !Number.isInteger(t.tolerationSeconds))
  ) {
    v.fail(`${prop}.tolerationSeconds`, 'must be a whole number of seconds', t.tolerationSeconds);
  }
}
