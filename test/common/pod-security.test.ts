import { podSecurityLevel, restrictedViolations } from '../support/pod-security';

const restricted = {
  securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [{ name: 'c', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
  volumes: [{ name: 'v', emptyDir: {} }],
};

describe('pod security evaluator', () => {
  test('a restricted spec is restricted', () => {
    expect(restrictedViolations(restricted)).toEqual([]);
    expect(podSecurityLevel(restricted)).toBe('restricted');
  });

  test('running as root is baseline', () => {
    const spec = { ...restricted, securityContext: { seccompProfile: { type: 'RuntimeDefault' } } };
    expect(podSecurityLevel(spec)).toBe('baseline');
  });

  test('IPC_LOCK, a hostPath or privileged is privileged', () => {
    const withCap = {
      ...restricted,
      containers: [
        {
          name: 'c',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['IPC_LOCK'] } },
        },
      ],
    };
    expect(podSecurityLevel(withCap)).toBe('privileged');
    expect(podSecurityLevel({ ...restricted, volumes: [{ name: 'h', hostPath: { path: '/' } }] })).toBe('privileged');
    expect(
      podSecurityLevel({ ...restricted, containers: [{ name: 'c', securityContext: { privileged: true } }] }),
    ).toBe('privileged');
  });
});

describe('versions of the standards (each case also runs against PodSecurity admission in test/cluster)', () => {
  const only = (minor: number) => ({ from: minor, to: minor });
  const withSysctl = (name: string) => ({
    ...restricted,
    securityContext: { ...restricted.securityContext, sysctls: [{ name, value: '4096 87380 6291456' }] },
  });
  const container = restricted.containers[0];

  test('a sysctl made safe in 1.32 is safe from 1.32, so over every supported version (the floor is 1.32)', () => {
    expect(podSecurityLevel(withSysctl('net.ipv4.tcp_rmem'), undefined, only(32))).toBe('restricted');
    expect(podSecurityLevel(withSysctl('net.ipv4.tcp_rmem'), undefined, only(31))).toBe('privileged');
    expect(podSecurityLevel(withSysctl('net.ipv4.tcp_rmem'))).toBe('restricted');
  });

  test('a probe host is baseline before 1.34 and privileged from it, so over every supported version', () => {
    const spec = {
      ...restricted,
      containers: [{ ...container, livenessProbe: { httpGet: { host: '10.0.0.1', port: 80 } } }],
    };
    expect(podSecurityLevel(spec, undefined, only(33))).toBe('restricted');
    expect(podSecurityLevel(spec, undefined, only(34))).toBe('privileged');
    expect(podSecurityLevel(spec)).toBe('privileged');
  });

  test('a pod that says runAsNonRoot false is not restricted even when every container says true', () => {
    const spec = {
      ...restricted,
      securityContext: { ...restricted.securityContext, runAsNonRoot: false },
      containers: [{ ...container, securityContext: { ...container.securityContext, runAsNonRoot: true } }],
    };
    expect(podSecurityLevel(spec)).toBe('baseline');
  });

  test('a user-namespaced root pod is restricted from 1.35 only', () => {
    const spec = { ...restricted, hostUsers: false, securityContext: { seccompProfile: { type: 'RuntimeDefault' } } };
    expect(podSecurityLevel(spec, undefined, only(35))).toBe('restricted');
    expect(podSecurityLevel(spec, undefined, only(34))).toBe('baseline');
    expect(podSecurityLevel(spec)).toBe('baseline');
  });

  test('AppArmor: an Unconfined profile or an unconfined annotation is privileged; runtime/default is not', () => {
    const unconfined = {
      ...restricted,
      containers: [
        { ...container, securityContext: { ...container.securityContext, appArmorProfile: { type: 'Unconfined' } } },
      ],
    };
    expect(podSecurityLevel(unconfined)).toBe('privileged');
    const key = 'container.apparmor.security.beta.kubernetes.io/c';
    expect(podSecurityLevel(restricted, { [key]: 'unconfined' })).toBe('privileged');
    expect(podSecurityLevel(restricted, { [key]: 'runtime/default' })).toBe('restricted');
    expect(podSecurityLevel(restricted, { [key]: 'localhost/gpu' })).toBe('restricted');
  });

  test('SELinux: container_engine_t is allowed from 1.31, spc_t never', () => {
    const typed = (type: string) => ({
      ...restricted,
      containers: [{ ...container, securityContext: { ...container.securityContext, seLinuxOptions: { type } } }],
    });
    expect(podSecurityLevel(typed('container_engine_t'), undefined, only(31))).toBe('restricted');
    expect(podSecurityLevel(typed('container_engine_t'), undefined, only(30))).toBe('privileged');
    expect(podSecurityLevel(typed('spc_t'), undefined, only(36))).toBe('privileged');
  });
});
