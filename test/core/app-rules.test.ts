import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { APP_NAME_MAX, checkAppName, DEFAULT_APP } from '../../src/core/app-name.js';
import { toolDigest } from '../../src/core/digest.js';
import { isForClaimer } from '../../src/core/dispatch-rules.js';
import { isTasklatchError } from '../../src/core/errors.js';
import { record } from '../support/records.js';

describe('app names', () => {
  it.each(['default', 'billing-service', '@acme/reports', 'Relevés — équipe 2', 'a', 'x'.repeat(APP_NAME_MAX), '報告'])('accepts %j', (name) => {
    expect(checkAppName(name)).toBe(name);
  });

  it.each([
    ['', /must not be empty/],
    ['x'.repeat(APP_NAME_MAX + 1), /at most 100 characters/],
    ['line\nbreak', /does not print/],
    ['nul\u0000', /does not print/],
    ['bidi\u202eoverride', /does not print/],
    ['zero\u200bwidth', /does not print/],
    ['lone\ud800', /does not print/],
    [' leading', /start or end with a space/],
    ['trailing ', /start or end with a space/],
    [42, /must be a string/],
  ])('refuses %j', (name, why) => {
    let error: unknown = null;
    try {
      checkAppName(name, '--app');
    } catch (caught) {
      error = caught;
    }
    expect(isTasklatchError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(/^--app /);
    expect((error as Error).message).toMatch(why);
  });

  it('counts characters, not UTF-16 units, against the bound', () => {
    expect(checkAppName('😀'.repeat(APP_NAME_MAX))).toHaveLength(2 * APP_NAME_MAX);
  });

  it('names the default app', () => {
    expect(DEFAULT_APP).toBe('default');
  });
});

describe('tool digest', () => {
  const tool = { name: 'build_report', inputSchema: { type: 'object', properties: { month: { type: 'string' } } }, execution: { taskSupport: 'required' } };

  it('is the SHA-256 of the JCS text of name, input and output schema and execution', () => {
    const text =
      '{"execution":{"taskSupport":"required"},"inputSchema":{"properties":{"month":{"type":"string"}},"type":"object"},"name":"build_report","outputSchema":null}';
    expect(toolDigest(tool)).toBe(createHash('sha256').update(text).digest('hex'));
  });

  it('changes with the name, either schema or the execution, and not with key order', () => {
    const digest = toolDigest(tool);
    expect(toolDigest({ ...tool, inputSchema: { properties: { month: { type: 'string' } }, type: 'object' } })).toBe(digest);
    expect(toolDigest({ ...tool, name: 'build_reports' })).not.toBe(digest);
    expect(toolDigest({ ...tool, inputSchema: { type: 'object' } })).not.toBe(digest);
    expect(toolDigest({ ...tool, outputSchema: { type: 'object', properties: { total: { type: 'number' } } } })).not.toBe(digest);
    expect(toolDigest({ ...tool, execution: { taskSupport: 'optional' } })).not.toBe(digest);
  });
});

describe('isForClaimer', () => {
  const task = record({ app: 'billing', toolName: 'build_report' });
  it.each([
    [{}, true],
    [{ app: 'billing' }, true],
    [{ app: 'sales' }, false],
    [{ tools: ['build_report'] }, true],
    [{ app: 'billing', tools: ['build_report', 'other'] }, true],
    [{ app: 'billing', tools: ['other'] }, false],
    [{ app: 'sales', tools: ['build_report'] }, false],
    [{ app: 'billing', tools: [] }, false],
  ])('%j → %s', (claimer, expected) => {
    expect(isForClaimer(task, claimer)).toBe(expected);
  });
});
