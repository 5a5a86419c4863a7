import { checkAppName } from '../core/app-name.js';
import { checkToolVersion } from '../core/version-rules.js';
import { TasklatchError } from '../core/errors.js';
import { parsePrincipal, principalOf, principalProblem, type Principal } from '../core/principal.js';
import { isTaskStatus, TASK_STATUSES, type Millis } from '../core/types.js';
import type { OperatorPosition, TaskFilter } from '../store/task-operations.js';

/** What `tasks ls` was asked, every part checked. */
export interface TaskQuery {
  filter: TaskFilter;
  after: OperatorPosition | null;
  limit: number;
}

export interface TaskQueryArgs {
  tenant?: string | undefined;
  subject?: string | undefined;
  status?: string | undefined;
  app?: string | undefined;
  tool?: string | undefined;
  version?: string | undefined;
  since?: string | undefined;
  before?: string | undefined;
  limit?: string | undefined;
  page?: string | undefined;
  parked?: boolean | undefined;
  sleeping?: boolean | undefined;
  'waiting-event'?: boolean | undefined;
  parent?: string | undefined;
}

/** Largest page `tasks ls` reads at once. */
export const MAX_PAGE = 500;

const AGO = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A point in time: an ISO 8601 date or date-time, or a span ago (`90s`, `15m`, `2h`, `7d`). */
export function parseTime(flag: string, text: string, now: Millis): Millis {
  const ago = AGO.exec(text);
  if (ago !== null) return now - Number(ago[1]) * UNIT_MS[ago[2] as keyof typeof UNIT_MS];
  // Date.parse alone accepts too much ("1", "March"): ask for the ISO shape first.
  const at = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(at))
    throw new TasklatchError('INVALID_INPUT', `${flag} takes an ISO date-time (2026-07-01T12:00:00Z) or a span ago (15m, 2h, 7d), got ${JSON.stringify(text)}`);
  return at;
}

export function parseTaskQuery(args: TaskQueryArgs, now: Millis): TaskQuery {
  const filter: TaskFilter = {};
  if (args.tenant !== undefined) filter.tenant = nonEmpty('--tenant', args.tenant);
  if (args.tenant?.includes('/') === true)
    throw new TasklatchError('INVALID_INPUT', `--tenant names a tenant, which has no "/", got ${JSON.stringify(args.tenant)}`);
  if (args.subject !== undefined) filter.subject = nonEmpty('--subject', args.subject);
  if (args.status !== undefined) {
    if (!isTaskStatus(args.status))
      throw new TasklatchError('INVALID_INPUT', `--status takes one of ${TASK_STATUSES.join(', ')}, got ${JSON.stringify(args.status)}`);
    filter.status = args.status;
  }
  if (args.app !== undefined) filter.app = checkAppName(args.app, '--app');
  if (args.tool !== undefined) filter.tool = nonEmpty('--tool', args.tool);
  if (args.version !== undefined) filter.toolVersion = checkToolVersion(args.version, '--version');
  if (args.since !== undefined) filter.createdSince = parseTime('--since', args.since, now);
  if (args.before !== undefined) filter.createdBefore = parseTime('--before', args.before, now);
  if (args.parked === true) filter.parked = true;
  if (args.sleeping === true) filter.sleeping = true;
  if (args['waiting-event'] === true) filter.waitingForEvent = true;
  if (args.parent !== undefined) filter.parentTaskId = nonEmpty('--parent', args.parent);
  const limit = args.limit === undefined ? 50 : Number(args.limit);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new TasklatchError('INVALID_INPUT', `--limit takes a whole number from 1 to ${MAX_PAGE}, got ${JSON.stringify(args.limit)}`);
  }
  return { filter, after: args.page === undefined ? null : decodePage(args.page), limit };
}

/** The page token printed after a page: where the next one starts, nothing secret. */
export function encodePage(position: OperatorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.taskId]), 'utf8').toString('base64url');
}

export function decodePage(token: string): OperatorPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  if (!Array.isArray(value) || value.length !== 2 || !Number.isSafeInteger(value[0]) || typeof value[1] !== 'string') {
    throw new TasklatchError('INVALID_INPUT', `--page takes the token a previous 'tasks ls' printed, got ${JSON.stringify(token)}`);
  }
  return { createdAt: value[0] as number, taskId: value[1] };
}

/** A flag's `TENANT/SUBJECT` (`--as`, `--principal`), parsed by the core's one rule; anything else is refused naming the flag. */
export function parsePrincipalArg(flag: string, text: string): Principal {
  const principal = parsePrincipal(text);
  if (principal !== null) return principal;
  const problem = principalProblem(principalOf(text));
  const why = problem === null ? '' : ` (the ${problem.part} ${problem.problem})`;
  throw new TasklatchError('INVALID_INPUT', `${flag} takes TENANT/SUBJECT${why}, got ${JSON.stringify(text.slice(0, 300))}`);
}

function nonEmpty(flag: string, text: string): string {
  if (text === '') throw new TasklatchError('INVALID_INPUT', `${flag} takes a non-empty value`);
  return text;
}
