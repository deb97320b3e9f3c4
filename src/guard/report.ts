import type { Finding, GuardResult } from './diff';

const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));

/** A readable report: one block per finding, then a summary line. */
export function formatReport(result: GuardResult): string {
  const lines: string[] = [];
  for (const f of result.findings) lines.push(formatFinding(f), '');
  lines.push(result.errors === 0
    ? `guard: no forbidden changes${result.warnings ? `, ${result.warnings} warning(s)` : ''}`
    : `guard: ${result.errors} forbidden change(s), ${result.warnings} warning(s)`);
  return lines.join('\n');
}

function formatFinding(f: Finding): string {
  return [
    `${f.severity === 'error' ? 'FORBIDDEN' : 'WARNING'} ${f.object} ${f.path}`,
    `  before: ${show(f.before)}`,
    `  after:  ${show(f.after)}`,
    `  ${f.severity === 'error' ? 'api server' : 'note'}: ${f.message}`,
    `  remedy: ${f.remedy}`,
  ].join('\n');
}
