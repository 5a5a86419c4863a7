import { DEFAULT_APP } from '../core/app-name.js';
import { idempotencyKeyOf } from '../core/create-rules.js';
import { requestDigest, resultDigest } from '../core/digest.js';
import { parseTimestamp } from '../core/time.js';
import type { TaskRecord } from '../core/types.js';
import type { StoredRecordPacket } from './fixture.js';

/** A packet's stored record as the store keeps it, under the case's namespace. */
export function toRecord(packet: StoredRecordPacket, ns = ''): TaskRecord {
  const createdAt = parseTimestamp(packet.createdAt);
  const expiresAt = packet.expiresAt === null ? null : parseTimestamp(packet.expiresAt);
  const request = packet.request ?? null;
  const result = packet.result ?? null;
  const toolName = request !== null && typeof request.params.name === 'string' ? request.params.name : null;
  return {
    taskId: ns + packet.taskId,
    authKey: ns + packet.auth,
    // A fixture speaks of one application's tasks: the one a runtime that names none serves.
    app: DEFAULT_APP,
    toolName,
    toolDigest: null,
    toolVersion: null,
    status: packet.status,
    statusMessage: packet.statusMessage ?? null,
    version: packet.version,
    createdAt,
    lastUpdatedAt: createdAt,
    ttl: expiresAt === null ? null : expiresAt - createdAt,
    expiresAt,
    pollInterval: null,
    requestDigest: request === null ? null : requestDigest(request),
    idempotencyKey: packet.idempotencyKey ?? (request === null ? null : idempotencyKeyOf(request)),
    request,
    cancelRequested: packet.status === 'cancelled',
    result,
    resultDigest: result === null ? null : resultDigest(result),
    correlationId: null,
    attempt: 0,
    leaseOwner: packet.leaseOwner ?? null,
    leaseExpiresAt: packet.leaseExpiresAt == null ? null : parseTimestamp(packet.leaseExpiresAt),
  };
}
