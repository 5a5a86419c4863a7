import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { coerceError, TasklatchError } from '../core/errors.js';
import { authKeyOf } from '../core/principal.js';
import { openGuard } from '../service/guard.js';
import type { TaskStore } from '../store/types.js';
import type { CliIo } from './io.js';
import { openOperatorStore } from './operator-store.js';
import { parseEventData, sendEventAsOperator } from './send-event-command.js';
import { STORE_USAGE_LINE, storeUrlFrom } from './store-url.js';
import { encodePage, parsePrincipalArg, parseTaskQuery } from './task-query-args.js';
import { familyOf, familyText } from './task-family.js';
import { auditTable, auditView, countTakeovers, detailText, statsText, statsView, taskDetail, taskSummary, taskTable } from './task-views.js';

export const TASKS_USAGE = `Usage: tasklatch tasks <subcommand> [--store URL] [--json]

Looks at the tasks of every tenant in a store, and repairs them through the guard.
  ls                     tasks, newest first, a page at a time
    --tenant T --subject S --status S --app NAME --tool NAME --version V (the tool version it was admitted with)
    --since TIME --before TIME   created at/after, before (ISO date-time, or 15m, 2h, 7d ago)
    --parked             only tasks parked because their handler disagrees with their journal
    --sleeping           only tasks in a durable sleep (or a retry's wait) that has not ended yet
    --waiting-event      only tasks waiting in ctx.step.waitForEvent
    --parent ID          only the child tasks of task ID (started by its ctx.step.runTool)
    --limit N (default 50, at most 500)   --page TOKEN (printed after a page that has more)
  show ID                the record, lease, attempts and takeovers, parking, outbox entry, questions, steps,
                         parent and child tasks of one task
  audit ID               every decision about a task: time, auth key, correlation id, detail; reads
                         and refusals counted per caller and hour (how often, first and last)
  cancel ID --as T/S     cancel as the task's principal (tenant/subject), like its client would:
                         latched, signalled to the worker running it, audited (correlation operator:…)
  send-event ID TYPE     send an event to a task (its ctx.step.waitForEvent of TYPE gets it; kept when it
    --data JSON          does not wait yet); --data the payload (default null), --as T/S to send as
    --as T/S             that principal (its tasks only; default: as the operator, any task). Audited.
  stats                  counts by status and tool, the oldest working task, expired records
${STORE_USAGE_LINE}
  --json                 stable JSON on stdout instead of tables`;

const OPTIONS = {
  store: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean' },
  tenant: { type: 'string' },
  subject: { type: 'string' },
  status: { type: 'string' },
  app: { type: 'string' },
  tool: { type: 'string' },
  version: { type: 'string' },
  since: { type: 'string' },
  before: { type: 'string' },
  limit: { type: 'string' },
  page: { type: 'string' },
  parked: { type: 'boolean' },
  sleeping: { type: 'boolean' },
  'waiting-event': { type: 'boolean' },
  parent: { type: 'string' },
  as: { type: 'string' },
  data: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Flags that only some subcommands take: given to another, they are a mistake, said so. */
const ONLY: Record<string, readonly (keyof Values)[]> = {
  ls: ['tenant', 'subject', 'status', 'app', 'tool', 'version', 'since', 'before', 'limit', 'page', 'parked', 'sleeping', 'waiting-event', 'parent'],
  cancel: ['as'],
  'send-event': ['as', 'data'],
};

export async function tasksCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [sub, ...ids] = positionals;
  if (values.help === true || sub === undefined) {
    io.out(TASKS_USAGE);
    return sub === undefined && values.help !== true ? 2 : 0;
  }
  const run = SUBCOMMANDS[sub];
  if (run === undefined) throw new TasklatchError('INVALID_INPUT', `unknown subcommand ${JSON.stringify(sub)}: ls, show, audit, cancel, send-event or stats`);
  for (const [other, flags] of Object.entries(ONLY)) {
    const stray = other === sub ? undefined : flags.find((f) => values[f] !== undefined && ONLY[sub]?.includes(f) !== true);
    if (stray !== undefined) throw new TasklatchError('INVALID_INPUT', `--${stray} belongs to 'tasks ${other}', not 'tasks ${sub}'`);
  }
  const wantsId = sub === 'show' || sub === 'audit' || sub === 'cancel' || sub === 'send-event';
  if (sub === 'send-event' ? ids.length !== 2 || ids[0] === '' : wantsId ? ids.length !== 1 || ids[0] === '' : ids.length !== 0) {
    if (sub === 'send-event') throw new TasklatchError('INVALID_INPUT', "'tasks send-event' takes a task id and an event type");
    throw new TasklatchError('INVALID_INPUT', wantsId ? `'tasks ${sub}' takes one task id` : `'tasks ${sub}' takes no task id`);
  }
  // Every argument is checked before the store is opened: bad input changes nothing.
  const now = Date.now();
  const prepared = run.prepare?.(values, now);
  const store = await openOperatorStore(storeUrlFrom(values.store));
  try {
    return await run.exec({ store, values, id: ids[0] ?? '', now, io, prepared, rest: ids.slice(1) });
  } catch (error) {
    // A store that stops answering mid-command is said in one line, like one that never did.
    if (error instanceof TasklatchError) throw error;
    throw new TasklatchError('STORE_UNAVAILABLE', `the store failed: ${coerceError(error).message}`, { cause: error });
  } finally {
    await store.close();
  }
}

interface Context {
  store: TaskStore;
  values: Values;
  id: string;
  now: number;
  io: CliIo;
  prepared: unknown;
  /** Positionals after the task id (send-event's type). */
  rest: string[];
}

interface Subcommand {
  prepare?: (values: Values, now: number) => unknown;
  exec: (ctx: Context) => Promise<number>;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  ls: {
    prepare: (values, now) => parseTaskQuery(values, now),
    exec: async ({ store, values, now, io, prepared }) => {
      const query = prepared as ReturnType<typeof parseTaskQuery>;
      const page = await store.findTasks(query);
      const last = page.records.at(-1);
      const nextPage = page.hasMore && last !== undefined ? encodePage(last) : null;
      if (values.json) {
        io.out(JSON.stringify({ tasks: page.records.map((r) => taskSummary(r, now)), nextPage }));
        return 0;
      }
      io.out(page.records.length === 0 ? 'no tasks match' : taskTable(page.records, now));
      if (nextPage !== null) io.out(`\nmore: tasklatch tasks ls … --page ${nextPage}`);
      return 0;
    },
  },
  show: {
    exec: async ({ store, values, id, now, io }) => {
      const seen = await store.inspectTask({ taskId: id });
      if (seen === null) throw new TasklatchError('INVALID_INPUT', `no task ${JSON.stringify(id)} in this store (unknown, or swept after it expired)`);
      const steps = await store.taskSteps({ taskId: id });
      // Takeovers are counted from the claims the audit trail marks (a lapsed lease of another owner).
      const takeovers = countTakeovers(await store.auditTrail({ taskId: id }));
      const children = await store.childTasks({ authKey: seen.record.authKey, taskId: id });
      const family = familyOf(seen.record, children);
      io.out(
        values.json
          ? JSON.stringify(Object.assign(taskDetail(seen, now, steps, takeovers), family))
          : `${detailText(seen, now, steps, takeovers)}${familyText(family)}`,
      );
      return 0;
    },
  },
  audit: {
    exec: async ({ store, values, id, io }) => {
      const trail = await store.auditTrail({ taskId: id });
      if (trail.length === 0) throw new TasklatchError('INVALID_INPUT', `no audit line names task ${JSON.stringify(id)} in this store`);
      io.out(values.json ? JSON.stringify({ taskId: id, audit: trail.map(auditView) }) : auditTable(trail));
      return 0;
    },
  },
  cancel: {
    prepare: (values) => {
      if (values.as === undefined) throw new TasklatchError('INVALID_INPUT', "'tasks cancel' needs --as TENANT/SUBJECT: the principal whose task it is");
      return parsePrincipalArg('--as', values.as);
    },
    exec: async ({ store, values, id, io, prepared }) => {
      const auth = authKeyOf(prepared as ReturnType<typeof parsePrincipalArg>);
      // Through the guard, as the task's own client would cancel: the store latches and audits
      // it in one transaction and signals it (NOTIFY, or the change line a SQLite listener polls).
      const { requestor } = openGuard({ store, capabilities: { cancel: {} } });
      const correlationId = `operator:${randomUUID()}`;
      const out = await requestor.cancel({ auth, taskId: id, correlationId });
      if (out.record === null) {
        throw new TasklatchError('INVALID_INPUT', `task ${JSON.stringify(id)} is not one of ${auth}'s (${out.decision}): nothing changed`);
      }
      const result = { taskId: id, decision: out.decision, status: out.record.status, version: out.record.version, correlationId };
      if (values.json) io.out(JSON.stringify(result));
      else if (out.decision === 'CANCEL_TASK') io.out(`cancelled ${id} as ${auth} (version ${out.record.version}, correlation ${correlationId})`);
      else io.out(`${id} was already ${out.record.status}: nothing changed`);
      return 0;
    },
  },
  'send-event': {
    prepare: (values) => ({ payload: parseEventData(values.data), as: values.as === undefined ? null : parsePrincipalArg('--as', values.as) }),
    exec: async ({ store, values, id, io, prepared, rest }) => {
      const { payload, as } = prepared as { payload: unknown; as: ReturnType<typeof parsePrincipalArg> | null };
      return sendEventAsOperator(store, id, { type: rest[0] ?? '', payload, as }, values.json, io);
    },
  },
  stats: {
    exec: async ({ store, values, now, io }) => {
      const stats = await store.taskStats({ now });
      io.out(values.json ? JSON.stringify(statsView(stats, now)) : statsText(stats, now));
      return 0;
    },
  },
};
