import { isTasklatchError } from '../../core/errors.js';
import type { ListedTask } from '../../core/types.js';
import { rideThrough } from '../../service/ride-through.js';
import type { RequestHost } from './host.js';
import { requestSpan, traced } from '../../trace/request-span.js';

export interface ListTasksRequest {
  auth: string;
  cursor?: string | undefined;
}

/**
 * What a `tasks/list` came to: one page of the caller's unexpired tasks (`nextCursor` when more
 * exist), a cursor that is not one of this caller's (edited, foreign, of another store), or no
 * listing on this receiver (callers not identified; audited).
 */
export type ListTasksOutcome = { kind: 'page'; records: ListedTask[]; nextCursor: string | null } | { kind: 'invalid-cursor' } | { kind: 'not-supported' };

/** `tasks/list`, read through a store outage shorter than `limits.storeOutageMs`. */
export function listTasks(host: Pick<RequestHost, 'guard'>, request: ListTasksRequest): Promise<ListTasksOutcome> {
  return traced(requestSpan('tasks/list'), undefined, readPage, host, request);
}

async function readPage(host: Pick<RequestHost, 'guard'>, request: ListTasksRequest): Promise<ListTasksOutcome> {
  const { requestor, context } = host.guard;
  try {
    const out = await rideThrough(() => requestor.list({ auth: request.auth, cursor: request.cursor }), context.limits.storeOutageMs);
    if (out.decision === 'BLOCK_CAPABILITY') return { kind: 'not-supported' };
    return { kind: 'page', records: out.records, nextCursor: out.nextCursor };
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_CURSOR')) return { kind: 'invalid-cursor' };
    throw error;
  }
}
