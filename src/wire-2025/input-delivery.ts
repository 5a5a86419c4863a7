import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { outstanding, type InputRequest } from '../core/input-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import type { TaskRecord } from '../core/types.js';
import { answerProblem } from '../service/answer-check.js';
import type { Guard } from '../service/guard.js';
import type { Ask } from '../tools/asking.js';
import type { Logger } from '../runtime/log.js';
import { ProtocolError } from '../tools/protocol-error.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The result schema the client's answer to each kind of input request must match. */
const RESULT_SCHEMAS = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;

/** A person may take a day to answer; the SDK's default (60 s) would give up on them. */
const ANSWER_TIMEOUT_MS = 24 * 60 * 60 * 1000;

function send(extra: Extra, request: InputRequest, meta: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
  const schema = RESULT_SCHEMAS[request.method as keyof typeof RESULT_SCHEMAS];
  const params = Object.assign({}, request.params, { _meta: Object.assign({}, request.params?._meta as Record<string, unknown> | undefined, meta) });
  return extra.sendRequest({ method: request.method, params } as ServerRequest, schema, { signal, timeout: ANSWER_TIMEOUT_MS });
}

/**
 * 2025-11-25: a task's questions go to the requestor as server→client requests carrying the
 * related-task `_meta`, on the stream of its `tasks/result` (held open by whichever instance
 * it reached). Each outstanding question is sent once per `tasks/result`; a lost stream means
 * the next one sends it again. An answer is stored under the auth key of the session that
 * answered, so only the task's own principal can answer it; the first accepted answer wins.
 */
export function questionDelivery(input: {
  guard: Pick<Guard, 'context' | 'answers'>;
  auth: string;
  extra: Extra;
  logger: Logger;
}): (record: TaskRecord) => Promise<void> {
  const sent = new Set<string>();
  return async (record) => {
    const found = await input.guard.answers.inputs({ auth: input.auth, taskId: record.taskId });
    for (const question of outstanding(found.inputs ?? [])) {
      if (sent.has(question.key)) continue;
      sent.add(question.key);
      const related = { [META_KEYS.relatedTask]: { taskId: record.taskId } };
      send(input.extra, question.request, related, input.extra.signal)
        .then(async (response) => {
          // Too large, or not what the question's schema asks: refused like no answer at all.
          const problem = answerProblem(question.key, question.request, response, input.guard.context.limits.maxAnswerBytes);
          if (problem !== null) throw new ProtocolError(JSON_RPC_CODES.invalidParams, problem);
          await input.guard.answers.answer({ auth: input.auth, taskId: record.taskId, responses: { [question.key]: response } });
        })
        .catch((error: unknown) => {
          // The stream went away, the client refused, or its answer was: nothing is stored and
          // the question stays outstanding for the next tasks/result.
          sent.delete(question.key);
          input.logger.info({ taskId: record.taskId, key: question.key, err: String(error) }, 'input request not answered on this stream');
        });
    }
  };
}

/**
 * A plain 2025-11-25 call asks within the call: one server→client request per key, in order.
 * An answer too large or not matching its question's schema ends the call with invalid params.
 */
export function sessionAsk(extra: Extra, maxAnswerBytes: number): Ask {
  return async (requests) => {
    const answers: Record<string, unknown> = {};
    for (const [key, request] of Object.entries(requests)) {
      const answer = await send(extra, request, {}, extra.signal);
      const problem = answerProblem(key, request, answer, maxAnswerBytes);
      if (problem !== null) throw new ProtocolError(JSON_RPC_CODES.invalidParams, problem);
      answers[key] = answer;
    }
    return answers;
  };
}
