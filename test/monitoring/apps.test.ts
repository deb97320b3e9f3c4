import * as fs from 'fs';
import * as path from 'path';
import { parseAllDocuments } from 'yaml';
import { buildApps } from '../../apps/apps';
import { expectCrdValid } from '../support/crd-schema';
import { synthApps } from '../support/snapshots';
import { checkRules, describePromtool, queriesAsRecordingRules, silent, testRules } from './promtool';

const synthesized = synthApps(buildApps);
/** Alerts the example apps do not switch on (opt-in objectives), emitted by the constructs all the same. */
const ALL_ALERTS = ['GpuServingQueueTimeHigh', 'GpuServingTimeToFirstTokenHigh', 'GpuServingKvCacheSaturated'];
const objectsOf = (file: string): any[] =>
  parseAllDocuments(synthesized.files[file])
    .map(d => d.toJS())
    .filter(Boolean);
const files = Object.keys(synthesized.files);
const rulesOf = (file: string) => objectsOf(file).filter(o => o.kind === 'PrometheusRule');
const dashboardsOf = (file: string) =>
  objectsOf(file).filter(o => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1');

describe('example apps: monitoring', () => {
  test.each(files)('%s has alert rules and a dashboard, valid against the pinned prometheus-operator CRD', file => {
    const rules = rulesOf(file);
    expect(rules.length).toBeGreaterThan(0);
    expect(dashboardsOf(file).length).toBe(rules.length);
    expectCrdValid(rules);
    for (const rule of rules) {
      for (const r of rule.spec.groups.flatMap((g: any) => g.rules))
        expect(r.annotations.runbook_url).toMatch(
          /^https:\/\/github\.com\/cdk8s-gpu\/cdk8s-gpu\/blob\/main\/docs\/monitoring\.md#/,
        );
    }
  });
});

describePromtool('example apps: promtool', () => {
  test.each(files)(
    '%s: promtool checks every rule group and dashboard query, and tests the rules over an empty cluster',
    file => {
      for (const rule of rulesOf(file)) {
        const r = checkRules(rule.spec);
        if (!r.ok) throw new Error(`${file} PrometheusRule/${rule.metadata.name}: ${r.output}`);
      }
      // Under promtool test rules too: with no series at all (a Prometheus that scrapes nothing of
      // this app yet) no alert fires; each alert's firing is tested at its threshold in the
      // construct's own tests.
      for (const rule of rulesOf(file)) {
        const names = rule.spec.groups.flatMap((g: any) => g.rules.map((r: any) => r.alert));
        const r = testRules(rule.spec, [
          {
            interval: '1m',
            input_series: [{ series: 'up{job="nothing"}', values: '1x60' }],
            alert_rule_test: names.map((n: string) => silent(n, 3600)),
          },
        ]);
        if (!r.ok) throw new Error(`${file} PrometheusRule/${rule.metadata.name}: ${r.output}`);
      }
      for (const cm of dashboardsOf(file)) {
        const dashboard = JSON.parse(Object.values(cm.data)[0] as string);
        const queries = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr));
        const r = checkRules(queriesAsRecordingRules(cm.metadata.name, queries));
        if (!r.ok) throw new Error(`${file} ConfigMap/${cm.metadata.name}: ${r.output}`);
      }
    },
  );
});

describe('docs/monitoring.md', () => {
  test('has a runbook section for every alert the constructs can emit', () => {
    const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'monitoring.md'), 'utf8');
    const headings = new Set([...doc.matchAll(/^### (\w+)$/gm)].map(m => m[1]));
    const alerts = new Set(
      files.flatMap(f => rulesOf(f).flatMap(r => r.spec.groups.flatMap((g: any) => g.rules.map((x: any) => x.alert)))),
    );
    for (const name of ALL_ALERTS) alerts.add(name);
    expect([...alerts].filter(a => !headings.has(a))).toEqual([]);
    expect([...headings].filter(h => !alerts.has(h))).toEqual([]);
  });

  test('has a runbook section for every alert named in the monitoring sources, emitted by an app or not', () => {
    const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'monitoring.md'), 'utf8');
    const headings = new Set([...doc.matchAll(/^### (\w+)$/gm)].map(m => m[1]));
    const dir = path.join(__dirname, '..', '..', 'src', 'monitoring');
    const named = fs
      .readdirSync(dir)
      .flatMap(f => [...fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/\balert: '(\w+)'/g)].map(m => m[1]));
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter(a => !headings.has(a))).toEqual([]);
    expect([...headings].filter(h => !named.includes(h))).toEqual([]);
  });
});
