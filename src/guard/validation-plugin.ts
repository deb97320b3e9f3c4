import * as fs from 'fs';
import { guard } from './diff';
import { GuardInputError, loadObjects } from './load';
import type { KubeObject } from './normalize';
import { formatReport } from './report';

/** The parts of cdk8s-cli's ValidationContext the plugin uses (cdk8s-cli is not a runtime dependency). */
export interface GuardValidationContext {
  readonly manifests: readonly string[];
  readonly report: {
    addViolation(v: { ruleName: string; recommendation: string; fix: string; violatingResources: Array<{ resourceName: string; locations: string[]; manifestPath: string }> }): void;
    submit(status: 'success' | 'failure', metadata?: Record<string, string>): void;
  };
  readonly logger: { log(message: string): void };
}

export interface GuardValidationProps {
  /** A folder (or file) of the previously synthesized or live YAML to compare against. */
  readonly baseline: string;
}

/**
 * The guard as a cdk8s-cli validation plugin: declared under `validations:` in cdk8s.yaml with
 * `package: ./node_modules/cdk8s-gpu`, the installed `version`, `class: GuardValidation` and
 * `properties: { baseline: <folder> }`, it makes `cdk8s synth` fail with the guard's findings.
 */
export class GuardValidation {
  private readonly baseline: string;

  constructor(props: GuardValidationProps) {
    if (!props || typeof props.baseline !== 'string') throw new Error('GuardValidation: the `baseline` property (a folder of YAML) is required');
    this.baseline = props.baseline;
  }

  /** Compares the synthesized manifests with the baseline and reports forbidden changes to cdk8s-cli. */
  async validate(context: GuardValidationContext): Promise<void> {
    if (!fs.existsSync(this.baseline)) {
      context.logger.log(`cdk8s-gpu guard: no baseline at ${this.baseline}; nothing to compare`);
      context.report.submit('success');
      return;
    }
    let after: Array<{ o: KubeObject; m: string }>;
    let before: KubeObject[];
    try {
      after = context.manifests.flatMap(m => loadObjects(m).map(o => ({ o, m })));
      before = loadObjects(this.baseline);
    } catch (e) {
      if (!(e instanceof GuardInputError)) throw e;
      context.logger.log(`cdk8s-gpu guard: ${e.message}`);
      context.report.submit('failure', { error: e.message });
      return;
    }
    const result = guard(before, after.map(x => x.o));
    for (const f of result.findings) {
      if (f.severity === 'warning') continue;
      const name = f.object.split('/').pop()!;
      const manifestPath = after.find(x => x.o.metadata.name === name)?.m ?? '';
      context.report.addViolation({
        ruleName: 'cdk8s-gpu/immutable-field',
        recommendation: `${f.object} ${f.path}: ${f.message}`,
        fix: f.remedy,
        violatingResources: [{ resourceName: name, locations: [f.path], manifestPath }],
      });
    }
    context.logger.log(formatReport(result));
    context.report.submit(result.errors > 0 ? 'failure' : 'success', { errors: String(result.errors), warnings: String(result.warnings) });
  }
}
