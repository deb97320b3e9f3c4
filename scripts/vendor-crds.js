#!/usr/bin/env node
// Maintenance script: copies the CustomResourceDefinitions of pinned upstream releases into
// src/validation/crds/<project>/ as JSON, whole (descriptions included: they are the field docs the
// constructs are written against), and rewrites src/validation/crds/README.md from the pins below.
// JSON rather than YAML: one parse with no YAML dependency at run time, and scripts/copy-assets.js
// plus package.json's `lib/**/*.json` already ship it.
//
//   node scripts/vendor-crds.js <owner/name> <git dir of a clone holding the release tags>
//
// Reads each pinned file with `git show <tag>:<path>`, checks that the tag still names the recorded
// commit (a moved tag would silently change the data), and writes the JSON. Run once per repository.
// Also writes crds/sources.json, the same table for the validator, which names the release in its errors.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const CRDS = path.join(__dirname, '..', 'src', 'validation', 'crds');

/**
 * The pins. `commit` is the commit the release tag points to. Bump a release by editing its row
 * and running the script against a clone that has the new tag.
 */
const PINS = [
  {
    project: 'jobset',
    repo: 'kubernetes-sigs/jobset',
    tag: 'v0.12.0',
    commit: 'f22e565ac3cc3265c7c45ef67ecffdc689af5d77',
    paths: ['config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml'],
  },
  {
    project: 'lws',
    repo: 'kubernetes-sigs/lws',
    tag: 'v0.10.0',
    commit: '2161f38ff333f9e24d3c44adef7cd5d9787cac00',
    paths: ['config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml'],
  },
  {
    project: 'gateway-api-inference-extension',
    repo: 'kubernetes-sigs/gateway-api-inference-extension',
    tag: 'v1.6.0',
    commit: '992e5c292afb248801ce8d9234eb5b9d28eea231',
    paths: ['config/crd/bases/inference.networking.k8s.io_inferencepools.yaml'],
  },
  {
    // GIE v1.6.0 moved these two APIs out of that repository (#2967, #2973) into the llm-d.ai group of
    // llm-d/llm-d-router, which serves them as llm-d.ai/v1alpha2 from v0.10.0 (the release whose Endpoint
    // Picker InferenceGateway deploys). The files say `llm-d.ai/bundle-version: main-dev`: the release
    // tag's tree does; the tag and commit below are what pins them.
    project: 'llm-d-router',
    repo: 'llm-d/llm-d-router',
    tag: 'v0.10.0',
    commit: '71f4f0999f95b96c49a9d0c4afbd18dfdb943c26',
    paths: [
      'config/crd/bases/llm-d.ai_inferenceobjectives.yaml',
      'config/crd/bases/llm-d.ai_inferencemodelrewrites.yaml',
    ],
    vendored: '2026-12-06',
  },
  {
    project: 'gateway-api',
    repo: 'kubernetes-sigs/gateway-api',
    tag: 'v1.6.1',
    commit: '8bb74df00e56ec8f944d48c25e6c1c9c2f6848e3',
    paths: ['config/crd/standard/gateway.networking.k8s.io_httproutes.yaml'],
  },
  {
    project: 'prometheus-operator',
    repo: 'prometheus-operator/prometheus-operator',
    tag: 'v0.93.0',
    commit: 'f8fafd475f3d132e239432ae6172de60a6cb6516',
    paths: [
      'example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml',
      'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
    ],
  },
  {
    project: 'keda',
    repo: 'kedacore/keda',
    tag: 'v2.20.2',
    commit: '68a5b5028f35b22d50597c69819ab32c4e92f21a',
    paths: ['config/crd/bases/keda.sh_scaledobjects.yaml', 'config/crd/bases/keda.sh_triggerauthentications.yaml'],
  },
];

/** The date the files were vendored, recorded in the README; kept when a run changes nothing. A pin's own `vendored` wins. */
const VENDORED = '2026-12-03';

function git(gitDir, ...args) {
  return execFileSync('git', ['--git-dir', gitDir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

function jsonName(file) {
  return path.basename(file).replace(/\.ya?ml$/, '.json');
}

function vendor(repo, gitDir) {
  const pins = PINS.filter(p => p.repo === repo);
  if (pins.length === 0) throw new Error(`No pin names the repository ${repo}.`);
  for (const pin of pins) {
    const commit = git(gitDir, 'rev-list', '-n', '1', pin.tag).trim();
    if (commit !== pin.commit) {
      throw new Error(`${repo} ${pin.tag} points to ${commit}, not the recorded ${pin.commit}.`);
    }
    for (const file of pin.paths) {
      const docs = YAML.parseAllDocuments(git(gitDir, 'show', `${pin.tag}:${file}`))
        .map(d => d.toJS())
        .filter(d => d && d.kind === 'CustomResourceDefinition');
      if (docs.length !== 1) throw new Error(`${repo} ${pin.tag}:${file} holds ${docs.length} CRDs, not 1.`);
      const dest = path.join(CRDS, pin.project, jsonName(file));
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      fs.writeFileSync(dest, JSON.stringify(docs[0]) + '\n');
      console.log(`${path.relative(process.cwd(), dest)}: ${fs.statSync(dest).size} bytes`);
    }
  }
}

function writeTables() {
  const rows = PINS.flatMap(p =>
    p.paths.map(file => {
      const json = `${p.project}/${jsonName(file)}`;
      const where = path.join(CRDS, json);
      const crd = fs.existsSync(where) ? JSON.parse(fs.readFileSync(where, 'utf8')) : undefined;
      const served = crd && crd.spec.versions.filter(v => v.served);
      const kinds = crd
        ? served.map(v => `${crd.spec.group}/${v.name} ${crd.spec.names.kind}`).join(', ')
        : '(not vendored yet)';
      return (
        `| ${kinds} | [${p.repo}](https://github.com/${p.repo}) | ${p.tag} | \`${p.commit.slice(0, 12)}\` ` +
        `| \`${file}\` ` +
        `| \`${json}\` | Apache-2.0 | ${p.vendored ?? VENDORED} |`
      );
    }),
  );
  const text = [
    '# Vendored CustomResourceDefinitions',
    '',
    'The CRDs that `../crd-schema.ts` validates custom resources against, each from a pinned upstream release,',
    "converted from YAML to JSON and otherwise whole (the upstream version is in each file's annotations).",
    'Regenerate with `node scripts/vendor-crds.js <owner/name> <git dir>` after editing the pins in that script.',
    '',
    '| served kinds | upstream | release tag | commit | file in the repo | vendored as | license | vendored |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    'InferenceObjective and InferenceModelRewrite come from llm-d/llm-d-router: gateway-api-inference-extension',
    'v1.6.0 removed them (#2973) with the Endpoint Picker, and llm-d-router serves them in the `llm-d.ai` group',
    "(v1alpha2) from v0.10.0. Their files carry `llm-d.ai/bundle-version: main-dev` because the release tag's tree",
    'does; the tag and commit above pin them.',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(CRDS, 'README.md'), text);
  const sources = PINS.flatMap(p =>
    p.paths.map(file => ({
      file: `${p.project}/${jsonName(file)}`,
      repo: p.repo,
      tag: p.tag,
      commit: p.commit,
      path: file,
      vendored: p.vendored ?? VENDORED,
    })),
  );
  fs.writeFileSync(path.join(CRDS, 'sources.json'), JSON.stringify(sources, null, 2) + '\n');
}

if (require.main === module) {
  const [repo, gitDir] = process.argv.slice(2);
  if (!repo || !gitDir) {
    console.error('usage: node scripts/vendor-crds.js <owner/name> <git dir>');
    process.exit(2);
  }
  vendor(repo, gitDir);
  writeTables();
}

module.exports = { PINS };
