import type { Finding, GuardResult } from './diff';
import { MAX_SERVER_VERSION, minorOf } from './rules';

const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));

/** A readable report: one block per finding, then what was read and a summary line. */
export function formatReport(result: GuardResult): string {
  const lines: string[] = [];
  for (const f of result.findings) lines.push(formatFinding(f), '');
  const newer =
    (minorOf(result.serverVersion) ?? 0) > minorOf(MAX_SERVER_VERSION)!
      ? ` (the table is checked through ${MAX_SERVER_VERSION}; newer releases may relax or add rules)`
      : '';
  const read = result.objects
    ? `read ${result.objects.before} object(s) before, ${result.objects.after} after; rules of Kubernetes ${result.serverVersion}${newer}; Kueue ${result.kueueVersion ?? '0.9'} webhook rules on queued StatefulSets`
    : '';
  if (read) lines.push(`guard: ${read}`);
  const unchecked = uncheckedKindsText(result);
  if (unchecked) lines.push(`guard: ${unchecked}`);
  lines.push(
    result.errors === 0
      ? `guard: no forbidden changes${result.warnings ? `, ${result.warnings} warning(s)` : ''}`
      : `guard: ${result.errors} forbidden change(s), ${result.warnings} warning(s)`,
  );
  return lines.join('\n');
}

/** The custom-resource kinds compared with no CRD and no rules of the guard's own, as a sentence; else undefined. */
export function uncheckedKindsText(result: GuardResult): string | undefined {
  if (!result.uncheckedKinds?.length) return undefined;
  return `no CRD for ${result.uncheckedKinds.join(', ')}: their transition rules (x-kubernetes-validations) were not checked; give the CRDs with --crds`;
}

const isStructure = (v: unknown) => v !== null && typeof v === 'object';
const MAX_LEAVES = 6;

/**
 * before/after lines: whole values when short; for a list or map, only the fields that differ
 * (`[model-cache].spec.resources.requests.storage: "100Gi" -> "200Gi"`), so a one-field change in
 * a claim template is not two screens of YAML.
 */
function valueLines(f: Finding): string[] {
  const whole = [`  before: ${show(f.before)}`, `  after:  ${show(f.after)}`];
  if (!isStructure(f.before) || !isStructure(f.after) || whole.join('').length <= 160) return whole;
  const { changedPaths, itemName } = require('./plan') as typeof import('./plan');
  const leaves: string[] = [];
  changedPaths(f.before, f.after, '', leaves);
  if (leaves.length === 0) return whole;
  const at = (v: unknown, p: string): unknown => {
    let o: any = v;
    for (const part of p.match(/[^.[\]]+|\[[^\]]*\]/g) ?? []) {
      if (o === undefined || o === null) return undefined;
      if (part.startsWith('[')) {
        const k = part.slice(1, -1);
        o = Array.isArray(o) ? (/^\d+$/.test(k) ? o[Number(k)] : o.find((i: unknown) => itemName(i) === k)) : undefined;
      } else o = o[part];
    }
    return o;
  };
  const lines = leaves.slice(0, MAX_LEAVES).map(l => {
    const p = l.replace(/ \(embedded script.*\)$/, '');
    const [b, a] = [at(f.before, p), at(f.after, p)];
    const script = l !== p;
    return `  changed: ${l}${script ? '' : `: ${show(b)} -> ${show(a)}`}`;
  });
  if (leaves.length > MAX_LEAVES)
    lines.push(`  changed: … and ${leaves.length - MAX_LEAVES} more (--json has the whole values)`);
  return lines;
}

function formatFinding(f: Finding): string {
  return [
    `${f.severity === 'error' ? 'FORBIDDEN' : 'WARNING'} ${f.object}${f.path ? ` ${f.path}` : ''}`,
    ...valueLines(f),
    `  ${f.severity === 'error' ? 'api server' : 'note'}: ${f.message}`,
    `  remedy: ${f.remedy}`,
    ...(f.source ? [`  rule:   ${f.source}`] : []),
  ].join('\n');
}

/** The version of the `--json` shape; it changes only when a key changes meaning or goes away. */
export const REPORT_SCHEMA_VERSION = 1;

/**
 * The `--json` shape: every key always present, `null` where a value is absent.
 * { schemaVersion, serverVersion, kueueVersion, objects: { before, after }, errors, warnings,
 *   findings: [{ severity, code, object, kind, namespace, name, path, before, after, message, remedy, source }] }
 */
export function toJson(result: GuardResult): object {
  const n = (v: unknown) => (v === undefined ? null : v);
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    serverVersion: result.serverVersion,
    kueueVersion: result.kueueVersion ?? null,
    objects: { before: result.objects.before, after: result.objects.after },
    errors: result.errors,
    warnings: result.warnings,
    uncheckedKinds: result.uncheckedKinds ?? [],
    findings: result.findings.map(f => ({
      severity: f.severity,
      code: f.code,
      object: f.object,
      kind: f.kind,
      namespace: n(f.namespace),
      name: f.name,
      path: f.path === '' ? null : f.path,
      before: n(f.before),
      after: n(f.after),
      message: f.message,
      remedy: f.remedy,
      source: n(f.source),
    })),
  };
}
