import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, readEvents, rpc } from '../support/stateless.js';
import { sqliteHarness } from '../support/stores.js';
import { authKeys, messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

const TOKENS = ['token-alice', 'token-bob', 'token-carol'] as const;

let wire: WireServer;
let sessions: Array<{ sessionId: string; headers: Record<string, string> }>;

beforeAll(async () => {
  // No workers: a task stays as its owner left it, so any change is a request's doing. A small
  // page so that lists have cursors to steal.
  wire = await startWireServer(await sqliteHarness.open('isolation'), { execute: false, limits: { pageSize: 2 } });
  sessions = [];
  for (const token of TOKENS) sessions.push(await openSession(wire.http.url, token));
});

afterAll(async () => {
  await wire.close();
});

let nextId = 1;
async function legacy(actor: number, method: string, params: Record<string, unknown>, headers = sessions[actor]!.headers) {
  const res = await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }), headers);
  return { status: res.status, message: await messageOf(res) };
}

/** The stored fact of a task as its owner sees it, through the store (not the wire). */
async function fact(taskId: string, owner: number): Promise<string> {
  const found = await wire.store.get({ authKey: authKeys[owner]!, taskId, now: Date.now() });
  return `${found.record?.status}@${found.record?.version}`;
}

const op = fc.record({
  actor: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom('create', 'get', 'cancel', 'result', 'update', 'list', 'steal-cursor', 'session', 'listen'),
  target: fc.nat(),
  key: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }),
  modern: fc.boolean(),
});

describe('tenant isolation over the wire (both generations, sessions included)', () => {
  it('another caller never sees, reads, cancels, answers, lists or uses what is not its own', async () => {
    /** taskId → owner, and (owner, key) → taskId, as the model says they must be. */
    const owners = new Map<string, number>();
    const byKey = new Map<string, string>();
    const cursors: Array<string | null> = [null, null, null];
    /** Cross-caller checks made: the property must not hold vacuously. */
    let checks = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 12 }), async (ops) => {
        for (const { actor, kind, target, key, modern } of ops) {
          const ids = [...owners.keys()];
          const taskId = ids.length === 0 ? 'none' : ids[target % ids.length]!;
          const owner = owners.get(taskId) ?? -1;
          const foreign = owner !== actor;
          const before = owner >= 0 ? await fact(taskId, owner) : '';
          switch (kind) {
            case 'create': {
              // Keys are shared between callers on purpose: a key is scoped by its caller.
              const headers: Record<string, string> = key === null ? {} : { 'idempotency-key': `shared-${key}` };
              const id = modern
                ? ((await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, { token: TOKENS[actor], headers })).result?.taskId as string)
                : (
                    (await legacy(actor, 'tools/call', { name: 'hold', arguments: {}, task: {} }, { ...sessions[actor]!.headers, ...headers })).message?.result
                      ?.task as {
                      taskId: string;
                    }
                  ).taskId;
              expect(typeof id).toBe('string');
              const mine = key === null ? undefined : byKey.get(`${actor}/${key}`);
              if (mine !== undefined) expect(id).toBe(mine);
              expect(owners.get(id) ?? actor).toBe(actor);
              owners.set(id, actor);
              if (key !== null) byKey.set(`${actor}/${key}`, id);
              break;
            }
            case 'get':
            case 'cancel':
            case 'update': {
              if (!foreign || owner < 0) break;
              const method = `tasks/${kind}`;
              const params = kind === 'update' ? { taskId, inputResponses: { k: { action: 'accept' } } } : { taskId };
              const error =
                modern || kind === 'update'
                  ? (await rpc(wire.http.url, method, params, { token: TOKENS[actor] })).error
                  : (await legacy(actor, method, params)).message?.error;
              expect(error).toMatchObject({ code: -32602, message: 'Task not found' });
              break;
            }
            case 'result': {
              // Only a foreign task: the owner's own would be held open until it ends.
              if (!foreign || owner < 0) break;
              expect((await legacy(actor, 'tasks/result', { taskId })).message?.error).toMatchObject({ code: -32602, message: 'Task not found' });
              break;
            }
            case 'list': {
              const page = await legacy(actor, 'tasks/list', cursors[actor] === null ? {} : { cursor: cursors[actor] });
              const listed = (page.message?.result?.tasks as Array<{ taskId: string }> | undefined) ?? [];
              for (const t of listed) expect(owners.get(t.taskId)).toBe(actor);
              cursors[actor] = (page.message?.result?.nextCursor as string | undefined) ?? null;
              break;
            }
            case 'steal-cursor': {
              const victim = (actor + 1 + (target % 2)) % 3;
              const cursor = cursors[victim];
              if (cursor === null) break;
              expect((await legacy(actor, 'tasks/list', { cursor })).message?.error).toMatchObject({ code: -32602, message: 'Invalid cursor' });
              break;
            }
            case 'session': {
              const victim = (actor + 1 + (target % 2)) % 3;
              const stolen = { ...sessions[actor]!.headers, 'mcp-session-id': sessions[victim]!.sessionId };
              const tries = [
                await legacy(actor, 'tools/list', {}, stolen),
                await legacy(actor, 'tasks/get', { taskId }, stolen),
                { status: (await fetch(wire.http.url, { method: 'GET', headers: { ...stolen, accept: 'text/event-stream' } })).status, message: null },
                { status: (await fetch(wire.http.url, { method: 'DELETE', headers: stolen })).status, message: null },
              ];
              for (const t of tries) expect(t.status).toBe(404);
              // The victim's session is untouched.
              expect((await legacy(victim, 'tools/list', {})).status).toBe(200);
              break;
            }
            case 'listen': {
              if (owner < 0) break;
              const { res, abort } = await listen(wire.http.url, TOKENS[actor]!, [taskId], `iso-${nextId++}`);
              const events = await readEvents(res, abort, (m) => m.length >= 1);
              const acknowledged = (events[0]?.params.notifications as { taskIds: string[] } | undefined)?.taskIds;
              expect(acknowledged).toEqual(foreign ? [] : [taskId]);
              break;
            }
          }
          // Nothing another caller did changed the owner's task.
          if (owner >= 0 && foreign && kind !== 'create') {
            expect(await fact(taskId, owner)).toBe(before);
            checks += 1;
          }
        }
      }),
      { numRuns: 25, seed: 20261201 },
    );
    expect(checks).toBeGreaterThan(50);
  });
});
