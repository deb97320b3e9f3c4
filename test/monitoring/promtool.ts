import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import { Construct } from 'constructs';
import { stringify } from 'yaml';
import { onPath } from '../support/shells';
import { AlertRule } from '../../src/monitoring/rules';
import { missingTool } from '../support/missing-tool';

/** promtool, from Debian's `prometheus` package (.ci/run installs it). */
export const PROMTOOL = onPath('promtool');

/**
 * Runs `body` as a describe block when promtool is installed; otherwise one test that says so,
 * loudly on a developer's machine and failing in CI.
 */
export function describePromtool(name: string, body: () => void): void {
  if (PROMTOOL === undefined) {
    test(`promtool is installed, so that ${name} is checked by a real Prometheus`, () => {
      const message =
        `!!! ${name}: NOT checked by promtool, which is not installed. ` +
        'Install it (apt-get install -y prometheus); .ci/run does this before the tests.';
      missingTool(message);
    });
    return;
  }
  describe(name, body);
}

export interface PromtoolResult {
  readonly ok: boolean;
  readonly output: string;
}

function run(args: string[], files: Record<string, unknown>): PromtoolResult {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'promtool-'));
  try {
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), stringify(content));
    const r = spawnSync(PROMTOOL!, args, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `promtool check rules` on rule groups (a PrometheusRule's `spec`). */
export function checkRules(spec: { groups: unknown[] }): PromtoolResult {
  return run(['check', 'rules', 'rules.yaml'], { 'rules.yaml': spec });
}

/** `promtool test rules` with unit tests over synthetic series, against rule groups. */
export function testRules(spec: { groups: unknown[] }, tests: PromTest[]): PromtoolResult {
  return run(['test', 'rules', 'tests.yaml'], {
    'rules.yaml': spec,
    'tests.yaml': { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests },
  });
}

/** One promtool unit test: series sampled every minute, and what the rules give at given times. */
export interface PromTest {
  readonly name?: string;
  readonly interval: string;
  readonly input_series: ReadonlyArray<{ series: string; values: string }>;
  readonly alert_rule_test?: readonly AlertCheck[];
  readonly promql_expr_test?: ReadonlyArray<{
    expr: string;
    eval_time: string;
    exp_samples: ReadonlyArray<{ labels: string; value: number }>;
  }>;
}

interface AlertCheck {
  eval_time: string;
  alertname: string;
  exp_alerts: Array<{ exp_labels: Record<string, string>; exp_annotations: Record<string, string> }>;
}

/** A series of `minutes + 1` samples, one a minute, all `value`. */
export function constant(series: string, value: number, minutes: number): { series: string; values: string } {
  return { series, values: `${value}x${minutes}` };
}

/** Rules evaluate once a minute: the first evaluation at or after `seconds`. */
export function evaluationAtOrAfter(seconds: number): number {
  return Math.ceil(seconds / 60) * 60;
}

/** The first evaluation strictly after `seconds`. */
export function evaluationAfter(seconds: number): number {
  return Math.floor(seconds / 60) * 60 + 60;
}

/** The synthesized PrometheusRule of a construct's chart, and the annotations of each of its alerts. */
export function ruleSpec(scope: Construct): { groups: any[] } {
  const objects = Testing.synth(Chart.of(scope)).filter((o: any) => o.kind === 'PrometheusRule');
  const owned = objects.filter((o: any) => o.metadata.name === (scope as any).prometheusRule.name);
  if (owned.length !== 1) throw new Error(`expected one PrometheusRule of ${scope.node.path}`);
  return owned[0].spec;
}

/** The alert `name` fires at `seconds` with these labels (besides the rule's own). */
export function fires(
  spec: { groups: any[] },
  name: string,
  seconds: number,
  ...labels: Record<string, string>[]
): AlertCheck {
  const rule = spec.groups.flatMap(g => g.rules).find((r: any) => r.alert === name);
  if (!rule)
    throw new Error(`no alert ${name} in ${JSON.stringify(spec.groups.map(g => g.rules.map((r: any) => r.alert)))}`);
  return {
    eval_time: `${seconds}s`,
    alertname: name,
    exp_alerts: labels.map(l => ({ exp_labels: { ...rule.labels, ...l }, exp_annotations: rule.annotations })),
  };
}

/** The alert `name` does not fire at `seconds`. */
export function silent(name: string, seconds: number): AlertCheck {
  return { eval_time: `${seconds}s`, alertname: name, exp_alerts: [] };
}

/**
 * Runs GpuServingPodNotReady under promtool with `pod` of namespace `serving` not Ready past the
 * service's capacity delay (it must fire), and the same for `otherPod` (it must not: not this
 * workload's pod).
 */
export function podNotReadyRun(
  monitoring: Construct,
  capacitySeconds: number,
  pod: string,
  otherPod: string,
): PromtoolResult {
  const spec = ruleSpec(monitoring);
  const at = evaluationAtOrAfter(capacitySeconds);
  const ready = (p: string) => ({
    series: `kube_pod_status_ready{namespace="serving",pod="${p}",condition="true"}`,
    values: `0x${Math.ceil(at / 60) + 2}`,
  });
  return testRules(spec, [
    {
      interval: '1m',
      input_series: [ready(pod)],
      alert_rule_test: [fires(spec, 'GpuServingPodNotReady', at, { namespace: 'serving', pod, condition: 'true' })],
    },
    { interval: '1m', input_series: [ready(otherPod)], alert_rule_test: [silent('GpuServingPodNotReady', at)] },
  ]);
}

/** The alert data of a monitoring construct, by name. */
export function alertOf(alerts: readonly AlertRule[], name: string): AlertRule {
  const a = alerts.find(x => x.alert === name);
  if (!a) throw new Error(`no alert ${name}`);
  return a;
}

/** A recording-rule group of PromQL queries, for a parse check by `promtool check rules`. */
export function queriesAsRecordingRules(name: string, queries: readonly string[]): { groups: unknown[] } {
  return {
    groups: [{ name, rules: queries.map((expr, i) => ({ record: `cdk8s_gpu:query_${i}`, expr })) }],
  };
}
