import { Testing } from 'cdk8s';
import { GpuTrainingJob, GpuTrainingJobProps, guard } from '../../src';
import { celRules } from '../../src/guard/crd';
import { JOBSET_CEL_IMMUTABLE } from '../../src/guard/jobset-rules';
import { testChart } from '../support/synth';

const CRD = require('../../src/validation/crds/jobset/jobset.x-k8s.io_jobsets.json');

function jobSet(props: Partial<GpuTrainingJobProps> = {}): any {
  const chart = testChart('ml');
  new GpuTrainingJob(chart, 'job', {
    name: 'pretrain',
    image: 'img:1',
    gpusPerPod: 8,
    nodes: 2,
    args: ['train.py'],
    ...props,
  });
  return Testing.synth(chart).find(o => o.kind === 'JobSet');
}

const paths = (before: any, after: any) =>
  guard([before], [after])
    .findings.filter(f => f.severity === 'error')
    .map(f => f.path);

describe('JobSet guard rules (jobset v0.12.0)', () => {
  test("the CRD's immutable properties are exactly those the vendored CRD's transition rules name", () => {
    const derived = celRules([CRD]).get('jobset.x-k8s.io/JobSet')!.get('v1alpha2')!;
    expect(derived.map(r => [r.path, r.type])).toEqual(JOBSET_CEL_IMMUTABLE.map(([p, t]) => [p, t]));
  });

  test('a changed image, node count or launcher is refused: replicatedJobs is immutable', () => {
    const before = jobSet();
    expect(paths(before, jobSet({ image: 'img:2' }))).toEqual(['spec.replicatedJobs']);
    expect(paths(before, jobSet({ args: ['train.py', '--lr', '1'] }))).toEqual(['spec.replicatedJobs']);
    const [finding] = guard([before], [jobSet({ image: 'img:2' })]).findings;
    expect(finding.message).toMatch(
      /^admission webhook "vjobset.kb.io" denied the request: spec.replicatedJobs: Invalid value: .*: field is immutable$/,
    );
  });

  test('the failure and success policies and the network are immutable (CRD transition rules)', () => {
    const before = jobSet();
    expect(paths(before, jobSet({ maxRestarts: 5 }))).toEqual(['spec.failurePolicy']);
    const renet = { ...before, spec: { ...before.spec, network: { enableDNSHostnames: false } } };
    expect(paths(before, renet)).toEqual(['spec.network']);
  });

  test('what may change: labels, annotations, suspend and the TTL', () => {
    const before = jobSet();
    const after = {
      ...before,
      metadata: { ...before.metadata, labels: { ...before.metadata.labels, team: 'nlp' } },
      spec: { ...before.spec, suspend: true, ttlSecondsAfterFinished: 600 },
    };
    expect(paths(before, after)).toEqual([]);
    expect(paths(before, jobSet())).toEqual([]);
  });
});
