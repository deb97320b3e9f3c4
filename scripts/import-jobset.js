#!/usr/bin/env node
// Generates src/imports/jobset.ts, the TypeScript types of JobSet (jobset.x-k8s.io/v1alpha2), with
// `cdk8s import` from the vendored CRD of the pinned release (src/validation/crds/jobset, see its
// README for the release and commit). Run: node scripts/import-jobset.js
//
// The Job spec embedded in `replicatedJobs[].template.spec` is the batch/v1 JobSpec. The library
// composes it as cdk8s-plus-32's typed `k8s.JobSpec` (quantities, IntOrString) and converts it with
// cdk8s-plus-32's own converter, like every built-in kind; the import would emit a second, incompatible
// copy of JobSpec and PodSpec (about 19 000 lines). It is imported as an open object here and typed in
// src/training/job-set.ts. The same holds for the PVC templates of `volumeClaimPolicies`, which the
// library does not use. The rest is scripts/import-crd.js.
const { importCrd, open } = require('./import-crd');

importCrd({
  crd: 'jobset/jobset.x-k8s.io_jobsets.json',
  version: 'v1alpha2',
  kind: 'JobSet',
  repo: 'kubernetes-sigs/jobset',
  out: 'jobset.ts',
  script: 'scripts/import-jobset.js',
  edit: spec => {
    spec.replicatedJobs.items.properties.template.properties.spec = open(
      'The batch/v1 JobSpec of the replicated Job: typed as cdk8s-plus-32 k8s.JobSpec in src/training/job-set.ts.',
    );
    const claimTemplate = spec.volumeClaimPolicies.items.properties.templates.items.properties;
    claimTemplate.spec = open('A core/v1 PersistentVolumeClaimSpec (not used by the library).');
    claimTemplate.status = open('A core/v1 PersistentVolumeClaimStatus (not used by the library).');
  },
});
