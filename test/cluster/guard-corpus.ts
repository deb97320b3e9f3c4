/**
 * Update cases generated from the library's own output, for holding the upgrade guard against a real
 * API server: each object of the example apps with one field changed, removed or added (scalars, map
 * entries, list items), sampled evenly across kinds. Deterministic: the same apps give the same cases.
 */

export type Edit = 'change' | 'remove' | 'add' | 'drop-item';

export interface UpdateCase {
  readonly id: number;
  readonly kind: string;
  /** The edited field, e.g. `spec.template.spec.containers[0].image`. */
  readonly path: string;
  readonly edit: Edit;
  readonly before: any;
  readonly after: any;
}

type Key = string | number;

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const isObject = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
const show = (p: readonly Key[]) =>
  p.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');

/** Fields that name the object rather than describe it: an edit there is another object, not an update. */
const IDENTITY = new Set(['apiVersion', 'kind', 'metadata.name', 'metadata.namespace']);

/** Maps where a new key is an ordinary edit (labels, annotations, selectors, data). */
const OPEN_MAPS = /(^|\.)(labels|annotations|matchLabels|nodeSelector|data)$/;

/** A changed scalar of the same type and, where it reads as one, the same unit. */
function changed(v: unknown): unknown {
  if (typeof v === 'boolean') return !v;
  if (typeof v === 'number') return Number.isInteger(v) ? v + 1 : v * 2;
  const s = String(v);
  const q = /^(\d+)(m|k|M|G|T|Ki|Mi|Gi|Ti|s)?$/.exec(s);
  if (q) return `${Number(q[1]) + 1}${q[2] ?? ''}`;
  return `${s}x`;
}

function at(o: any, p: readonly Key[]): any {
  return p.reduce((x, k) => x?.[k], o);
}

/** Every candidate edit of one object, in a stable order. */
function candidates(o: any): Array<{ path: readonly Key[]; edit: Edit }> {
  const out: Array<{ path: readonly Key[]; edit: Edit }> = [];
  const walk = (x: unknown, p: Key[]) => {
    const dotted = p.filter(k => typeof k === 'string').join('.');
    if (IDENTITY.has(dotted) && p.every(k => typeof k === 'string')) return;
    if (Array.isArray(x)) {
      if (x.length > 1) out.push({ path: [...p, x.length - 1], edit: 'drop-item' });
      x.forEach((item, i) => walk(item, [...p, i]));
      return;
    }
    if (isObject(x)) {
      if (p.length > 0 && OPEN_MAPS.test(dotted)) out.push({ path: [...p, 'cdk8s-gpu.test/added'], edit: 'add' });
      for (const [k, v] of Object.entries(x)) walk(v, [...p, k]);
      return;
    }
    if (p.length === 0) return;
    out.push({ path: p, edit: 'change' });
    // Removing an array element's scalar changes the list; 'drop-item' covers it.
    if (typeof p[p.length - 1] === 'string') out.push({ path: p, edit: 'remove' });
  };
  walk(o, []);
  return out;
}

function edited(o: any, path: readonly Key[], edit: Edit): any {
  const after = clone(o);
  const parent = at(after, path.slice(0, -1));
  const last = path[path.length - 1];
  if (edit === 'change') parent[last] = changed(parent[last]);
  else if (edit === 'add') parent[last] = 'x';
  else if (edit === 'drop-item') (parent as unknown[]).splice(last as number, 1);
  else delete parent[last];
  return after;
}

/**
 * About `count` cases from `objects`, spread evenly over kinds: each kind gets an equal share (a kind
 * with fewer candidates gives the rest to the others), taken at an even stride through its candidates
 * so that every part of its objects is touched.
 */
export function updateCases(objects: readonly any[], count: number): UpdateCase[] {
  const byKind = new Map<string, Array<{ object: any; path: readonly Key[]; edit: Edit }>>();
  for (const object of objects) {
    const list = byKind.get(object.kind) ?? [];
    for (const c of candidates(object)) list.push({ object, ...c });
    byKind.set(object.kind, list);
  }
  const kinds = [...byKind.keys()].sort((a, b) => byKind.get(a)!.length - byKind.get(b)!.length || a.localeCompare(b));
  const chosen: Array<{ object: any; path: readonly Key[]; edit: Edit }> = [];
  let budget = count;
  kinds.forEach((kind, i) => {
    const all = byKind.get(kind)!;
    const quota = Math.min(all.length, Math.floor(budget / (kinds.length - i)));
    for (let j = 0; j < quota; j++) chosen.push(all[Math.floor((j * all.length) / quota)]);
    budget -= quota;
  });
  return chosen.map((c, id) => ({
    id,
    kind: c.object.kind,
    path: show(c.path),
    edit: c.edit,
    before: clone(c.object),
    after: edited(c.object, c.path, c.edit),
  }));
}
