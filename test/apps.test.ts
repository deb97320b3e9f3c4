import * as fs from 'fs';
import * as path from 'path';
import { parseAllDocuments } from 'yaml';
import { buildApps } from '../apps/apps';
import { formatReport, guard } from '../src';
import { podSecurityLevel, podSpecsOf } from './support/pod-security';
import { lineDiff, readDir, synthApps } from './support/snapshots';
import { embeddedJobs, expectValidOutput } from './support/valid-output';

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

  test.each(Object.keys(synthesized.files))('%s is strictly valid for Kubernetes 1.28 and 1.36 and its CRDs', file => {
    const objects = objectsOf(synthesized.files[file]);
    expect(objects.length).toBeGreaterThan(0);
    expectValidOutput(objects);
  });

  test('every pod template outside inference meets the restricted profile', () => {
    for (const [file, yaml] of Object.entries(synthesized.files)) {
      for (const { where, spec } of podSpecsOf([...objectsOf(yaml), ...embeddedJobs(objectsOf(yaml))])) {
        const expected =
          where.startsWith('StatefulSet/') && spec.containers.some((c: any) => c.name === 'tgi' || c.name === 'sglang')
            ? 'baseline'
            : 'restricted';
        expect(`${file} ${where}: ${podSecurityLevel(spec)}`).toBe(`${file} ${where}: ${expected}`);
      }
    }
  });
});
