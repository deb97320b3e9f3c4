import * as fs from 'fs';
import * as path from 'path';

/**
 * versions.json is the one place a control-plane version is pinned; the Go modules that build the
 * binaries must require exactly those versions, or the cache key (and what the docs say was verified)
 * would name a release that was not built.
 */
const VERSIONS = JSON.parse(fs.readFileSync(path.join(__dirname, 'versions.json'), 'utf8'));
const goMod = (module: string) => fs.readFileSync(path.join(__dirname, module, 'go.mod'), 'utf8');
const escape = (s: string) => s.replace(/\./g, '\\.');
const minorOf = (v: string) => v.split('.').slice(0, 2).join('.');

describe.each(VERSIONS.kubernetes as string[])('Kubernetes %s', version => {
  const mod = `kubernetes-${minorOf(version)}`;

  test(`${mod}/go.mod requires k8s.io/kubernetes at the pinned release`, () => {
    expect(goMod(mod)).toMatch(new RegExp(`^require k8s\\.io/kubernetes ${escape(version)}$`, 'm'));
  });

  test('every staging module is replaced by its release of the same minor and patch (v1.X.Y -> v0.X.Y), or by the substitute versions.json names', () => {
    const staging = version.replace(/^v1\./, 'v0.');
    const substitutes: Record<string, string> = VERSIONS.stagingSubstitutes?.[version] ?? {};
    const replaces = [...goMod(mod).matchAll(/^(?:replace\s+|\s+)(k8s\.io\/[\w-]+) => (k8s\.io\/[\w-]+) (v\S+)$/gm)];
    // 28 staging modules are built from for 1.32-1.35 (31 with the three samples); 1.36 adds two streaming ones.
    expect(replaces.length).toBeGreaterThanOrEqual(28);
    for (const [, from, to, v] of replaces)
      expect(`${from} => ${to} ${v}`).toBe(`${from} => ${from} ${substitutes[from] ?? staging}`);
    // A substitute is of the same minor, and only for a module the release really replaces.
    for (const [from, v] of Object.entries(substitutes)) {
      expect(v.split('.').slice(0, 2).join('.')).toBe(staging.split('.').slice(0, 2).join('.'));
      expect(replaces.map(r => r[1])).toContain(from);
    }
  });
});

test('no module is left for a Kubernetes minor that is no longer pinned', () => {
  const modules = fs.readdirSync(__dirname).filter(d => d.startsWith('kubernetes-'));
  expect(modules.sort()).toEqual((VERSIONS.kubernetes as string[]).map(v => `kubernetes-${minorOf(v)}`).sort());
});

test('the etcd module requires the pinned etcd server', () => {
  expect(goMod('etcd')).toMatch(new RegExp(`^require go\\.etcd\\.io/etcd/server/v3 ${escape(VERSIONS.etcd)}$`, 'm'));
});

test('the jobset module requires the pinned JobSet controller', () => {
  expect(goMod('jobset')).toMatch(new RegExp(`^require sigs\\.k8s\\.io/jobset ${escape(VERSIONS.jobset)}$`, 'm'));
});

test('the kueue module requires the pinned Kueue controller', () => {
  expect(goMod('kueue')).toMatch(new RegExp(`^require sigs\\.k8s\\.io/kueue ${escape(VERSIONS.kueue)}$`, 'm'));
});

test('the kwok module requires the pinned KWOK', () => {
  expect(goMod('kwok')).toMatch(new RegExp(`^require sigs\\.k8s\\.io/kwok ${escape(VERSIONS.kwok)}$`, 'm'));
});

test('the lws module requires the pinned LeaderWorkerSet controller', () => {
  expect(goMod('lws')).toMatch(new RegExp(`^require sigs\\.k8s\\.io/lws ${escape(VERSIONS.lws)}$`, 'm'));
});
