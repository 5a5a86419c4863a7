import type { TransitionDecision } from '../../core/decisions.js';
import type { TaskRecord, WireRequest } from '../../core/types.js';
import type { CreateOutcome } from '../../service/outcomes.js';
import { createTask } from './create-task.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';

/**
 * Tasks whose handler the host runs itself, in the process that took the call (the SDK's
 * experimental task store under `registerToolTask`): the admission of the SDK's own request and
 * the handler's status writes, through the same guard as every other request.
 */

/** What the admission of a host-run task came to: the task (new or replayed by its key), or a refusal the guard decided. */
export type AdmitOwnTaskOutcome =
  { kind: 'task'; record: TaskRecord } | { kind: 'refused'; decision: Exclude<CreateOutcome['decision'], 'ACCEPT_TASK' | 'REPLAY_TASK'> };

/** Admits `request` (augmented in the guard's terms) as a task of the tool `name`, which may run either way. */
export async function admitOwnTask(
  host: Pick<RequestHost, 'guard'>,
  request: { auth: string; name: string; request: WireRequest },
): Promise<AdmitOwnTaskOutcome> {
  const out = await createTask(host.guard, {
    auth: request.auth,
    tool: { name: request.name, execution: { taskSupport: 'optional' } },
    request: request.request,
  });
  if (out.decision === 'ACCEPT_TASK' || out.decision === 'REPLAY_TASK') return { kind: 'task', record: out.record };
  return { kind: 'refused', decision: out.decision };
}

/** How many times a status write is tried again after another write moved the version in between. */
const STALE_RETRIES = 5;

/** A status write of a host-run task: the status, and the result of a terminal one or a message. */
export interface OwnTaskWrite {
  status: string;
  result?: unknown;
  statusMessage?: string;
}

/**
 * What a status write came to: written (or the same terminal write again), not found, the task
 * already terminal (a terminal status is final), another refusal of the guard, or a version that
 * kept moving under the write.
 */
export type WriteOwnTaskOutcome =
  | { kind: 'written' }
  | { kind: 'not-found' }
  | { kind: 'terminal'; status: string | null }
  | { kind: 'refused'; decision: TransitionDecision }
  | { kind: 'version-moving' };

/**
 * A status write naming the version it read. Another write in between (a status message) is
 * read and the write tried again; a terminal task refuses every write, as does an expired one.
 */
export async function writeOwnTask(
  host: Pick<RequestHost, 'guard'>,
  request: { auth: string; taskId: string; write: OwnTaskWrite },
): Promise<WriteOwnTaskOutcome> {
  const { auth, taskId } = request;
  if (!couldBeTask(taskId)) return { kind: 'not-found' };
  const { worker } = host.guard;
  for (let attempt = 0; attempt <= STALE_RETRIES; attempt++) {
    const found = (await worker.lookup({ auth, taskId })).record;
    if (found === null) return { kind: 'not-found' };
    const out = await worker.transition({ auth, taskId, write: Object.assign({}, request.write, { expectedVersion: found.version }) });
    if (out.decision === 'APPLY_TRANSITION' || out.decision === 'IDEMPOTENT_TERMINAL') return { kind: 'written' };
    if (out.decision === 'BLOCK_STALE_VERSION') continue;
    if (out.decision === 'BLOCK_TERMINAL_REWRITE') return { kind: 'terminal', status: out.record?.status ?? null };
    return { kind: 'refused', decision: out.decision };
  }
  return { kind: 'version-moving' };
}
