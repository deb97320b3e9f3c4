import { ApiObject, App, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { buildApps } from '../../apps/apps';
import { vendoredCrds } from './crds';
import { Cluster, describeCluster, PodSecurityLevel, pool, problems, Response } from './kube';

/**
 * Every example app (and so every snapshot, which test/apps.test.ts holds equal to them) applied to a
 * real API server with server-side apply and strict field validation, each construct's objects in a
 * namespace that enforces the Pod Security level the construct itself reports (`podSecurityLevel`;
 * restricted for objects of constructs that report none). The server is the judge: zero rejections and
 * zero warnings. Then each app is applied again, as a GitOps resync does, and must change nothing.
 */

interface Placed {
  readonly chart: string;
  readonly level: PodSecurityLevel;
  readonly object: any;
}

const hasLevel = (c: IConstruct): c is IConstruct & { podSecurityLevel: PodSecurityLevel } => 'podSecurityLevel' in c;

/** Each object of each chart with the level of the construct that made it, in its test namespace. */
function placedObjects(): Placed[] {
  const app = new App();
  buildApps(app);
  const placed: Placed[] = [];
  for (const chart of app.node.children.filter((c): c is Chart => c instanceof Chart)) {
    // The nearest construct that reports a level owns an object: visit outer constructs first.
    const levels = new Map<ApiObject, PodSecurityLevel>();
    const owners = chart.node.findAll().filter(hasLevel);
    owners.sort((a, b) => a.node.scopes.length - b.node.scopes.length);
    for (const owner of owners)
      for (const o of owner.node.findAll().filter(ApiObject.isApiObject)) levels.set(o, owner.podSecurityLevel);
    for (const o of chart.node.findAll().filter(ApiObject.isApiObject)) {
      const level = levels.get(o) ?? 'restricted';
      const object = o.toJson();
      object.metadata.namespace = `${chart.node.id}-${level}`;
      placed.push({ chart: chart.node.id, level, object });
    }
  }
  return placed;
}

/**
 * What the server stores of the manifest's own fields (and the generation, which rises with any spec
 * change): controllers write status, annotations and finalizers meanwhile, which is not the apply's doing.
 */
function stored(manifest: any, object: any): string {
  const project = (m: any, o: any): any => {
    if (Array.isArray(m) && Array.isArray(o)) return o.map((x, i) => (i < m.length ? project(m[i], x) : x));
    if (m !== null && typeof m === 'object' && o !== null && typeof o === 'object' && !Array.isArray(o))
      return Object.fromEntries(Object.keys(m).map(k => [k, project(m[k], o[k])]));
    return o;
  };
  return JSON.stringify({ generation: object.metadata?.generation, fields: project(manifest, object) });
}

/**
 * Paths the manifest sets that the stored object lacks: the server dropped them (an empty map or list,
 * a null), so every apply sends a change the server throws away, which GitOps tools show as drift.
 */
function dropped(manifest: any, stored: any, at = ''): string[] {
  if (Array.isArray(manifest)) {
    if (!Array.isArray(stored) || stored.length !== manifest.length) return [at];
    return manifest.flatMap((m, i) => dropped(m, stored[i], `${at}[${i}]`));
  }
  if (manifest !== null && typeof manifest === 'object') {
    if (stored === null || typeof stored !== 'object') return [at];
    return Object.keys(manifest).flatMap(k =>
      k in stored ? dropped(manifest[k], stored[k], at ? `${at}.${k}` : k) : [`${at}.${k}`],
    );
  }
  return [];
}
const describeOf = (o: any) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;

describeCluster('the example apps on a real API server', (cluster: Cluster) => {
  const placed = placedObjects();
  const charts = [...new Set(placed.map(p => p.chart))];

  beforeAll(async () => {
    await cluster.installCrds(vendoredCrds());
    for (const ns of new Set(placed.map(p => `${p.object.metadata.namespace}|${p.level}`))) {
      const [name, level] = ns.split('|');
      await cluster.namespace(name, level as PodSecurityLevel);
    }
  }, 240_000);
  afterAll(() => cluster.close());

  test('the apps have pods at every level, so every namespace is exercised', () => {
    expect(new Set(placed.map(p => p.level))).toEqual(new Set(['restricted', 'baseline', 'privileged']));
  });

  test.each(charts)(
    '%s: every object is accepted whole, with no warning, under its Pod Security level, and a resync changes nothing',
    async chart => {
      const objects = placed.filter(p => p.chart === chart).map(p => p.object);
      const answers = await pool(objects, 8, o => cluster.apply(o));
      const report = objects.flatMap((o, i) => [
        ...problems(answers[i]).map(p => `${describeOf(o)}: ${p}`),
        ...(answers[i].status < 300
          ? dropped(o, answers[i].body).map(p => `${describeOf(o)}: ${p} is set but not stored`)
          : []),
      ]);
      expect(report).toEqual([]);

      // A GitOps resync applies the same manifests again: the server changes nothing in them (controllers
      // write status meanwhile, so status and the bookkeeping that follows it are left out). One known
      // exception, once: the JobSet and LeaderWorkerSet webhooks re-encode a new object's pod templates
      // through Go on create (resource counts such as `nvidia.com/gpu: 8` become the strings "8"), so the
      // first resync writes the manifest's numbers back; from then on a resync is a no-op (checked below).
      const again = await pool(objects, 8, o => cluster.apply(o));
      const changedBy = (before: Response[], after: Response[], allowWebhookReencoding: boolean) =>
        objects.flatMap((o, i) => {
          const [first, second] = [stored(o, before[i].body), stored(o, after[i].body)];
          if (first === second || (allowWebhookReencoding && ['JobSet', 'LeaderWorkerSet'].includes(o.kind)))
            return problems(after[i]).map(p => `${describeOf(o)}: ${p}`);
          return [
            ...problems(after[i]).map(p => `${describeOf(o)}: ${p}`),
            `${describeOf(o)}: changed by an unchanged apply:\n${first}\n${second}`,
          ];
        });
      expect(changedBy(answers, again, true)).toEqual([]);
      const third = await pool(objects, 8, o => cluster.apply(o));
      const changed = changedBy(again, third, false);
      expect(changed).toEqual([]);
    },
  );
});
