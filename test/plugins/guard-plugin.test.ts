import { stringify } from 'yaml';
import { synthProject } from '../support/cdk8s-project';
import { seed000 } from '../guard/fixtures';

/** The real `cdk8s synth` of one manifest, with the guard declared against a baseline folder. */
function synthWithGuard(manifest: object) {
  return synthProject([manifest], [{ class: 'GuardValidation', properties: { baseline: 'baseline' } }], {
    'baseline/app.k8s.yaml': stringify(seed000('1.2.0')),
  });
}

describe('GuardValidation as a cdk8s-cli validation plugin', () => {
  test('cdk8s synth passes on an allowed change', () => {
    const r = synthWithGuard(seed000('1.3.0'));
    expect(r.stdout + r.stderr).toContain('Validations ended succesfully');
    expect(r.status).toBe(0);
  });

  test('cdk8s synth fails with the guard findings on an immutable change', () => {
    const r = synthWithGuard(seed000('1.3.0', 'gpu-pvc'));
    expect(r.status).not.toBe(0);
    expect(r.stdout).toContain('cdk8s-gpu/immutable-field');
    expect(r.stdout).toContain('spec.volumeClaimTemplates');
    expect(r.stdout + r.stderr).toContain('Validation failed');
  });
});
