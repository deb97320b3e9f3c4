/**
 * Type-checking happens once in `npm run typecheck`; jest only transpiles, which keeps it fast.
 * All cores run test files (jest's default leaves one idle): the suite's long files are waits on
 * child processes (the shell scripts under dash and busybox), not CPU, so they overlap well.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.dev.json' }] },
  maxWorkers: '100%',
  testTimeout: 120000,
  // The real control plane (test/cluster/cluster.js) the cluster tests apply the output to.
  globalSetup: '<rootDir>/test/cluster/global-setup.js',
  globalTeardown: '<rootDir>/test/cluster/global-teardown.js',
};
