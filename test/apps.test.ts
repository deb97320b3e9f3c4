import * as fs from 'fs';
import * as path from 'path';
import { parseAllDocuments } from 'yaml';
import { buildApps } from '../apps/apps';
import { stringify } from 'yaml';
import { formatReport, guard, plan } from '../src';
import { hubDownloadScript } from '../src/inference/engine';
import { reloadScript } from '../src/secrets/sidecar';
import { launchScript } from '../src/training/launch';
import { podSecurityLevel, podSpecsOf } from './support/pod-security';
import { lineDiff, readDir, synthApps } from './support/snapshots';
import { embeddedGroupPods, embeddedJobs, expectValidOutput } from './support/valid-output';

const SNAPSHOTS = path.join(__dirname, '..', 'snapshots');
const synthesized = synthApps(buildApps);
const objectsOf = (yaml: string) =>
  parseAllDocuments(yaml)
    .map(d => d.toJS())
    .filter(Boolean);

describe('example apps', () => {
  test('match the committed snapshots (regenerate with `npm run snapshots`)', () => {
    if (process.env.UPDATE_SNAPSHOTS) {
      fs.rmSync(SNAPSHOTS, { recursive: true, force: true });
      fs.mkdirSync(SNAPSHOTS, { recursive: true });
      for (const [f, content] of Object.entries(synthesized.files)) fs.writeFileSync(path.join(SNAPSHOTS, f), content);
    }
    const committed = readDir(SNAPSHOTS);
    expect(Object.keys(synthesized.files)).toEqual(Object.keys(committed));
    const diffs = Object.keys(committed)
      .filter(f => committed[f] !== synthesized.files[f])
      .map(f => `--- snapshots/${f}\n+++ synthesized\n${lineDiff(committed[f], synthesized.files[f])}`);
    if (diffs.length > 0) {
      throw new Error(
        `the example apps no longer match snapshots/. If the change is intended, run \`npm run snapshots\` and commit the YAML.\n\n${diffs.join('\n\n')}`,
      );
    }
  });

  test('the upgrade guard finds no immutable-field change against the committed snapshots', () => {
    const committed = Object.values(readDir(SNAPSHOTS)).flatMap(objectsOf);
    const fresh = Object.values(synthesized.files).flatMap(objectsOf);
    const result = guard(committed, fresh);
    if (result.errors > 0)
      throw new Error(`a change to an immutable field would be rejected by the API server:\n\n${formatReport(result)}`);
  });

  test.each(Object.keys(synthesized.files))('%s is strictly valid for Kubernetes 1.32 and 1.36 and its CRDs', file => {
    const objects = objectsOf(synthesized.files[file]);
    expect(objects.length).toBeGreaterThan(0);
    expectValidOutput(objects);
  });

  test('step two of the documented bump (bump-step-1 to bump-step-2) restarts nothing and prunes only v1', () => {
    // The two steps are synthesized into two namespaces; the plan compares them as one namespace.
    const step1 = JSON.parse(
      JSON.stringify(objectsOf(synthesized.files['bump-step-1.k8s.yaml'])).split('bump-step-1').join('bump-step-2'),
    );
    const result = plan(step1, objectsOf(synthesized.files['bump-step-2.k8s.yaml']));
    expect(result.workloads.filter(w => w.restarts).map(w => `${w.object}: ${w.changes.join(', ')}`)).toEqual([]);
    expect(result.pruned.map(p => p.name).filter(n => !/^llama-v1(-|$)/.test(n))).toEqual([]);
    expect(result.pruned.length).toBeGreaterThan(0);
  });

  // docs/design.md "Runtime scripts": large scripts ship once per namespace in a ConfigMap; a pod template holds
  // only what its pod runs, and stays readable.
  const POD_SPEC_MAX_BYTES = 16 * 1024;
  test(`no pod template is over ${POD_SPEC_MAX_BYTES / 1024} KiB of YAML, and none embeds a shipped script`, () => {
    const shipped = [hubDownloadScript(), launchScript(), reloadScript()];
    for (const [file, yaml] of Object.entries(synthesized.files)) {
      const objects = objectsOf(yaml);
      for (const { where, spec } of podSpecsOf([...objects, ...embeddedJobs(objects), ...embeddedGroupPods(objects)])) {
        const size = stringify(spec).length;
        expect(`${file} ${where}: ${size <= POD_SPEC_MAX_BYTES ? 'within' : `${size} bytes`}`).toBe(
          `${file} ${where}: within`,
        );
        const text = JSON.stringify(spec);
        for (const s of shipped) {
          const firstLines = s.content.split('\n').slice(0, 3).join('\n');
          expect(`${file} ${where} embeds ${s.file}: ${text.includes(JSON.stringify(firstLines).slice(1, -1))}`).toBe(
            `${file} ${where} embeds ${s.file}: false`,
          );
        }
      }
    }
  });

  test('every pod meets the restricted profile, but those of the images that run as root (SGLang, TGI): baseline, and those that pin RDMA memory (IPC_LOCK): privileged', () => {
    const rootImage = /\/(sglang|text-generation-inference)[:@]/;
    for (const [file, yaml] of Object.entries(synthesized.files)) {
      const objects = objectsOf(yaml);
      for (const { where, spec } of podSpecsOf([...objects, ...embeddedJobs(objects), ...embeddedGroupPods(objects)])) {
        const expected = spec.containers.some((c: any) => c.securityContext?.capabilities?.add?.includes('IPC_LOCK'))
          ? 'privileged'
          : spec.containers.some((c: any) => rootImage.test(c.image))
            ? 'baseline'
            : 'restricted';
        expect(`${file} ${where}: ${podSecurityLevel(spec)}`).toBe(`${file} ${where}: ${expected}`);
      }
    }
  });
});

describe('pinned-images app', () => {
  const objects = objectsOf(synthesized.files['pinned-images.k8s.yaml'] ?? '');
  /** Every pod template of the app: where it is, its labels and its spec. */
  const templates = objects.flatMap((o: any): Array<{ where: string; labels: any; spec: any }> => {
    const where = `${o.kind}/${o.metadata.name}`;
    const t =
      o.kind === 'JobSet'
        ? o.spec.replicatedJobs[0].template.spec.template
        : o.kind === 'CronJob'
          ? o.spec.jobTemplate.spec.template
          : ['StatefulSet', 'Deployment', 'Job'].includes(o.kind)
            ? o.spec.template
            : undefined;
    return t ? [{ where, labels: t.metadata.labels, spec: t.spec }] : [];
  });
  const selecting = (labels: any) =>
    objects.filter(
      (p: any) =>
        p.kind === 'NetworkPolicy' &&
        Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => labels?.[k] === v),
    );

  test('runs every image by digest from the mirror: engines, downloads, picker, sidecars, rotators, trainers', () => {
    const images = templates.flatMap(t =>
      [...(t.spec.initContainers ?? []), ...t.spec.containers].map((c: any) => `${t.where} ${c.name} ${c.image}`),
    );
    for (const name of ['vllm', 'sglang', 'tgi', 'model-download', 'epp', 'rotator', 'trainer'])
      expect(images.some(i => i.split(' ')[1] === name)).toBe(true);
    expect(images.filter(i => i.includes('busybox')).length).toBeGreaterThanOrEqual(4);
    for (const image of images) expect(image).toMatch(/ registry\.example\.internal\/[^ ]+@sha256:[0-9a-f]{64}$/);
  });

  test('every serving, training and rotator pod is selected by its own NetworkPolicy', () => {
    for (const t of templates.filter(x => !x.where.startsWith('Deployment/'))) {
      const policies = selecting(t.labels);
      expect(`${t.where}: ${policies.length}`).toBe(`${t.where}: 1`);
      const [policy] = policies;
      const engine = t.spec.containers.find((c: any) => ['vllm', 'sglang', 'tgi'].includes(c.name))?.name;
      if (engine) {
        expect(policy.spec.ingress[1].from).toEqual([
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
        ]);
      }
      if (engine === 'tgi') {
        expect(policy.spec.ingress[0].from).toEqual([{ podSelector: {} }]);
      } else if (engine) {
        const from = policy.spec.ingress[0].from;
        expect(from[0]).toEqual({
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'gateway-system' } },
        });
        // The picker, added by the InferenceGateway.
        const epp = templates.find(x => x.where.startsWith('Deployment/'))!.labels;
        expect(
          from.some(
            (p: any) => p.podSelector && Object.entries(p.podSelector.matchLabels).every(([k, v]) => epp[k] === v),
          ),
        ).toBe(true);
      } else if (t.where.startsWith('CronJob/') || t.where.startsWith('Job/')) {
        expect(policy.spec.policyTypes).toEqual(['Egress']);
      } else {
        expect(policy.spec.ingress).toEqual([{ from: [{ podSelector: policy.spec.podSelector }] }]);
      }
    }
  });
});
