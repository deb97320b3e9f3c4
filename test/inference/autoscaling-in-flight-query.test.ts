import { inFlightQuery } from '../../src/inference/autoscaling';
import { checkRules, constant, describePromtool, testRules } from '../monitoring/promtool';

const NS = 'serving';
const inFlight = inFlightQuery(
  { running: 'vllm:num_requests_running', waiting: 'vllm:num_requests_waiting' },
  NS,
  'llm-[0-9]+',
);
/** One scrape of `metric` on `pod` by the scrape job `job`. */
const scrape = (metric: string, pod: string, v: number, job = 'llm-headless', ns = NS) =>
  constant(`${metric}{namespace="${ns}",pod="${pod}",job="${job}"}`, v, 10);
const recorded = (expr: string) => ({ groups: [{ name: 'keda', rules: [{ record: 'keda:total', expr }] }] });
const total = (value: number) => ({
  expr: 'keda:total',
  eval_time: '5m',
  exp_samples: [{ labels: 'keda:total', value }],
});

describe('inFlightQuery', () => {
  test('selects the pods in the namespace, one value per pod before the sum', () => {
    expect(inFlight).toBe(
      'sum(max by (pod) (vllm:num_requests_running{namespace="serving",pod=~"llm-[0-9]+"}) + ' +
        'max by (pod) (vllm:num_requests_waiting{namespace="serving",pod=~"llm-[0-9]+"}))',
    );
  });
});

describePromtool('inFlightQuery under promtool', () => {
  test('requests in flight: running plus waiting per pod, each pod once however often scraped', () => {
    expect(checkRules(recorded(inFlight)).ok).toBe(true);
    const run = 'vllm:num_requests_running';
    const wait = 'vllm:num_requests_waiting';
    const r = testRules(recorded(inFlight), [
      {
        name: 'llm-0: 8 running + 2 waiting, scraped twice; llm-1: 6 + 0',
        interval: '1m',
        input_series: [
          scrape(run, 'llm-0', 8),
          scrape(wait, 'llm-0', 2),
          scrape(run, 'llm-0', 8, 'kubernetes-pods'),
          scrape(wait, 'llm-0', 2, 'kubernetes-pods'),
          scrape(run, 'llm-1', 6),
          scrape(wait, 'llm-1', 0),
        ],
        promql_expr_test: [total(16)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('a pod of several engines reads as its busiest; a group whose pods all serve counts once per group', () => {
    // vLLM labels each data-parallel engine's series `engine` (v1/metrics/loggers.py).
    const rank = (metric: string, pod: string, engine: string, v: number) =>
      constant(`${metric}{namespace="${NS}",pod="${pod}",job="h",engine="${engine}"}`, v, 10);
    const run = 'vllm:num_requests_running';
    const wait = 'vllm:num_requests_waiting';
    const group = inFlightQuery({ running: run, waiting: wait }, NS, 'moe-lws-[0-9]+(-[0-9]+)?', 2);
    expect(group).toBe(`${inFlightQuery({ running: run, waiting: wait }, NS, 'moe-lws-[0-9]+(-[0-9]+)?')} / 2`);
    const r = testRules(recorded(group), [
      {
        name: 'group 0: leader busiest 10 + 2, worker 8 + 0; group 1: leader 6 + 0, worker 6 + 0: (12 + 8 + 6 + 6) / 2',
        interval: '1m',
        input_series: [
          rank(run, 'moe-lws-0', '0', 10),
          rank(wait, 'moe-lws-0', '0', 2),
          rank(run, 'moe-lws-0', '1', 4),
          rank(wait, 'moe-lws-0', '1', 1),
          rank(run, 'moe-lws-0-1', '2', 8),
          rank(wait, 'moe-lws-0-1', '2', 0),
          rank(run, 'moe-lws-1', '0', 6),
          rank(wait, 'moe-lws-1', '0', 0),
          rank(run, 'moe-lws-1-1', '2', 6),
          rank(wait, 'moe-lws-1-1', '2', 0),
        ],
        promql_expr_test: [total(16)],
      },
    ]);
    if (!r.ok) throw new Error(r.output);
  });

  test('the sum without max by (pod) would count the twice-scraped pod twice (what the query avoids)', () => {
    const m = 'vllm:num_requests_waiting';
    const plain = `sum(${m}{namespace="${NS}",pod=~"llm-[0-9]+"})`;
    const r = testRules(recorded(plain), [
      {
        interval: '1m',
        input_series: [scrape(m, 'llm-0', 3), scrape(m, 'llm-0', 3, 'kubernetes-pods'), scrape(m, 'llm-1', 4)],
        promql_expr_test: [total(7)],
      },
    ]);
    expect(r.ok).toBe(false);
    expect(r.output).toContain('got: {__name__="keda:total"} 1E+01');
  });
});
