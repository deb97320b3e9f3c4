// The plan as a terminal report, as JSON for tools, and as Markdown for a pull-request comment.
import type { PlanResult, WorkloadPlan } from './plan';
import { rangeText, type Range } from './workload';
import { formatFinding, reportTail, toJson, uncheckedKindsText } from './report';

const minutes = (s: number) => (s < 90 ? `${s} s` : `${Math.round(s / 6) / 10} min`);
const MAX_CHANGES = 8;

function changeList(w: WorkloadPlan): string[] {
  const shown = w.changes.slice(0, MAX_CHANGES);
  return w.changes.length > MAX_CHANGES ? [...shown, `… and ${w.changes.length - MAX_CHANGES} more`] : shown;
}

const gpuText = (w: WorkloadPlan) =>
  w.gpusPerPod === 0
    ? 'no GPUs'
    : `${rangeText(w.gpus)} GPU(s) (${w.gpusPerPod} per ${w.unit}), ${rangeText(w.gpusDuringRollout)} during the rollout`;

/** One line of totals: what restarts, the longest rollout, what a prune deletes, what the server refuses. */
function summary(p: PlanResult): string {
  const longest = p.workloads.reduce((m, w) => Math.max(m, w.restarts ? w.seconds.max : 0), 0);
  const parts = [
    `${p.restarting} workload(s) restart${p.restarting ? ` (longest up to ${minutes(longest)})` : ''}`,
    `${p.workloads.filter(w => w.mode === 'new').length} new`,
    `${p.pruned.length} object(s) deleted by a pruning sync`,
    `${p.guard.errors} forbidden change(s)`,
    `${p.guard.warnings} warning(s)`,
  ];
  return `plan: ${parts.join(', ')}`;
}

/** The plan for a terminal; the guard's report follows it. */
export function formatPlan(p: PlanResult): string {
  // What the server refuses and what could cause an outage come first: a reviewer reads the top.
  const lines: string[] = p.guard.findings.flatMap(f => [formatFinding(f), '']);
  for (const w of p.workloads) {
    if (!w.restarts && w.mode !== 'new') continue;
    lines.push(`${w.restarts ? 'RESTARTS' : 'NEW'} ${w.object}`, `  ${w.note}`, `  gpus:   ${gpuText(w)}`);
    for (const c of changeList(w)) lines.push(`  changed: ${c}`);
    lines.push('');
  }
  const calm = p.workloads.filter(w => !w.restarts && w.mode !== 'new');
  if (calm.length > 0) lines.push(`unchanged pods: ${calm.map(w => w.object).join(', ')}`, '');
  for (const o of p.pruned) lines.push(`PRUNED ${o.object}`, `  ${o.note}`, '');
  lines.push(reportTail(p.guard), summary(p));
  return lines.join('\n');
}

const mdRange = (r: Range, f?: (n: number) => string) => rangeText(r, f);
/** A workload with no startup probe has no known start time: the note says so, and so does the table. */
const timeCell = (w: WorkloadPlan) =>
  w.startupSeconds === 0 && w.seconds.max === 0 ? 'unknown (no startup probe)' : mdRange(w.seconds, minutes);
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The plan as a Markdown pull-request comment. */
export function formatPlanMarkdown(p: PlanResult): string {
  const out: string[] = ['### cdk8s-gpu plan', '', `**${summary(p).replace(/^plan: /, '')}**`, ''];
  // The guard first: what the server refuses and what could cause an outage.
  const unchecked = uncheckedKindsText(p.guard);
  if (p.guard.findings.length > 0 || unchecked) {
    out.push('#### Guard', '');
    for (const f of p.guard.findings)
      out.push(
        `- **${f.severity === 'error' ? 'FORBIDDEN' : 'warning'}** \`${f.object}\`${f.path ? ` \`${f.path}\`` : ''}: ${cell(f.message).replace(/\.$/, '')}. Remedy: ${cell(f.remedy)}`,
      );
    if (unchecked) out.push(`- **not checked**: ${cell(unchecked)}`);
    out.push('');
  }
  const moving = p.workloads.filter(w => w.restarts || w.mode === 'new');
  if (moving.length > 0) {
    out.push(
      '| Workload | Rollout | Pods | Time (up to) | GPUs (during) | Why |',
      '| --- | --- | --- | --- | --- | --- |',
    );
    for (const w of moving)
      out.push(
        `| \`${w.object}\` | ${w.mode} | ${mdRange(w.pods)} | ${timeCell(w)} | ${w.gpusPerPod ? `${mdRange(w.gpus)} (${mdRange(w.gpusDuringRollout)})` : '0'} | ${cell(changeList(w).join('; ') || 'new')} |`,
      );
    out.push('');
    for (const w of moving) out.push(`- \`${w.object}\`: ${cell(w.note)}`);
    out.push('');
  } else out.push('No pod restarts.', '');
  if (p.pruned.length > 0) {
    out.push('#### Deleted by a pruning sync', '');
    for (const o of p.pruned) out.push(`- \`${o.object}\`: ${cell(o.note)}`);
    out.push('');
  }
  return out.join('\n');
}

/** The version of the plan's JSON shape. */
export const PLAN_SCHEMA_VERSION = 1;

/** The plan as JSON: { schemaVersion, restarting, workloads, pruned, guard: <the guard's --json shape> }. */
export function planToJson(p: PlanResult): object {
  return {
    schemaVersion: PLAN_SCHEMA_VERSION,
    restarting: p.restarting,
    workloads: p.workloads.map(w => ({ ...w, namespace: w.namespace ?? null })),
    pruned: p.pruned.map(o => ({
      ...o,
      namespace: o.namespace ?? null,
      replacedBy: o.replacedBy ?? null,
      outageSeconds: o.outageSeconds ?? null,
    })),
    guard: toJson(p.guard),
  };
}
