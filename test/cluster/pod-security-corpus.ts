import { App } from 'cdk8s';
import { buildApps } from '../../apps/apps';
import { podsOf } from '../../src/checks/kinds';

/**
 * Pods for the Pod Security differential (pod-security-differential.test.ts): every pod template of the
 * example apps as it is, and two of them (one the library rates restricted, one baseline) under each
 * change a Pod Security Standards control looks at, on both sides of its line. Each case is a valid pod,
 * so the only thing a namespace's enforced level can refuse it for is Pod Security.
 */

export interface PodCase {
  readonly name: string;
  /** The pod as the server receives it (no namespace yet). */
  readonly pod: any;
}

type Mutation = readonly [name: string, change: (pod: any) => void];

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const first = (pod: any) => pod.spec.containers[0];
const sc = (c: any) => (c.securityContext ??= {});
const podSc = (pod: any) => (pod.spec.securityContext ??= {});
const every = (pod: any): any[] => [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
const volume = (pod: any, v: any) => (pod.spec.volumes ??= []).push({ name: 'psd-extra', ...v });

/** Capabilities on both sides of the baseline list, and spellings the standard does not normalize. */
const CAPABILITIES = [
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
  'NET_RAW',
  'IPC_LOCK',
  'SYS_ADMIN',
  'SYS_PTRACE',
  'NET_ADMIN',
  'SYS_RESOURCE',
  'ALL',
  'chown',
  'CAP_CHOWN',
];

/** Sysctls on both sides of the safe set, including ones made safe after 1.28. */
const SYSCTLS = [
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
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
  'net.core.somaxconn',
  'kernel.msgmax',
];

const SYSCTL_VALUES: Record<string, string> = {
  'net.ipv4.ip_local_port_range': '1024 65535',
  'net.ipv4.ping_group_range': '0 2147483647',
  'net.ipv4.ip_local_reserved_ports': '8080',
  'net.ipv4.tcp_rmem': '4096 87380 6291456',
  'net.ipv4.tcp_wmem': '4096 16384 4194304',
};

const SELINUX_TYPES = ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t', 'spc_t', 'my_t'];

const PROBE_HOSTS: Mutation[] = [
  ['a liveness httpGet probe with a host', p => (first(p).livenessProbe = { httpGet: { host: '10.0.0.1', port: 80 } })],
  ['a liveness httpGet probe with host ""', p => (first(p).livenessProbe = { httpGet: { host: '', port: 80 } })],
  [
    'a readiness tcpSocket probe with a host',
    p => (first(p).readinessProbe = { tcpSocket: { host: '10.0.0.1', port: 80 } }),
  ],
  [
    'a preStop httpGet hook with a host',
    p => (first(p).lifecycle = { preStop: { httpGet: { host: 'example.com', port: 80, path: '/' } } }),
  ],
  [
    'a postStart tcpSocket hook with a host',
    p => (first(p).lifecycle = { postStart: { tcpSocket: { host: 'a', port: 80 } } }),
  ],
];

/** Each change a Pod Security control looks at (names say what the pod gets). */
export const MUTATIONS: readonly Mutation[] = [
  ['hostNetwork', p => (p.spec.hostNetwork = true)],
  ['hostPID', p => (p.spec.hostPID = true)],
  ['hostIPC', p => (p.spec.hostIPC = true)],
  [
    'hostNetwork, hostPID and hostIPC all false',
    p => Object.assign(p.spec, { hostNetwork: false, hostPID: false, hostIPC: false }),
  ],
  ['a hostPath volume', p => volume(p, { hostPath: { path: '/var/run' } })],
  ['privileged', p => Object.assign(sc(first(p)), { privileged: true, allowPrivilegeEscalation: true })],
  ['privileged: false', p => (sc(first(p)).privileged = false)],
  [
    'a privileged init container',
    p =>
      (p.spec.initContainers ??= []).push({
        name: 'psd-init',
        image: 'busybox',
        securityContext: { privileged: true },
      }),
  ],
  [
    'an init container that meets restricted',
    p =>
      (p.spec.initContainers ??= []).push({
        name: 'psd-init',
        image: 'busybox',
        securityContext: {
          allowPrivilegeEscalation: false,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
      }),
  ],
  [
    'an init container with no securityContext',
    p => (p.spec.initContainers ??= []).push({ name: 'psd-init', image: 'busybox' }),
  ],
  ...CAPABILITIES.map((cap): Mutation => [
    `capability ${cap} added`,
    p => ((sc(first(p)).capabilities ??= {}).add = [cap]),
  ]),
  ['hostPort 8080', p => (first(p).ports = [{ containerPort: 8080, hostPort: 8080 }])],
  [
    'procMount Unmasked (in a user namespace, which it needs)',
    p => {
      p.spec.hostUsers = false;
      sc(first(p)).procMount = 'Unmasked';
    },
  ],
  ['procMount Default', p => (sc(first(p)).procMount = 'Default')],
  ['pod seccomp Unconfined', p => (podSc(p).seccompProfile = { type: 'Unconfined' })],
  ['container seccomp Unconfined', p => (sc(first(p)).seccompProfile = { type: 'Unconfined' })],
  [
    'container seccomp Localhost',
    p => (sc(first(p)).seccompProfile = { type: 'Localhost', localhostProfile: 'profiles/gpu.json' }),
  ],
  [
    'no pod seccomp, RuntimeDefault on every container',
    p => {
      delete podSc(p).seccompProfile;
      for (const c of every(p)) sc(c).seccompProfile = { type: 'RuntimeDefault' };
    },
  ],
  ['no seccomp anywhere', p => [podSc(p), ...every(p).map(sc)].forEach(s => delete s.seccompProfile)],
  ...SELINUX_TYPES.map((t): Mutation => [
    `container seLinux type ${t}`,
    p => (sc(first(p)).seLinuxOptions = { type: t }),
  ]),
  ['pod seLinux type spc_t', p => (podSc(p).seLinuxOptions = { type: 'spc_t' })],
  ['pod seLinux level s0:c1,c2', p => (podSc(p).seLinuxOptions = { level: 's0:c1,c2' })],
  ['container seLinux user', p => (sc(first(p)).seLinuxOptions = { user: 'system_u' })],
  ['container seLinux role', p => (sc(first(p)).seLinuxOptions = { role: 'system_r' })],
  ...SYSCTLS.map((name): Mutation => [
    `sysctl ${name}`,
    p => (podSc(p).sysctls = [{ name, value: SYSCTL_VALUES[name] ?? '1' }]),
  ]),
  ['container appArmor Unconfined', p => (sc(first(p)).appArmorProfile = { type: 'Unconfined' })],
  ['container appArmor RuntimeDefault', p => (sc(first(p)).appArmorProfile = { type: 'RuntimeDefault' })],
  [
    'container appArmor Localhost',
    p => (sc(first(p)).appArmorProfile = { type: 'Localhost', localhostProfile: 'k8s-gpu' }),
  ],
  ['pod appArmor Unconfined', p => (podSc(p).appArmorProfile = { type: 'Unconfined' })],
  [
    'an appArmor annotation unconfined',
    p =>
      ((p.metadata.annotations ??= {})[`container.apparmor.security.beta.kubernetes.io/${first(p).name}`] =
        'unconfined'),
  ],
  [
    'an appArmor annotation runtime/default',
    p =>
      ((p.metadata.annotations ??= {})[`container.apparmor.security.beta.kubernetes.io/${first(p).name}`] =
        'runtime/default'),
  ],
  ...PROBE_HOSTS,
  ['an nfs volume', p => volume(p, { nfs: { server: 'nfs.example.com', path: '/data' } })],
  ['a cephfs volume', p => volume(p, { cephfs: { monitors: ['10.0.0.1:6789'] } })],
  ['a flexVolume', p => volume(p, { flexVolume: { driver: 'example.com/flex' } })],
  [
    'an iscsi volume',
    p => volume(p, { iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'iqn.2001-04.com.example:storage', lun: 0 } }),
  ],
  ['a csi volume', p => volume(p, { csi: { driver: 'csi.example.com' } })],
  [
    'an ephemeral volume',
    p =>
      volume(p, {
        ephemeral: {
          volumeClaimTemplate: {
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        },
      }),
  ],
  ['allowPrivilegeEscalation true', p => (sc(first(p)).allowPrivilegeEscalation = true)],
  ['allowPrivilegeEscalation unset', p => delete sc(first(p)).allowPrivilegeEscalation],
  [
    'runAsNonRoot false on a container, true on the pod',
    p => {
      podSc(p).runAsNonRoot = true;
      sc(first(p)).runAsNonRoot = false;
    },
  ],
  [
    'runAsNonRoot false on the pod, true on every container',
    p => {
      podSc(p).runAsNonRoot = false;
      for (const c of every(p)) sc(c).runAsNonRoot = true;
    },
  ],
  [
    'runAsNonRoot unset on the pod and on the first container',
    p => {
      const s = podSc(p);
      const pod = s.runAsNonRoot;
      delete s.runAsNonRoot;
      // The other containers keep what the pod gave them.
      for (const c of every(p).slice(1)) if (pod !== undefined) sc(c).runAsNonRoot ??= pod;
      delete sc(first(p)).runAsNonRoot;
    },
  ],
  ['pod runAsUser 0', p => (podSc(p).runAsUser = 0)],
  ['container runAsUser 0', p => (sc(first(p)).runAsUser = 0)],
  [
    'container runAsUser 0, pod runAsUser 1000',
    p => {
      podSc(p).runAsUser = 1000;
      sc(first(p)).runAsUser = 0;
    },
  ],
  ['pod runAsGroup 0', p => (podSc(p).runAsGroup = 0)],
  ['pod fsGroup 0', p => (podSc(p).fsGroup = 0)],
  ['hostUsers false', p => (p.spec.hostUsers = false)],
  [
    'hostUsers false and runAsNonRoot unset',
    p => {
      p.spec.hostUsers = false;
      delete podSc(p).runAsNonRoot;
      for (const c of every(p)) delete sc(c).runAsNonRoot;
    },
  ],
  ['capabilities drop unset', p => delete (sc(first(p)).capabilities ?? {}).drop],
  ['capabilities drop [all]', p => ((sc(first(p)).capabilities ??= {}).drop = ['all'])],
  ['capabilities drop [ALL, NET_RAW]', p => ((sc(first(p)).capabilities ??= {}).drop = ['ALL', 'NET_RAW'])],
];

/**
 * The pod a template makes, sent to the server on its own: references the test namespace cannot satisfy
 * (a named service account, priority class or runtime class that does not exist there) are dropped, as
 * they have nothing to do with Pod Security and admission would refuse them first.
 */
function podOf(template: any, name: string, claims: readonly any[]): any {
  const spec = clone(template.spec);
  // A StatefulSet's controller adds a volume per claim template.
  for (const claim of claims)
    (spec.volumes ??= []).push({
      name: claim.metadata.name,
      persistentVolumeClaim: { claimName: claim.metadata.name },
    });
  delete spec.priorityClassName;
  delete spec.runtimeClassName;
  delete spec.serviceAccountName;
  delete spec.serviceAccount;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { ...(template.metadata?.labels ?? {}) },
      annotations: { ...(template.metadata?.annotations ?? {}) },
    },
    spec,
  };
}

/** The pod template of an object (its spec's parent: the template, or the Pod). */
function templateOf(object: any): any | undefined {
  const { podSpec } = podsOf(object);
  if (!podSpec) return undefined;
  const find = (node: any): any => {
    if (node === null || typeof node !== 'object') return undefined;
    if (node.spec === podSpec) return node;
    for (const v of Object.values(node)) {
      const found = find(v);
      if (found) return found;
    }
    return undefined;
  };
  return find(object);
}

/** The example apps' pods, each as it is and, for two of them, under every mutation. */
export function podCases(levelOf: (pod: any) => string): PodCase[] {
  const app = new App();
  buildApps(app);
  const bases: PodCase[] = [];
  for (const chart of app.charts)
    for (const object of chart.toJson()) {
      const template = templateOf(object);
      if (template)
        bases.push({
          name: `${object.kind}/${object.metadata.name}`,
          pod: podOf(template, 'psd', object.spec?.volumeClaimTemplates ?? []),
        });
    }
  const pick = (level: string) => {
    const found = bases.find(b => levelOf(b.pod) === level);
    if (!found) throw new Error(`no example app pod is rated ${level}`);
    return found;
  };
  const mutated = ['restricted', 'baseline'].map(pick).flatMap(base =>
    MUTATIONS.map(([what, change]) => {
      const pod = clone(base.pod);
      change(pod);
      return { name: `${base.name} with ${what}`, pod };
    }),
  );
  return [...bases, ...mutated].map((c, i) => ({
    ...c,
    pod: { ...c.pod, metadata: { ...c.pod.metadata, name: `psd-${i}` } },
  }));
}
