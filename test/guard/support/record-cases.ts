// Records every guard() call the guard's own tests make, with the guard's verdict, one JSON line per
// call, into the file CDK8S_GPU_GUARD_RECORD names. test/cluster/guard-own-cases.test.ts runs the
// guard's tests with this file as a setup file (jest --setupFilesAfterEnv) and replays each recorded
// case on the real API server. Not loaded otherwise.
jest.mock('../../../src/guard/diff', () => {
  const actual = jest.requireActual('../../../src/guard/diff');
  const fs = require('fs');
  return {
    ...actual,
    guard: (before: unknown[], after: unknown[], options?: Record<string, unknown>) => {
      const result = actual.guard(before, after, options);
      const state = expect.getState();
      const errors = result.findings.filter((f: any) => f.severity === 'error').map((f: any) => f.path);
      fs.appendFileSync(
        process.env.CDK8S_GPU_GUARD_RECORD,
        `${JSON.stringify({ test: `${state.testPath}: ${state.currentTestName}`, before, after, options, errors })}\n`,
      );
      return result;
    },
  };
});
