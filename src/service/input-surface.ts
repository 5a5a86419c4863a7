import { randomUUID } from 'node:crypto';
import type { StoredInput } from '../core/input-rules.js';
import type { AnswerOutcome, InputsOutcome, OverdueOutcome } from '../store/types.js';
import type { GuardContext } from './guard-context.js';
import { reportOverdue } from './task-events.js';

/**
 * The questions a running task asked its requestor, from the requestor's side: the answers, the
 * questions of a task, and the deadline that ends a task whose question went unanswered. (The
 * ask itself is the worker's write: `WorkerSurface.ask`.)
 */
export class InputSurface {
  constructor(private readonly ctx: GuardContext) {}

  /** The requestor answers (see `TaskStore.answer`); a stored answer is published. */
  async answer(input: { auth: string; taskId: string; responses: Readonly<Record<string, unknown>>; correlationId?: string }): Promise<AnswerOutcome> {
    const { ctx } = this;
    const correlationId = input.correlationId ?? randomUUID();
    const out = await ctx.timed(
      'answer',
      ctx.started(),
      ctx.store.answer({ authKey: input.auth, taskId: input.taskId, responses: input.responses, now: ctx.clock(), correlationId }),
    );
    if (out.decision === 'APPLY_ANSWER') ctx.changes.publish(input.taskId, out.record?.version, out.record ?? undefined);
    ctx.decided({ surface: 'input', decision: out.decision, authKey: input.auth, taskId: input.taskId, correlationId, status: out.record?.status ?? null });
    return out;
  }

  /** The questions of the caller's task, answered and outstanding. */
  async inputs(input: { auth: string; taskId: string }): Promise<InputsOutcome> {
    const { ctx } = this;
    return ctx.timed('inputs', ctx.started(), ctx.store.inputs({ authKey: input.auth, taskId: input.taskId, now: ctx.clock() }));
  }

  /** The questions of a task for its own auth context; none when it is out of reach (a worker's read). */
  async lookupInputs(input: { auth: string; taskId: string }): Promise<StoredInput[]> {
    return (await this.inputs(input)).inputs ?? [];
  }

  /**
   * Ends up to `limit` tasks whose outstanding question is past its deadline (see
   * `TaskStore.failOverdueInputs`) and publishes each, so that waiting results and
   * subscriptions in this process wake.
   */
  async failOverdueInputs(input: { limit?: number } = {}): Promise<OverdueOutcome> {
    const { ctx } = this;
    const correlationId = randomUUID();
    const ended = await ctx.timed(
      'failOverdueInputs',
      ctx.started(),
      ctx.store.failOverdueInputs({ now: ctx.clock(), limit: input.limit ?? 100, correlationId }),
    );
    for (const { taskId, version } of ended) ctx.changes.publish(taskId, version);
    if (ended.length > 0) {
      const inspect = { inspectTask: (ref: { taskId: string }) => ctx.timed('inspectTask', ctx.started(), ctx.store.inspectTask(ref)) };
      await reportOverdue(inspect, ctx.events, ended, correlationId);
    }
    return ended;
  }
}
