import { isTakeover } from '../core/dispatch-rules.js';
import type { StoredInput } from '../core/input-rules.js';
import { principalOf } from '../core/principal.js';
import type { StepRecord } from '../core/step-rules.js';
import { isExpired } from '../core/time.js';
import type { Millis, TaskRecord } from '../core/types.js';
import type { TaskInspection, TaskStats } from '../store/task-operations.js';
import type { AuditEntry } from '../store/types.js';
import { renderTable } from './table.js';

/**
 * What `tasklatch tasks` prints: the JSON shapes (`--json`, stable: fields are added, never
 * renamed) and the human tables. Times are ISO 8601 in JSON, `YYYY-MM-DD HH:MM:SS` UTC in tables.
 */

const iso = (ms: Millis | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const shortTime = (ms: Millis | null): string => (ms === null ? '-' : new Date(ms).toISOString().slice(0, 19).replace('T', ' '));

/** One task as `tasks ls --json` lists it (no request, no result). */
export function taskSummary(record: TaskRecord, now: Millis) {
  const { tenant, subject } = principalOf(record.authKey);
  return {
    taskId: record.taskId,
    tenant,
    subject,
    app: record.app,
    tool: record.toolName,
    toolVersion: record.toolVersion,
    status: record.status,
    statusMessage: record.statusMessage,
    version: record.version,
    attempt: record.attempt,
    createdAt: iso(record.createdAt),
    lastUpdatedAt: iso(record.lastUpdatedAt),
    expiresAt: iso(record.expiresAt),
    expired: isExpired(record, now),
    cancelRequested: record.cancelRequested,
    leaseOwner: record.leaseOwner,
    leaseExpiresAt: iso(record.leaseExpiresAt),
  };
}

/** How many claims in a task's audit trail took it over from another owner's lapsed lease. */
export function countTakeovers(trail: readonly AuditEntry[]): number {
  return trail.filter((line) => line.decision === 'APPLY_TRANSITION' && isTakeover(line.detail)).length;
}

/**
 * Everything `tasks show --json` prints of one task (`steps`: its journal, in position order;
 * `takeovers`: the claims of its audit trail that took it over, `countTakeovers`).
 */
export function taskDetail(seen: TaskInspection, now: Millis, steps: readonly StepRecord[] = [], takeovers = 0) {
  const { record, dispatch, inputs } = seen;
  return {
    task: {
      ...taskSummary(record, now),
      takeovers,
      ttl: record.ttl,
      pollInterval: record.pollInterval,
      idempotencyKey: record.idempotencyKey,
      correlationId: record.correlationId,
      requestDigest: record.requestDigest,
      toolDigest: record.toolDigest,
      request: record.request,
      result: record.result,
      resultDigest: record.resultDigest,
    },
    // Since when and how many times in a row the task parked (its handler disagrees with its journal), or null.
    parked: seen.parked === null ? null : { since: iso(seen.parked.parkedAt), parks: seen.parked.parks },
    lease: { owner: record.leaseOwner, expiresAt: iso(record.leaseExpiresAt), held: record.leaseOwner !== null && (record.leaseExpiresAt ?? 0) > now },
    dispatch:
      dispatch === null
        ? null
        : {
            createdAt: iso(dispatch.createdAt),
            availableAt: iso(dispatch.availableAt),
            claimedBy: dispatch.claimedBy,
            leaseExpiresAt: iso(dispatch.leaseExpiresAt),
            attempt: dispatch.attempt,
            doneAt: iso(dispatch.doneAt),
            open: dispatch.doneAt === null,
          },
    inputs: inputs.map(inputView),
    steps: steps.map(stepView),
  };
}

/**
 * One journal row: no value (it may be large, and is the tool's business), its size and its error.
 * A patch gate's marker is kind `patch` (its name the gate's id); a sleep the task has passed is
 * `woke` (its wake time the one it had); `concurrent`: the step ran beside another of its run.
 */
function stepView(s: StepRecord) {
  return {
    position: s.position,
    name: s.name,
    kind: s.kind,
    status: s.status,
    concurrent: s.concurrent,
    attempts: s.attempts,
    startedAt: iso(s.startedAt),
    updatedAt: iso(s.updatedAt),
    valueBytes: s.valueBytes,
    wakeAt: iso(s.wakeAt),
    error: s.error,
  };
}

function inputView(q: StoredInput) {
  return {
    key: q.key,
    askSeq: q.askSeq,
    method: q.request.method,
    askedAt: iso(q.askedAt),
    deadlineAt: iso(q.deadlineAt),
    answeredAt: iso(q.answeredAt),
    outstanding: q.answeredAt === null,
  };
}

export function auditView(line: AuditEntry) {
  return {
    at: iso(line.at),
    surface: line.surface,
    decision: line.decision,
    authKey: line.authKey,
    taskId: line.taskId,
    correlationId: line.correlationId,
    status: line.status ?? null,
    version: line.version ?? null,
    detail: line.detail ?? null,
    // An aggregated row: how many such decisions, the first and the last.
    ...(line.count === undefined ? {} : { count: line.count, firstAt: iso(line.firstAt ?? line.at), lastAt: iso(line.lastAt ?? line.at) }),
  };
}

export function statsView(stats: TaskStats, now: Millis) {
  return {
    total: stats.total,
    byStatus: stats.byStatus,
    byTool: stats.byTool,
    oldestWorking:
      stats.oldestWorking === null
        ? null
        : { ...stats.oldestWorking, createdAt: iso(stats.oldestWorking.createdAt), ageSeconds: Math.round((now - stats.oldestWorking.createdAt) / 1000) },
    expiredAwaitingSweep: stats.expiredAwaitingSweep,
    pendingDispatch: stats.pendingDispatch,
  };
}

export function taskTable(records: readonly TaskRecord[], now: Millis): string {
  const rows = records.map((r) => [
    r.taskId,
    r.authKey,
    r.app,
    r.toolName ?? '-',
    r.toolVersion ?? '-',
    isExpired(r, now) ? `${r.status} (expired)` : r.status,
    String(r.attempt),
    shortTime(r.createdAt),
    shortTime(r.lastUpdatedAt),
  ]);
  return renderTable(['TASK', 'PRINCIPAL', 'APP', 'TOOL', 'TOOL VERSION', 'STATUS', 'ATTEMPT', 'CREATED (UTC)', 'UPDATED (UTC)'], rows);
}

export function detailText(seen: TaskInspection, now: Millis, steps: readonly StepRecord[] = [], takeovers = 0): string {
  const d = taskDetail(seen, now, steps, takeovers);
  const t = d.task;
  const lines = [
    `task        ${t.taskId}`,
    `principal   ${t.tenant}/${t.subject}`,
    `app         ${t.app}`,
    `tool        ${t.tool ?? '-'}${t.toolVersion === null ? '' : `   version ${t.toolVersion}`}${t.toolDigest === null ? '' : `   definition ${t.toolDigest.slice(0, 12)}`}`,
    // An expired task's message (a wait's, a park's) says what it was doing, not what it does: left out here, kept in --json.
    `status      ${t.status}${t.expired ? ' (expired, awaiting the sweep)' : ''}${t.statusMessage === null || t.expired ? '' : ` — ${t.statusMessage}`}`,
    `version     ${t.version}   attempt ${t.attempt}, ${takeovers} takeover${takeovers === 1 ? '' : 's'}${t.cancelRequested ? '   cancellation requested' : ''}`,
    `created     ${shortTime(seen.record.createdAt)}   updated ${shortTime(seen.record.lastUpdatedAt)}   expires ${shortTime(seen.record.expiresAt)}`,
    `lease       ${d.lease.owner === null ? 'none' : `${d.lease.owner} until ${shortTime(seen.record.leaseExpiresAt)}${d.lease.held ? '' : ' (lapsed)'}`}`,
    `outbox      ${seen.dispatch === null ? 'no entry' : seen.dispatch.doneAt === null ? `open, due ${shortTime(seen.dispatch.availableAt)}` : `closed ${shortTime(seen.dispatch.doneAt)}`}`,
    ...(seen.parked === null
      ? []
      : [`parked      since ${shortTime(seen.parked.parkedAt)}, ${seen.parked.parks} time${seen.parked.parks === 1 ? '' : 's'} in a row`]),
    `idempotency ${t.idempotencyKey ?? '-'}`,
    `correlation ${t.correlationId ?? '-'}`,
  ];
  if (seen.record.result !== null) lines.push(`result      ${truncate(JSON.stringify(seen.record.result), 200)}`);
  if (d.inputs.length > 0) {
    lines.push('', 'inputs');
    lines.push(
      renderTable(
        ['KEY', 'ASK', 'METHOD', 'ASKED (UTC)', 'DEADLINE (UTC)', 'ANSWERED (UTC)'],
        seen.inputs.map((q) => [q.key, String(q.askSeq), String(q.request.method), shortTime(q.askedAt), shortTime(q.deadlineAt), shortTime(q.answeredAt)]),
      ),
    );
  }
  if (steps.length > 0) {
    lines.push('', 'steps');
    lines.push(
      renderTable(
        ['POS', 'NAME', 'KIND', 'STATUS', 'CONCURRENT', 'ATTEMPTS', 'STARTED (UTC)', 'UPDATED (UTC)', 'BYTES', 'WAKE (UTC)', 'ERROR'],
        steps.map((s) => [
          String(s.position),
          s.name,
          s.kind,
          s.status,
          s.concurrent ? 'yes' : '',
          String(s.attempts),
          shortTime(s.startedAt),
          shortTime(s.updatedAt),
          String(s.valueBytes),
          shortTime(s.wakeAt),
          s.error === null ? '' : truncate(s.error.message, 80),
        ]),
      ),
    );
  }
  return lines.join('\n');
}

/**
 * One row per line; an aggregated row says how many decisions (TIMES) and the last (LAST, UTC)
 * beside its first (AT), with the latest one's correlation id, status and version.
 */
export function auditTable(lines: readonly AuditEntry[]): string {
  const time = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  return renderTable(
    ['AT (UTC)', 'LAST (UTC)', 'TIMES', 'SURFACE', 'DECISION', 'AUTH KEY', 'CORRELATION', 'STATUS', 'VERSION', 'DETAIL'],
    lines.map((l) => [
      time(l.at),
      l.count === undefined ? '-' : time(l.lastAt ?? l.at),
      String(l.count ?? 1),
      l.surface,
      l.decision,
      l.authKey,
      l.correlationId,
      l.status ?? '-',
      l.version === null || l.version === undefined ? '-' : String(l.version),
      l.detail ?? '',
    ]),
  );
}

export function statsText(stats: TaskStats, now: Millis): string {
  const v = statsView(stats, now);
  const statusRows = Object.entries(stats.byStatus).map(([status, n]) => [status, String(n)]);
  return [
    renderTable(['STATUS', 'TASKS'], [...statusRows, ['total', String(stats.total)]]),
    '',
    renderTable(
      ['TOOL', 'STATUS', 'TASKS'],
      stats.byTool.map((r) => [r.tool ?? '-', r.status, String(r.count)]),
    ),
    '',
    `oldest working task      ${v.oldestWorking === null ? 'none' : `${v.oldestWorking.taskId} (${v.oldestWorking.authKey}), ${v.oldestWorking.ageSeconds} s old`}`,
    `expired, awaiting sweep  ${stats.expiredAwaitingSweep}`,
    `open outbox entries      ${stats.pendingDispatch}`,
  ].join('\n');
}

function truncate(text: string, most: number): string {
  return text.length <= most ? text : `${text.slice(0, most - 1)}…`;
}
