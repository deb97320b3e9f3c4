import * as fs from 'fs';
import type { Finding } from '../guard/diff';
import type { KubeObject } from '../guard/normalize';

/** The parts of cdk8s-cli's ValidationContext the plugin uses (cdk8s-cli is not a runtime dependency). */
export interface GuardValidationContext {
  readonly manifests: readonly string[];
  readonly report: {
    addViolation(v: {
      ruleName: string;
      recommendation: string;
      fix: string;
      violatingResources: Array<{ resourceName: string; locations: string[]; manifestPath: string }>;
    }): void;
    submit(status: 'success' | 'failure', metadata?: Record<string, string>): void;
  };
  readonly logger: { log(message: string): void };
  /** Construct paths by resource name (cdk8s-cli's construct metadata), when cdk8s-cli has them. */
  readonly metadata?: Record<string, { path?: string } | undefined>;
}

export interface GuardValidationProps {
  /** A folder (or file) of the previously synthesized or live YAML to compare against. */
  readonly baseline: string;
  /**
   * The Kubernetes minor version of the target API server, `1.NN`: rules and messages differ
   * between releases.
   * @default '1.32' (the library's API floor)
   */
  readonly serverVersion?: string;
  /**
   * The cluster's Kueue release, `0.NN` (its newest patch) or `0.NN.P`: the rules of Kueue's webhooks
   * for StatefulSets, Jobs, JobSets and LeaderWorkerSets (docs/guard.md). Quote it in
   * cdk8s.yaml (YAML reads 0.10 as the number 0.1).
   * @default '0.10' (the library's Kueue floor for StatefulSets: `pod-group-serving` exists from v0.10.0,
   * kueue#3684; on v0.9 their rolling updates stall, kueue#3690). '0.9' is still modelled when given.
   */
  readonly kueueVersion?: string;
  /**
   * A folder (or file) of CustomResourceDefinitions whose `self == oldSelf` rules apply to the
   * custom resources the app synthesizes (JobSet, LeaderWorkerSet...).
   * @default none: only CRDs among the manifests and the baseline are read
   */
  readonly crds?: string;
}

/**
 * The guard as a cdk8s-cli validation plugin: declared under `validations:` in cdk8s.yaml with
 * `package: ./node_modules/cdk8s-gpu`, the installed `version`, `class: GuardValidation` and
 * `properties: { baseline: <folder>, serverVersion: '1.32' }`, it makes `cdk8s synth` fail with
 * the guard's findings. A missing or empty baseline fails too: a guard that compared nothing must
 * not pass.
 */
export class GuardValidation {
  private readonly baseline: string;
  private readonly serverVersion?: string;
  private readonly kueueVersion?: string;
  private readonly crds?: string;

  constructor(props: GuardValidationProps) {
    if (!props || typeof props.baseline !== 'string' || props.baseline === '') {
      throw new Error(
        'GuardValidation: baseline is required: a folder (or file) of the YAML to compare against (got none)',
      );
    }
    if (
      props.serverVersion !== undefined &&
      (typeof props.serverVersion !== 'string' || !/^1\.\d{1,3}$/.test(props.serverVersion))
    ) {
      // YAML reads an unquoted 1.30 in cdk8s.yaml as the number 1.3.
      const hint =
        typeof props.serverVersion === 'number'
          ? "; quote it in cdk8s.yaml (serverVersion: '1.30'), YAML reads 1.30 as the number 1.3"
          : '';
      throw new Error(
        `GuardValidation: serverVersion must be a Kubernetes minor version such as '1.32' (got ${JSON.stringify(props.serverVersion)})${hint}`,
      );
    }
    if (
      props.kueueVersion !== undefined &&
      (typeof props.kueueVersion !== 'string' || !/^v?0\.\d{1,3}(\.\d{1,3})?$/.test(props.kueueVersion))
    ) {
      const hint =
        typeof props.kueueVersion === 'number'
          ? "; quote it in cdk8s.yaml (kueueVersion: '0.10'), YAML reads 0.10 as the number 0.1"
          : '';
      throw new Error(
        `GuardValidation: kueueVersion must be a Kueue release such as '0.9' or '0.10.2' (got ${JSON.stringify(props.kueueVersion)})${hint}`,
      );
    }
    this.baseline = props.baseline;
    this.serverVersion = props.serverVersion;
    this.kueueVersion = props.kueueVersion;
    if (props.crds !== undefined && (typeof props.crds !== 'string' || props.crds === '')) {
      throw new Error(
        `GuardValidation: crds must be a folder or file of CustomResourceDefinitions (got ${JSON.stringify(props.crds)})`,
      );
    }
    this.crds = props.crds;
  }

  /** Compares the synthesized manifests with the baseline and reports forbidden changes to cdk8s-cli. */
  async validate(context: GuardValidationContext): Promise<void> {
    const { plan } = require('../guard/plan') as typeof import('../guard/plan');
    const { formatPlan } = require('../guard/plan-report') as typeof import('../guard/plan-report');
    const { GuardInputError, loadObjects, parseObjects } = require('../guard/load') as typeof import('../guard/load');
    const failInput = (message: string) => {
      context.logger.log(`cdk8s-gpu guard: ${message}`);
      context.report.submit('failure', { error: message });
    };
    if (!fs.existsSync(this.baseline)) {
      failInput(
        `no baseline at ${this.baseline}: commit the last reviewed output there (e.g. cp -r dist ${this.baseline}), or remove the validation`,
      );
      return;
    }
    const after: Array<{ o: KubeObject; m: string }> = [];
    let before: KubeObject[];
    let result;
    let rollout;
    try {
      // A chart may synthesize an empty file; only no objects at all is an error.
      for (const m of context.manifests) {
        let text: string;
        try {
          text = fs.readFileSync(m, 'utf8');
        } catch (e) {
          throw new GuardInputError(`${m}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
        }
        for (const o of parseObjects(text, m)) after.push({ o, m });
      }
      if (after.length === 0)
        throw new GuardInputError('the synthesized manifests hold no objects: nothing to compare with the baseline');
      before = loadObjects(this.baseline);
      const customResourceDefinitions = this.crds === undefined ? [] : loadObjects(this.crds);
      // The plan carries the guard's result, and what the change restarts, for the log.
      rollout = plan(
        before,
        after.map(x => x.o),
        { serverVersion: this.serverVersion, kueueVersion: this.kueueVersion, customResourceDefinitions },
      );
      result = rollout.guard;
    } catch (e) {
      if (!(e instanceof GuardInputError)) throw e;
      failInput(e.message);
      return;
    }
    // cdk8s-cli finds a construct path by resource name alone (construct-metadata.json is keyed by
    // metadata.name, the last object of a name wins), so a StatefulSet and the PDB that shares its
    // name are indistinguishable there. A unique name is looked up as is. A shared one is reported
    // as kind/name; when every object of that name comes from one cdk8s-gpu construct (one
    // app.kubernetes.io/instance), that construct's path (the parent of the recorded one) is
    // registered under kind/name, so the report names the user's construct and never a sibling.
    const byName = new Map<string, KubeObject[]>();
    for (const { o } of after) {
      const list = byName.get(o.metadata.name);
      if (list) list.push(o);
      else byName.set(o.metadata.name, [o]);
    }
    const metadata = context.metadata;
    const resourceName = (f: Finding): string => {
      const same = byName.get(f.name) ?? [];
      if (same.length <= 1) return f.name;
      const key = `${f.kind}/${f.name}`;
      const recorded = metadata?.[f.name]?.path;
      const instances = new Set(same.map(o => o.metadata.labels?.['app.kubernetes.io/instance']));
      const ours = same.every(o => o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'cdk8s-gpu');
      if (metadata && recorded && recorded.includes('/') && ours && instances.size === 1 && !instances.has(undefined)) {
        metadata[key] ??= { path: recorded.slice(0, recorded.lastIndexOf('/')) };
      }
      return key;
    };
    // One map, not a search per finding: a large change set stays linear.
    const manifests = new Map<string, string>();
    for (const { o, m } of after) {
      manifests.set(`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, m);
      if (!manifests.has(`${o.kind}//${o.metadata.name}`)) manifests.set(`${o.kind}//${o.metadata.name}`, m);
    }
    const manifestOf = (f: Finding) =>
      manifests.get(`${f.kind}/${f.namespace ?? ''}/${f.name}`) ?? manifests.get(`${f.kind}//${f.name}`) ?? '';
    for (const f of result.findings) {
      if (f.severity === 'warning') continue;
      context.report.addViolation({
        ruleName: 'cdk8s-gpu/immutable-field',
        recommendation: `${f.object} ${f.path}: ${f.message}`,
        fix: f.remedy,
        violatingResources: [
          { resourceName: resourceName(f), locations: [`${f.kind}/${f.name}: ${f.path}`], manifestPath: manifestOf(f) },
        ],
      });
    }
    context.logger.log(formatPlan(rollout));
    context.report.submit(result.errors > 0 ? 'failure' : 'success', {
      errors: String(result.errors),
      warnings: String(result.warnings),
      objectsBefore: String(result.objects.before),
      objectsAfter: String(result.objects.after),
      serverVersion: result.serverVersion,
      kueueVersion: result.kueueVersion,
    });
  }
}
