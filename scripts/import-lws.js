#!/usr/bin/env node
// Generates src/imports/lws.ts, the TypeScript types of LeaderWorkerSet (leaderworkerset.x-k8s.io/v1),
// with `cdk8s import` from the vendored CRD of the pinned release (src/validation/crds/lws, see its
// README for the release and commit). Run: node scripts/import-lws.js
//
// The leader and worker pod templates (`leaderWorkerTemplate.leaderTemplate` / `workerTemplate`) are
// core/v1 PodTemplateSpecs and `volumeClaimTemplates` are core/v1 PersistentVolumeClaims: the library
// composes them as cdk8s-plus-32's typed k8s.PodTemplateSpec / k8s.KubePersistentVolumeClaimProps and
// converts them with cdk8s-plus-32's converters, like every built-in kind. They are imported as open
// objects here and typed in src/inference/leader-worker-set.ts. The rest is scripts/import-crd.js.
const { importCrd, open } = require('./import-crd');

importCrd({
  crd: 'lws/leaderworkerset.x-k8s.io_leaderworkersets.json',
  version: 'v1',
  kind: 'LeaderWorkerSet',
  repo: 'kubernetes-sigs/lws',
  out: 'lws.ts',
  script: 'scripts/import-lws.js',
  edit: spec => {
    const template = spec.leaderWorkerTemplate.properties;
    template.leaderTemplate = open(
      'The core/v1 PodTemplateSpec of leaders: typed in src/inference/leader-worker-set.ts.',
    );
    template.workerTemplate = open(
      'The core/v1 PodTemplateSpec of workers: typed in src/inference/leader-worker-set.ts.',
    );
    template.volumeClaimTemplates = {
      type: 'array',
      items: open('A core/v1 PersistentVolumeClaim: typed in src/inference/leader-worker-set.ts.'),
      description: template.volumeClaimTemplates.description,
    };
  },
});
