import { ChildProcess } from 'child_process';

/**
 * Resolves when a child process the test started has exited and its output has been read.
 *
 * Node may emit 'exit' before the last bytes on stdout or stderr have been read: CI once saw an
 * empty output from a script that had already printed its error and exited 1. 'close' waits for
 * the pipes, but never comes while a grandchild (a sleep the script started) still holds them, so
 * the pipes get a bounded wait after the exit instead.
 */
export function exitWithOutput(
  proc: ChildProcess,
  pipeWaitMs = 1000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const pipes = [proc.stdout, proc.stderr]
    .filter(s => s !== null)
    .map(
      s =>
        new Promise<void>(done => {
          if (s.readableEnded || s.destroyed) return done();
          s.once('end', done);
          s.once('close', done);
        }),
    );
  return new Promise(resolve => {
    proc.once('exit', (code, signal) => {
      const timer = setTimeout(() => resolve({ code, signal }), pipeWaitMs);
      timer.unref();
      void Promise.all(pipes).then(() => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
  });
}
