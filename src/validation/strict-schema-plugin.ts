import * as fs from 'fs';
import type { GuardValidationContext } from '../guard/validation-plugin';

export interface StrictSchemaValidationProps {
  /**
   * Kubernetes versions to validate against: any of the API definitions shipped with the library.
   * @default ['1.28.0', '1.36.0'] - the library's API floor and the newest definitions it ships
   */
  readonly versions?: string[];
}

/**
 * Strict validation of every synthesized object against the official Kubernetes OpenAPI
 * definitions shipped with the library, as a cdk8s-cli validation plugin: unknown fields, wrong
 * types, nulls and missing required fields fail `cdk8s synth`, offline, as a strict API server
 * (`kubectl apply --validate=strict`) would. Declare it in cdk8s.yaml:
 *
 * ```yaml
 * validations:
 *   - package: ./node_modules/cdk8s-gpu
 *     version: <installed version>
 *     class: StrictSchemaValidation
 * ```
 *
 * Custom resources (ServiceMonitor, ScaledObject, PodGroup, ...) are checked for metadata only.
 */
export class StrictSchemaValidation {
  private readonly versions: string[];

  constructor(props: StrictSchemaValidationProps = {}) {
    // Loaded here, not at import: a synth without this plugin never reads the definitions.
    const { KUBE_VERSIONS } = require('./strict-schema') as typeof import('./strict-schema');
    const versions = props?.versions ?? [...KUBE_VERSIONS];
    for (const v of versions) {
      if (!KUBE_VERSIONS.includes(v as never)) {
        throw new Error(`StrictSchemaValidation: versions must be among ${KUBE_VERSIONS.join(', ')} (got ${JSON.stringify(v)})`);
      }
    }
    this.versions = versions;
  }

  /** Validates each synthesized manifest and reports every invalid field to cdk8s-cli. */
  async validate(context: GuardValidationContext): Promise<void> {
    const { strictErrors } = require('./strict-schema') as typeof import('./strict-schema');
    const { parseAllDocuments } = require('yaml') as typeof import('yaml');
    let errors = 0;
    for (const manifestPath of context.manifests) {
      const docs = parseAllDocuments(fs.readFileSync(manifestPath, 'utf8'));
      for (const doc of docs) {
        const obj = doc.toJS();
        if (obj === null || obj === undefined) continue;
        const messages = this.versions.flatMap(v => strictErrors(obj, v as never).map(e => `[${v}] ${e}`));
        if (messages.length === 0) continue;
        errors += messages.length;
        context.report.addViolation({
          ruleName: 'cdk8s-gpu/strict-schema',
          recommendation: messages.join('; '),
          fix: 'Remove or correct the fields named: a strict API server rejects the object as it is.',
          violatingResources: [{ resourceName: `${obj.kind}/${obj.metadata?.name}`, locations: messages, manifestPath }],
        });
      }
    }
    context.logger.log(`cdk8s-gpu strict schema: ${errors} error(s) against Kubernetes ${this.versions.join(', ')}`);
    context.report.submit(errors > 0 ? 'failure' : 'success', { errors: String(errors) });
  }
}
