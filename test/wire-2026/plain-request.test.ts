import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CallToolParams, Envelope, RequestMeta, TaskIdParams } from '../../src/wire-2026/messages.js';
import { plainEnvelope, plainMeta, plainTaskId, plainToolCall } from '../../src/wire-2026/plain-request.js';
import { META_KEYS } from '../../src/core/meta-keys.js';

/**
 * The hand-written checks of the hot path may only accept what the schemas accept, and must
 * read the same values from it; what they pass over goes to the schemas, which word the error.
 */

/** JSON values and near-misses of the shapes the checks look for, as a client could send them. */
const scalar = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(2 ** 60), fc.constant(''));
const anyJson = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(fc.string(), scalar, { maxKeys: 3 }),
  fc.constant(JSON.parse('{"__proto__":{}}')),
);

const metaLike = fc.record(
  {
    [META_KEYS.protocolVersion]: fc.oneof(fc.constant('2026-07-28'), anyJson),
    [META_KEYS.clientCapabilities]: fc.oneof(fc.constant({ extensions: { 'io.modelcontextprotocol/tasks': {} } }), anyJson),
    [META_KEYS.clientInfo]: fc.oneof(fc.record({ name: fc.oneof(fc.string(), anyJson), version: fc.oneof(fc.string(), anyJson) }), anyJson),
  },
  { requiredKeys: [] },
);
const paramsLike = fc.oneof(fc.record({ taskId: fc.oneof(fc.string(), anyJson), _meta: fc.oneof(metaLike, anyJson) }, { requiredKeys: [] }), anyJson);
const envelopeLike = fc.oneof(
  fc.record(
    {
      jsonrpc: fc.oneof(fc.constant('2.0'), anyJson),
      id: fc.oneof(fc.integer(), fc.string(), anyJson),
      method: fc.oneof(fc.constant('tasks/get'), fc.constant(''), anyJson),
      params: paramsLike,
    },
    { requiredKeys: [] },
  ),
  anyJson,
);

/** Through JSON, as every body arrives: no undefined members, `__proto__` as an own key. */
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value ?? null)) as unknown;

describe('hand-written request checks', () => {
  it('accept only envelopes the schema accepts, with the same id, method and params', () => {
    fc.assert(
      fc.property(envelopeLike, (raw) => {
        const body = asJson(raw);
        const plain = plainEnvelope(body);
        if (plain === null) return;
        const parsed = Envelope.safeParse(body);
        expect(parsed.success).toBe(true);
        expect({ id: plain.id, method: plain.method, params: plain.params }).toEqual({
          id: parsed.data?.id,
          method: parsed.data?.method,
          params: parsed.data?.params,
        });
      }),
      { numRuns: 3000 },
    );
  });

  it('accept only _meta the schema accepts, with the same version and capabilities', () => {
    fc.assert(
      fc.property(fc.oneof(metaLike, anyJson), (raw) => {
        const meta = asJson(raw);
        const plain = plainMeta(meta);
        if (plain === null) return;
        const parsed = RequestMeta.safeParse(meta);
        expect(parsed.success).toBe(true);
        expect(plain).toEqual({ version: parsed.data?.[META_KEYS.protocolVersion], capabilities: parsed.data?.[META_KEYS.clientCapabilities] });
      }),
      { numRuns: 3000 },
    );
  });

  it('accept only task ids the schema accepts', () => {
    fc.assert(
      fc.property(paramsLike, (raw) => {
        const params = asJson(raw);
        if (typeof params !== 'object' || params === null || Array.isArray(params)) return;
        const plain = plainTaskId(params as Record<string, unknown>);
        if (plain === null) return;
        expect(TaskIdParams.safeParse(params).data?.taskId).toBe(plain);
      }),
    );
  });

  it('accept only tools/call params the schema accepts, with the same name and arguments', () => {
    const callLike = fc.oneof(
      fc.record(
        {
          name: fc.oneof(fc.constant('bench_noop'), fc.constant(''), anyJson),
          arguments: fc.oneof(fc.dictionary(fc.string(), scalar, { maxKeys: 3 }), anyJson),
          _meta: fc.oneof(metaLike, anyJson),
        },
        { requiredKeys: [] },
      ),
      anyJson,
    );
    fc.assert(
      fc.property(callLike, (raw) => {
        const params = asJson(raw);
        if (typeof params !== 'object' || params === null || Array.isArray(params)) return;
        const plain = plainToolCall(params as Record<string, unknown>);
        if (plain === null) return;
        const parsed = CallToolParams.safeParse(params);
        expect(parsed.success).toBe(true);
        expect(plain).toEqual({ name: parsed.data?.name, arguments: parsed.data?.arguments });
      }),
      { numRuns: 3000 },
    );
    expect(plainToolCall({ name: 't', arguments: { a: 1 } })).toEqual({ name: 't', arguments: { a: 1 } });
    expect(plainToolCall({ name: 't' })).toEqual({ name: 't', arguments: undefined });
    for (const bad of [
      { name: '' },
      { name: 5 },
      { name: 't', arguments: [] },
      { name: 't', arguments: null },
      { name: 't', arguments: JSON.parse('{"__proto__":{}}') },
    ]) {
      expect(plainToolCall(bad as Record<string, unknown>)).toBeNull();
    }
  });

  it('take the usual poll by hand and leave the malformed ones to the schemas', () => {
    const meta = { [META_KEYS.protocolVersion]: '2026-07-28', [META_KEYS.clientCapabilities]: {}, [META_KEYS.clientInfo]: { name: 'c', version: '1' } };
    const poll = { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId: 't-1', _meta: meta } };
    expect(plainEnvelope(poll)).toEqual({ id: 7, method: 'tasks/get', params: poll.params });
    expect(plainMeta(meta)).toEqual({ version: '2026-07-28', capabilities: {} });
    expect(plainTaskId(poll.params)).toBe('t-1');
    for (const bad of [
      [poll],
      { ...poll, jsonrpc: '1.0' },
      { ...poll, id: 1.5 },
      { ...poll, id: 2 ** 60 },
      { ...poll, method: '' },
      { ...poll, params: [] },
      null,
    ]) {
      expect(plainEnvelope(bad)).toBeNull();
    }
    for (const bad of [
      null,
      [],
      { ...meta, [META_KEYS.protocolVersion]: '' },
      { ...meta, [META_KEYS.clientCapabilities]: [] },
      { ...meta, [META_KEYS.clientInfo]: { name: 'c' } },
    ]) {
      expect(plainMeta(bad)).toBeNull();
    }
    expect(plainTaskId({ taskId: '' })).toBeNull();
    expect(plainTaskId({ taskId: 5 })).toBeNull();
  });
});
