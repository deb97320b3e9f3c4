import * as fs from 'fs';
import type { GuardValidationContext } from './guard-plugin';
import type { KubeVersion } from '../validation/kube-versions';

export interface StrictSchemaValidationProps {
  /**
   * Kubernetes versions to validate against: any of the API definitions shipped with the library.
   * @default ['1.32.0', '1.36.0'] - the library's API floor and the newest definitions it ships
   */
  readonly versions?: string[];
}

/**
 * Strict validation of every synthesized object against the official Kubernetes OpenAPI
 * definitions shipped with the library, as a cdk8s-cli validation plugin: unknown fields, wrong
 * types and missing required fields fail `cdk8s synth`, offline, as a strict API server
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
    const { KUBE_VERSIONS } = require('../validation/strict-schema') as typeof import('../validation/strict-schema');
    const versions = props?.versions ?? [...KUBE_VERSIONS];
    for (const v of versions) {
      if (!KUBE_VERSIONS.includes(v as never)) {
        throw new Error(
          `StrictSchemaValidation: versions must be among ${KUBE_VERSIONS.join(', ')} (got ${JSON.stringify(v)})`,
        );
      }
    }
    this.versions = versions;
  }

  /**
   * Reads each synthesized manifest as kubectl does, validates every object strictly, then runs the
   * output rules over the whole app once (duplicates, number-like strings, rotating-Secret env
   * reads: see `checkManifests`), and reports every violation to cdk8s-cli.
   */
  async validate(context: GuardValidationContext): Promise<void> {
    const { strictErrors } = require('../validation/strict-schema') as typeof import('../validation/strict-schema');
    const { API_SINCE_MINOR, apisFor, NEWEST_API } =
      require('../validation/kube-versions') as typeof import('../validation/kube-versions');
    const { GuardInputError, parseObjects } = require('../guard/load') as typeof import('../guard/load');
    const { checkManifests } = require('../checks/manifests') as typeof import('../checks/manifests');
    let errors = 0;
    const all: unknown[] = [];
    const violation = (
      ruleName: string,
      resourceName: string,
      messages: string[],
      fix: string,
      manifestPath: string,
    ) => {
      errors += messages.length;
      context.report.addViolation({
        ruleName,
        recommendation: messages.join('; '),
        fix,
        violatingResources: [{ resourceName, locations: messages, manifestPath }],
      });
    };
    for (const manifestPath of context.manifests) {
      let objects: unknown[];
      try {
        objects = parseObjects(fs.readFileSync(manifestPath, 'utf8'), manifestPath);
      } catch (e) {
        if (!(e instanceof GuardInputError)) throw e;
        violation(
          'cdk8s-gpu/readable',
          manifestPath,
          [e.message],
          'kubectl cannot read this file as it is; quote or correct the value named.',
          manifestPath,
        );
        continue;
      }
      for (const obj of objects as any[]) {
        all.push(obj);
        // An API newer than the floor (resource.k8s.io/v1) is checked from the first version that serves it.
        const versions = apisFor(obj?.apiVersion, this.versions as KubeVersion[]);
        const messages =
          versions.length > 0
            ? versions.flatMap(v => strictErrors(obj, v).map(e => `[${v}] ${e}`))
            : [
                `${obj.apiVersion} is served from Kubernetes 1.${API_SINCE_MINOR[obj.apiVersion]}: none of the versions checked (${this.versions.join(', ')}) has it; add ${NEWEST_API}`,
              ];
        if (messages.length === 0) continue;
        violation(
          'cdk8s-gpu/strict-schema',
          `${obj.kind}/${obj.metadata?.name}`,
          messages,
          'Remove or correct the fields named: a strict API server rejects the object as it is.',
          manifestPath,
        );
      }
    }
    const outputErrors = checkManifests(all);
    if (outputErrors.length > 0) {
      violation(
        'cdk8s-gpu/output',
        'app',
        outputErrors,
        'Each message names the object and what to change.',
        context.manifests.join(', '),
      );
    }
    context.logger.log(`cdk8s-gpu strict schema: ${errors} error(s) against Kubernetes ${this.versions.join(', ')}`);
    context.report.submit(errors > 0 ? 'failure' : 'success', { errors: String(errors) });
  }
}
