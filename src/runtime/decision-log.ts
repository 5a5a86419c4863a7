import type { Decision } from '../core/decisions.js';
import type { TaskObserver } from '../service/task-events.js';
import type { Logger } from './log.js';

/** Decisions that refuse what was asked (the caller gets an error or a miss). */
export function isRefusal(decision: Decision): boolean {
  return decision.startsWith('BLOCK_') || decision === 'NOT_FOUND';
}

/**
 * The log lines of the service's decisions: every decision at debug, every refusal at info,
 * each with its correlation id, task id and auth key; and one info line per task at its end
 * (tool, status, attempts, duration). Never a token, never a request's arguments or a result:
 * the events carry none.
 */
export function decisionLog(logger: Logger): TaskObserver {
  return {
    decision(event) {
      const refusal = isRefusal(event.decision);
      if (!refusal && !logger.isLevelEnabled('debug')) return;
      const fields = {
        decision: event.decision,
        surface: event.surface,
        correlationId: event.correlationId,
        taskId: event.taskId,
        authKey: event.authKey,
        ...(event.tool === undefined ? {} : { tool: event.tool }),
        ...(event.status === undefined || event.status === null ? {} : { status: event.status }),
        ...(event.detail === undefined || event.detail === null ? {} : { detail: event.detail }),
      };
      if (refusal) logger.info(fields, 'refused');
      else logger.debug(fields, 'decided');
    },
    taskEnded(event) {
      logger.info(
        {
          taskId: event.taskId,
          authKey: event.authKey,
          correlationId: event.correlationId,
          tool: event.tool,
          status: event.status,
          attempts: event.attempts,
          durationMs: event.durationMs,
        },
        'task ended',
      );
    },
  };
}
