import type { ServerResponse } from 'node:http';
import type { SendEventResult } from '../runtime/requests/send-event.js';
import type { ExtraRoute } from './operator-routes.js';
import { bearsToken } from './operator-routes.js';
import { readBody } from './read-body.js';

/** What `POST /events` asks of the runtime: an operator's send (any task), as `tasks send-event` makes it. */
export type OperatorSend = (request: { taskId: string; type: string; payload: unknown }) => Promise<SendEventResult>;

/** The status of each refusal: unknown 404, finished or expired 409, too large 413, too many pending 429, invalid 400. */
const REFUSAL_STATUS: Record<Extract<SendEventResult, { kind: 'refused' }>['reason'], number> = {
  'not-found': 404,
  expired: 409,
  terminal: 409,
  'too-large': 413,
  'too-many': 429,
  invalid: 400,
};

/**
 * `POST /events` on the operator listener (`--metrics HOST:PORT`): `{ "taskId", "type", "data" }`
 * sends an event into the task as the operator would with `tasklatch tasks send-event`; 202 with
 * the event's number and whether its wait is due now, or 4xx with the reason. It reaches any
 * tenant's task, so it answers only a request bearing the listener's token (without one
 * configured it is off: 403 saying so). `maxBytes` bounds the body.
 */
export function eventRoute(send: OperatorSend, token: string | undefined, maxBytes: number): ExtraRoute {
  return async (req, res, pathname) => {
    if (pathname !== '/events') return false;
    if (req.method !== 'POST') return answer(res, 405, { error: 'method not allowed: POST /events' }, { allow: 'POST' });
    if (token === undefined) return answer(res, 403, { error: 'POST /events needs the operator token (--metrics-token-file or TASKLATCH_METRICS_TOKEN)' });
    if (!bearsToken(req, token)) return answer(res, 401, { error: 'unauthorized: POST /events needs the operator token' }, { 'www-authenticate': 'Bearer' });
    const body = await readBody(req, maxBytes);
    if (body.kind === 'gone') return true;
    if (body.kind === 'too large') return answer(res, 413, { error: `the body is larger than ${maxBytes} bytes` }, { connection: 'close' });
    if (body.kind !== 'json') return answer(res, 400, { error: 'the body is JSON: { "taskId", "type", "data" }' });
    const { taskId, type, data } = (typeof body.value === 'object' && body.value !== null ? body.value : {}) as Record<string, unknown>;
    if (typeof taskId !== 'string' || typeof type !== 'string')
      return answer(res, 400, { error: 'the body names the task (taskId) and the event type (type), both strings' });
    const out = await send({ taskId, type, payload: data ?? null });
    if (out.kind === 'sent') return answer(res, 202, out);
    return answer(res, REFUSAL_STATUS[out.reason], { error: out.message, reason: out.reason });
  };
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): true {
  res.writeHead(status, Object.assign({ 'content-type': 'application/json', 'cache-control': 'no-store' }, headers)).end(JSON.stringify(body));
  return true;
}
