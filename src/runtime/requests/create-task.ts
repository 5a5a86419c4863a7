import { decideCreateEntry } from '../../core/create-rules.js';
import type { ToolDescriptor, WireRequest } from '../../core/types.js';
import type { Guard } from '../../service/guard.js';
import type { CreateOutcome } from '../../service/outcomes.js';
import { agreedKey, checkStoredBytes } from './admission-checks.js';
import { withoutConcurrency } from './concurrency-stamp.js';
import { withCheckedTrace } from '../../trace/trace-context.js';

export type { CreateOutcome } from '../../service/outcomes.js';

/** A `tools/call` as the contract's create surface states it: the request, its tool, no more. */
export interface CreateInput {
  auth: string;
  tool: ToolDescriptor;
  request: WireRequest;
  /** A key from outside the request (the HTTP `Idempotency-Key` header). */
  idempotencyKey?: string | null;
  correlationId?: string;
}

/**
 * A `tools/call` decided from the request alone, as the contract's replay packets and a library
 * caller state it (no tool to run, no `prepare`): create rules 1–4 (`decideCreateEntry`: whether
 * `params.task` asks for a task, the capabilities, the tool's `taskSupport`); a call that stores
 * no task is recorded with its decision, and a task call's keys must agree and its request fit
 * before it is admitted. The wires' calls go through `callTool` instead, which decides the mode
 * with what the request alone does not say (`decideCallMode`).
 */
export async function createTask(guard: Pick<Guard, 'context' | 'requestor'>, input: CreateInput): Promise<CreateOutcome> {
  const { capabilities, limits } = guard.context;
  const { auth, correlationId } = input;
  const request = withCheckedTrace(withoutConcurrency(input.request));
  const tool = input.tool.name;
  const entry = decideCreateEntry({ capabilities, tool: input.tool, request });
  if (entry !== 'ADMIT') {
    await guard.requestor.recordCall({ auth, tool, decision: entry, correlationId });
    return { decision: entry, record: null };
  }
  const idempotencyKey = agreedKey(request, input.idempotencyKey ?? null);
  checkStoredBytes(request, limits.maxRequestBytes);
  return guard.requestor.admit({ auth, tool, request, idempotencyKey, correlationId });
}
