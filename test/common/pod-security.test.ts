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
