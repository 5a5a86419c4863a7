import { z } from 'zod';
import { META_KEYS } from '../core/meta-keys.js';

/**
 * The messages of the 2026-07-28 wire, as zod schemas: what a request must look like before any
 * of it is used. Unknown members are kept (`looseObject`): the core allows them and ignores them.
 */

export const RequestId = z.union([z.string(), z.number().int()]);

/** A JSON-RPC request or notification envelope; `id` absent means a notification. */
export const Envelope = z.object({
  jsonrpc: z.literal('2.0'),
  id: RequestId.optional(),
  method: z.string().min(1),
  /** Checked apart from the envelope: params of the wrong shape are invalid params, not an invalid request. */
  params: z.unknown().optional(),
});
export type Envelope = z.infer<typeof Envelope>;

/** The per-request `_meta` every 2026-07-28 request carries. */
export const RequestMeta = z.looseObject({
  [META_KEYS.protocolVersion]: z.string().min(1),
  [META_KEYS.clientCapabilities]: z.record(z.string(), z.unknown()),
  [META_KEYS.clientInfo]: z.looseObject({ name: z.string(), version: z.string() }).optional(),
});

export const TaskIdParams = z.looseObject({ taskId: z.string().min(1) });

export const CallToolParams = z.looseObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
});

export const UpdateTaskParams = z.looseObject({
  taskId: z.string().min(1),
  inputResponses: z.record(z.string(), z.unknown()),
});

export const ListenParams = z.looseObject({
  notifications: z.looseObject({ taskIds: z.array(z.string().min(1)).max(1000).optional() }),
});

/** The first problem of a failed parse, for a message a client can act on. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue === undefined ? 'malformed' : `${issue.path.join('.') || '(root)'}: ${issue.message}`;
}
