import fc from 'fast-check';
import { expect, it } from 'vitest';
import { isTerminal, TASK_STATUSES, type TaskStatus } from '../../../src/core/types.js';
import { openGuard } from '../../../src/service/guard.js';
import { ALL_CAPS, T0 } from '../../support/records.js';
import { defineStoreSuite } from './store-suite.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';

// Properties over arbitrary write sequences, on every store. One store per property; each run
// works under auth keys of its own, so runs cannot see each other's tasks. The SQL stores get
// fewer runs (harness.effort): every step there is a committed transaction.

const tool = { name: 'export_ledger', execution: { taskSupport: 'required' as const } };
const statusArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<string>(...TASK_STATUSES) },
  { weight: 1, arbitrary: fc.constantFrom('done', '', 'Completed') },
);
const writeArb = fc.record({
  status: statusArb,
  // Mostly near the live version, sometimes wild.
  versionDelta: fc.oneof(fc.constant(0), fc.integer({ min: -3, max: 3 })),
  result: fc.option(fc.record({ text: fc.constantFrom('a', 'b') }), { nil: undefined }),
  cancel: fc.boolean(),
});

defineStoreSuite('invariants over arbitrary write sequences', ({ harness, fresh }) => {
  const runs = (n: number) => Math.max(5, Math.round(n * harness.effort));

  it('a task gets at most one terminal fact, versions only grow, terminal never changes', async () => {
    const store = await fresh('prop-terminal');
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 30 }), async (writes) => {
        const auth = `r${++run}/x`;
        let now = T0;
        const guard = openGuard({ store, capabilities: ALL_CAPS, clock: () => now });
        const created = await createTask(guard, {
          auth,
          tool,
          request: { method: 'tools/call', params: { name: 'export_ledger', arguments: {}, task: {} } },
        });
        const taskId = created.record!.taskId;
        let version = created.record!.version;
        let terminal: { status: TaskStatus; result: unknown } | null = null;
        let applied = 0;
        for (const w of writes) {
          now += 1;
          const outcome = w.cancel
            ? await guard.requestor.cancel({ auth, taskId })
            : await guard.worker.transition({
                auth,
                taskId,
                write: { status: w.status, expectedVersion: version + w.versionDelta, ...(w.result ? { result: w.result } : {}) },
              });
          const after = (await store.get({ authKey: auth, taskId, now })).record!;
          expect(after.version).toBeGreaterThanOrEqual(version);
          const changed = outcome.decision === 'APPLY_TRANSITION' || outcome.decision === 'CANCEL_TASK';
          expect(after.version).toBe(changed ? version + 1 : version);
          if (terminal !== null) {
            expect(changed).toBe(false);
            expect(after.status).toBe(terminal.status);
            expect(after.result).toEqual(terminal.result);
          } else if (isTerminal(after.status)) {
            terminal = { status: after.status, result: after.result };
            applied++;
          }
          version = after.version;
        }
        expect(applied).toBeLessThanOrEqual(1);
        const trail = await store.auditTrail({ taskId });
        const terminalApplies = trail.filter(
          (e) => (e.decision === 'APPLY_TRANSITION' || e.decision === 'CANCEL_TASK') && e.status !== null && isTerminal(e.status as TaskStatus),
        );
        expect(terminalApplies.length).toBe(applied);
      }),
      { numRuns: runs(300) },
    );
  });

  it('no caller sees another auth context’s task through get, cancel, transition or list', async () => {
    const auths = ['t1/a', 't1/b', 't2/a'];
    const store = await fresh('prop-isolation');
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ owner: fc.constantFrom(...auths), key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }) }), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.constantFrom(...auths),
        async (plainCreates, plainCaller) => {
          // The tenant prefixed with the run: this run's auth keys are its own.
          const ns = `r${++run}`;
          const creates = plainCreates.map((c) => ({ ...c, owner: `${ns}${c.owner}` }));
          const caller = `${ns}${plainCaller}`;
          const guard = openGuard({ store, capabilities: ALL_CAPS, clock: () => T0, limits: { pageSize: 3 } });
          const owners = new Map<string, string>();
          for (const c of creates) {
            const params = { name: 'export_ledger', arguments: {}, task: {}, ...(c.key ? { _meta: { 'io.tasklatch/idempotency-key': c.key } } : {}) };
            const out = await createTask(guard, { auth: c.owner, tool, request: { method: 'tools/call', params } });
            if (out.record) owners.set(out.record.taskId, c.owner);
          }
          const listed: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await guard.requestor.list({ auth: caller, cursor });
            listed.push(...page.records!.map((r) => r.taskId));
            cursor = page.nextCursor ?? undefined;
          } while (cursor !== undefined);
          const own = [...owners].filter(([, o]) => o === caller).map(([id]) => id);
          expect(new Set(listed)).toEqual(new Set(own));
          for (const [taskId, owner] of owners) {
            if (owner === caller) continue;
            expect((await guard.requestor.read({ auth: caller, method: 'tasks/get', taskId })).decision).toBe('BLOCK_AUTH');
            expect((await guard.requestor.cancel({ auth: caller, taskId })).decision).toBe('BLOCK_AUTH');
            const t = await guard.worker.transition({ auth: caller, taskId, write: { status: 'completed', expectedVersion: 1 } });
            expect(t).toEqual({ decision: 'BLOCK_AUTH', record: null });
          }
        },
      ),
      { numRuns: runs(200) },
    );
  });
});
