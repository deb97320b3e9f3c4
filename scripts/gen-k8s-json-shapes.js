#!/usr/bin/env node
// Derives, from cdk8s-plus-28's generated `toJson_*` converters, the shape of every typed struct the
// library's objects hold: for each struct, its fields in the converter's order, with the API name,
// the typed name and how the value converts. src/common/api-json.ts converts with this table in
// one pass instead of cdk8s-plus's converters, which rebuild every object once per field.
//
//   node scripts/gen-k8s-json-shapes.js          writes src/common/k8s-json-shapes.ts
//   derive() (exported)                           the same table, for the test that keeps it current
'use strict';
const fs = require('fs');
const path = require('path');

/** The typed props of the kinds the library creates: the roots of the table. */
const ROOTS = [
  'KubeConfigMapProps', 'KubeCronJobProps', 'KubeHorizontalPodAutoscalerV2Props', 'KubeJobProps',
  'KubePersistentVolumeClaimProps', 'KubePodDisruptionBudgetProps', 'KubeRoleProps', 'KubeRoleBindingProps',
  'KubeSecretProps', 'KubeServiceProps', 'KubeServiceAccountProps', 'KubeStatefulSetProps',
];

const FIELD = /^\s+'([^']+)': (.*),$/;
const X = '([A-Za-z0-9_]+)';
const T = 'toJson_([A-Za-z0-9_]+)';
const esc = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The value expressions the generated converters use, and the shape code each stands for. */
const FORMS = [
  [new RegExp(`^obj\\.${X}$`), () => 0],
  [new RegExp(`^${T}\\(obj\\.${X}\\)$`), (t, x) => [x, t]],
  [new RegExp(`^obj\\.${X}\\?\\.map\\(y => ${T}\\(y\\)\\)$`), (x, t) => [x, ['a', t]]],
  [new RegExp(`^obj\\.${X}\\?\\.map\\(y => y\\)$`), x => [x, ['a']]],
  [new RegExp(`^obj\\.${X}\\?\\.value$`), x => [x, 'v']],
  [new RegExp(`^obj\\.${X}\\?\\.toISOString\\(\\)$`), x => [x, 'd']],
  ...[
    ['i[1]', ['m']], ['i[1]?.value', ['m', 'v']], ['i[1]?.map(y => y)', ['m', 'a']],
  ].map(([inner, shape]) => [new RegExp(`^\\(\\(obj\\.${X}\\) === undefined\\) \\? undefined : \\(Object\\.entries\\(obj\\.\\1\\)\\.reduce\\(\\(r, i\\) => \\(i\\[1\\] === undefined\\) \\? r : \\(\\{ \\.\\.\\.r, \\[i\\[0\\]\\]: ${esc(inner)} \\}\\), \\{\\}\\)\\)$`), x => [x, shape]]),
  [new RegExp(`^\\(\\(obj\\.${X}\\) === undefined\\) \\? undefined : \\(Object\\.entries\\(obj\\.\\1\\)\\.reduce\\(\\(r, i\\) => \\(i\\[1\\] === undefined\\) \\? r : \\(\\{ \\.\\.\\.r, \\[i\\[0\\]\\]: ${T}\\(i\\[1\\]\\) \\}\\), \\{\\}\\)\\)$`), (x, t) => [x, ['m', t]]],
];

/** Every converter of the generated module: struct name → [apiKey, typedKey, shape][]. */
function parseAll(source) {
  const structs = new Map();
  const lines = source.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = /^function toJson_([A-Za-z0-9_]+)\(obj\) \{$/.exec(lines[i]);
    if (!head) continue;
    const name = head[1];
    const body = [];
    for (i++; lines[i] !== '}'; i++) body.push(lines[i]);
    const expected = ['    if (obj === undefined) {', '        return undefined;', '    }', '    const result = {'];
    const tail = ['    };', '    // filter undefined values', '    return Object.entries(result).reduce((r, i) => (i[1] === undefined) ? r : ({ ...r, [i[0]]: i[1] }), {});'];
    const fields = body.slice(expected.length, body.length - tail.length);
    if (body.slice(0, expected.length).join('\n') !== expected.join('\n') || body.slice(-tail.length).join('\n') !== tail.join('\n')) {
      structs.set(name, { unknown: `its body is not the usual converter:\n${body.join('\n')}` });
      continue;
    }
    const out = [];
    for (const line of fields) {
      const m = FIELD.exec(line);
      if (!m) throw new Error(`toJson_${name}: unexpected line ${JSON.stringify(line)}`);
      const [, apiKey, expr] = m;
      let parsed;
      for (const [re, make] of FORMS) {
        const f = re.exec(expr);
        if (f) {
          parsed = make(...f.slice(1));
          if (parsed === 0) parsed = [f[1], 0];
          break;
        }
      }
      if (!parsed) throw new Error(`toJson_${name}.${apiKey}: unexpected value expression ${expr}`);
      out.push([apiKey, parsed[0], parsed[1]]);
    }
    structs.set(name, { fields: out });
  }
  return structs;
}

/** The table for the roots and every struct they reach, in a stable order. */
function derive(source = fs.readFileSync(require.resolve('cdk8s-plus-28/lib/imports/k8s.js'), 'utf8')) {
  const all = parseAll(source);
  const table = {};
  const visit = name => {
    if (name in table) return;
    const s = all.get(name);
    if (!s) throw new Error(`no converter toJson_${name} in cdk8s-plus-28`);
    if (s.unknown) throw new Error(`toJson_${name}: ${s.unknown}`);
    table[name] = s.fields;
    for (const [, , shape] of s.fields) {
      const inner = Array.isArray(shape) ? shape[1] : shape;
      if (typeof inner === 'string' && !['v', 'd', 'a'].includes(inner)) visit(inner);
    }
  };
  ROOTS.forEach(visit);
  return Object.fromEntries(Object.keys(table).sort().map(k => [k, table[k]]));
}

function render(table) {
  const version = require('cdk8s-plus-28/package.json').version;
  const rows = Object.entries(table).map(([name, fields]) => `  ${name}: ${JSON.stringify(fields)},`);
  return [
    '// Generated by scripts/gen-k8s-json-shapes.js from cdk8s-plus-28 ' + version + "'s toJson_* converters: do not edit.",
    '// For each typed struct: its fields in the converter\'s order, as [API name, typed name, shape].',
    '// Shapes: 0 the value as is; "v" its .value (Quantity, IntOrString); "d" a Date as ISO text; a struct',
    '// name; ["a"] or ["a", struct] an array; ["m"], ["m", "v"], ["m", "a"] or ["m", struct] a map.',
    '/* eslint-disable */',
    'export const K8S_JSON_SHAPES: Readonly<Record<string, ReadonlyArray<readonly [string, string, Shape]>>> = {',
    ...rows,
    '};',
    '',
    '/** How a field\'s value converts to API JSON. */',
    'export type Shape = 0 | string | readonly [string] | readonly [string, string];',
    '',
  ].join('\n');
}

module.exports = { derive, render, ROOTS };

if (require.main === module) {
  const out = path.join(__dirname, '..', 'src', 'common', 'k8s-json-shapes.ts');
  fs.writeFileSync(out, render(derive()));
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
}
