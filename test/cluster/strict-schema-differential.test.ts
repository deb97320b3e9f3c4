import { ApiObject, App } from 'cdk8s';
import { buildApps } from '../../apps/apps';
import { isVendoredKind } from '../../src/validation/crd-schema';
import {
  definitionNameOf,
  definitionsOf,
  KubeVersion,
  resolveRef,
  Schema,
  strictErrors,
} from '../../src/validation/strict-schema';
import { FLOOR_MINOR } from '../../src/validation/kube-versions';
import { Cluster, describeCluster, minorOf, pool, SERVER_VERSIONS } from './kube';

/**
 * The library's strict schema check (src/validation/strict-schema.ts, behind `StrictSchemaValidation`
 * and every construct's own check of its output) held against the API server's decoder and validation
 * with `fieldValidation=Strict`. Each built-in object of the example apps, and the same object with one
 * schema-level defect (an unknown field, a value of the wrong JSON type, a fraction where an integer
 * goes, a required field left out, a malformed quantity, a null), is created as a server-side dry run.
 * The library must call an object invalid exactly when the server refuses it, with one allowance: a
 * null decodes to the field's zero value (as an absent field), and whether that value is valid
 * (an empty image, an empty policy type) is the server's semantic validation, not the schema's; such a
 * refusal (422) of an object the schema check accepts is counted apart. Only the release whose API
 * definitions the library vendors (1.36) is compared: the others' schemas differ by design. The other
 * way round, a null or missing required field whose zero value the newest server accepts is refused by
 * the library when the floor's server (1.32) refuses it, since the library's verdict holds at every
 * supported version (a sleep action of 0 s: PodLifecycleSleepActionAllowZero is alpha and off in
 * 1.32, on from 1.33); those are sent to the floor's server (a workload's pod template as the Pod its
 * controller creates) and counted apart.
 */

const VERSION: KubeVersion = '1.36.0';
const RUN = Date.now().toString(36);
const NAMESPACE = `strict-differential-${RUN}`;

interface Case {
  readonly name: string;
  readonly object: any;
  /** A null: the decoder makes it the zero value, whose validity is the server's semantic validation. */
  readonly zeroValue?: boolean;
}

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

interface Leaf {
  readonly path: (string | number)[];
  readonly type: string;
  readonly quantity: boolean;
}

/** Every scalar leaf and every object node of a value under its schema, with their paths. */
function nodes(
  value: unknown,
  schema: Schema,
  defs: Readonly<Record<string, Schema>>,
  path: (string | number)[] = [],
  out: { leaves: Leaf[]; objects: Array<(string | number)[]>; required: Array<(string | number)[]> } = {
    leaves: [],
    objects: [],
    required: [],
  },
) {
  const quantity = schema.$ref?.endsWith('api.resource.Quantity') ?? false;
  const s = resolveRef(schema, defs);
  if (s.oneOf || quantity) {
    out.leaves.push({ path, type: 'int-or-string', quantity });
    return out;
  }
  if (Array.isArray(value) && s.items) value.forEach((x, i) => nodes(x, s.items!, defs, [...path, i], out));
  else if (value !== null && typeof value === 'object' && s.properties) {
    out.objects.push(path);
    for (const r of s.required ?? []) if (r in value) out.required.push([...path, r]);
    for (const [k, v] of Object.entries(value)) if (s.properties[k]) nodes(v, s.properties[k], defs, [...path, k], out);
  } else if (typeof value !== 'object' && s.type) out.leaves.push({ path, type: s.type, quantity });
  return out;
}

function at(o: any, path: (string | number)[]): any {
  return path.reduce((x, k) => x[k], o);
}
function set(o: any, path: (string | number)[], v: unknown): void {
  at(o, path.slice(0, -1))[path[path.length - 1]] = v;
}
const show = (path: (string | number)[]) => path.map(k => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');

/** A spread of the items of `list`: at most `n`, from start to end. */
const spread = <T>(list: readonly T[], n: number): T[] =>
  list.length <= n ? [...list] : Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]);

function cases(): Case[] {
  const app = new App();
  buildApps(app);
  const defs = definitionsOf(VERSION);
  const objects = app.node
    .findAll()
    .filter(ApiObject.isApiObject)
    .map(o => o.toJson())
    .filter(o => !isVendoredKind(o.apiVersion, o.kind) && strictErrors(o, VERSION).length === 0);
  const out: Case[] = [];
  objects.forEach((o, i) => {
    const base = { ...clone(o), metadata: { ...o.metadata, name: `sd-${i}`, namespace: NAMESPACE } };
    const def = definitionNameOf(VERSION, o.apiVersion, o.kind);
    if (!def) return;
    const found = nodes(base, { $ref: `#/definitions/${def}` }, defs);
    const who = `${o.kind}/${o.metadata.name}`;
    out.push({ name: `${who} as it is`, object: base });
    for (const p of spread(found.objects, 4)) {
      const c = clone(base);
      at(c, p).cdk8sGpuUnknown = 'x';
      out.push({ name: `${who} with an unknown field at ${show(p)}`, object: c });
    }
    // The object's identity stays: the request goes to the collection it names.
    const identity = (path: (string | number)[]) =>
      ['apiVersion', 'kind'].includes(String(path[0])) || (path[0] === 'metadata' && path.length === 2);
    for (const leaf of spread(
      found.leaves.filter(l => !identity(l.path)),
      6,
    )) {
      const value = at(base, leaf.path);
      const wrong = leaf.quantity
        ? '1x'
        : leaf.type === 'string'
          ? 7
          : leaf.type === 'integer'
            ? [String(value), 1.5]
            : leaf.type === 'boolean'
              ? 'true'
              : leaf.type === 'number'
                ? 'seven'
                : leaf.type === 'int-or-string'
                  ? true
                  : undefined;
      for (const w of Array.isArray(wrong) ? wrong : wrong === undefined ? [] : [wrong]) {
        const c = clone(base);
        set(c, leaf.path, w);
        out.push({ name: `${who} with ${show(leaf.path)}: ${JSON.stringify(w)}`, object: c });
      }
    }
    for (const leaf of spread(
      found.leaves.filter(l => !identity(l.path)),
      3,
    )) {
      const c = clone(base);
      set(c, leaf.path, null);
      out.push({ name: `${who} with ${show(leaf.path)}: null`, object: c, zeroValue: true });
    }
    for (const p of spread(found.required, 3)) {
      if (p[0] === 'metadata' || p[0] === 'apiVersion' || p[0] === 'kind') continue;
      const c = clone(base);
      delete at(c, p.slice(0, -1))[p[p.length - 1]];
      out.push({ name: `${who} without ${show(p)}`, object: c });
    }
  });
  return out;
}

describeCluster(
  "the strict schema check against the API server's strict decoding",
  (cluster: Cluster) => {
    const all = cases();
    const floorVersion = SERVER_VERSIONS.find(v => minorOf(v) === `1.${FLOOR_MINOR}`);
    const floor = floorVersion === undefined ? undefined : new Cluster(floorVersion);

    beforeAll(async () => {
      await cluster.namespace(NAMESPACE, 'privileged');
      await floor?.namespace(NAMESPACE, 'privileged');
    }, 120_000);
    afterAll(async () => {
      for (const c of [cluster, floor]) {
        if (!c) continue;
        await c.request('DELETE', `/api/v1/namespaces/${NAMESPACE}`);
        c.close();
      }
    });

    test('the corpus has both valid and invalid objects of every built-in kind of the apps', () => {
      expect(all.length).toBeGreaterThan(300);
      expect(all.filter(c => strictErrors(c.object, VERSION).length === 0).length).toBeGreaterThan(20);
    });

    test('the library calls an object invalid exactly when the server refuses it', async () => {
      const answers = await pool(all, 8, c => cluster.create(c.object, true));
      // Objects the newest server accepts and the library refuses for a missing (or null) required field:
      // the floor's server decides whether the zero value is refused there.
      const zeroAtFloor = all.filter(
        (c, i) =>
          answers[i].status < 300 && strictErrors(c.object, VERSION).every(e => e.includes('missing required field')),
      );
      // A pod template goes to the floor's server as the Pod the workload's controller would create:
      // 1.32 does not validate a StatefulSet's template, and its controller's Pods are then refused.
      // Its account is left out: it is not in this namespace, and the ServiceAccount admission plugin would refuse the
      // Pod (403) before validation says anything of the field.
      const asPod = (o: any) => {
        if (!o.spec?.template?.spec) return o;
        const { serviceAccountName: _account, ...spec } = o.spec.template.spec;
        return {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
          spec,
        };
      };
      const floorAnswers = floor ? await pool(zeroAtFloor, 8, c => floor.create(asPod(c.object), true)) : [];
      const refusedAtFloor = new Set(zeroAtFloor.filter((_c, i) => floorAnswers[i].status === 422));
      let semantic = 0;
      const disagreements = all.flatMap((c, i) => {
        const library = strictErrors(c.object, VERSION);
        const refused = answers[i].status >= 300;
        if (refused === library.length > 0) return [];
        if (c.zeroValue && answers[i].status === 422 && library.length === 0) {
          semantic++;
          return [];
        }
        if (refusedAtFloor.has(c)) return [];
        return [
          refused
            ? `${c.name}: the server refuses (${answers[i].status} ${String(answers[i].body?.message).slice(0, 240)}), the library accepts`
            : `${c.name}: the server accepts, the library says ${library.slice(0, 2).join('; ')}`,
        ];
      });
      const refused = answers.filter(a => a.status >= 300).length;
      process.stdout.write(
        `strict schema on Kubernetes ${cluster.version}: ${all.length - disagreements.length}/${all.length} objects judged alike ` +
          `(${refused} refused by the server; ${semantic} nulls refused by its semantic validation of the zero value; ` +
          `${refusedAtFloor.size} zero values accepted here and refused by the floor's server ${floorVersion ?? '(not running)'})\n`,
      );
      expect(disagreements).toEqual([]);
    }, 300_000);
  },
  version => version.startsWith(`v${VERSION.split('.').slice(0, 2).join('.')}.`),
);
