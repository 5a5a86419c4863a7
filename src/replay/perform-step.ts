import { hasWakeTime, type StepError, type StepRecord, type StepWrite } from '../core/step-rules.js';
import { parseTimestamp } from '../core/time.js';
import type { Millis } from '../core/types.js';
import type { TaskStore } from '../store/types.js';
import type { StepCase, StoredStepPacket } from './fixture.js';
import { toRecord } from './to-record.js';

/**
 * The bound on a step's value the fixtures are written against: the default of
 * `TaskLimits.maxStepBytes` (256 KiB of JSON text, in UTF-8 bytes).
 */
export const REPLAY_MAX_STEP_BYTES = 256 * 1024;

/** How long a recorded wait lasts when the packet names no wake time. */
const DEFAULT_WAIT_MS = 60_000;

/**
 * A step case through the store (the service has no step surface; a run records its steps
 * under its fence): the task and its journal are seeded under the case's namespace, then the
 * packet's write is recorded on its `now` with a value of exactly `valueBytes` bytes of JSON,
 * under the packet's journal bounds (`limits`; none when absent).
 */
export async function performStep(replayCase: StepCase, store: TaskStore, ns: string): Promise<string> {
  const p = replayCase.packet;
  const now = parseTimestamp(p.now);
  const taskId = ns + (p.task?.taskId ?? 'absent');
  const steps = p.steps.map((s) => toStep(s, taskId, now));
  if (p.task !== null) await store.seed([toRecord(p.task, ns)], [], steps);
  if ('park' in p) {
    // A park: the holder's handler disagrees with the journal; the reason is the message's, not the decision's.
    const fence = { taskId, authKey: ns + p.auth, version: p.park.expectedVersion, owner: p.park.owner };
    return (await store.park({ fence, reason: PARK_REASON, now, correlationId: `${ns}park` })).decision;
  }
  const { record } = p;
  const fence = { taskId, authKey: ns + p.auth, version: record.expectedVersion, owner: record.owner };
  const waits = hasWakeTime(record.status);
  const stored = steps.find((s) => s.position === record.position);
  const step: StepWrite = {
    position: record.position,
    name: record.name,
    kind: record.kind,
    status: record.status,
    attempts: record.attempts ?? (record.kind === 'do' ? (stored?.attempts ?? 0) + 1 : 0),
    value: valueOfBytes(record.valueBytes),
    error: record.status === 'failed' || record.status === 'retrying' ? REPLAY_ERROR : null,
    // A wait again (or a sleep marked woke) at a stored wait's position keeps its wake time unless the packet names one.
    wakeAt: waits
      ? record.wakeAt === undefined
        ? (stored?.wakeAt ?? (record.status === 'woke' ? now : now + DEFAULT_WAIT_MS))
        : parseTimestamp(record.wakeAt)
      : null,
    startedAt: now,
  };
  const outcome = await store.recordStep({ fence, step, maxStepBytes: REPLAY_MAX_STEP_BYTES, ...p.limits, now, correlationId: `${ns}step` });
  return outcome.decision;
}

const PARK_REASON = 'step order changed (replay)';

const REPLAY_ERROR: StepError = { message: 'the step failed (replay)', name: 'Error' };

/**
 * A JSON value whose text is exactly `bytes` bytes: none for 0, one digit for 1, else a string
 * of ASCII letters between its two quotes.
 */
export function valueOfBytes(bytes: number): unknown {
  if (bytes === 0) return undefined;
  if (bytes === 1) return 0;
  return 'x'.repeat(bytes - 2);
}

/** A packet's journal row as the store keeps it, with a value of `valueBytes` bytes (none when absent): the rules read only its size. */
function toStep(packet: StoredStepPacket, taskId: string, now: Millis): StepRecord {
  const waits = hasWakeTime(packet.status);
  return {
    taskId,
    position: packet.position,
    name: packet.name,
    kind: packet.kind,
    status: packet.status,
    attempts: packet.attempts,
    value: valueOfBytes(packet.valueBytes ?? 0),
    error: packet.status === 'failed' || packet.status === 'retrying' ? REPLAY_ERROR : null,
    valueBytes: packet.valueBytes ?? 0,
    wakeAt: waits && packet.wakeAt != null ? parseTimestamp(packet.wakeAt) : null,
    concurrent: false,
    startedAt: now,
    updatedAt: now,
  };
}
