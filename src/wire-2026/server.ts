import type { IncomingHttpHeaders } from 'node:http';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import { isStoreFault, isTasklatchError } from '../core/errors.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import type { Principal } from '../tools/principal.js';
import { ProtocolError, storeUnavailable } from '../tools/protocol-error.js';
import { checkRoutingHeaders } from './headers.js';
import { describeIssue, Envelope, RequestMeta } from './messages.js';
import { methodTable, type Handler } from './methods.js';
import { SubscriptionSlots } from './notifications.js';
import type { Call } from './plain-context.js';
import { plainEnvelope, plainMeta, type PlainMeta } from './plain-request.js';
import { invalidParams, methodNotFound, SUPPORTED_VERSIONS } from './protocol.js';
import { errorReply, readableId, StreamReply, type StatelessReply } from './replies.js';

export type { StatelessReply } from './replies.js';

/** One POSTed message, with what the HTTP layer knows about it. */
export interface StatelessRequest {
  body: unknown;
  headers: IncomingHttpHeaders;
  /** The caller, as the HTTP layer authenticated it (the anonymous principal without auth). */
  principal: Principal;
  /** Fires when the client goes away. */
  signal: AbortSignal;
}

export interface StatelessOptions {
  name?: string;
  version?: string;
  /** How long clients may cache `server/discover` and the list results (ms). */
  listTtlMs?: number;
}

/**
 * A call of one POSTed request. Its signal is read from the request when a handler needs it (the
 * HTTP layer makes it on first use), by a getter of this class: an object literal with a getter
 * makes a hidden class of its own per request, which kept each request's objects alive past
 * young-generation collections.
 */
class RequestCall implements Call {
  readonly principal: Principal;
  readonly headers: IncomingHttpHeaders;

  constructor(
    readonly id: string | number,
    readonly params: Record<string, unknown>,
    readonly capabilities: Record<string, unknown>,
    private readonly request: StatelessRequest,
  ) {
    this.principal = request.principal;
    this.headers = request.headers;
  }

  get signal(): AbortSignal {
    return this.request.signal;
  }
}

/**
 * tasklatch on the MCP 2026-07-28 wire with the tasks extension: every request stands alone,
 * carrying its protocol version and client capabilities in `_meta`; there are no sessions.
 * Like the 2025-11-25 wire, it only maps the runtime's decisions to messages: the same service,
 * store, tools and workers answer both, so a task created on either is readable on both.
 */
export class StatelessServer {
  /** A Map: a client's method name is never looked up on a plain object. */
  private readonly methods: ReadonlyMap<string, Handler>;
  private readonly subscriptions: SubscriptionSlots;

  constructor(
    private readonly runtime: TaskRuntime,
    options: StatelessOptions = {},
  ) {
    this.subscriptions = new SubscriptionSlots(runtime.limits);
    this.methods = methodTable(runtime, Object.assign({}, options, { listTtlMs: options.listTtlMs ?? 60_000, subscriptions: this.subscriptions }));
  }

  /** Answers one POSTed message. Never throws: every failure is a JSON-RPC error reply. */
  async handle(request: StatelessRequest): Promise<StatelessReply> {
    if (Array.isArray(request.body))
      return errorReply(undefined, new ProtocolError(JSON_RPC_CODES.invalidRequest, 'a POST carries one JSON-RPC message; batches are not part of 2026-07-28'));
    const envelope = plainEnvelope(request.body) ?? Envelope.safeParse(request.body);
    if ('success' in envelope && !envelope.success)
      return errorReply(readableId(request.body), new ProtocolError(JSON_RPC_CODES.invalidRequest, `Invalid request: ${describeIssue(envelope.error)}`));
    const { id, method, params: given = {} } = 'success' in envelope ? envelope.data : envelope;
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      return id === undefined ? { kind: 'accepted' } : errorReply(id, invalidParams(`Invalid params for ${method.slice(0, 60)}: params must be an object`));
    }
    const params = given as Record<string, unknown>;
    // Notifications need no answer; the one a client sends here (cancelling a listen) is also
    // told by the stream it closes.
    if (id === undefined) return { kind: 'accepted' };
    try {
      const { version, capabilities } = requestMeta(params._meta);
      checkRoutingHeaders(request.headers, method, params, version);
      const result = await this.serve(method, version, new RequestCall(id, params, capabilities, request));
      if (result instanceof StreamReply) return result;
      return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, result } };
    } catch (error) {
      return errorReply(id, this.protocolErrorOf(error, method));
    }
  }

  /**
   * One request of a host that parsed the envelope and checked the routing headers itself (an
   * SDK's own 2026-07-28 HTTP entry): the same methods and decisions as `handle`, with the
   * result returned and every failure thrown as the `ProtocolError` to answer. `params` are the
   * request's params as sent, `_meta` included. Subscriptions are the host's own.
   */
  async dispatch(
    method: string,
    request: Omit<StatelessRequest, 'body'> & { id: string | number; params: Record<string, unknown> },
  ): Promise<Record<string, unknown>> {
    try {
      const { version, capabilities } = requestMeta(request.params._meta);
      const { id, params, principal, headers, signal } = request;
      const result = await this.serve(method, version, { id, params, capabilities, principal, headers, signal });
      if (result instanceof StreamReply) {
        result.drop();
        throw methodNotFound(method);
      }
      return result;
    } catch (error) {
      throw this.protocolErrorOf(error, method);
    }
  }

  private async serve(method: string, version: string, call: Call): Promise<Record<string, unknown> | StreamReply> {
    if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
      throw new ProtocolError(JSON_RPC_CODES.unsupportedVersion, `Unsupported protocol version ${version}`, {
        supported: [...SUPPORTED_VERSIONS],
        requested: version,
      });
    }
    const handler = this.methods.get(method);
    if (handler === undefined) throw methodNotFound(method);
    return handler(call);
  }

  /** The error a failed request answers: its own, invalid params for refused input, else a logged internal error. */
  private protocolErrorOf(error: unknown, method: string): ProtocolError {
    if (error instanceof ProtocolError) return error;
    if (isTasklatchError(error, 'INVALID_INPUT')) return invalidParams(error.message);
    // An outage, not a fault of this server: one line without a stack, and an answer to retry.
    if (isStoreFault(error)) {
      this.runtime.logger.warn({ reason: (error as Error).message, method }, 'store unavailable');
      return storeUnavailable();
    }
    this.runtime.logger.error({ err: error, method }, 'request failed');
    return new ProtocolError(JSON_RPC_CODES.internalError, 'Internal error');
  }
}

/** The request's `_meta`: the plain shape checked by hand, anything else by the schema. */
function requestMeta(meta: unknown): PlainMeta {
  const plain = plainMeta(meta);
  if (plain !== null) return plain;
  const parsed = RequestMeta.safeParse(meta);
  if (!parsed.success) throw invalidParams(`Invalid _meta: ${describeIssue(parsed.error)}`);
  return { version: parsed.data[META_KEYS.protocolVersion], capabilities: parsed.data[META_KEYS.clientCapabilities] };
}
