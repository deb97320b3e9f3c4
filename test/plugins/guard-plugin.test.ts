import { Chart, Testing } from 'cdk8s';
import { stringify } from 'yaml';
import { VllmInferenceService } from '../../src';
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

  test('a one-step bump of a serving version is reported as a warning, and synth still passes', () => {
    const serving = (version: number) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
      new VllmInferenceService(chart, 'llm', { name: 'qwen', modelId: 'Qwen/Qwen2.5-7B-Instruct', version });
      return Testing.synth(chart);
    };
    const r = synthProject(serving(2), [{ class: 'GuardValidation', properties: { baseline: 'baseline' } }], {
      'baseline/app.k8s.yaml': serving(1)
        .map(o => stringify(o))
        .join('---\n'),
    });
    expect(r.stdout).toMatch(
      /WARNING StatefulSet\/serving\/qwen-v1\n[\s\S]*?note: .*a pruning sync .* deletes qwen-v1 at once/,
    );
    expect(r.status).toBe(0);
  });
});
