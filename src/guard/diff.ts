import { LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY } from '../common/labels';
import { KubeObject, normalize, SERVER_FILLED } from './normalize';
import { FieldRule, IMMUTABLE_FIELDS, KindRules } from './rules';

/** Errors are changes the API server rejects; warnings need attention but apply. */
export type Severity = 'error' | 'warning';

/** One thing the guard found. */
export interface Finding {
  readonly severity: Severity;
  /** `kind/namespace/name`, or `kind/name` without a namespace. */
  readonly object: string;
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
  /** The API server's words for the rejection, or the warning. */
  readonly message: string;
  readonly remedy: string;
}

export interface GuardResult {
  readonly findings: Finding[];
  readonly errors: number;
  readonly warnings: number;
}

const groupOf = (o: KubeObject) => (o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '');
const describe = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

const RULES = new Map<string, KindRules>(IMMUTABLE_FIELDS.map(r => [`${r.group}/${r.kind}`, r]));

function get(obj: any, path: string): unknown {
  return path.split('.').reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), obj);
}

function set(obj: any, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] ??= {};
  o[keys[keys.length - 1]] = value;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(canonical);
  if (x && typeof x === 'object') return Object.fromEntries(Object.keys(x).sort().map(k => [k, canonical((x as any)[k])]));
  return x;
}

const SUFFIX: Record<string, number> = {
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
  k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3, '': 1,
};

/** A Kubernetes quantity as a number (bytes for storage), or NaN. */
export function parseQuantity(q: unknown): number {
  const m = /^([0-9.]+(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q ?? ''));
  if (!m || !(m[2] in SUFFIX)) return NaN;
  return parseFloat(m[1]) * SUFFIX[m[2]];
}

function remedyFor(before: KubeObject): string {
  const labels = before.metadata.labels ?? {};
  if (labels[LABEL_MANAGED_BY] === MANAGED_BY && before.kind === 'StatefulSet') {
    return `bump \`version\` on the cdk8s-gpu construct for ${LABEL_NAME}=${labels[LABEL_NAME]}: the new StatefulSet is created beside the old one. To keep its data, see adoptVolumes and the README's adoption runbook.`;
  }
  return `give the object a new name (a new version), or delete it and apply again (kubectl delete ${before.kind.toLowerCase()} ${before.metadata.name}); deleting a workload or claim loses what it holds.`;
}

function compareField(rule: FieldRule, before: KubeObject, after: KubeObject, object: string, remedy: string): Finding[] {
  if (rule.whenImmutableFlag && before.immutable !== true) return [];
  const b = get(before, rule.path);
  const a = get(after, rule.path);
  const finding = (path: string, bv: unknown, av: unknown): Finding => ({ severity: 'error', object, path, before: bv, after: av, message: rule.message, remedy });
  if (rule.onceSet) {
    if (b === undefined || b === '' || a === undefined) return [];
    return same(b, a) ? [] : [finding(rule.path, b, a)];
  }
  if (rule.mayIncrease) {
    if (b === undefined || a === undefined) return [];
    const nb = parseQuantity(b);
    const na = parseQuantity(a);
    return na < nb ? [finding(rule.path, b, a)] : [];
  }
  if (rule.except) {
    const keys = new Set([...Object.keys((b as object) ?? {}), ...Object.keys((a as object) ?? {})]);
    return [...keys].sort()
      .filter(k => !rule.except!.includes(k))
      .filter(k => !same((b as any)?.[k], (a as any)?.[k]))
      .map(k => finding(`${rule.path}.${k}`, (b as any)?.[k], (a as any)?.[k]));
  }
  return same(b, a) ? [] : [finding(rule.path, b, a)];
}

/** Matches objects by group, kind, namespace and name; a manifest without a namespace matches any. */
function matchKey(o: KubeObject): string {
  return `${groupOf(o)}/${o.kind}/${o.metadata.name}`;
}

function findBefore(after: KubeObject, index: Map<string, KubeObject[]>): KubeObject | undefined {
  const candidates = index.get(matchKey(after)) ?? [];
  const ns = after.metadata.namespace;
  if (ns !== undefined) return candidates.find(c => c.metadata.namespace === undefined || c.metadata.namespace === ns);
  return candidates.length === 1 ? candidates[0] : candidates.find(c => c.metadata.namespace === undefined || c.metadata.namespace === 'default');
}

/**
 * Compares two sets of objects and reports every change the API server would reject as an
 * immutable-field update (errors), and StatefulSet replacements that leave data behind (warnings).
 */
export function guard(beforeObjects: KubeObject[], afterObjects: KubeObject[]): GuardResult {
  const findings: Finding[] = [];
  const before = beforeObjects.map(normalize);
  const after = afterObjects.map(normalize);
  const index = new Map<string, KubeObject[]>();
  for (const o of before) index.set(matchKey(o), [...(index.get(matchKey(o)) ?? []), o]);

  const matched = new Set<KubeObject>();
  for (const a of after) {
    const b = findBefore(a, index);
    if (!b) continue;
    matched.add(b);
    const kindKey = `${groupOf(a)}/${a.kind}`;
    const rules = RULES.get(kindKey);
    if (!rules) continue;
    const effective = JSON.parse(JSON.stringify(a));
    for (const p of SERVER_FILLED[kindKey] ?? []) if (get(effective, p) === undefined && get(b, p) !== undefined) set(effective, p, get(b, p));
    const remedy = remedyFor(b);
    for (const rule of rules.fields) findings.push(...compareField(rule, b, effective, describe(a), remedy));
  }

  findings.push(...replacementWarnings(before, after, matched));
  const errors = findings.filter(f => f.severity === 'error').length;
  return { findings, errors, warnings: findings.length - errors };
}

/**
 * A new StatefulSet with the same app.kubernetes.io/name as one that disappears is a version bump:
 * its claims are new and empty, and the old claims stay behind with the data.
 */
function replacementWarnings(before: KubeObject[], after: KubeObject[], matched: Set<KubeObject>): Finding[] {
  const out: Finding[] = [];
  const isSts = (o: KubeObject) => groupOf(o) === 'apps' && o.kind === 'StatefulSet';
  const appName = (o: KubeObject) => o.metadata.labels?.[LABEL_NAME];
  const gone = before.filter(o => isSts(o) && !matched.has(o) && appName(o));
  for (const created of after.filter(o => isSts(o) && appName(o) && !before.some(b => isSts(b) && b.metadata.name === o.metadata.name))) {
    for (const old of gone.filter(g => appName(g) === appName(created))) {
      const claims = (sts: KubeObject) => (sts.spec?.volumeClaimTemplates ?? []).map((t: any) => t.metadata?.name as string);
      const ordinals = (sts: KubeObject) => Array.from({ length: sts.spec?.replicas ?? 1 }, (_x, i) => i);
      const newClaims = claims(created).flatMap((c: string) => ordinals(created).map(i => `${c}-${created.metadata.name}-${i}`));
      const adopted = newClaims.length > 0 && newClaims.every((n: string) => after.some(o => o.kind === 'PersistentVolumeClaim' && o.metadata.name === n && o.spec?.volumeName));
      if (adopted || claims(old).length === 0) continue;
      const oldClaims = claims(old).flatMap((c: string) => ordinals(old).map(i => `${c}-${old.metadata.name}-${i}`));
      out.push({
        severity: 'warning',
        object: describe(created),
        path: 'spec.volumeClaimTemplates',
        before: old.metadata.name,
        after: created.metadata.name,
        message: `StatefulSet ${created.metadata.name} replaces ${old.metadata.name}: its claims (${newClaims.join(', ') || 'none'}) start empty, and the old claims (${oldClaims.join(', ')}) stay behind with the data`,
        remedy: 'to start from the old data, adopt the old volumes: set adoptVolumes on the new version and follow the README adoption runbook',
      });
    }
  }
  return out;
}
