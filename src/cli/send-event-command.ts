import { randomUUID } from 'node:crypto';
import { TasklatchError } from '../core/errors.js';
import { authKeyOf, type Principal } from '../core/principal.js';
import { sendEvent } from '../runtime/requests/send-event.js';
import { openGuard } from '../service/guard.js';
import type { TaskStore } from '../store/types.js';
import type { CliIo } from './io.js';

/** What `tasks send-event` was given, checked before the store opens. */
export interface SendEventArgs {
  type: string;
  payload: unknown;
  /** `--as T/S`: sent as that principal (its tasks only); absent: as the operator (any task). */
  as: Principal | null;
}

/** `--data JSON` (absent: null), parsed. */
export function parseEventData(data: string | undefined): unknown {
  if (data === undefined) return null;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    throw new TasklatchError('INVALID_INPUT', `--data is JSON: ${JSON.stringify(data.slice(0, 80))} does not parse`);
  }
}

/**
 * `tasklatch tasks send-event ID TYPE [--data JSON] [--as T/S]`: the event goes through the guard
 * as `runtime.sendEvent` sends it (stored and audited in one transaction, correlation operator:…,
 * a waiting task due at once and told through the store's notifications). A refusal is an error
 * naming the reason; nothing is stored.
 */
export async function sendEventAsOperator(store: TaskStore, taskId: string, args: SendEventArgs, json: boolean, io: CliIo): Promise<number> {
  const guard = openGuard({ store, capabilities: { cancel: {} } });
  const correlationId = `operator:${randomUUID()}`;
  const sender = args.as === null ? null : { auth: authKeyOf(args.as) };
  const out = await sendEvent({ guard }, sender, { taskId, type: args.type, payload: args.payload, correlationId });
  if (out.kind === 'refused')
    throw new TasklatchError('INVALID_INPUT', `event ${JSON.stringify(args.type)} not sent to ${taskId}: ${out.message} (${out.reason})`);
  if (json) io.out(JSON.stringify({ taskId, type: args.type, seq: out.seq, woke: out.woke, correlationId }));
  else
    io.out(
      `sent ${JSON.stringify(args.type)} to ${taskId} as event ${out.seq}${out.woke ? ' (its wait is due now)' : ' (kept for its wait)'}, correlation ${correlationId}`,
    );
  return 0;
}
