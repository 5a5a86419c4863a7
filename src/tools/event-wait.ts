import { isEventType } from '../core/event-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { ProtocolError } from './protocol-error.js';
import { checkStepName, type WaitForEventOptions } from './step.js';

/** The wait's options, checked: a bad type or timeout ends the call (a bug in the tool, like a bad step name). */
export function checkWaitOptions(name: string, options: unknown): { type: string; timeoutMs: number } {
  checkStepName(name);
  const { type, timeoutMs } = (options ?? {}) as Partial<WaitForEventOptions>;
  if (!isEventType(type)) {
    throw new ProtocolError(
      JSON_RPC_CODES.internalError,
      `waitForEvent ${JSON.stringify(name)}: type must be text of 1 to 200 characters without control characters`,
    );
  }
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > 2 ** 47) {
    throw new ProtocolError(
      JSON_RPC_CODES.internalError,
      `waitForEvent ${JSON.stringify(name)}: timeoutMs must be a number of milliseconds from 0 to 2^47, not ${String(timeoutMs)}`,
    );
  }
  return { type, timeoutMs: Math.ceil(timeoutMs) };
}

/** A plain (non-task) call has no journal an event could reach: the wait ends the call, saying so. */
export function plainWaitRefusal(name: string): ProtocolError {
  return new ProtocolError(
    JSON_RPC_CODES.internalError,
    `waitForEvent ${JSON.stringify(name)}: waiting for an event needs a task (call the tool task-augmented; a plain call has nothing to send the event to)`,
  );
}
