import { TASKS_EXTENSION_ID_V2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { ErrorCode, RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
} from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { JSON_RPC_CODES } from '../../src/core/json-rpc-codes.js';
import { META_KEYS, TASKS_EXTENSION } from '../../src/core/meta-keys.js';

// The core spells the protocol's names itself (it loads no SDK); these pin them to the SDKs'
// own constants, so a typo or a drift shows here rather than on the wire.
describe('JSON-RPC codes', () => {
  it('match the codes both SDK generations name', () => {
    expect({
      parseError: JSON_RPC_CODES.parseError,
      invalidRequest: JSON_RPC_CODES.invalidRequest,
      methodNotFound: JSON_RPC_CODES.methodNotFound,
      invalidParams: JSON_RPC_CODES.invalidParams,
      internalError: JSON_RPC_CODES.internalError,
    }).toEqual({
      parseError: ErrorCode.ParseError,
      invalidRequest: ErrorCode.InvalidRequest,
      methodNotFound: ErrorCode.MethodNotFound,
      invalidParams: ErrorCode.InvalidParams,
      internalError: ErrorCode.InternalError,
    });
    expect(JSON_RPC_CODES.parseError).toBe(ProtocolErrorCode.ParseError);
    expect(JSON_RPC_CODES.internalError).toBe(ProtocolErrorCode.InternalError);
    expect(JSON_RPC_CODES.missingCapability).toBe(ProtocolErrorCode.MissingRequiredClientCapability);
    expect(JSON_RPC_CODES.unsupportedVersion).toBe(ProtocolErrorCode.UnsupportedProtocolVersion);
  });

  it('keep the codes the SDKs do not name where clients already see them', () => {
    expect(JSON_RPC_CODES.headerMismatch).toBe(-32020);
    expect([JSON_RPC_CODES.tooManyTasks, JSON_RPC_CODES.serverError]).toEqual([-32000, -32000]);
    expect([JSON_RPC_CODES.storeUnavailable, JSON_RPC_CODES.sessionNotFound]).toEqual([-32001, -32001]);
  });

  it('are all integers of the JSON-RPC error range', () => {
    for (const [name, code] of Object.entries(JSON_RPC_CODES)) {
      expect(Number.isInteger(code) && code >= -32768 && code <= -32000, name).toBe(true);
    }
  });
});

describe('meta keys', () => {
  it('match the keys and the extension id the SDKs name', () => {
    expect(META_KEYS.protocolVersion).toBe(PROTOCOL_VERSION_META_KEY);
    expect(META_KEYS.clientCapabilities).toBe(CLIENT_CAPABILITIES_META_KEY);
    expect(META_KEYS.clientInfo).toBe(CLIENT_INFO_META_KEY);
    expect(META_KEYS.serverInfo).toBe(SERVER_INFO_META_KEY);
    expect(META_KEYS.subscriptionId).toBe(SUBSCRIPTION_ID_META_KEY);
    expect(META_KEYS.relatedTask).toBe(RELATED_TASK_META_KEY);
    expect(TASKS_EXTENSION).toBe(TASKS_EXTENSION_ID_V2);
  });

  it("names tasklatch's own keys under io.tasklatch/", () => {
    expect([META_KEYS.idempotencyKey, META_KEYS.prepared]).toEqual(['io.tasklatch/idempotency-key', 'io.tasklatch/prepared']);
  });
});
