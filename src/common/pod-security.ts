import { podsOf } from '../checks/kinds';
import { BASELINE_CAPABILITIES } from './security';

/**
 * An evaluator of the Kubernetes Pod Security Standards (baseline and restricted, as enforced by
 * the PodSecurity admission controller at v1.28) over a pod spec. Returns the violations so a test
 * failure says which rule broke.
 */
const BASELINE_CAPS = BASELINE_CAPABILITIES;
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

function containersOf(spec: any): any[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}

export function baselineViolations(spec: any): string[] {
  const v: string[] = [];
  const psc = spec.securityContext ?? {};
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) v.push('host namespaces');
  if (psc.windowsOptions?.hostProcess) v.push('hostProcess');
  for (const vol of spec.volumes ?? []) if (vol.hostPath) v.push(`hostPath volume ${vol.name}`);
  if (psc.seccompProfile?.type === 'Unconfined') v.push('pod seccomp Unconfined');
  for (const s of psc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) v.push(`unsafe sysctl ${s.name}`);
  for (const c of containersOf(spec)) {
    const sc = c.securityContext ?? {};
    if (sc.privileged) v.push(`${c.name}: privileged`);
    if (sc.windowsOptions?.hostProcess) v.push(`${c.name}: hostProcess`);
    for (const cap of sc.capabilities?.add ?? []) if (!BASELINE_CAPS.has(cap)) v.push(`${c.name}: capability ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort) v.push(`${c.name}: hostPort ${p.hostPort}`);
    if (sc.procMount && sc.procMount !== 'Default') v.push(`${c.name}: procMount`);
    if (sc.seccompProfile?.type === 'Unconfined') v.push(`${c.name}: seccomp Unconfined`);
    if (sc.seLinuxOptions?.user || sc.seLinuxOptions?.role) v.push(`${c.name}: seLinux user/role`);
  }
  return v;
}

export function restrictedViolations(spec: any): string[] {
  const v = baselineViolations(spec);
  const psc = spec.securityContext ?? {};
  for (const vol of spec.volumes ?? []) {
    const type = Object.keys(vol).find(k => k !== 'name');
    if (!type || !RESTRICTED_VOLUMES.has(type)) v.push(`volume ${vol.name} of type ${type}`);
  }
  if (psc.runAsUser === 0) v.push('pod runAsUser 0');
  for (const c of containersOf(spec)) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) v.push(`${c.name}: allowPrivilegeEscalation must be false`);
    const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
    if (nonRoot !== true) v.push(`${c.name}: runAsNonRoot must be true`);
    if (sc.runAsUser === 0) v.push(`${c.name}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? psc.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
      v.push(`${c.name}: seccompProfile must be RuntimeDefault or Localhost`);
    const drop: string[] = sc.capabilities?.drop ?? [];
    if (!drop.includes('ALL')) v.push(`${c.name}: capabilities must drop ALL`);
    for (const cap of sc.capabilities?.add ?? [])
      if (cap !== 'NET_BIND_SERVICE') v.push(`${c.name}: capability ${cap} added`);
  }
  return v;
}

export type Level = 'restricted' | 'baseline' | 'privileged';

export function podSecurityLevel(spec: any): Level {
  if (restrictedViolations(spec).length === 0) return 'restricted';
  if (baselineViolations(spec).length === 0) return 'baseline';
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
