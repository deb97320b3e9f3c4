/** Type-checking happens once in `npm run typecheck`; jest only transpiles, which keeps it fast. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.dev.json' }] },
  testTimeout: 120000,
};
