import * as fs from 'fs';
import * as path from 'path';
import * as jobset from '../../src/imports/jobset';

const ROOT = path.join(__dirname, '..', '..');
const GENERATED = fs.readFileSync(path.join(ROOT, 'src', 'imports', 'jobset.ts'), 'utf8');
const CRD = require('../../src/validation/crds/jobset/jobset.x-k8s.io_jobsets.json');
const SOURCES: Array<{ repo: string; tag: string; commit: string }> = require('../../src/validation/crds/sources.json');

/** The generated types come from the vendored CRD of the pinned release (regenerate: node scripts/import-jobset.js). */
describe('src/imports/jobset.ts', () => {
  const spec = CRD.spec.versions.find((v: any) => v.name === 'v1alpha2').schema.openAPIV3Schema.properties.spec;

  test('names the release and commit the vendored CRD comes from', () => {
    const source = SOURCES.find(s => s.repo === 'kubernetes-sigs/jobset')!;
    expect(GENERATED).toContain(`kubernetes-sigs/jobset ${source.tag}`);
    expect(GENERATED).toContain(`/blob/${source.commit}/`);
  });

  test("its enums are the CRD's", () => {
    const rule = spec.properties.failurePolicy.properties.rules.items.properties;
    expect(Object.values(jobset.JobSetSpecFailurePolicyRulesAction)).toEqual(rule.action.enum);
    expect(Object.values(jobset.JobSetSpecSuccessPolicyOperator)).toEqual(
      spec.properties.successPolicy.properties.operator.enum,
    );
  });

  test('the converter emits the API names of every JobSet spec field', () => {
    const json = jobset.toJson_JobSetSpec({
      network: { enableDnsHostnames: true, subdomain: 's', publishNotReadyAddresses: true },
      ttlSecondsAfterFinished: 1,
      replicatedJobs: [],
    })!;
    expect(json.network).toEqual({ enableDNSHostnames: true, subdomain: 's', publishNotReadyAddresses: true });
    expect(Object.keys(json).every(k => k in spec.properties)).toBe(true);
  });

  test('has no class: objects are ManifestObjects, whose body is converted API JSON', () => {
    expect(GENERATED).not.toMatch(/export class /);
  });
});
