import type { Finding, GuardResult } from './diff';
import { MAX_QUOTED, shortShow } from './object';
import { DEFAULT_KUEUE_VERSION, MAX_SERVER_VERSION, minorOf } from './rules';

const show = (v: unknown) => (v === undefined ? '(absent)' : shortShow(v));

/** A readable report: one block per finding, then what was read and a summary line. */
export function formatReport(result: GuardResult): string {
  const lines: string[] = [];
  for (const f of result.findings) lines.push(formatFinding(f), '');
  return [...lines, reportTail(result)].join('\n');
}

/** The report's closing lines: what was read, what was not checked, and the counts. */
export function reportTail(result: GuardResult): string {
  const lines: string[] = [];
  const newer =
    (minorOf(result.serverVersion) ?? 0) > minorOf(MAX_SERVER_VERSION)!
      ? ` (the table is checked through ${MAX_SERVER_VERSION}; newer releases may relax or add rules)`
      : '';
  const read = result.objects
    ? `read ${result.objects.before} object(s) before, ${result.objects.after} after; rules of Kubernetes ${result.serverVersion}${newer}; Kueue ${result.kueueVersion ?? DEFAULT_KUEUE_VERSION} webhook rules on queued workloads`
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
/** The most changed fields `--json` lists per finding. */
const MAX_CHANGES = 20;

interface Change {
  /** The changed field under the finding's path, items named (`[node].template.spec...`). */
  readonly path: string;
  /** Set when the field is an embedded script: its lines changed (the plan's wording). */
  readonly script?: string;
  readonly before: unknown;
  readonly after: unknown;
}

/** The fields that differ between a finding's two values, when both are lists or maps. */
function changesOf(f: Finding): Change[] {
  if (!isStructure(f.before) || !isStructure(f.after)) return [];
  const { changedPaths, itemName } = require('./plan') as typeof import('./plan');
  const leaves: string[] = [];
  changedPaths(f.before, f.after, '', leaves);
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
  return leaves.map(l => {
    const path = l.replace(/ \(embedded script.*\)$/, '');
    return {
      path,
      ...(l !== path ? { script: l.slice(path.length + 1).replace(/^\(|\)$/g, '') } : {}),
      before: at(f.before, path),
      after: at(f.after, path),
    };
  });
}

/**
 * before/after lines: whole values when short; for a list or map, only the fields that differ
 * (`[model-cache].spec.resources.requests.storage: "100Gi" -> "200Gi"`), so a one-field change in
 * a claim template is not two screens of YAML.
 */
function valueLines(f: Finding): string[] {
  const whole = [`  before: ${show(f.before)}`, `  after:  ${show(f.after)}`];
  if (!isStructure(f.before) || !isStructure(f.after) || whole.join('').length <= 160) return whole;
  const changes = changesOf(f);
  if (changes.length === 0) return whole;
  const lines = changes
    .slice(0, MAX_LEAVES)
    .map(c => `  changed: ${c.path}${c.script ? ` (${c.script})` : `: ${show(c.before)} -> ${show(c.after)}`}`);
  if (changes.length > MAX_LEAVES)
    lines.push(`  changed: … and ${changes.length - MAX_LEAVES} more (--json lists up to ${MAX_CHANGES})`);
  return lines;
}

export function formatFinding(f: Finding): string {
  return [
    `${f.severity === 'error' ? 'FORBIDDEN' : 'WARNING'} ${f.object}${f.path ? ` ${f.path}` : ''}`,
    ...valueLines(f),
    `  ${f.severity === 'error' ? 'api server' : 'note'}: ${f.message}`,
    `  remedy: ${f.remedy}`,
    ...(f.source ? [`  rule:   ${f.source}`] : []),
  ].join('\n');
}

/**
 * The version of the `--json` shape; it changes only when a key changes meaning or goes away.
 * 2: `before` and `after` are abbreviated past 200 characters of JSON (whole with `wholeValues`), and
 * each finding lists its changed fields in `changes`.
 */
export const REPORT_SCHEMA_VERSION = 2;

/** Options of the `--json` shape. */
export interface ReportJsonOptions {
  /** Carry the findings' whole values (a JobSet's replicatedJobs, scripts and all). @default false */
  readonly wholeValues?: boolean;
}

/**
 * The `--json` shape: every key always present, `null` where a value is absent.
 * { schemaVersion, serverVersion, kueueVersion, objects: { before, after }, errors, warnings,
 *   findings: [{ severity, code, object, kind, namespace, name, path, before, after, changes, message, remedy,
 *   source }] }; `changes`: [{ path, script, before, after }], at most 20, values abbreviated as `before`.
 */
export function toJson(result: GuardResult, options: ReportJsonOptions = {}): object {
  const n = (v: unknown) => (v === undefined ? null : v);
  // A value past 200 characters of JSON becomes the string a report shows for it.
  const short = (v: unknown) =>
    options.wholeValues || v === undefined || JSON.stringify(v).length <= MAX_QUOTED ? n(v) : shortShow(v);
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
      before: short(f.before),
      after: short(f.after),
      changes: changesOf(f)
        .slice(0, MAX_CHANGES)
        .map(c => ({ path: c.path, script: c.script ?? null, before: short(c.before), after: short(c.after) })),
      message: f.message,
      remedy: f.remedy,
      source: n(f.source),
    })),
  };
}
