import type { TaskRecord } from '../../src/core/types.js';

export const T0 = Date.parse('2026-07-23T12:00:00.000Z');
export const HOUR = 3_600_000;

/** A stored record with sensible defaults; tests override what they are about. */
export function record(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: 't-1',
    authKey: 'tenant-a/alice',
    toolName: 'export_ledger',
    status: 'working',
    statusMessage: null,
    version: 1,
    createdAt: T0 - HOUR,
    lastUpdatedAt: T0 - HOUR,
    ttl: 24 * HOUR,
    expiresAt: T0 + 23 * HOUR,
    pollInterval: 1000,
    requestDigest: null,
    idempotencyKey: null,
    request: null,
    cancelRequested: false,
    result: null,
    resultDigest: null,
    correlationId: null,
    attempt: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    ...overrides,
  };
}

export const ALL_CAPS = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
