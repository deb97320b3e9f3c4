import * as path from 'path';

/** The compiled package (npm test builds lib/ first), as `require('cdk8s-gpu')` sees it. */
const ROOT = path.join(__dirname, '..');

test('the public API is exactly this list: a change to it is deliberate', () => {
  const api = require(path.join(ROOT, 'lib', 'index.js'));
  expect(Object.keys(api).sort()).toEqual([
    'All2AllBackend',
    'Autoscaler',
    'ConfigurationError',
    'DEFAULT_FAILURE_RULES',
    'DEFAULT_MONITORING_NAMESPACE',
    'DEFAULT_RELOAD_IMAGE',
    'DISAGG_SIDECAR_IMAGE',
    'DeviceSelector',
    'Disaggregation',
    'DisruptionBudget',
    'ENDPOINT_PICKER_START_SECONDS',
    'EPP_DEFAULT_IMAGE',
    'EnvFrom',
    'EnvValue',
    'ExpertParallel',
    'FailureMode',
    'GpuTrainingJob',
    'GpuTrainingStatefulSet',
    'GuardCheck',
    'GuardInputError',
    'GuardValidation',
    'IMMUTABLE_FIELDS',
    'InferenceGateway',
    'InferenceGatewayMonitoring',
    'InferenceServiceMonitoring',
    'IpFamily',
    'KueueRunning',
    'KvCacheOffload',
    'KvTransfer',
    'ModelCache',
    'NAMESPACE_NAME_LABEL',
    'NetworkAccess',
    'NetworkPeer',
    'PLAN_SCHEMA_VERSION',
    'PodSecurityLevel',
    'PrefixCacheScoring',
    'ROLE_LABEL',
    'RankEndpoints',
    'Rdma',
    'Reload',
    'RotatingGpuSecret',
    'SGLANG_DEFAULT_IMAGE',
    'SecretRotationMonitoring',
    'SecretType',
    'SglangInferenceService',
    'SglangQuantization',
    'StrictSchemaValidation',
    'TGI_DEFAULT_IMAGE',
    'TgiInferenceService',
    'TgiQuantization',
    'TrainingFailureAction',
    'TrainingMonitoring',
    'TrainingUpdateStrategy',
    'VLLM_DEFAULT_IMAGE',
    'VllmInferenceService',
    'VllmQuantization',
    'WorkloadKind',
    'checkManifests',
    'formatPlan',
    'formatPlanMarkdown',
    'formatReport',
    'guard',
    'loadObjects',
    'parseObjects',
    'plan',
    'planToJson',
  ]);
});

test('internal modules are not reachable as deep imports', () => {
  const pkg = require(path.join(ROOT, 'package.json'));
  expect(Object.keys(pkg.exports)).toEqual(['.', './package.json']);
  expect(pkg.main).toBe('lib/index.js');
  expect(pkg.bin).toEqual({ 'cdk8s-gpu': 'lib/guard/cli.js' });
});

test('the package ships its docs and assets, and links work on the registry page', () => {
  const pkg = require(path.join(ROOT, 'package.json'));
  for (const key of ['repository', 'homepage', 'bugs']) expect(pkg[key]).toBeTruthy();
  const { execFileSync } = require('child_process');
  const [pack] = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }),
  );
  const files: string[] = pack.files.map((f: { path: string }) => f.path);
  expect(files).toEqual(
    expect.arrayContaining([
      'README.md',
      'CHANGELOG.md',
      'docs/API.md',
      'LICENSE',
      'lib/index.js',
      'lib/index.d.ts',
      'lib/validation/schemas/k8s-v1.32.0.json',
      'lib/validation/schemas/k8s-v1.36.0.json',
      'lib/secrets/reload-sidecar.sh',
      'lib/training/launch.sh',
    ]),
  );
  expect(files.filter(f => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
});
