import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { guard } from '../../src';
import { isObject } from '../../src/guard/object';
import { Cluster, describeCluster, minorOf, pool } from './kube';

/**
 * The guard's own test cases replayed on the real API server (issue #33). The guard's unit tests
 * (test/guard) run once in a child jest with a setup file (test/guard/support/record-cases.ts) that
 * records every guard() call: both sides, the options and the guard's verdict. Each recorded case whose
 * `before` is a manifest is then created on the server the way its options say (client-side
 * `kubectl apply`, or server-side apply), its `after` applied over it as a server-side dry run, and the
 * server's answer compared with the guard's: an error exactly where the server refuses.
 *
 * Where the guard answers from its documented reading of a manifest baseline and this server's state
 * differs, the verdict is counted apart (`assumedState`): a PersistentVolumeClaim with no class, which the
 * DefaultStorageClass admission plugin may have given the cluster's default (this server has none), a
 * queued Job or JobSet, taken to be admitted, and a queued StatefulSet or LeaderWorkerSet, taken to have
 * Ready pods (this server's Kueue admits nothing here; docs/guard.md), and a Pod's GPU toleration, which
 * the ExtendedResourceToleration plugin (not run here) would add again.
 *
 * A `before` that is a live export is created from its spec and metadata (its last-applied annotation
 * included, which `kubectl apply` then merges against); its status, uid and managed fields a create cannot
 * make. Where the guard's verdict on the recorded export differs from the server's, the guard is asked
 * again with the server's own object as `before`: agreeing then, the difference is the recorded status
 * (a Ready pod, a bound claim's capacity), counted apart.
 *
 * Not replayed, and counted: the robustness tests' inputs (subtrees replaced by wrong types, made to
 * break a parser: the guard promises not to crash, and kubectl itself panics on some), a live export
 * under server-side apply (its managed fields cannot be made),
 * CustomResourceDefinitions, Namespaces, Nodes and PersistentVolumes (cluster-wide, or bound by the real
 * binder to another case's claim; other cluster-scoped objects are renamed per case, and every string equal
 * to an old name, their references, follows), server versions with no control plane here
 * (1.33, 1.34), objects with Kueue labels judged on another Kueue than the one running (v0.17.0), kinds
 * the server does not serve, and cases whose `before` the server refuses or whose `after` it refuses even
 * as a new object (the guard answers for updates).
 */
const RUN = Date.now().toString(36);
const VERSIONS: { kueue: string } = require('./versions.json');
const KUEUE_VERSION = VERSIONS.kueue.replace(/^v/, '');
const SERVER_FIELDS = ['uid', 'resourceVersion', 'managedFields', 'creationTimestamp', 'generation'];
const CLUSTER_SCOPED = new Set([
  'PersistentVolume',
  'StorageClass',
  'CSIDriver',
  'PriorityClass',
  'CustomResourceDefinition',
  'IngressClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'Namespace',
  'Node',
  'DeviceClass',
]);
/**
 * Not replayed: a CRD's name is its group and plural, Namespaces and Nodes are the cluster's own, and the
 * real PersistentVolume binder would bind one case's volume to another case's claim.
 */
const CLUSTER_WIDE = new Set(['CustomResourceDefinition', 'Namespace', 'Node', 'PersistentVolume']);
const GUARD_DEFAULT_VERSION = '1.32';

/**
 * The case's objects with its cluster-scoped ones renamed `o<run>-<i>-<name>`, so cases do not collide;
 * every string equal to an old name (a claim's volumeName or storageClassName, a pod's priorityClassName)
 * follows.
 */
function withClusterNames(c: Recorded, i: number): { before: any[]; after: any[] } {
  const names = new Map<string, string>();
  for (const o of [...c.before, ...c.after])
    if (CLUSTER_SCOPED.has(o.kind)) names.set(o.metadata.name, `o${RUN}-${i}-${o.metadata.name}`);
  if (names.size === 0) return { before: c.before, after: c.after };
  const rename = (v: any): any =>
    typeof v === 'string'
      ? (names.get(v) ?? v)
      : Array.isArray(v)
        ? v.map(rename)
        : isObject(v)
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rename(x)]))
          : v;
  return { before: c.before.map(rename), after: c.after.map(rename) };
}

interface Recorded {
  readonly test: string;
  readonly before: any[];
  readonly after: any[];
  readonly options?: { serverVersion?: string; kueueVersion?: string; serverSideApply?: boolean; [k: string]: unknown };
  readonly errors: string[];
}

let recorded: Recorded[] | undefined;
/** The guard's tests, run once with the recorder; each distinct case once. */
function recordedCases(): Recorded[] {
  if (recorded) return recorded;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'guard-cases-')), 'cases.jsonl');
  const root = path.join(__dirname, '..', '..');
  const r = spawnSync(
    process.execPath,
    [
      path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
      'test/guard',
      '--setupFilesAfterEnv',
      './test/guard/support/record-cases.ts',
      '--silent',
    ],
    { cwd: root, env: { ...process.env, CDK8S_GPU_CLUSTER: 'off', CDK8S_GPU_GUARD_RECORD: file }, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`the guard's tests failed while recording:\n${r.stderr.slice(-3000)}`);
  const seen = new Set<string>();
  recorded = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const c: Recorded = JSON.parse(line);
    const key = JSON.stringify([c.before, c.after, c.options ?? {}]);
    if (seen.has(key)) continue;
    seen.add(key);
    recorded.push(c);
  }
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  return recorded;
}

const liveExport = (o: any) => 'status' in o || SERVER_FIELDS.some(f => o.metadata?.[f] !== undefined);
const hasKueueLabel = (o: any) => Object.keys(o.metadata?.labels ?? {}).some(k => k.startsWith('kueue.x-k8s.io/'));

/** Why a case is not replayed on the server of `minor`, or undefined when it is. */
function skipReason(c: Recorded, minor: string): string | undefined {
  if (/robustness\.test\.ts/.test(c.test)) return 'robustness inputs';
  const objects = [...(c.before ?? []), ...(c.after ?? [])];
  if (!c.before?.length || !c.after?.length) return 'a side is empty';
  if (!objects.every(o => isObject(o) && typeof o.kind === 'string' && isObject(o.metadata))) return 'not objects';
  if (c.before.some(liveExport) && c.options?.serverSideApply)
    return 'a live export under server-side apply (its managed fields cannot be made by a create)';
  if (objects.some(o => CLUSTER_WIDE.has(o.kind)))
    return 'a CustomResourceDefinition, Namespace, Node or PersistentVolume';
  if (Object.keys(c.options ?? {}).some(k => !['serverVersion', 'kueueVersion', 'serverSideApply'].includes(k)))
    return 'options beyond the server version, Kueue version and apply method';
  const version = minorOf(c.options?.serverVersion ?? GUARD_DEFAULT_VERSION);
  if (version !== minor) return `server version ${version}`;
  // Kueue's rules are those of the release given (its newest patch for 0.NN): only the running one is here.
  const kueue = c.options?.kueueVersion?.replace(/^v/, '');
  if ((kueue !== undefined || objects.some(hasKueueLabel)) && kueue !== KUEUE_VERSION)
    return 'judged on another Kueue release';
  return undefined;
}

interface Answer {
  readonly ok: boolean;
  readonly message: string;
}

/**
 * The documented manifest-baseline reading behind a disagreement, when the server's own object shows the
 * state the guard could not see; undefined otherwise.
 */
function assumedState(c: Recorded, server: Answer, live: any[]): string | undefined {
  // The ExtendedResourceToleration admission plugin (not among the defaults, not run here) adds a
  // `<resource> Exists NoSchedule` toleration for each extended resource a pod requests, on update too.
  const pluginToleration = (pod: any) =>
    (pod.spec?.tolerations ?? []).some(
      (t: any) =>
        t.operator === 'Exists' &&
        t.effect === 'NoSchedule' &&
        pod.spec.containers.some((k: any) => k.resources?.limits?.[t.key] !== undefined),
    );
  if (
    !server.ok &&
    c.errors.length === 0 &&
    /toleration/.test(server.message) &&
    live.every(o => o.kind === 'Pod' && pluginToleration(o))
  )
    return 'the ExtendedResourceToleration admission plugin adds the GPU toleration again on update (this server does not run it)';
  if (!server.ok || c.errors.length === 0) return undefined;
  const queued = (o: any) => !!o.metadata?.labels?.['kueue.x-k8s.io/queue-name'];
  if (
    c.errors.every(e => e === 'spec.storageClassName') &&
    live.every(o => o.kind === 'PersistentVolumeClaim' && o.spec?.storageClassName === undefined)
  )
    return 'a claim with no class may have the default one (this server has no default StorageClass)';
  if (live.every(o => ['Job', 'JobSet'].includes(o.kind) && queued(o) && o.spec?.suspend === true))
    return 'a queued job is taken to be admitted (this Kueue admits nothing here)';
  if (
    !c.before.some(liveExport) &&
    live.every(
      o => ['StatefulSet', 'LeaderWorkerSet'].includes(o.kind) && queued(o) && !(Number(o.status?.readyReplicas) > 0),
    )
  )
    return 'a queued StatefulSet or LeaderWorkerSet is taken to have Ready pods (none here)';
  return undefined;
}

describeCluster(
  "the guard's own cases on the API server",
  (cluster: Cluster) => {
    jest.setTimeout(900_000);
    const namespaces: string[] = [];
    const clusterObjects: any[] = [];
    /** Each replayed case: the server's answer, its objects before the update, and the objects applied. */
    const verdicts: Array<{ c: Recorded; server: Answer; live: any[]; after: any[] }> = [];
    const skipped = new Map<string, number>();
    const skip = (why: string) => skipped.set(why, (skipped.get(why) ?? 0) + 1);

    /** One case's objects applied together (kubectl apply, or one server-side apply each): refused if any is. */
    const applyCase = async (c: Recorded, objects: any[], dryRun: boolean, create = false): Promise<Answer> => {
      if (c.options?.serverSideApply) {
        const rs = await Promise.all(objects.map(o => cluster.apply(o, { dryRun })));
        const bad = rs.find(r => r.status >= 300);
        return { ok: !bad, message: bad ? String(bad.body?.message ?? JSON.stringify(bad.body)) : '' };
      }
      const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
      const r = cluster.kubectl(
        create
          ? ['create', '-f', '-', '-o', 'name', '--validate=false']
          : ['apply', '-f', '-', '-o', 'name', '--validate=false', ...(dryRun ? ['--dry-run=server'] : [])],
        list,
      );
      return { ok: r.status === 0, message: r.stderr.trim() };
    };

    beforeAll(async () => {
      const cases = recordedCases();
      // The kinds this server serves.
      const served = async (o: any) =>
        cluster.resourceOf(o.apiVersion, o.kind).then(
          () => true,
          () => false,
        );
      const replayed: Recorded[] = [];
      for (const c of cases) {
        const why = skipReason(c, cluster.minor);
        if (why) skip(why);
        else if (!(await Promise.all([...c.before, ...c.after].map(served))).every(Boolean)) skip('a kind not served');
        else replayed.push(c);
      }
      // Cases share a namespace unless an object of one has the kind and name of an object of another.
      const buckets: Array<{ keys: Set<string>; cases: Recorded[] }> = [];
      for (const c of replayed) {
        const keys = new Set([...c.before, ...c.after].map(o => `${o.apiVersion}/${o.kind}/${o.metadata.name}`));
        let b = buckets.find(x => [...keys].every(k => !x.keys.has(k)));
        if (!b) buckets.push((b = { keys: new Set(), cases: [] }));
        for (const k of keys) b.keys.add(k);
        b.cases.push(c);
      }
      const placed = new Map<Recorded, string>();
      for (const [i, b] of buckets.entries()) {
        const ns = `guard-own-${RUN}-${i}`;
        namespaces.push(ns);
        await cluster.namespace(ns, 'privileged');
        for (const c of b.cases) placed.set(c, ns);
      }
      /** The object in its namespace; a live export as a create can make it (no status or server fields). */
      const inNamespace = (o: any, ns: string) => {
        const { status: _status, ...rest } = o;
        const metadata = { ...o.metadata, namespace: ns };
        if (CLUSTER_SCOPED.has(o.kind)) delete metadata.namespace;
        for (const f of [...SERVER_FIELDS, 'selfLink', 'deletionTimestamp']) delete metadata[f];
        return { ...rest, metadata };
      };
      const sides = new Map(replayed.map((c, i) => [c, withClusterNames(c, i)]));
      const objectsOf = (c: Recorded, side: 'before' | 'after') =>
        sides.get(c)![side].map(o => inNamespace(o, placed.get(c)!));

      // The new objects alone, before anything exists: a value the server refuses on create is not an update.
      const alone = await pool(replayed, 8, async c => {
        const rs = await Promise.all(objectsOf(c, 'after').map(o => cluster.create(o, true)));
        return rs.every(r => r.status < 300);
      });
      for (const [i, c] of replayed.entries()) {
        if (!alone[i]) {
          skip('after refused as a new object');
          continue;
        }
        // A live export is created as it stands (with its last-applied annotation); a manifest is applied.
        const created = await applyCase(c, objectsOf(c, 'before'), false, c.before.some(liveExport));
        if (!created.ok) {
          skip('before refused on create');
          continue;
        }
        clusterObjects.push(...objectsOf(c, 'before').filter(o => CLUSTER_SCOPED.has(o.kind)));
        const live = await Promise.all(objectsOf(c, 'before').map(async o => (await cluster.get(o)).body));
        verdicts.push({
          c,
          server: await applyCase(c, objectsOf(c, 'after'), true),
          live,
          after: objectsOf(c, 'after'),
        });
      }
    });

    afterAll(async () => {
      for (const ns of namespaces) await cluster.request('DELETE', `/api/v1/namespaces/${ns}`);
      for (const o of clusterObjects) await cluster.request('DELETE', await cluster.urlOf(o));
      cluster.close();
    });

    test('every replayed case: the guard gives an error exactly where the server refuses', () => {
      const disagreeing = verdicts.filter(v => v.server.ok === v.c.errors.length > 0);
      const assumed = disagreeing.map(v => assumedState(v.c, v.server, v.live)).filter(Boolean);
      // A live export's recorded status the server could not be given: the guard asked again with the server's object.
      const statusOnly = disagreeing.filter(
        v =>
          !assumedState(v.c, v.server, v.live) &&
          v.c.before.some(liveExport) &&
          v.server.ok ===
            (guard(v.live, v.after, v.c.options as any).findings.filter(f => f.severity === 'error').length === 0),
      );
      const disagreements = disagreeing.filter(v => !assumedState(v.c, v.server, v.live) && !statusOnly.includes(v));
      console.log(
        `the guard's own cases on ${cluster.version}: ${verdicts.length - disagreeing.length}/${verdicts.length} agree ` +
          `(${verdicts.filter(v => !v.server.ok).length} refused); counted apart, the guard's documented reading ` +
          `of a manifest where this server's state differs: ${assumed.length} (${[...new Set(assumed)].join('; ')}); ` +
          `a live export's recorded status the server could not be given, the guard agreeing with the server's own object: ${statusOnly.length}` +
          `${
            statusOnly.length
              ? ` (${statusOnly
                  .slice(0, 6)
                  .map(v => v.c.test.replace(/^.*\/test\/guard\//, ''))
                  .join(' | ')})`
              : ''
          }; not replayed: ` +
          [...skipped]
            .sort((a, b) => b[1] - a[1])
            .map(([why, n]) => `${why} ${n}`)
            .join(', '),
      );
      expect(
        disagreements.map(
          v =>
            `${v.c.test} [${v.c.after.map(o => `${o.kind}/${o.metadata.name}`).join(' ')}]: server ` +
            `${v.server.ok ? 'accepts' : `refuses: ${v.server.message.slice(0, 300)}`}; guard ${v.c.errors.length ? `refuses: ${v.c.errors.join(', ')}` : 'accepts'}`,
        ),
      ).toEqual([]);
      // Most cases are judged at the guard's default version (the floor); a few name 1.35.
      expect(verdicts.length).toBeGreaterThan(cluster.minor === GUARD_DEFAULT_VERSION ? 150 : 20);
    });
  },
  v => ['1.32', '1.35'].includes(minorOf(v)),
);
