import type { ProtocolError } from '../tools/protocol-error.js';
import { httpStatusOf } from './protocol.js';
import { SubscriptionsFull, type EventSink } from './notifications.js';

/** What the HTTP layer sends back. */
export type StatelessReply =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'accepted' }
  | { kind: 'stream'; open(sink: EventSink, closed: AbortSignal): Promise<void> };

/** The longest error message sent: messages quote what the client sent, which may be huge. */
const MAX_MESSAGE = 500;

/**
 * An error reply; the id is echoed when it could be read, and left out (never null) otherwise.
 * A listen refused for lack of room says when to retry.
 */
export function errorReply(id: string | number | undefined, error: ProtocolError): StatelessReply {
  const json = error.toJSON();
  const message = json.message.length > MAX_MESSAGE ? `${json.message.slice(0, MAX_MESSAGE)}…` : json.message;
  const body = { jsonrpc: '2.0', ...(id === undefined ? {} : { id }), error: Object.assign({}, json, { message }) };
  if (error instanceof SubscriptionsFull) return { kind: 'json', status: error.status, body, headers: { 'retry-after': String(error.retryAfterSeconds) } };
  return { kind: 'json', status: httpStatusOf(error.code), body };
}

/** The request's id, when it is one JSON-RPC allows. */
export function readableId(body: unknown): string | number | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : undefined;
}

/** A reply that is not a JSON result: the SSE stream of a subscription. */
export class StreamReply {
  readonly kind = 'stream';
  constructor(
    readonly open: (sink: EventSink, closed: AbortSignal) => Promise<void>,
    /** Gives back what the stream holds when it is never opened. */
    readonly drop: () => void,
  ) {}
}
