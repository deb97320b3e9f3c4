import {
  containerSecurityContext,
  podSecurityContext,
  PodSecurityLevel,
  securityLevel,
} from '../../src/common/security';
import { podSecurityLevel } from '../support/pod-security';

function spec(runAsRoot: boolean, addCapabilities: string[] = []) {
  const p = { runAsRoot, uid: 1000, addCapabilities };
  return {
    securityContext: podSecurityContext(p),
    containers: [{ name: 'c', securityContext: containerSecurityContext(p) }],
  };
}

describe('security contexts', () => {
  test('the non-root default meets restricted, and says so', () => {
    expect(podSecurityLevel(spec(false))).toBe('restricted');
    expect(securityLevel({ runAsRoot: false, uid: 1000, addCapabilities: [] })).toBe(PodSecurityLevel.RESTRICTED);
    expect(spec(false).securityContext).toMatchObject({
      runAsUser: 1000,
      fsGroup: 1000,
      fsGroupChangePolicy: 'OnRootMismatch',
    });
  });

  test('root keeps the rest locked down and meets baseline', () => {
    expect(podSecurityLevel(spec(true))).toBe('baseline');
    expect(securityLevel({ runAsRoot: true, uid: 1000, addCapabilities: [] })).toBe(PodSecurityLevel.BASELINE);
    expect(spec(true).containers[0].securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  test('IPC_LOCK needs the privileged level', () => {
    expect(podSecurityLevel(spec(false, ['IPC_LOCK']))).toBe('privileged');
    expect(securityLevel({ runAsRoot: false, uid: 1000, addCapabilities: ['IPC_LOCK'] })).toBe(
      PodSecurityLevel.PRIVILEGED,
    );
  });
});
