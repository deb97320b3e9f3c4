#!/usr/bin/env node
// Proves the package works as installed, not only in this repo: packs it, installs the tarball
// into a fresh TypeScript cdk8s project outside the repo, type-checks an app that uses all three
// constructs and the guard against the shipped declarations, synthesizes it with the real
// `cdk8s synth` (validation plugins included), and checks the output. Run by `npm test`.
// The scaffolding (pack, fresh project) is exported for other scripts that need a consumer project.
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.join(__dirname, '..');
const pkg = require(path.join(ROOT, 'package.json'));

function run(cmd, args, cwd, extra = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_yes: 'true' }, ...extra });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
}

/** `run`, without blocking: independent steps of the check share the machine's cores. */
function runAsync(cmd, args, cwd) {
  return new Promise(resolve => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, npm_config_yes: 'true' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', d => {
      stdout += d;
    });
    child.stderr.on('data', d => {
      stderr += d;
    });
    child.on('error', e => resolve({ status: null, out: String(e), stdout }));
    child.on('close', status => resolve({ status, out: `${stdout}${stderr}`, stdout }));
  });
}

/** `npm pack` of the repo (lib/ must be built) into `work`. Returns the run and npm's file list. */
function pack(work) {
  const packed = run('npm', ['pack', '--json', '--pack-destination', work], ROOT);
  const info = packed.status === 0 ? JSON.parse(packed.stdout)[0] : undefined;
  return { ...packed, info, tarball: info && path.join(work, info.filename) };
}

const installed = name => require(path.join(ROOT, 'node_modules', name, 'package.json')).version;

/**
 * The link targets of a Markdown text: inline links and images (`[text](target "title")`) and reference
 * definitions (`[label]: target`), outside fenced code blocks and code spans, where brackets are not links. Inline
 * links are read as test/readme.test.ts reads them, so the test and this check agree on them; the definitions and
 * the `<...>` targets are read too, because npm renders them as links as well.
 */
function markdownLinks(text) {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  // A target in angle brackets may hold spaces (`[text](<a file.md>)`).
  const inline = [...prose.matchAll(/\[[^\]]*\]\(\s*(?:<([^>\n]*)>|([^)\s]+))[^)]*\)/g)].map(m => m[1] ?? m[2]);
  const definitions = [...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*(?:<([^>\n]*)>|(\S+))/gm)].map(m => m[1] ?? m[2]);
  return [...inline, ...definitions];
}

/**
 * The relative links of the packed Markdown files that name no file of the tarball, as `file: link (no path)`. A
 * reader of the docs on npm or in node_modules has the tarball only, so a link to a repository file it leaves out
 * (snapshots/, apps/, test/) is broken there even though it works on GitHub. `files` is npm's list of packed paths.
 */
function linksOutsideTarball(files) {
  const packed = new Set(files);
  return files
    .filter(f => f.endsWith('.md'))
    .flatMap(file =>
      markdownLinks(fs.readFileSync(path.join(ROOT, file), 'utf8'))
        // An absolute URL (https:, mailto:, ...) leaves the tarball on purpose; everything else must stay in it.
        .filter(link => !/^[a-z][a-z0-9+.-]*:/i.test(link))
        .map(link => {
          const raw = link.split('#')[0].split('?')[0];
          let target = raw;
          try {
            target = decodeURI(raw); // `%20` in a link is a space in the file name
          } catch {
            // A malformed escape names no file under its decoded name: look it up as written.
          }
          // npm packs the repository's files as they are, so the packed text is the text read here. A `/...` link
          // is rooted at the site that renders the page, never inside the tarball: it stays absolute and fails.
          const resolved = !target
            ? file
            : target.startsWith('/')
              ? target
              : path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
          return { file, link, resolved };
        })
        .filter(({ resolved }) => !packed.has(resolved))
        .map(({ file, link, resolved }) => `${file}: ${link} (no ${resolved} in the tarball)`),
    );
}

/**
 * A fresh TypeScript cdk8s project, as `cdk8s init typescript-app` lays it out, that depends on the
 * tarball and on the same versions of cdk8s, cdk8s-plus-32 and constructs as this repo; with
 * `devTools`, also on its own TypeScript, ts-node and cdk8s CLI (without, the check runs this repo's
 * copies of the tools, which saves installing a hundred packages). `files` maps file names to
 * contents (main.ts, cdk8s.yaml, ...). Installs with `npm install`, from npm's cache when it can.
 * Returns the project folder and the install run.
 */
function consumerProject(work, tarball, files, devTools = false) {
  const project = path.join(work, 'user-project');
  fs.mkdirSync(project, { recursive: true });
  const write = (f, text) => fs.writeFileSync(path.join(project, f), text);
  write(
    'package.json',
    JSON.stringify(
      {
        name: 'user-project',
        private: true,
        version: '0.0.0',
        dependencies: {
          'cdk8s-gpu': `file:${tarball}`,
          cdk8s: installed('cdk8s'),
          'cdk8s-plus-32': installed('cdk8s-plus-32'),
          constructs: installed('constructs'),
        },
        devDependencies: {
          '@types/node': installed('@types/node'),
          ...(devTools
            ? {
                typescript: installed('typescript'),
                'ts-node': installed('ts-node'),
                'cdk8s-cli': installed('cdk8s-cli'),
              }
            : {}),
        },
      },
      null,
      2,
    ),
  );
  // The compiler options `cdk8s init typescript-app` writes, the strict ones included.
  write(
    'tsconfig.json',
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2020',
          module: 'commonjs',
          lib: ['es2020'],
          strict: true,
          noImplicitAny: true,
          strictNullChecks: true,
          noImplicitThis: true,
          alwaysStrict: true,
          noUnusedLocals: true,
          noUnusedParameters: true,
          noImplicitReturns: true,
          noFallthroughCasesInSwitch: true,
          esModuleInterop: true,
          skipLibCheck: true,
          declaration: false,
          types: ['node'],
        },
        include: ['**/*.ts'],
        exclude: ['node_modules', 'dist'],
      },
      null,
      2,
    ),
  );
  for (const [f, text] of Object.entries(files)) write(f, text);
  const install = run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-update-notifier'],
    project,
  );
  return { project, install };
}

/** A project's binaries, run directly (what `npx` resolves to, without its start-up). */
const bin = (project, name) => path.join(project, 'node_modules', '.bin', name);

/** The user app of the check: all three constructs, a rotating Secret mounted into training, and the guard as a library. */
const MAIN_TS = `
import { App, Chart, Duration, Size } from 'cdk8s';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, TgiInferenceService, guard, parseObjects } from 'cdk8s-gpu';

const app = new App();
const chart = new Chart(app, 'ml');
const trainer = new GpuTrainingStatefulSet(chart, 'trainer', {
  name: 'trainer', image: 'nvcr.io/nvidia/pytorch:24.08-py3', args: ['train.py'], gpusPerPod: 8, replicas: 2,
  storage: { size: Size.gibibytes(500) },
});
new TgiInferenceService(chart, 'tgi', { name: 'tgi', modelId: 'meta-llama/Llama-3.1-8B-Instruct', replicas: 2 });
const creds = new RotatingGpuSecret(chart, 'creds', {
  name: 'gpu-credentials', rotation: { image: 'myorg/rotator:1.0.0', every: Duration.hours(12) },
});
creds.mountInto(trainer, { path: '/etc/gpu', onRotation: Reload.exec(['/usr/local/bin/reload-credentials']) });

// The guard as a library: the app against itself is clean.
const objects = parseObjects(app.synthYaml(), 'app');
const result = guard(objects, objects);
if (result.errors !== 0) throw new Error('guard reported forbidden changes on identical input');
app.synth();
`;

/** cdk8s.yaml of the check: the precompiled app, and the given validation plugins. */
function cdk8sYaml(validations) {
  const lines = ['language: typescript', 'app: node main.js', 'output: dist'];
  if (validations.length > 0) {
    lines.push('validations:');
    for (const v of validations) {
      lines.push(
        `  - package: ${v.package ?? './node_modules/cdk8s-gpu'}`,
        `    version: ${v.version ?? pkg.version}`,
        `    class: ${v.class}`,
      );
      if (v.properties) {
        lines.push('    properties:');
        for (const [k, val] of Object.entries(v.properties)) lines.push(`      ${k}: ${JSON.stringify(val)}`);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

const GUARD = { class: 'GuardValidation', properties: { baseline: 'baseline' } };

/**
 * Extension point: each entry is one more real `cdk8s synth` of the app, after the first synth and
 * with `baseline/` holding its output, with these validation plugins (loaded from the installed
 * tarball unless `package` says otherwise) and a check on the CLI's output. For example:
 *   { name: 'the strict-schema plugin accepts the app', validations: [GUARD, { class: 'StrictSchemaValidation' }],
 *     expect: r => r.status === 0 && r.out.includes('Validations ended succesfully') },
 */
const VALIDATED_SYNTHS = [
  {
    name: 'cdk8s synth with the guard plugin against a baseline',
    validations: [GUARD],
    expect: r => r.status === 0 && r.out.includes('Validations ended succesfully'),
  },
  {
    name: 'cdk8s synth with the strict-schema plugin: the whole app is valid for 1.32 and 1.36',
    validations: [GUARD, { class: 'StrictSchemaValidation' }],
    expect: r =>
      r.status === 0 &&
      r.out.includes('cdk8s-gpu strict schema: 0 error(s)') &&
      r.out.includes('Validations ended succesfully'),
  },
];

async function main() {
  let passed = 0;
  let failed = 0;
  const check = (name, ok, detail = '') => {
    if (ok) passed++;
    else failed++;
    console.log(
      `${ok ? 'ok' : 'not ok'} - ${name}${ok || !detail ? '' : `\n    ${String(detail).trim().split('\n').slice(-15).join('\n    ')}`}`,
    );
    return ok;
  };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-pack-'));
  const finish = () => {
    fs.rmSync(work, { recursive: true, force: true });
    console.log(`pack-check: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  };

  // 1. The tarball: compiled library and declarations, nothing else of the repo.
  const packed = pack(work);
  if (!check('npm pack', packed.status === 0, packed.out)) finish();
  const files = packed.info.files.map(f => f.path);
  const allowed = f =>
    f.startsWith('lib/') ||
    ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(f) ||
    /^docs\/[^/]+\.md$/.test(f);
  check(
    'the tarball holds only lib/, the API reference and package metadata',
    files.every(allowed),
    files.filter(f => !allowed(f)).join('\n'),
  );
  check(
    'the tarball holds the compiled library, declarations and CLI',
    ['lib/index.js', 'lib/index.d.ts', 'lib/guard/cli.js'].every(f => files.includes(f)),
  );
  // Every asset the code reads at run time (container scripts, API definitions): what
  // scripts/copy-assets.js copies from src/ to lib/ must reach the tarball, whatever its extension.
  const assets = [];
  (function walk(dir) {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.name.endsWith('.ts') && !e.name.endsWith('.md'))
        assets.push(path.relative(ROOT, p).replace(/^src\//, 'lib/'));
    }
  })(path.join(ROOT, 'src'));
  const missingAssets = assets.filter(f => !files.includes(f));
  check(
    `the tarball holds every asset of src/ (${assets.length}: container scripts, API definitions)`,
    assets.length > 0 && missingAssets.length === 0,
    `missing: ${missingAssets.join(', ')}`,
  );
  const packedMarkdown = files.filter(f => f.endsWith('.md'));
  const brokenLinks = linksOutsideTarball(files);
  check(
    `every relative link in the packed Markdown (${packedMarkdown.length} files) resolves to a file in the tarball`,
    packedMarkdown.length > 0 && brokenLinks.length === 0,
    brokenLinks.join('\n'),
  );
  check(
    'no tests, apps, snapshots or sources',
    !files.some(f => /^(test|apps|snapshots|src)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts'))),
  );

  // 2. A fresh TypeScript cdk8s project that depends on the tarball.
  // No validation plugin yet: the guard needs a baseline, which the first synth makes.
  const { project, install } = consumerProject(work, packed.tarball, {
    'main.ts': MAIN_TS,
    'cdk8s.yaml': cdk8sYaml([]),
  });
  fs.mkdirSync(path.join(project, 'baseline'));
  if (!check('npm install of the tarball into a fresh project', install.status === 0, install.out)) finish();

  // 3. One tsc run type-checks the app against the shipped declarations under the strict options
  //    of `cdk8s init`, and precompiles it: every synth below runs plain JavaScript, not ts-node.
  const tsc = run(process.execPath, [bin(ROOT, 'tsc'), '-p', '.'], project);
  if (
    !check(
      'the app type-checks against the shipped declarations (strict tsconfig of cdk8s init)',
      tsc.status === 0,
      tsc.out,
    )
  )
    finish();

  // 4. The real cdk8s synth, beside the Helm synth (its own output folder).
  const cdk8s = (...args) => runAsync(bin(ROOT, 'cdk8s'), ['synth', '--no-check-upgrade', ...args], project);
  const [synth, helm] = await Promise.all([
    cdk8s(),
    cdk8s('--format', 'helm', '--chart-version', '1.0.0', '--output', 'helm', '--no-validate'),
  ]);
  check(
    'cdk8s synth --format helm, as documented in the README',
    helm.status === 0 &&
      fs.existsSync(path.join(project, 'helm', 'Chart.yaml')) &&
      fs.readdirSync(path.join(project, 'helm', 'templates')).length > 0,
    helm.out,
  );
  if (!check('cdk8s synth of an app using all three constructs and the guard', synth.status === 0, synth.out)) finish();
  const dist = path.join(project, 'dist');
  const yaml = fs
    .readdirSync(dist)
    .map(f => fs.readFileSync(path.join(dist, f), 'utf8'))
    .join('\n---\n');
  const { parseAllDocuments } = require(path.join(project, 'node_modules', 'yaml'));
  const objs = parseAllDocuments(yaml)
    .map(d => d.toJS())
    .filter(Boolean);
  const kinds = new Set(objs.map(o => o.kind));
  check(
    'the output holds the expected kinds',
    ['StatefulSet', 'Service', 'PodDisruptionBudget', 'Secret', 'CronJob', 'Job', 'Role', 'RoleBinding'].every(k =>
      kinds.has(k),
    ),
    [...kinds].join(', '),
  );
  const trainer = objs.find(o => o.kind === 'StatefulSet' && o.metadata.name === 'trainer');
  check(
    'GPU limits are real numbers',
    trainer?.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu'] === 8,
  );
  // The packed scripts reach the pods: each runtime script's ConfigMap holds it (the reload sidecar's with
  // its '..data' handling), and the native sidecar (an init container that restarts always) mounts it.
  const reload = (trainer?.spec.template.spec.initContainers ?? []).find(
    c => c.restartPolicy === 'Always' && (c.command ?? []).join(' ').includes('/opt/cdk8s-gpu/reload-sidecar/'),
  );
  const scriptMap = name =>
    objs.find(
      o =>
        o.kind === 'ConfigMap' &&
        o.metadata.name === (trainer?.spec.template.spec.volumes ?? []).find(v => v.name === name)?.configMap?.name,
    );
  check(
    'the reload sidecar script shipped: the native sidecar sources it from its ConfigMap',
    reload !== undefined &&
      String(Object.values(scriptMap('cdk8s-gpu-reload-sidecar')?.data ?? {})[0]).includes('..data'),
  );
  check(
    'the launch wrapper shipped: its ConfigMap holds the job model',
    String(Object.values(scriptMap('cdk8s-gpu-launch')?.data ?? {})[0]).includes('# cdk8s-gpu: the job model'),
  );

  // 5. Against that output as the baseline: the validated synths (one after another, they share
  //    dist/ and cdk8s.yaml), beside the guard's bin and the deep-import check.
  const synthesized = path.join(project, 'synthesized');
  fs.mkdirSync(synthesized);
  for (const f of fs.readdirSync(dist)) {
    fs.copyFileSync(path.join(dist, f), path.join(project, 'baseline', f));
    fs.copyFileSync(path.join(dist, f), path.join(synthesized, f));
  }
  const validated = (async () => {
    for (const s of VALIDATED_SYNTHS) {
      fs.writeFileSync(path.join(project, 'cdk8s.yaml'), cdk8sYaml(s.validations));
      const r = await cdk8s();
      check(s.name, s.expect(r), r.out);
    }
  })();
  const [cli, deep] = await Promise.all([
    runAsync(bin(project, 'cdk8s-gpu'), ['guard', '--before', 'baseline', '--after', 'synthesized'], project),
    runAsync(process.execPath, ['-e', "require('cdk8s-gpu/lib/common/names')"], project),
  ]);
  check('the cdk8s-gpu bin runs the guard', cli.status === 0 && cli.out.includes('no forbidden changes'), cli.out);
  check(
    'internal modules are not importable',
    deep.status !== 0 && deep.out.includes('ERR_PACKAGE_PATH_NOT_EXPORTED'),
    deep.out,
  );
  await validated;
  finish();
}

module.exports = { run, pack, consumerProject, bin, installed, main };
if (require.main === module)
  main().catch(e => {
    console.error(e);
    process.exit(1);
  });
