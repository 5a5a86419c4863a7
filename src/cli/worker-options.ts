import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkAppName, DEFAULT_APP } from '../core/app-name.js';
import { isTasklatchError, TasklatchError } from '../core/errors.js';
import { conformanceTools } from '../demo/conformance-tools.js';
import { demoTools } from '../demo/demo-tools.js';
import type { TaskTool } from '../tools/tool.js';
import type { ExecutionHooks } from '../worker/task-executor.js';
import type { WorkerOptions } from '../worker/worker.js';
import { openStore } from '../store/open-store.js';
import type { TaskStore } from '../store/types.js';
import type { Logger } from '../runtime/log.js';
import { listenStoreUrlFrom, STORE_USAGE_LINE, storeUrlFrom } from './store-url.js';
import { startTraceSdk, type TraceSdk } from './trace-sdk.js';
import { appOfToolsModule, isToolsPath, loadToolsModule } from './tools-module.js';

/** parseArgs options shared by `serve` and `worker`: where tasks live, which tools, how they run. */
export const WORKER_ARG_OPTIONS = {
  store: { type: 'string' },
  'listen-store': { type: 'string' },
  exports: { type: 'string', default: './.tasklatch/exports' },
  demo: { type: 'boolean', default: true },
  tools: { type: 'string', default: 'demo' },
  app: { type: 'string' },
  concurrency: { type: 'string' },
  'lease-ms': { type: 'string' },
  'version-silence-ms': { type: 'string' },
  'poll-interval': { type: 'string' },
  'wait-for-store': { type: 'string' },
  retention: { type: 'string' },
  'max-journal-steps': { type: 'string' },
  'max-journal-bytes': { type: 'string' },
  help: { type: 'boolean' },
} as const;

export const WORKER_USAGE_LINES = `${STORE_USAGE_LINE}, or memory
  --listen-store URL     with pgbouncer=true: a direct postgres:// URL to the same database for LISTEN
                         (default $TASKLATCH_LISTEN_STORE); without one, waiters and workers poll
  --exports DIR          where export_ledger writes (default ./.tasklatch/exports)
  --tools SET|PATH       the tools: demo (default), conformance (what the MCP conformance suite calls), or a
                         module of your own (./tools.js: default export or named "tools", an array of
                         tool definitions or a function returning one); give serve and every worker the same
  --no-demo              serve no tools at all
  --app NAME             the application the tools belong to: tasks record it, and workers claim only its
                         tasks (default: the name in the package.json nearest above a --tools module,
                         else its file name; tasklatch-demo for the demo tools, tasklatch-conformance
                         for the conformance tools); give serve and its workers the same
  --concurrency N        tasks one worker runs at once (default 4)
  --lease-ms MS          lease per claimed task (default 30000); a dead worker's tasks wait this long
  --version-silence-ms MS  a worker silent this long no longer counts for its tools' version (default 30000):
                         the newest version's workers then take that version's tasks; give every worker the same
  --poll-interval MS     pollInterval suggested to clients, and the heartbeat bound (default 1000)
  --wait-for-store MS    keep retrying an unreachable store this long at start (default 30000)
  --retention DURATION   keep finished and expired tasks and their audit trails this long, then remove
                         them (7d, 36h, 90m, 30s or milliseconds; default 7d)
  --max-journal-steps N  steps and sleeps one task's journal records (default 1000)
  --max-journal-bytes N  bytes of values one task's journal records, as JSON (default 8388608)`;

export interface WorkerArgs {
  store?: string | undefined;
  'listen-store'?: string | undefined;
  exports: string;
  demo: boolean;
  tools: string;
  app?: string | undefined;
  concurrency?: string | undefined;
  'lease-ms'?: string | undefined;
  'version-silence-ms'?: string | undefined;
  'wait-for-store'?: string | undefined;
}

/** The named tool sets of `--tools`. */
const TOOL_SETS: Record<string, (values: WorkerArgs) => TaskTool[]> = {
  demo: (values) => demoTools({ exportsDir: resolve(values.exports) }),
  conformance: () => conformanceTools(),
};

/** The tools of `--tools`: a named set, or the user's module (loaded, and checked, here). */
export async function toolsFrom(values: WorkerArgs): Promise<TaskTool[]> {
  if (isToolsPath(values.tools)) return loadToolsModule(values.tools);
  if (!values.demo) return [];
  const set = TOOL_SETS[values.tools];
  if (set === undefined)
    throw new TasklatchError(
      'INVALID_INPUT',
      `--tools takes ${Object.keys(TOOL_SETS).join(' or ')} or a module path (./tools.js), got ${JSON.stringify(values.tools)}`,
    );
  return set(values);
}

/** The app of each named tool set of `--tools`. */
const TOOL_SET_APPS: Record<string, string> = { demo: 'tasklatch-demo', conformance: 'tasklatch-conformance' };

/**
 * The app of `--app`, else the one its `--tools` belongs to (see `WORKER_USAGE_LINES`), checked:
 * a bad name is refused before anything starts.
 */
export function appFrom(values: WorkerArgs): string {
  if (values.app !== undefined) return checkAppName(values.app, '--app');
  if (isToolsPath(values.tools)) {
    const derived = appOfToolsModule(values.tools);
    try {
      return checkAppName(derived);
    } catch (error) {
      throw new TasklatchError('INVALID_INPUT', `--tools ${values.tools}: cannot serve as the app name (${(error as Error).message}); name the app with --app`);
    }
  }
  return values.demo ? (TOOL_SET_APPS[values.tools] ?? DEFAULT_APP) : DEFAULT_APP;
}

/**
 * Worker options from the command line, plus the fault-injection switch
 * `TASKLATCH_CRASH_BEFORE_COMPLETE=P`: with probability P the process kills itself (SIGKILL)
 * after a handler finished and before its terminal write — the worst moment, used by chaos runs.
 */
export function workerOptionsFrom(values: WorkerArgs): WorkerSettings {
  const crash = Number(process.env.TASKLATCH_CRASH_BEFORE_COMPLETE ?? '0');
  return {
    ...(values.concurrency === undefined ? {} : { concurrency: positiveInt('--concurrency', values.concurrency) }),
    ...(values['lease-ms'] === undefined ? {} : { leaseMs: positiveInt('--lease-ms', values['lease-ms']) }),
    ...(values['version-silence-ms'] === undefined ? {} : { versions: { silenceMs: positiveInt('--version-silence-ms', values['version-silence-ms']) } }),
    ...(crash > 0
      ? {
          beforeTerminalWrite: () => {
            if (Math.random() < crash) process.kill(process.pid, 'SIGKILL');
          },
        }
      : {}),
  };
}

/** Worker options as the command line gives them. */
export type WorkerSettings = Omit<WorkerOptions, 'hooks' | 'app'> & Pick<ExecutionHooks, 'beforeTerminalWrite'>;

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const DURATION_UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A span of time: `7d`, `36h`, `90m`, `30s`, `250ms`, or a whole number of milliseconds (0 or more). */
export function parseDuration(flag: string, text: string): number {
  const match = DURATION.exec(text);
  const ms = match === null ? Number.NaN : Number(match[1]) * DURATION_UNIT_MS[(match[2] ?? 'ms') as keyof typeof DURATION_UNIT_MS];
  if (!Number.isSafeInteger(ms)) {
    throw new TasklatchError('INVALID_INPUT', `${flag} takes a duration (7d, 36h, 90m, 30s) or milliseconds, got ${JSON.stringify(text)}`);
  }
  return ms;
}

/** The runtime's retention from `--retention`, checked before anything starts. */
export function retentionFrom(values: { retention?: string | undefined }): { retentionMs?: number } {
  return values.retention === undefined ? {} : { retentionMs: parseDuration('--retention', values.retention) };
}

/** The journal bounds of `--max-journal-steps` and `--max-journal-bytes` (the others keep their defaults). */
export function journalLimitsFrom(values: { 'max-journal-steps'?: string | undefined; 'max-journal-bytes'?: string | undefined }): {
  maxJournalSteps?: number;
  maxJournalBytes?: number;
} {
  const steps = values['max-journal-steps'];
  const bytes = values['max-journal-bytes'];
  return {
    ...(steps === undefined ? {} : { maxJournalSteps: positiveInt('--max-journal-steps', steps) }),
    ...(bytes === undefined ? {} : { maxJournalBytes: positiveInt('--max-journal-bytes', bytes) }),
  };
}

export function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new TasklatchError('INVALID_INPUT', `${flag} takes a positive whole number, got ${JSON.stringify(text)}`);
  return n;
}

/**
 * Opens the store, retrying while it is unreachable (a database restarting, a container
 * starting in the wrong order) for up to `waitMs`; any other error, or the last one, is thrown.
 */
async function openStoreWaiting(url: string, waitMs: number, onRetry: (error: Error) => void, listenUrl?: string): Promise<TaskStore> {
  const giveUpAt = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await openStore(url, listenUrl === undefined ? {} : { listenUrl });
    } catch (error) {
      if (!isTasklatchError(error, 'STORE_UNAVAILABLE') || Date.now() >= giveUpAt) throw error;
      onRetry(error);
      await sleep(Math.min(250 * 2 ** attempt, 2000, Math.max(0, giveUpAt - Date.now())));
    }
  }
}

/**
 * What `serve` and `worker` open before their runtime, in this order: the tracing SDK when the
 * OpenTelemetry environment asks for it (its `shutdown` flushes the spans at the end), then the
 * store of --store (and --listen-store), retried while unreachable for --wait-for-store.
 */
export async function openCommandStore(values: WorkerArgs, logger: Logger): Promise<{ store: TaskStore; storeUrl: string; traces: TraceSdk | null }> {
  const waitMs = values['wait-for-store'] === undefined ? 30_000 : positiveInt('--wait-for-store', values['wait-for-store']);
  const storeUrl = storeUrlFrom(values.store);
  const listenUrl = listenStoreUrlFrom(values['listen-store']);
  const traces = await startTraceSdk();
  const store = await openStoreWaiting(storeUrl, waitMs, (error) => logger.warn({ err: error.message }, 'store unreachable; retrying'), listenUrl);
  return { store, storeUrl, traces };
}
