import { TasklatchError } from '../core/errors.js';
import { processIo, type CliIo } from './io.js';
import { packageVersion } from './version.js';

const USAGE = `tasklatch: durable, race-safe MCP tasks

Usage: tasklatch <command> [options]
       tasklatch --version

Commands:
  serve [--http [HOST:]PORT | --stdio]  serve MCP tools with durable tasks (demo tools on SQLite by default)
  worker [--store URL]                  run admitted tasks beside 'serve --no-workers' processes
  migrate [--store URL]                 create or upgrade the store's schema
  replay FILE [--store URL] [--json]    replay a contract fixture through a store
  tasks ls|show|audit|cancel|stats      look at and repair the tasks of every tenant in a store
  prune [--retention D] [--dry-run]     remove finished and expired tasks and audit rows past the retention
  doctor [--store URL]                  check the store as /readyz does, and say what to fix

Run 'tasklatch <command> --help' for a command's options.`;

type Command = (argv: string[], io: CliIo) => Promise<number>;

/**
 * Each command's module, loaded when it runs: `serve` and `worker` load the MCP SDK, the HTTP
 * front and the runtime (about half a second), which `tasks`, `replay`, `migrate`, `prune`,
 * `doctor` and `--version` have no use for.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  replay: async () => (await import('./replay-command.js')).replayCommand,
  serve: async () => (await import('./serve-command.js')).serveCommand,
  migrate: async () => (await import('./migrate-command.js')).migrateCommand,
  worker: async () => (await import('./worker-command.js')).workerCommand,
  tasks: async () => (await import('./tasks-command.js')).tasksCommand,
  prune: async () => (await import('./prune-command.js')).pruneCommand,
  doctor: async () => (await import('./doctor-command.js')).doctorCommand,
};

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.out(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    io.out(await packageVersion());
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.err(`tasklatch: unknown command ${JSON.stringify(name)}\n\n${USAGE}`);
    return 2;
  }
  const command = await load();
  try {
    return await command(rest, io);
  } catch (error) {
    if (error instanceof TasklatchError) {
      io.err(`tasklatch ${name}: ${error.message}`);
      return 2;
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true) {
      io.err(`tasklatch ${name}: ${error.message}`);
      return 2;
    }
    throw error;
  }
}
