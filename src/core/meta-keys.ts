/**
 * Every `_meta` key and extension id tasklatch reads or writes, named once. The
 * `io.modelcontextprotocol/*` keys are the protocol's; the `io.tasklatch/*` keys are ours.
 *
 * `relatedTask` is also exported by the MCP SDK (`RELATED_TASK_META_KEY`); it is spelled here
 * because the core and the 2026-07-28 wire must not load the SDK, and a test pins it to the
 * SDK's value so the two cannot drift.
 */
export const META_KEYS = {
  /** 2026-07-28: the protocol version a request speaks. */
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  /** 2026-07-28 (and a task's stored request on both wires): what the client can answer. */
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  /** 2026-07-28: the client's name and version. */
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  /** 2026-07-28: the server's name and version, in `server/discover`. */
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  /** 2026-07-28: the subscription a `subscriptions/listen` notification belongs to. */
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
  /** 2025-11-25: the task a result or a request belongs to. */
  relatedTask: 'io.modelcontextprotocol/related-task',
  /** The idempotency key of a task-creating call. */
  idempotencyKey: 'io.tasklatch/idempotency-key',
  /** Where a task's stored request keeps what the tool's `prepare` returned (outside its digest). */
  prepared: 'io.tasklatch/prepared',
  /** Where a task's stored request keeps its concurrency key and limit (written by admission only). */
  concurrency: 'io.tasklatch/concurrency',
  /**
   * The W3C trace context of a request (the OpenTelemetry convention for MCP `_meta`); in a
   * task's stored request, the admission's (written by admission only).
   */
  traceparent: 'traceparent',
  tracestate: 'tracestate',
} as const;

/** The tasks extension's identifier, in client capabilities and in `server/discover`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
