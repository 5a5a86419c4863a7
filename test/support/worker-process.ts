import { spawnTasklatch, type CliProcess } from './cli.js';

export interface WorkerProcess extends CliProcess {
  /** Resolves once the worker prints that it runs; rejects, with its stderr, if it exits first. */
  ready: Promise<void>;
  /** Sends `signal` (SIGTERM: drain) unless it has exited, and waits for its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `tasklatch worker …args` with TASKLATCH_LOG_LEVEL=warn and `env` on top of this process's. */
export function spawnWorker(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): WorkerProcess {
  const worker = spawnTasklatch(['worker', ...args], options);
  const { child, exited } = worker;
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => {
      if (/running/.test(worker.stdout())) resolve();
    });
    void exited.then((code) => reject(new Error(`worker exited with ${code} before it ran: ${worker.stderr()}`)));
  });
  // A caller that never waits for `ready` gets no unhandled rejection when its worker exits.
  ready.catch(() => undefined);
  return {
    ...worker,
    ready,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
