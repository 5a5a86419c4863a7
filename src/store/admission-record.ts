import { DEFAULT_APP } from '../core/app-name.js';
import type { TaskRecord } from '../core/types.js';
import type { AdmitInput } from './types.js';

/** The record an accepted admission stores, in every store: working, version 1, expiry from the ttl. */
export function admissionRecord(input: AdmitInput): TaskRecord {
  return withParent(input.parentTaskId, {
    taskId: input.taskId,
    authKey: input.authKey,
    app: input.app ?? DEFAULT_APP,
    toolName: input.toolName,
    toolDigest: input.toolDigest ?? null,
    toolVersion: input.toolVersion ?? null,
    status: 'working',
    statusMessage: null,
    version: 1,
    createdAt: input.now,
    lastUpdatedAt: input.now,
    ttl: input.ttl,
    expiresAt: input.ttl === null ? null : input.now + input.ttl,
    pollInterval: input.pollInterval,
    requestDigest: input.requestDigest,
    idempotencyKey: input.idempotencyKey,
    request: input.request,
    cancelRequested: false,
    result: null,
    resultDigest: null,
    correlationId: input.correlationId,
    attempt: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
  });
}

/** `record` with its parent task, when it has one (a record without one carries no `parentTaskId` at all). */
export function withParent(parentTaskId: string | null | undefined, record: TaskRecord): TaskRecord {
  if (parentTaskId !== undefined && parentTaskId !== null) record.parentTaskId = parentTaskId;
  return record;
}
