import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { InputRequest } from '../core/input-rules.js';
import { META_KEYS } from '../core/meta-keys.js';
import type { AskRequestor } from '../runtime/requests/await-result.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The result schema the client's answer to each kind of input request must match. */
const RESULT_SCHEMAS = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;

/** A person may take a day to answer; the SDK's default (60 s) would give up on them. */
const ANSWER_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * One question as a 2025-11-25 server→client request on the stream of the request being
 * answered, with `meta` added to its `_meta`; resolves with the client's answer, checked
 * against the result schema of its kind.
 */
export function sendClientRequest(extra: Extra, request: InputRequest, meta: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
  const schema = RESULT_SCHEMAS[request.method as keyof typeof RESULT_SCHEMAS];
  const params = Object.assign({}, request.params, { _meta: Object.assign({}, request.params?._meta as Record<string, unknown> | undefined, meta) });
  return extra.sendRequest({ method: request.method, params } as ServerRequest, schema, { signal, timeout: ANSWER_TIMEOUT_MS });
}

/**
 * 2025-11-25: a task's questions go to the requestor as server→client requests carrying the
 * related-task `_meta`, on the stream of its `tasks/result` (held open by whichever instance it
 * reached). Which questions, how often, and what becomes of an answer is the request layer's
 * (`awaitResult`'s `ask`); this only sends.
 */
export function askOnStream(extra: Extra): AskRequestor {
  return (taskId, _key, request) => sendClientRequest(extra, request, { [META_KEYS.relatedTask]: { taskId } }, extra.signal);
}
