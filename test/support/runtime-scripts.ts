import { RuntimeScript, scriptPath } from '../../src/common/runtime-scripts';
import { hubDownloadScript } from '../../src/inference/engine';
import { reloadScript } from '../../src/secrets/sidecar';
import { launchScript } from '../../src/training/launch';

/** Every script the library ships in a ConfigMap, by the path its pods run it from. */
const SHIPPED: ReadonlyMap<string, RuntimeScript> = new Map(
  [hubDownloadScript(), launchScript(), reloadScript()].map(s => [scriptPath(s), s]),
);

/**
 * A container's `sh -c` command with its script as the pod runs it: a command that sources a shipped
 * script (`sh -c '. /opt/cdk8s-gpu/<name>/<file>' argv0`) becomes `sh -c <the ConfigMap's content> argv0`,
 * which the shell runs alike (`$0` and `"$@"` are the same; test/common/runtime-scripts.test.ts shows
 * it under dash and busybox); an inline one is returned as it is. The harnesses edit and run the text.
 */
export function inlineCommand(command: readonly string[]): string[] {
  const [sh, flag, script, ...rest] = command;
  const sourced = /^\. (\S+)$/.exec(script ?? '');
  const shipped = sourced ? SHIPPED.get(sourced[1]) : undefined;
  if (sourced && !shipped) throw new Error(`no shipped script at ${sourced[1]}`);
  return shipped ? [sh, flag, shipped.content, ...rest] : [...command];
}
