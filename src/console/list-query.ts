import { checkAppName } from '../core/app-name.js';
import { TasklatchError } from '../core/errors.js';
import { isTaskStatus, TASK_STATUSES } from '../core/types.js';
import { checkToolVersion } from '../core/version-rules.js';
import type { OperatorPosition, TaskFilter } from '../store/task-operations.js';

/** `state`: the list's narrowing by what a task waits for. */
export const LIST_STATES = { parked: 'parked', sleeping: 'sleeping', input: 'waiting for input', event: 'waiting for an event' } as const;

/** The list page's default and largest page sizes. */
export const CONSOLE_PAGE = 50;
export const MAX_CONSOLE_PAGE = 500;

/** What the list was asked, every part checked (the operator store's `findTasks` input). */
export interface ListQuery {
  filter: TaskFilter;
  after: OperatorPosition | null;
  limit: number;
}

/**
 * The list's query string: `status`, `tenant`, `app`, `tool`, `version`, `state` (one of
 * `LIST_STATES`), `after` (the token of the page before) and `limit`. An empty field is no
 * filter; a bad one is refused naming it (INVALID_INPUT), before the store is asked.
 */
export function parseListQuery(params: URLSearchParams): ListQuery {
  const given = (name: string): string | undefined => {
    const value = params.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const filter: TaskFilter = {};
  const status = given('status');
  if (status !== undefined) {
    if (!isTaskStatus(status)) throw new TasklatchError('INVALID_INPUT', `status takes one of ${TASK_STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
    filter.status = status;
  }
  const tenant = given('tenant');
  if (tenant !== undefined) {
    if (tenant.includes('/')) throw new TasklatchError('INVALID_INPUT', `tenant names a tenant, which has no "/", got ${JSON.stringify(tenant)}`);
    filter.tenant = tenant;
  }
  const app = given('app');
  if (app !== undefined) filter.app = checkAppName(app, 'app');
  const tool = given('tool');
  if (tool !== undefined) filter.tool = tool;
  const version = given('version');
  if (version !== undefined) filter.toolVersion = checkToolVersion(version, 'version');
  const state = given('state');
  if (state === 'parked') filter.parked = true;
  else if (state === 'sleeping') filter.sleeping = true;
  else if (state === 'event') filter.waitingForEvent = true;
  else if (state === 'input') {
    if (filter.status !== undefined && filter.status !== 'input_required')
      throw new TasklatchError('INVALID_INPUT', `waiting for input means status input_required, not ${filter.status}`);
    filter.status = 'input_required';
  } else if (state !== undefined) {
    throw new TasklatchError('INVALID_INPUT', `state takes one of ${Object.keys(LIST_STATES).join(', ')}, got ${JSON.stringify(state)}`);
  }
  const limitText = given('limit');
  const limit = limitText === undefined ? CONSOLE_PAGE : Number(limitText);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_CONSOLE_PAGE)
    throw new TasklatchError('INVALID_INPUT', `limit takes a whole number from 1 to ${MAX_CONSOLE_PAGE}, got ${JSON.stringify(limitText)}`);
  const after = given('after');
  return { filter, after: after === undefined ? null : decodeAfter(after), limit };
}

/** The token of the next page: where it starts (the last row's creation and id), nothing secret. */
export function encodeAfter(position: OperatorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.taskId]), 'utf8').toString('base64url');
}

export function decodeAfter(token: string): OperatorPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  if (!Array.isArray(value) || value.length !== 2 || !Number.isSafeInteger(value[0]) || typeof value[1] !== 'string')
    throw new TasklatchError('INVALID_INPUT', `after takes the token of a "next page" link, got ${JSON.stringify(token.slice(0, 100))}`);
  return { createdAt: value[0] as number, taskId: value[1] };
}
