import { readFileSync } from 'node:fs';

/** Why a long-running command stops: a signal, or the npm process that launched it went away. */
export type StopReason = NodeJS.Signals | 'launcher exited';

/** How often a process launched by npm checks that its launchers are still there. */
const LAUNCHER_CHECK_MS = 500;

/**
 * Resolves on the first SIGINT or SIGTERM, or, in a process that `npx tasklatch …`, `npm exec`
 * or an npm script started, when the shell npm ran it in or npm itself goes away.
 *
 * npm runs a bin through `sh -c` and forwards SIGINT and SIGTERM to that shell only. A shell that
 * does not exec its last command (dash, /bin/sh on Debian and Ubuntu) dies of a SIGTERM without
 * passing it on, npm exits, and the server would be left orphaned and serving; a SIGKILL of npm
 * leaves the shell and the server behind. The signal never reaches this process, but the loss
 * shows: the parent id changes, or the parent's parent does. Only under npm (`npm_command` set)
 * is that a reason to stop: `nohup tasklatch serve &` from a shell that then exits is orphaned
 * on purpose.
 */
export function untilStopped(env: NodeJS.ProcessEnv = process.env): Promise<StopReason> {
  return new Promise((done) => {
    const stop = (reason: StopReason) => {
      clearInterval(timer);
      process.removeListener('SIGINT', onInt).removeListener('SIGTERM', onTerm);
      done(reason);
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    // `once` semantics: after the first signal the listeners are gone, so a second SIGINT or
    // SIGTERM during the drain ends the process at once, as an impatient operator expects.
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    const parent = process.ppid;
    const grandparent = parentOf(parent);
    const timer =
      env.npm_command === undefined
        ? undefined
        : setInterval(() => {
            if (process.ppid !== parent || (grandparent !== null && parentOf(parent) !== grandparent)) stop('launcher exited');
          }, LAUNCHER_CHECK_MS).unref(); // the check alone never keeps a finished process alive
  });
}

/** The parent of another process, from Linux's /proc; null where there is none (or no /proc). */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (command) state ppid …": the command may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}
