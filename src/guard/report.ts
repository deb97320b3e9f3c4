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
  lines.push(
    result.errors === 0
      ? `guard: no forbidden changes${result.warnings ? `, ${result.warnings} warning(s)` : ''}`
      : `guard: ${result.errors} forbidden change(s), ${result.warnings} warning(s)`,
  );
  return lines.join('\n');
}

function formatFinding(f: Finding): string {
  return [
    `${f.severity === 'error' ? 'FORBIDDEN' : 'WARNING'} ${f.object}${f.path ? ` ${f.path}` : ''}`,
    `  before: ${show(f.before)}`,
    `  after:  ${show(f.after)}`,
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
