import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { awaitResult } from '../runtime/requests/await-result.js';
import { cancelTask } from '../runtime/requests/cancel-task.js';
import { getTask } from '../runtime/requests/get-task.js';
import { listTasks } from '../runtime/requests/list-tasks.js';
import { listTools } from '../runtime/requests/list-tools.js';
import { authKeyOf } from '../tools/principal.js';
import { askOnStream } from './client-requests.js';
import { encodeCancel, encodePage, encodeResult, encodeTask } from './encode.js';
import type { Extra, Register, SessionContext } from './session.js';
import { callTool } from './tool-call.js';

export type { Register, SessionContext, SessionHost } from './session.js';

/**
 * The 2025-11-25 methods of one session: each decodes its params (already checked against the
 * SDK's schema), asks the request layer (`src/runtime/requests/`, with the runtime as host) and
 * encodes the outcome (`encode.ts`). `tasks/cancel` and `tasks/list` are installed only where the
 * runtime declares them: an undeclared one is method not found, as the spec says.
 */
export function registerTaskHandlers(session: SessionContext, register: Register): void {
  const { server } = session;
  const { runtime } = server;
  const { capabilities } = runtime;
  const auth = async (extra: Extra) => authKeyOf(await server.principalFor(session, extra.authInfo));
  const clientTakesTasks = () => (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined)?.tasks !== undefined;

  register(ListToolsRequestSchema, async () => ({ tools: listTools(runtime, { clientTakesTasks: clientTakesTasks() }).tools }));

  register(CallToolRequestSchema, (request: { params: Record<string, unknown> & { name: string } }, extra) => callTool(session, request.params, extra));

  register(GetTaskRequestSchema, async (request: { params: { taskId: string } }, extra) =>
    encodeTask(await getTask(runtime, { auth: await auth(extra), taskId: request.params.taskId, signal: extra.signal })),
  );

  register(GetTaskPayloadRequestSchema, async (request: { params: { taskId: string } }, extra) =>
    encodeResult(await awaitResult(runtime, { auth: await auth(extra), taskId: request.params.taskId, signal: extra.signal, ask: askOnStream(extra) })),
  );

  if (capabilities.cancel !== undefined) {
    register(CancelTaskRequestSchema, async (request: { params: { taskId: string } }, extra) =>
      encodeCancel(await cancelTask(runtime, { auth: await auth(extra), taskId: request.params.taskId })),
    );
  }

  if (capabilities.list !== undefined) {
    register(ListTasksRequestSchema, async (request: { params?: { cursor?: string } }, extra) =>
      encodePage(await listTasks(runtime, { auth: await auth(extra), cursor: request.params?.cursor })),
    );
  }
}
