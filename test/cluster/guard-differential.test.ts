import { ApiObject, App } from 'cdk8s';
import { buildApps } from '../../apps/apps';
import { guard } from '../../src';
import { KUEUE_QUEUE_LABEL } from '../../src/common/kueue';
import { MAX_SERVER_VERSION } from '../../src/guard/rules';
import { vendoredCrds } from './crds';
import { updateCases, UpdateCase } from './guard-corpus';
import { Cluster, describeCluster, minorOf, pool, Response } from './kube';

/**
 * The upgrade guard held against a real API server. Each case is an object of the example apps and the
 * same object with one field changed, removed or added (guard-corpus.ts). `before` is created on the
 * server; `after` is applied over it the two ways users apply, client-side `kubectl apply` (its
 * last-applied annotation and three-way merge) and server-side apply, both as a server-side dry run;
 * and the guard is asked about the same pair, with the manifest as `before` and with the server's live
 * object as `before`. A case whose `after` the server refuses even as a new object is about the value,
 * not the update, and is counted apart: the guard answers for updates.
 *
 * The namespace is inside Kueue's webhooks (v0.17.0 runs in every control plane), and the guard is told
 * that release, so Kueue's rules for the apps' queued JobSet and LeaderWorkerSet are judged too. No
 * ClusterQueue admits anything here, so a queued JobSet stays suspended by Kueue, while the guard, given
 * only a manifest, takes a queued JobSet to be admitted and running (docs/guard.md "Kueue"): where that
 * assumption alone makes the guard refuse what the server accepts, the verdict is counted apart, and
 * only if the guard agrees with the server once it is given the live object.
 *
 * The server and the guard must agree on every case. CDK8S_GPU_GUARD_CASES sets how many (default 2400).
 */
const VERSIONS: { kueue: string } = require('./versions.json');
const KUEUE_VERSION = VERSIONS.kueue.replace(/^v/, '');
const COUNT = Number(process.env.CDK8S_GPU_GUARD_CASES ?? 2400);
// A namespace of its own per run: the last run's may still be terminating on a long-lived cluster.
const NAMESPACE = `guard-differential-${Date.now().toString(36)}`;

/** The example apps' objects, without namespaces (each case is placed in the test's namespace). */
function appObjects(): any[] {
  const app = new App();
  buildApps(app);
  return app.node
    .findAll()
    .filter(ApiObject.isApiObject)
    .map(o => o.toJson());
}

/** The case's object under the name `<prefix><id>` in the test namespace. */
function named(o: any, prefix: string, id: number): any {
  const copy = JSON.parse(JSON.stringify(o));
  copy.metadata.name = `${prefix}${id}`;
  copy.metadata.namespace = NAMESPACE;
  return copy;
}

interface Answer {
  readonly ok: boolean;
  readonly message: string;
}
const answerOf = (r: Response): Answer => ({
  ok: r.status < 300,
  message: r.status < 300 ? '' : String(r.body?.message ?? JSON.stringify(r.body)),
});

/**
 * `kubectl apply` of many objects in one call; each object's answer by name. kubectl reports every
 * object (`-o name` on stdout for those applied, one error block on stderr for each refused).
 */
function kubectlApply(cluster: Cluster, objects: any[], extra: string[]): Map<string, Answer> {
  // JSON, not YAML: kubectl reads YAML 1.1, where a plain `on` or `yes` is a boolean. No client-side
  // schema check: kubectl would refuse the whole list for one item, and each new object was already
  // created alone (strictly) by the server; the server's own validation of each update still runs.
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
  const r = cluster.kubectl(['apply', '-f', '-', '-o', 'name', '--validate=false', ...extra], list);
  const applied = new Set(r.stdout.split('\n').map(l => l.slice(l.indexOf('/') + 1)));
  const errors = new Map<string, string>();
  for (const block of r.stderr.split(/\n(?=Error from server|error:)/)) {
    const name = /Name: "([a-z]+\d+)"|"([a-z]+\d+)" is (?:invalid|forbidden)/.exec(block);
    if (name) errors.set(name[1] ?? name[2], block.trim());
  }
  const out = new Map<string, Answer>();
  for (const o of objects) {
    const n = o.metadata.name;
    if (applied.has(n)) out.set(n, { ok: true, message: '' });
    else out.set(n, { ok: false, message: errors.get(n) ?? `not applied; kubectl said: ${r.stderr.slice(0, 400)}` });
  }
  return out;
}

interface Verdict {
  readonly c: UpdateCase;
  readonly mode: string;
  readonly server: Answer;
  readonly guardErrors: string[];
  /** The server's object of the case, as it stood before the update. */
  readonly live: any;
}

const LIVE_MODE = 'kubectl apply, live before';
/**
 * A verdict the guard gives on its documented assumption alone: from a manifest, a Job or JobSet in a
 * Kueue queue is taken to be admitted and running, and this server's Kueue admits nothing (the live
 * object is still suspended). Counted apart only when the guard, given the live object, agrees.
 */
const assumedAdmitted = (v: Verdict, all: Verdict[]) =>
  !v.mode.endsWith('manifest before') ||
  !['Job', 'JobSet'].includes(v.c.kind) ||
  !v.c.before.metadata?.labels?.[KUEUE_QUEUE_LABEL] ||
  v.live?.spec?.suspend !== true ||
  !v.server.ok
    ? false
    : all.some(l => l.c === v.c && l.mode === LIVE_MODE && l.server.ok === (l.guardErrors.length === 0));

const guardKnows = (version: string) =>
  Number(minorOf(version).split('.')[1]) <= Number(MAX_SERVER_VERSION.split('.')[1]);

describeCluster(
  'the upgrade guard against the API server',
  (cluster: Cluster) => {
    // A release's setup sends thousands of requests; beside the suite on two cores it once took over 15 min.
    jest.setTimeout(1_800_000);
    const crds = vendoredCrds();
    const cases = updateCases(appObjects(), COUNT);
    const verdicts: Verdict[] = [];
    let invalidOnTheirOwn = 0;

    beforeAll(async () => {
      await cluster.installCrds(crds);
      await cluster.namespace(NAMESPACE, 'privileged');
      // No pods: the cases are about updates to the objects, and thousands of pending pods would only
      // load the machine. The quota admission refuses every pod the controllers try to make.
      const quota = {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'no-pods', namespace: NAMESPACE },
        spec: { hard: { pods: '0' } },
      };
      const q = await cluster.apply(quota);
      if (q.status >= 300) throw new Error(`quota: ${JSON.stringify(q.body)}`);

      // Is `after` valid as a new object? (dry-run create under a third name)
      const alone = await pool(cases, 16, c => cluster.create(named(c.after, 'v', c.id), true));
      // `before`, created both ways.
      const created = kubectlApply(
        cluster,
        cases.map(c => named(c.before, 'c', c.id)),
        [],
      );
      const ssaCreated = await pool(cases, 16, c => cluster.apply(named(c.before, 's', c.id)));
      const createFailures = cases.flatMap(c => {
        const csa = created.get(`c${c.id}`)!;
        const ssa = answerOf(ssaCreated[c.id]);
        return [
          ...(csa.ok ? [] : [`case ${c.id} (${c.kind} ${c.path}) before, kubectl apply: ${csa.message}`]),
          ...(ssa.ok ? [] : [`case ${c.id} (${c.kind} ${c.path}) before, server-side apply: ${ssa.message}`]),
        ];
      });
      if (createFailures.length > 0)
        throw new Error(`objects of the apps were refused on create:\n${createFailures.slice(0, 20).join('\n')}`);

      // Only afters the server takes as new objects: kubectl validates a whole list before it sends any.
      const valid = cases.filter(c => alone[c.id].status < 300);
      const csa = kubectlApply(
        cluster,
        valid.map(c => named(c.after, 'c', c.id)),
        ['--dry-run=server'],
      );
      const ssa = await pool(cases, 16, c => cluster.apply(named(c.after, 's', c.id), { dryRun: true }));
      const live = await pool(cases, 16, c => cluster.get(named(c.before, 'c', c.id)));

      const options = { serverVersion: cluster.minor, kueueVersion: KUEUE_VERSION, customResourceDefinitions: crds };
      const errorsOf = (before: any, after: any, serverSideApply = false) =>
        guard([before], [after], { ...options, serverSideApply })
          .findings.filter(f => f.severity === 'error')
          .map(f => `${f.path}: ${f.message}`);
      for (const c of cases) {
        if (alone[c.id].status >= 300) {
          if (process.env.DEBUG_GD)
            console.log(`alone ${c.id} ${c.kind} ${c.edit} ${c.path}: ${alone[c.id].body?.message}`);
          invalidOnTheirOwn++;
          continue;
        }
        const after = named(c.after, 'c', c.id);
        verdicts.push(
          {
            c,
            mode: 'kubectl apply, manifest before',
            server: csa.get(`c${c.id}`)!,
            guardErrors: errorsOf(named(c.before, 'c', c.id), after),
            live: live[c.id].body,
          },
          {
            c,
            mode: LIVE_MODE,
            server: csa.get(`c${c.id}`)!,
            guardErrors: errorsOf(live[c.id].body, after),
            live: live[c.id].body,
          },
          {
            c,
            mode: 'server-side apply, manifest before',
            server: answerOf(ssa[c.id]),
            guardErrors: errorsOf(named(c.before, 's', c.id), named(c.after, 's', c.id), true),
            live: live[c.id].body,
          },
        );
      }
    });
    afterAll(async () => {
      await cluster.request('DELETE', `/api/v1/namespaces/${NAMESPACE}`);
      cluster.close();
    });

    test(`at least 2,000 generated cases cover every kind of the apps`, () => {
      expect(cases.length).toBeGreaterThanOrEqual(Math.min(COUNT, 2000));
      expect(new Set(cases.map(c => c.kind)).size).toBe(new Set(appObjects().map(o => o.kind)).size);
    });

    test('the guard refuses exactly what the server refuses', () => {
      const disagreeing = verdicts.filter(v => v.server.ok === v.guardErrors.length > 0);
      const assumed = disagreeing.filter(v => assumedAdmitted(v, verdicts));
      const disagreements = disagreeing.filter(v => !assumed.includes(v));
      const byMode = new Map<string, number>();
      for (const v of verdicts) byMode.set(v.mode, (byMode.get(v.mode) ?? 0) + 1);
      const refused = verdicts.filter(v => !v.server.ok).length;
      console.log(
        `guard vs API server ${cluster.version}: ${verdicts.length - disagreeing.length}/${verdicts.length} verdicts agree ` +
          `(${cases.length} cases, ${invalidOnTheirOwn} whose new value the server refuses on create too, left out; ` +
          `${refused} refused updates; modes: ${[...byMode].map(([m, n]) => `${m} ${n}`).join(', ')}; ` +
          `Kueue ${KUEUE_VERSION} webhooks; ${assumed.length} manifest-before verdicts on queued Jobs or JobSets Kueue never admitted ` +
          `counted apart: the guard assumes them admitted, and agrees given the live object` +
          `${assumed.length ? `: ${[...new Set(assumed.map(v => `${v.c.edit} ${v.c.path}`))].slice(0, 8).join(', ')}` : ''})`,
      );
      // One line per kind, mode and answer, with the first few paths: a class of disagreement reads at once.
      const groups = new Map<string, Verdict[]>();
      for (const v of disagreements) {
        const key = `${v.c.kind} [${v.mode}]: server ${v.server.ok ? 'accepts' : 'refuses'}, guard ${v.server.ok ? 'refuses' : 'accepts'}`;
        groups.set(key, [...(groups.get(key) ?? []), v]);
      }
      const report = [...groups].map(([key, vs]) => {
        const v = vs[0];
        const why = v.server.ok ? v.guardErrors.join('; ') : v.server.message;
        return `${key} (${vs.length}): ${vs
          .slice(0, 4)
          .map(x => `case ${x.c.id} ${x.c.edit} ${x.c.path}`)
          .join(', ')}; e.g. ${why.length > 300 ? `${why.slice(0, 150)} ... ${why.slice(-150)}` : why}`;
      });
      expect({ disagreements: disagreements.length, first: report }).toEqual({ disagreements: 0, first: [] });
    });
  },
  guardKnows,
);
