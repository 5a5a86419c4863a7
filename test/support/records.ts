import type { TaskRecord } from '../../src/core/types.js';
import type { AdmitInput } from '../../src/store/types.js';

export const T0 = Date.parse('2026-07-23T12:00:00.000Z');
export const HOUR = 3_600_000;

/** A stored record with sensible defaults; tests override what they are about. */
export function record(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: 't-1',
    authKey: 'tenant-a/alice',
    app: 'default',
    toolName: 'export_ledger',
    toolDigest: null,
    toolVersion: null,
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

export const PG_NOW = 1_750_000_000_000;

/** An admission of a random task id for the PostgreSQL race and dispatch tests. */
export function pgAdmission(overrides: Partial<AdmitInput> = {}): AdmitInput {
  return {
    taskId: `t-${Math.random().toString(36).slice(2)}`,
    authKey: 'tenant-a/alice',
    toolName: 'slow',
    request: { method: 'tools/call', params: { name: 'slow', arguments: { n: 1 } } },
    requestDigest: 'digest-1',
    idempotencyKey: null,
    ttl: null,
    pollInterval: 1000,
    correlationId: 'corr',
    now: PG_NOW,
    ...overrides,
  };
}
