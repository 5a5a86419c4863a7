import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isForClaimer } from '../../src/core/dispatch-rules.js';
import { isTasklatchError } from '../../src/core/errors.js';
import {
  checkToolVersion,
  decideVersionGrants,
  defaultToolVersion,
  liveVersionsOf,
  mayClaimVersion,
  TOOL_VERSION_MAX,
  versionGrantLists,
  type VersionAnnouncement,
} from '../../src/core/version-rules.js';
import { defineTool } from '../../src/tools/tool.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { record } from '../support/records.js';

const NOW = 1_000_000;
const SILENCE = 30_000;

function said(version: string, workerId: string, firstSeen: number, lastSeen = NOW, tool = 'build'): VersionAnnouncement {
  return { app: 'default', tool, version, workerId, firstSeen, lastSeen };
}

describe('tool versions', () => {
  it.each(['v1', '2026-07-01.3', 'a', 'x'.repeat(TOOL_VERSION_MAX), 'Relevé 2'])('accepts the explicit version %j', (v) => {
    expect(checkToolVersion(v)).toBe(v);
  });

  it.each([
    ['', /must not be empty/],
    ['x'.repeat(TOOL_VERSION_MAX + 1), /at most 100 characters/],
    ['v1\nv2', /does not print/],
    ['nul\u0000', /does not print/],
    [' v1', /start or end with a space/],
    [2, /must be a string/],
  ])('refuses the explicit version %j', (v, why) => {
    let error: unknown = null;
    try {
      checkToolVersion(v);
    } catch (caught) {
      error = caught;
    }
    expect(isTasklatchError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(why);
  });

  it('defaults to a short digest of the handler source and the definition: the same for the same code, another for any edit', () => {
    const make = (body: string, extra = false) =>
      defineTool({
        name: 'build',
        description: 'builds',
        inputSchema: extra ? z.object({ n: z.number() }) : z.object({}),
        execution: { taskSupport: 'optional' },
        // eslint-disable-next-line @typescript-eslint/no-implied-eval -- a handler whose source text the test chooses
        handler: new Function('args', 'ctx', body) as never,
      });
    const one = new ToolRegistry([make('return 1')]).version('build')!;
    expect(one).toMatch(/^[0-9a-f]{16}$/);
    expect(new ToolRegistry([make('return 1')]).version('build')).toBe(one);
    expect(new ToolRegistry([make('return 2')]).version('build')).not.toBe(one);
    expect(new ToolRegistry([make('return 1', true)]).version('build')).not.toBe(one);
    expect(defaultToolVersion('return 1', 'd')).not.toBe(defaultToolVersion('return 1', 'e'));
    expect(new ToolRegistry([make('return 1')]).version('other')).toBeNull();
  });

  it('takes an explicit version over the digest, and refuses a malformed one when the tool is defined', () => {
    const tool = { name: 'build', description: 'b', inputSchema: z.object({}), handler: async () => ({ content: [] }) };
    expect(new ToolRegistry([defineTool(Object.assign({}, tool, { version: 'v7' }))]).version('build')).toBe('v7');
    expect(() => defineTool(Object.assign({}, tool, { version: '' }))).toThrow(/must not be empty/);
    expect(() => new ToolRegistry([Object.assign({}, tool, { version: 'v\n' })]).version('build')).toThrow(/does not print/);
  });
});

describe('live versions and the claim rule', () => {
  it('orders live versions by when they first came up, newest first, ties by the greater version; silent ones are gone', () => {
    const announcements = [
      said('v1', 'a', 100),
      said('v1', 'b', 900), // a restarted v1 worker does not make v1 newer
      said('v2', 'c', 500),
      said('v3', 'd', 500),
      said('v4', 'e', 999, NOW - SILENCE), // silent for exactly the silence: gone
      said('v9', 'f', 1, NOW, 'other'),
    ];
    expect(liveVersionsOf(announcements, 'build', NOW, SILENCE)).toEqual(['v3', 'v2', 'v1']);
    expect(liveVersionsOf(announcements, 'build', NOW - 1, SILENCE)).toEqual(['v4', 'v3', 'v2', 'v1']);
  });

  it.each([
    // [worker version, announcements, task version, may claim]
    ['v2', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v2', true],
    ['v2', [said('v1', 'a', 1), said('v2', 'b', 2)], null, true],
    ['v2', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v1', false],
    ['v2', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v0', true],
    ['v1', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v0', false],
    ['v1', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v2', false],
    ['v1', [said('v1', 'a', 1), said('v2', 'b', 2)], 'v1', true],
    ['v2', [said('v1', 'a', 1, NOW - SILENCE), said('v2', 'b', 2)], 'v1', true],
    // Its own announcement missing from the read: it counts as live and newest.
    ['v3', [said('v1', 'a', 1)], 'v1', false],
    ['v3', [said('v1', 'a', 1)], 'v0', true],
  ] as const)('a worker of %s with %j may claim a task of %j: %s', (own, announcements, taskVersion, may) => {
    const grants = decideVersionGrants(new Map([['build', own]]), announcements, NOW, SILENCE);
    expect(mayClaimVersion(taskVersion, grants.get('build'))).toBe(may);
    expect(isForClaimer(record({ toolName: 'build', toolVersion: taskVersion }), { tools: ['build'], versions: grants })).toBe(may);
    // The lists the SQL stores restate the rule with say the same.
    const lists = versionGrantLists(grants);
    const key = `build\n${taskVersion}`;
    const listed = taskVersion === null || lists.own.includes(key) || (lists.newest.includes('build') && !lists.live.includes(key));
    expect(listed).toBe(may);
  });

  it('takes any version without grants; under grants, a tool without one only its unversioned tasks', () => {
    expect(isForClaimer(record({ toolName: 'build', toolVersion: 'v1' }), { tools: ['build'] })).toBe(true);
    const grants = decideVersionGrants(new Map([['other', 'v1']]), [], NOW, SILENCE);
    expect(mayClaimVersion('v1', undefined)).toBe(false);
    expect(isForClaimer(record({ toolName: 'build', toolVersion: 'v5' }), { versions: grants })).toBe(false);
    expect(isForClaimer(record({ toolName: 'build', toolVersion: null }), { versions: grants })).toBe(true);
    // A tool named like an object's own key finds no grant of its own by accident.
    expect(isForClaimer(record({ toolName: 'constructor', toolVersion: 'v5' }), { versions: grants })).toBe(false);
    // The SQL lists say the same: nothing of `build` in them.
    const lists = versionGrantLists(grants);
    expect([lists.own, lists.newest, lists.live]).toEqual([['other\nv1'], ['other'], ['other\nv1']]);
  });
});
