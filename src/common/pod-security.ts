import { podsOf } from '../checks/kinds';
import { FLOOR_MINOR, NEWEST_MINOR } from '../validation/kube-versions';
import { BASELINE_CAPABILITIES } from './security';

/**
 * An evaluator of the Kubernetes Pod Security Standards (baseline and restricted) over a pod, as the
 * PodSecurity admission controller enforces them: the same checks, each with the versions of the
 * standards it changed in (k8s.io/pod-security-admission/policy, v0.36), so a pod can be rated at one
 * version (`pod-security.kubernetes.io/enforce-version: v1.NN`) or at every version the library supports.
 * The standards both tighten (probe hosts in 1.34) and relax (sysctls in 1.27, 1.29 and 1.32, the
 * SELinux type container_engine_t in 1.31, user-namespaced pods in 1.35) over time; a level the
 * library reports for its own pods holds at each supported version, so a namespace pinned to any of
 * them, or at `latest` through an upgrade, admits them. Held against a real API server's admission in
 * test/cluster/pod-security-differential.test.ts.
 */

export type Level = 'restricted' | 'baseline' | 'privileged';

/** Versions of the standards, as minors of Kubernetes 1.x: one, or a range such as the supported one. */
export interface StandardsVersions {
  readonly from: number;
  readonly to: number;
}

/** Every version of the standards from the library's floor to the newest it was checked against. */
export const SUPPORTED_STANDARDS: StandardsVersions = { from: FLOOR_MINOR, to: NEWEST_MINOR };

interface Pod {
  readonly spec: any;
  readonly annotations: Readonly<Record<string, string>>;
}

type CheckPod = (pod: Pod) => string[];

interface Check {
  readonly id: string;
  readonly level: 'baseline' | 'restricted';
  /** The check as each version of the standards has it: the newest `since` at or below the version applies. */
  readonly versions: ReadonlyArray<{ readonly since: number; readonly check: CheckPod }>;
  /** Baseline checks this restricted one replaces when a pod is rated restricted. */
  readonly overrides?: readonly string[];
}

const containersOf = (spec: any): any[] => [
  ...(spec.initContainers ?? []),
  ...(spec.containers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

/** One finding per container that `bad` names a reason for. */
const perContainer =
  (bad: (c: any, sc: any) => string | undefined): CheckPod =>
  ({ spec }) =>
    containersOf(spec).flatMap(c => {
      const reason = bad(c, c.securityContext ?? {});
      return reason ? [`${c.name}: ${reason}`] : [];
    });

/** A rule over a securityContext field both the pod and its containers have: a finding for each that breaks it. */
const podAndContainers =
  (bad: (sc: any) => string | undefined): CheckPod =>
  pod => {
    const own = bad(pod.spec.securityContext ?? {});
    return [...(own ? [`pod ${own}`] : []), ...perContainer((_c, sc) => bad(sc))(pod)];
  };

const windows = (spec: any) => spec.os?.name === 'windows';
const userNamespaced = (spec: any) => spec.hostUsers === false;
/**
 * A check from `since` that, from `from` on, skips the pods `skip` matches: the restricted-only checks
 * skip Windows pods from 1.25, some checks skip user-namespaced pods from 1.35.
 */
const skippedFrom = (since: number, check: CheckPod, from: number, skip: (spec: any) => boolean) => [
  { since, check },
  { since: from, check: (pod: Pod) => (skip(pod.spec) ? [] : check(pod)) },
];

const sysctls =
  (safe: ReadonlySet<string>): CheckPod =>
  ({ spec }) =>
    (spec.securityContext?.sysctls ?? [])
      .filter((s: any) => !safe.has(s.name))
      .map((s: any) => `unsafe sysctl ${s.name}`);
const SYSCTLS_1_0 = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
]);
const SYSCTLS_1_27 = new Set([...SYSCTLS_1_0, 'net.ipv4.ip_local_reserved_ports']);
const SYSCTLS_1_29 = new Set([
  ...SYSCTLS_1_27,
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SYSCTLS_1_32 = new Set([...SYSCTLS_1_29, 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem']);

const seLinux = (types: ReadonlySet<string>): CheckPod =>
  podAndContainers(({ seLinuxOptions: o }) =>
    o && (!types.has(o.type ?? '') || o.user || o.role)
      ? `seLinuxOptions type ${o.type ?? ''}, user or role`
      : undefined,
  );
const SELINUX_1_0 = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);
const SELINUX_1_31 = new Set([...SELINUX_1_0, 'container_engine_t']);

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';
const badAppArmorProfile = podAndContainers(({ appArmorProfile: p }) =>
  p !== undefined && p.type !== 'RuntimeDefault' && p.type !== 'Localhost' ? 'appArmorProfile' : undefined,
);
const appArmor: CheckPod = pod => [
  ...badAppArmorProfile(pod),
  ...Object.entries(pod.annotations)
    .filter(
      ([k, v]) =>
        k.startsWith(APPARMOR_ANNOTATION) && v !== '' && v !== 'runtime/default' && !v.startsWith('localhost/'),
    )
    .map(([k, v]) => `annotation ${k}=${v}`),
];

const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'];
const hostOf = (handler: any): string => handler?.httpGet?.host || handler?.tcpSocket?.host || '';
const probeHosts = perContainer(c => {
  const hosts = [...PROBES.map(p => c[p]), c.lifecycle?.postStart, c.lifecycle?.preStop].map(hostOf).filter(h => h);
  return hosts.length ? `probe or lifecycle host ${hosts.join(', ')}` : undefined;
});

const procMount = perContainer((_c, sc) =>
  sc.procMount !== undefined && sc.procMount !== 'Default' ? `procMount ${sc.procMount}` : undefined,
);
const seccompUnconfined = podAndContainers(sc =>
  sc.seccompProfile?.type === 'Unconfined' ? 'seccomp Unconfined' : undefined,
);
/** Restricted: RuntimeDefault or Localhost on the pod, or else on every container; a container's own wins. */
const seccompRestricted: CheckPod = pod => {
  const ok = (p: any) => p?.type === 'RuntimeDefault' || p?.type === 'Localhost';
  const own = pod.spec.securityContext?.seccompProfile;
  return [
    ...(own && !ok(own) ? [`pod seccomp ${own.type}`] : []),
    ...perContainer((_c, sc) =>
      sc.seccompProfile
        ? ok(sc.seccompProfile)
          ? undefined
          : `seccomp ${sc.seccompProfile.type}`
        : ok(own)
          ? undefined
          : 'seccompProfile must be RuntimeDefault or Localhost',
    )(pod),
  ];
};
const baselineCapabilities = perContainer((_c, sc) => {
  const bad = (sc.capabilities?.add ?? []).filter((cap: string) => !BASELINE_CAPABILITIES.has(cap));
  return bad.length ? `capabilities ${bad.join(', ')} added` : undefined;
});

/** Volume sources the restricted standard admits (its check replaces the baseline hostPath one). */
const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'image',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

/** Every check of the standards, with the version each form of it came in. */
const CHECKS: readonly Check[] = [
  {
    id: 'hostNamespaces',
    level: 'baseline',
    versions: [
      {
        since: 0,
        check: ({ spec }) => (spec.hostNetwork || spec.hostPID || spec.hostIPC ? ['host namespaces'] : []),
      },
    ],
  },
  {
    id: 'windowsHostProcess',
    level: 'baseline',
    versions: [
      {
        since: 0,
        check: podAndContainers(sc => (sc.windowsOptions?.hostProcess ? 'hostProcess' : undefined)),
      },
    ],
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    versions: [
      {
        since: 0,
        check: ({ spec }) =>
          (spec.volumes ?? []).filter((v: any) => v.hostPath).map((v: any) => `hostPath volume ${v.name}`),
      },
    ],
  },
  {
    id: 'hostPorts',
    level: 'baseline',
    versions: [
      {
        since: 0,
        check: perContainer(c => ((c.ports ?? []).some((p: any) => p.hostPort) ? 'hostPort' : undefined)),
      },
    ],
  },
  {
    id: 'privileged',
    level: 'baseline',
    versions: [{ since: 0, check: perContainer((_c, sc) => (sc.privileged ? 'privileged' : undefined)) }],
  },
  { id: 'capabilities_baseline', level: 'baseline', versions: [{ since: 0, check: baselineCapabilities }] },
  {
    id: 'procMount',
    level: 'baseline',
    versions: skippedFrom(0, procMount, 35, userNamespaced),
  },
  { id: 'seccompProfile_baseline', level: 'baseline', versions: [{ since: 19, check: seccompUnconfined }] },
  {
    id: 'seLinuxOptions',
    level: 'baseline',
    versions: [
      { since: 0, check: seLinux(SELINUX_1_0) },
      { since: 31, check: seLinux(SELINUX_1_31) },
    ],
  },
  {
    id: 'sysctls',
    level: 'baseline',
    versions: [
      { since: 0, check: sysctls(SYSCTLS_1_0) },
      { since: 27, check: sysctls(SYSCTLS_1_27) },
      { since: 29, check: sysctls(SYSCTLS_1_29) },
      { since: 32, check: sysctls(SYSCTLS_1_32) },
    ],
  },
  { id: 'appArmorProfile', level: 'baseline', versions: [{ since: 0, check: appArmor }] },
  { id: 'hostProbesAndHostLifecycle', level: 'baseline', versions: [{ since: 34, check: probeHosts }] },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    overrides: ['hostPathVolumes'],
    versions: [
      {
        since: 0,
        check: ({ spec }) =>
          (spec.volumes ?? []).flatMap((vol: any) => {
            const type = Object.keys(vol).find(k => k !== 'name');
            return type && RESTRICTED_VOLUMES.has(type) ? [] : [`volume ${vol.name} of type ${type}`];
          }),
      },
    ],
  },
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    versions: skippedFrom(
      8,
      perContainer((_c, sc) =>
        sc.allowPrivilegeEscalation !== false ? 'allowPrivilegeEscalation must be false' : undefined,
      ),
      25,
      windows,
    ),
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    // A pod that says false is refused even if every container says true; a container's own value wins.
    versions: skippedFrom(
      0,
      pod => {
        const own = pod.spec.securityContext?.runAsNonRoot;
        return [
          ...(own === false ? ['pod runAsNonRoot false'] : []),
          ...perContainer((_c, sc) =>
            sc.runAsNonRoot === false || (sc.runAsNonRoot === undefined && own !== true)
              ? 'runAsNonRoot must be true'
              : undefined,
          )(pod),
        ];
      },
      35,
      userNamespaced,
    ),
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    versions: skippedFrom(
      23,
      podAndContainers(sc => (sc.runAsUser === 0 ? 'runAsUser 0' : undefined)),
      35,
      userNamespaced,
    ),
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    overrides: ['seccompProfile_baseline'],
    versions: skippedFrom(19, seccompRestricted, 25, windows),
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    overrides: ['capabilities_baseline'],
    versions: skippedFrom(
      22,
      perContainer((_c, sc) => {
        const reasons = [
          ...(!(sc.capabilities?.drop ?? []).includes('ALL') ? ['capabilities must drop ALL'] : []),
          ...(sc.capabilities?.add ?? [])
            .filter((cap: string) => cap !== 'NET_BIND_SERVICE')
            .map((cap: string) => `capability ${cap} added`),
        ];
        return reasons.length ? reasons.join('; ') : undefined;
      }),
      25,
      windows,
    ),
  },
  {
    id: 'procMount_restricted',
    level: 'restricted',
    overrides: ['procMount'],
    versions: [{ since: 35, check: procMount }],
  },
];

/** A check as the standards of one version have it, or undefined before it existed. */
function checkAt(check: Check, minor: number): CheckPod | undefined {
  let found: CheckPod | undefined;
  for (const v of check.versions) if (v.since <= minor) found = v.check;
  return found;
}

/** What a pod breaks of a level's checks at one version of the standards (restricted includes baseline). */
function violationsAt(pod: Pod, level: 'baseline' | 'restricted', minor: number): string[] {
  const active = CHECKS.filter(c => (level === 'restricted' || c.level === 'baseline') && checkAt(c, minor));
  const overridden = new Set(active.flatMap(c => c.overrides ?? []));
  return active.filter(c => !overridden.has(c.id)).flatMap(c => checkAt(c, minor)!(pod));
}

function violations(
  spec: any,
  annotations: Record<string, string> | undefined,
  level: 'baseline' | 'restricted',
  versions: StandardsVersions,
): string[] {
  const pod = { spec, annotations: annotations ?? {} };
  const found = new Set<string>();
  for (let minor = versions.from; minor <= versions.to; minor++)
    for (const v of violationsAt(pod, level, minor)) found.add(v);
  return [...found];
}

/** What a pod breaks of the baseline standard at any of `versions` (every supported one by default). */
export function baselineViolations(
  spec: any,
  annotations?: Record<string, string>,
  versions: StandardsVersions = SUPPORTED_STANDARDS,
): string[] {
  return violations(spec, annotations, 'baseline', versions);
}

/** What a pod breaks of the restricted standard (baseline included) at any of `versions`. */
export function restrictedViolations(
  spec: any,
  annotations?: Record<string, string>,
  versions: StandardsVersions = SUPPORTED_STANDARDS,
): string[] {
  return violations(spec, annotations, 'restricted', versions);
}

/**
 * The strictest standard a pod (its spec and its metadata's annotations) meets at every one of
 * `versions`: by default every version the library supports, so a namespace enforcing that level admits
 * the pod whichever version it pins.
 */
export function podSecurityLevel(
  spec: any,
  annotations?: Record<string, string>,
  versions: StandardsVersions = SUPPORTED_STANDARDS,
): Level {
  if (restrictedViolations(spec, annotations, versions).length === 0) return 'restricted';
  if (baselineViolations(spec, annotations, versions).length === 0) return 'baseline';
  return 'privileged';
}

/** Every pod spec in a list of objects, with where it came from. */
export function podSpecsOf(objects: any[]): Array<{ where: string; spec: any }> {
  const out: Array<{ where: string; spec: any }> = [];
  for (const o of objects) {
    // Where a built-in kind holds its pod spec: one table (checks/kinds.ts) for every check.
    const { podSpec } = podsOf(o);
    if (podSpec) out.push({ where: `${o.kind}/${o.metadata?.name}`, spec: podSpec });
  }
  return out;
}
