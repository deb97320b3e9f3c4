/**
 * What a test does when a real program it runs is not installed: loud on a developer's machine, where
 * `npm test` must still pass with what the README says to install, and fatal in CI (CI=true), where
 * `.ci/run` installs every such program first and a silent skip would hide an untested path.
 */
export function missingTool(message: string): void {
  const loud = message.startsWith('!!!') ? message : `!!! ${message}`;
  console.warn(loud);
  if (process.env.CI) throw new Error(loud);
}
