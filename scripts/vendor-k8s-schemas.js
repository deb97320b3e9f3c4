#!/usr/bin/env node
// One-off maintenance script: copies the official Kubernetes API definitions into the repo,
// minus descriptions, so the strict validator in test/support works from a fresh clone.
// Usage: node scripts/vendor-k8s-schemas.js <dir holding v1.32.0.json and v1.36.0.json>
'use strict';
const fs = require('fs');
const path = require('path');

const KEEP = new Set([
  '$ref',
  'type',
  'format',
  'items',
  'properties',
  'additionalProperties',
  'required',
  'oneOf',
  'x-kubernetes-group-version-kind',
  // How server-side apply merges a list: a list of maps keyed by these fields (src/guard/ssa.ts).
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
]);

function slim(schema) {
  if (Array.isArray(schema)) return schema.map(slim);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (!KEEP.has(k)) continue;
    if (
      k === 'x-kubernetes-group-version-kind' ||
      k === 'x-kubernetes-list-type' ||
      k === 'x-kubernetes-list-map-keys'
    ) {
      out[k] = v;
    } else if (k === 'properties') {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, slim(s)]));
    } else {
      out[k] = slim(v);
    }
  }
  return out;
}

const src = process.argv[2];
if (!src) {
  console.error('usage: node scripts/vendor-k8s-schemas.js <dir>');
  process.exit(2);
}
for (const v of ['1.32.0', '1.36.0']) {
  const defs = JSON.parse(fs.readFileSync(path.join(src, `v${v}.json`), 'utf8')).definitions;
  const slimmed = Object.fromEntries(Object.entries(defs).map(([k, s]) => [k, slim(s)]));
  const dest = path.join(__dirname, '..', 'src', 'validation', 'schemas', `k8s-v${v}.json`);
  fs.writeFileSync(
    dest,
    JSON.stringify({
      source: `kubernetes v${v} OpenAPI definitions (Apache-2.0), descriptions removed`,
      definitions: slimmed,
    }) + '\n',
  );
  console.log(`${dest}: ${fs.statSync(dest).size} bytes`);
}
