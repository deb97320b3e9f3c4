import { Chart, Duration, Size, Testing } from 'cdk8s';
import { ConfigurationError, guard } from '../../src';
import { API_SINCE_MINOR } from '../../src/validation/kube-versions';
import { show } from '../../src/validation/validate';
import { buildService, COMBINATIONS, EXTREMES as SERVING_EXTREMES, SHARED, SPECIFIC } from '../inference/props-cases';
import { EngineCase, ENGINES } from '../inference/support';
import { validateApp } from '../support/synth';
import {
  ADOPTION,
  buildTrainer,
  combination,
  COMBINATION_ROUNDS,
  EXTREMES as TRAINING_EXTREMES,
  TABLE,
} from '../training/props-cases';
import { vendoredCrds } from './crds';
import {
  Cluster,
  describeCluster,
  minorOf,
  PodSecurityLevel,
  podSecurityLabels,
  pool,
  problems,
  Response,
} from './kube';

/**
 * The props sweeps (test/inference/props-cases.ts, test/training/props-cases.ts) on a real API server:
 * every input a construct accepts, alone and combined, is synthesized and applied server-side with
 * strict field validation, each case in a namespace of its own that enforces (and warns at) the Pod
 * Security level the construct reports. The server must refuse none of it and warn about none of it:
 * an input the server refuses must be refused by the construct first, naming the prop. Extremes a
 * caller may pass (sizes of 1e300 GiB, a gpuConfig past a ConfigMap's 1 MiB) must be refused by the
 * construct by name, or else accepted by the server too.
 *
 * The accepted values are applied as server-side dry runs (validation, admission, webhooks and
 * warnings, nothing stored); each namespace also holds a ResourceQuota of zero pods, so the stored
 * extremes make no pods. The sweep does not wait for service accounts.
 */

/** Namespaces of this run: an earlier run's may still be terminating on a long-lived cluster. */
const RUN = Date.now().toString(36);

interface Case {
  /** Short name for the namespace: `tgi`, `vllm`, `sglang`, `train`. */
  readonly area: string;
  readonly construct: string;
  /** The prop a refusal must name (undefined for a combination). */
  readonly prop?: string;
  /** What the case sets, as a report shows it. */
  readonly what: string;
  readonly build: (namespace: string) => { chart: Chart; construct: { podSecurityLevel: PodSecurityLevel } };
}

/** A value as a report shows it: sizes and durations in their units, long strings cut to `max`. */
function shown(value: unknown, max = 160): string {
  const text =
    value instanceof Size || value instanceof Duration
      ? show(value)
      : (JSON.stringify(value, (_k, x: unknown) => (x instanceof Size || x instanceof Duration ? show(x) : x)) ??
        String(value));
  return text.length > max ? `${text.slice(0, max - 40)}... (${text.length} characters)` : text;
}

const area = (construct: string) => construct.replace(/InferenceService$/, '').toLowerCase();

/** One engine's case: the construct over `props`. */
const servingCase = (e: EngineCase, prop: string | undefined, what: string, props: Record<string, unknown>): Case => ({
  area: area(e.construct),
  construct: e.construct,
  prop,
  what: `${e.construct} ${what}`,
  build: ns => {
    const { chart, service } = buildService(e, props, ns);
    return { chart, construct: service };
  },
});

const trainingCase = (prop: string | undefined, what: string, props: Record<string, unknown>): Case => ({
  area: 'train',
  construct: 'GpuTrainingStatefulSet',
  prop,
  what: `GpuTrainingStatefulSet ${what}`,
  build: ns => {
    const { chart, trainer } = buildTrainer(props, ns);
    return { chart, construct: trainer };
  },
});

/** The sweep's groups of cases, each one test. */
function groups(): Array<{ name: string; cases: Case[]; extremes?: boolean }> {
  const out: Array<{ name: string; cases: Case[]; extremes?: boolean }> = [];
  for (const e of ENGINES) {
    out.push({
      name: `${e.construct}: each accepted value of each prop`,
      cases: [...SHARED, ...SPECIFIC[e.construct]]
        .filter(([, , accepted]) => accepted)
        .map(([prop, value]) => servingCase(e, prop, `${prop} = ${shown(value)}`, { [prop]: value })),
    });
    out.push({
      name: `${e.construct}: each accepted combination`,
      cases: COMBINATIONS.filter(([, , accepted]) => accepted).map(([label, props]) =>
        servingCase(e, undefined, `combination "${label}" (${shown(props)})`, props),
      ),
    });
  }
  out.push({
    name: 'GpuTrainingStatefulSet: each accepted value of each prop',
    cases: Object.entries(TABLE).flatMap(([prop, values]) =>
      values.ok.map(value => trainingCase(prop, `${prop} = ${shown(value)}`, { [prop]: value })),
    ),
  });
  out.push({
    name: "GpuTrainingStatefulSet: each combination of every prop's accepted values, and adoptVolumes",
    cases: [
      ...Array.from({ length: COMBINATION_ROUNDS }, (_, k) =>
        trainingCase(undefined, `combination ${k} (${shown(combination(k))})`, combination(k)),
      ),
      trainingCase('adoptVolumes', `adoptVolumes (${shown(ADOPTION)})`, ADOPTION),
    ],
  });
  out.push({
    name: 'extremes: each is refused by the construct, naming the prop, or accepted by the server',
    extremes: true,
    cases: [
      ...ENGINES.flatMap(e =>
        SERVING_EXTREMES.map(([prop, value]) => servingCase(e, prop, `${prop} = ${shown(value)}`, { [prop]: value })),
      ),
      ...TRAINING_EXTREMES.map(([prop, value]) => trainingCase(prop, `${prop} = ${shown(value)}`, { [prop]: value })),
    ],
  });
  return out;
}

const describeOf = (o: any) => `${o.kind}/${o.metadata?.name}`;
const problemsOf = (r: Response) =>
  problems(r).map(p => (p.length > 1000 ? `${p.slice(0, 960)}... (${p.length} characters)` : p));
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describeCluster('every input the constructs accept, on a real API server', (cluster: Cluster) => {
  jest.setTimeout(300_000);
  const sweep = groups();
  const minor = Number(minorOf(cluster.version).split('.')[1]);
  const namespaces: string[] = [];
  const counters = new Map<string, number>();
  /** What the construct or the server said of each extreme, for the log. */
  const verdicts: string[] = [];

  beforeAll(() => cluster.installCrds(vendoredCrds()), 240_000);
  afterAll(async () => {
    if (verdicts.length > 0)
      console.log(`extremes on Kubernetes ${cluster.version}:\n${verdicts.map(v => `  ${v}`).join('\n')}`);
    await pool(namespaces, 16, ns => cluster.request('DELETE', `/api/v1/namespaces/${ns}`));
    cluster.close();
  }, 240_000);

  /** Synthesizes a case into its own namespace and applies it; the problems found, each one line. */
  async function run(c: Case, extreme: boolean): Promise<string[]> {
    const n = counters.get(c.area) ?? 0;
    counters.set(c.area, n + 1);
    const ns = `sweep-${c.area}-${n}-${RUN}`;
    let objects: any[];
    let level: PodSecurityLevel;
    try {
      const { chart, construct } = c.build(ns);
      // What `cdk8s synth` runs (the constructs' own validations), not the tests' schema check: the
      // server is the judge of the output.
      validateApp(chart);
      objects = Testing.synth(chart);
      level = construct.podSecurityLevel;
    } catch (e) {
      const message = String((e as Error)?.message ?? e);
      const byName =
        e instanceof ConfigurationError &&
        c.prop !== undefined &&
        new RegExp(`^${c.construct} '[^']*': ${escape(c.prop)}[ .\\[(]`).test(message);
      if (extreme && byName) {
        verdicts.push(`${c.what}: refused by the construct: ${message}`);
        return [];
      }
      return [`${c.what}: refused by the construct${extreme ? ' without naming the prop' : ''}: ${message}`];
    }
    // Output for a newer API than this server's (dynamicResourceAllocation needs 1.34): the guard for this
    // version must refuse it; what the server itself does with it is test/cluster/dynamic-resources.test.ts.
    const needs = Math.max(0, ...objects.map(o => API_SINCE_MINOR[o.apiVersion] ?? 0));
    if (needs > minor) {
      const codes = guard([], objects, { serverVersion: minorOf(cluster.version) }).findings.map(f => f.code);
      return codes.includes('api-not-served') && codes.includes('claims-dropped')
        ? []
        : [
            `${c.what}: needs Kubernetes 1.${needs}, but the guard for ${cluster.version} refuses nothing (${codes.join(', ')})`,
          ];
    }
    const labels = podSecurityLabels(level);
    namespaces.push(ns);
    const setup = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } },
      {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'no-pods', namespace: ns },
        spec: { hard: { pods: '0' } },
      },
    ];
    for (const o of setup) {
      const r = await cluster.apply(o);
      if (r.status >= 300) throw new Error(`${describeOf(o)} of ${ns}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const found: string[] = [];
    for (const o of objects) {
      if (o.metadata.namespace !== ns) {
        found.push(`${describeOf(o)} is not in the chart's namespace (${o.metadata.namespace})`);
        continue;
      }
      // A dry run for the accepted values: the server validates, admits and warns as for a real apply,
      // but stores nothing, so no controller acts on thousands of objects (a StatefulSet of 2^31-1
      // replicas, accepted by the server, makes kube-controller-manager allocate a slice of that many
      // pods: 16 GB). The extremes are stored, so that limits of storage answer too.
      const r = await cluster.apply(o, { dryRun: !extreme });
      found.push(...problemsOf(r).map(p => `${describeOf(o)} in ${ns} (${level}): ${p}`));
    }
    if (extreme)
      verdicts.push(`${c.what}: accepted by the construct; the server ${found.length ? found.join('; ') : 'too'}`);
    return found.map(f => `${c.what}: ${f}`);
  }

  test('the sweep has cases at every Pod Security level', () => {
    const levels = sweep
      .filter(g => !g.extremes)
      .flatMap(g => g.cases)
      .map(c => c.build(`level-probe`).construct.podSecurityLevel);
    expect(new Set(levels)).toEqual(new Set(['restricted', 'baseline', 'privileged']));
  });

  test.each(sweep.map(g => [g.name, g] as const))('%s: no refusal and no warning', async (_name, g) => {
    expect(g.cases.length).toBeGreaterThan(0);
    const found = await pool(g.cases, 16, c => run(c, g.extremes === true));
    expect(found.flat()).toEqual([]);
  });
});
