import { isExpired } from './time.js';
import { mayClaimVersion, type VersionGrants } from './version-rules.js';
import { isTerminal, type Fence, type Millis, type TaskRecord } from './types.js';
import { visibleTo } from './visibility.js';

/**
 * What a claim walk does with one due outbox entry, given its task as read:
 *
 * - `close`: the task is gone, finished or expired; the entry is done for good.
 * - `leave`: the task waits for input; the entry stays due and untouched.
 * - `defer`: another worker's lease still runs; offer the entry again at `until`.
 * - `abandon`: the task used up its attempts; end it `failed` and close the entry.
 * - `claim`: lease it to the claimer (a new attempt, version + 1).
 */
export type DispatchStep = { kind: 'close' } | { kind: 'leave' } | { kind: 'defer'; until: Millis } | { kind: 'abandon' } | { kind: 'claim' };

export type DispatchKind = DispatchStep['kind'];

/** The part of a record the dispatch rules read. */
export type DispatchedRecord = Pick<TaskRecord, 'status' | 'expiresAt' | 'leaseOwner' | 'leaseExpiresAt' | 'attempt'>;

/** A lease is held while it has an owner and an expiry after `now`; otherwise anyone may claim. */
export function leaseHeld(task: Pick<TaskRecord, 'leaseOwner' | 'leaseExpiresAt'>, now: Millis): boolean {
  return task.leaseOwner !== null && task.leaseExpiresAt !== null && task.leaseExpiresAt > now;
}

/**
 * The dispatch rule for one due entry, in its precedence: a missing, terminal or expired task
 * closes the entry before anything else looks at it; only a `working` task is dispatched; a held
 * lease defers; the attempt count decides between abandoning and claiming.
 */
export function decideDispatch(task: DispatchedRecord | null, now: Millis, maxAttempts: number): DispatchStep {
  if (task === null || isTerminal(task.status) || isExpired(task, now)) return { kind: 'close' };
  if (task.status !== 'working') return { kind: 'leave' };
  if (leaseHeld(task, now)) return { kind: 'defer', until: task.leaseExpiresAt! };
  return task.attempt >= maxAttempts ? { kind: 'abandon' } : { kind: 'claim' };
}

const TAKEOVER = 'takeover';

/**
 * The audit detail of a claim by `owner` of `task` as its claim walk read it: a takeover when
 * another owner's lease was on it and ran out (the claim rule passes only a lease not held), a
 * plain claim otherwise (a fresh task, one released, suspended or woken, the claimer's own lapsed
 * lease).
 */
export function claimDetail(task: Pick<TaskRecord, 'leaseOwner'>, owner: string): string {
  const previous = task.leaseOwner;
  return previous !== null && previous !== owner ? `${TAKEOVER} ${owner} (lease of ${previous} expired)` : `claim ${owner}`;
}

/** Whether an audit line's detail is a claim that took a task over (`claimDetail`). */
export function isTakeover(detail: string | null | undefined): boolean {
  return detail?.startsWith(`${TAKEOVER} `) === true;
}

/** The part of a record the fence is checked against. */
export type FencedRecord = Pick<TaskRecord, 'taskId' | 'authKey' | 'version' | 'leaseOwner' | 'status' | 'expiresAt'>;

/**
 * Whether `fence` still holds `task` at `now`: the same task, the version the holder wrote and
 * its lease owner, on a task not terminal and still visible to the fence's auth key
 * (`visibleTo`: the same key, unexpired). Strict
 * equality: a version of another type (text '3') never matches. The lease's own expiry is not
 * part of it: a late heartbeat still holds until another claim bumps the version.
 */
export function holdsFence(task: FencedRecord | null, fence: Fence, now: Millis): boolean {
  return (
    task !== null &&
    task.taskId === fence.taskId &&
    task.version === fence.version &&
    task.leaseOwner === fence.owner &&
    !isTerminal(task.status) &&
    visibleTo(task, fence.authKey, now)
  );
}

/** Who a claim walk claims for: the claimer's app and the tools it runs (absent: any). */
export interface Claimer {
  app?: string | undefined;
  tools?: readonly string[] | undefined;
  /** The tool versions it may take (`decideVersionGrants`; a tool without a grant: only its unversioned tasks); absent: any version. */
  versions?: VersionGrants | undefined;
}

/**
 * Whether a task is the claimer's to dispatch at all: of its app, of a tool it runs, of a
 * version it may take (`mayClaimVersion`). Any
 * other task is skipped before `decideDispatch` looks at it, and stays untouched and due for a
 * worker it is for (tool names are unique within an app only: another app's `build_report` is
 * another tool).
 */
export function isForClaimer(task: Pick<TaskRecord, 'app' | 'toolName' | 'toolVersion'>, claimer: Claimer): boolean {
  if (claimer.app !== undefined && task.app !== claimer.app) return false;
  if (claimer.tools !== undefined && !claimer.tools.includes(task.toolName ?? '')) return false;
  // Of a version another live worker runs, or one the claimer is not the newest heir of: left for them.
  return claimer.versions === undefined || mayClaimVersion(task.toolVersion, claimer.versions.get(task.toolName ?? ''));
}
