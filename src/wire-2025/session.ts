import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AnyObjectSchema } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ProgressToken, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../runtime/log.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import type { Principal } from '../tools/principal.js';

/**
 * What a session's handlers need of the server that holds it (`TaskServer` is one): the
 * runtime they map, its logger, and who the caller of a request is. An interface, so that the
 * handlers do not import the server that installs them.
 */
export interface SessionHost {
  readonly runtime: TaskRuntime;
  readonly logger: Logger;
  /** Resolves the caller of a request in a session. */
  principalFor(session: SessionContext, authInfo: { token: string; extra?: Record<string, unknown> } | undefined): Promise<Principal>;
}

/** Per-session state: the session's own principal, progress tokens and status watches. */
export interface SessionContext {
  server: SessionHost;
  sdk: Server;
  principal: Principal | null;
  /** taskId → the progressToken of the request that created it (this session only). */
  progressTokens: Map<string, ProgressToken>;
  /** taskId → stops the status-notification watch. */
  watches: Map<string, () => void>;
}

/** What the SDK hands a request handler besides the request. */
export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Installs one request handler on the session's SDK server. */
export type Register = (schema: AnyObjectSchema, handler: (request: never, extra: Extra) => Promise<unknown>) => void;
