import * as path from 'path';

/** The compiled package (npm test builds lib/ first), as `require('cdk8s-gpu')` sees it. */
const ROOT = path.join(__dirname, '..');

test('the public API is exactly this list: a change to it is deliberate', () => {
  const api = require(path.join(ROOT, 'lib', 'index.js'));
  expect(Object.keys(api).sort()).toEqual([
    'ConfigurationError', 'DEFAULT_RELOAD_IMAGE', 'DisruptionBudget', 'EnvFrom', 'EnvValue', 'GpuTrainingStatefulSet', 'GuardInputError', 'GuardValidation',
    'IMMUTABLE_FIELDS', 'ModelCache', 'PodSecurityLevel', 'Reload', 'RotatingGpuSecret', 'StrictSchemaValidation', 'TGI_DEFAULT_IMAGE', 'TgiInferenceService',
    'TgiQuantization', 'TrainingUpdateStrategy', 'formatReport', 'guard', 'loadObjects', 'parseObjects',
  ]);
});

test('internal modules are not reachable as deep imports', () => {
  const pkg = require(path.join(ROOT, 'package.json'));
  expect(Object.keys(pkg.exports)).toEqual(['.', './package.json']);
  expect(pkg.main).toBe('lib/index.js');
  expect(pkg.bin).toEqual({ 'cdk8s-gpu': 'lib/guard/cli.js' });
});
