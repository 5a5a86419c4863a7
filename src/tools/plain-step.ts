import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { duplicateStepMessage, mayRetry, retryDelay } from '../core/step-rules.js';
import { TasklatchError } from '../core/errors.js';
import { ProtocolError } from './protocol-error.js';
import {
  checkSleepMs,
  checkStepName,
  doArguments,
  recordableValue,
  runStepAttempt,
  StepFailedError,
  stepErrorOf,
  wakeTimeOf,
  waitFor,
  type Step,
  type StepConfig,
  type StepFunction,
  valueSteps,
} from './step.js';
import { checkWaitOptions, plainWaitRefusal } from './event-wait.js';

/**
 * The steps of a plain (non-task) call: nothing is recorded, so `do` just runs its function
 * (with its retries, waited in process, and its `timeoutMs`) and `sleep` waits in process until
 * the call's signal aborts. The rules a task enforces hold here too (unique names, JSON values),
 * so a handler that works as a plain call works as a task. `callKey` is the call's own
 * idempotency key (`call:<random>`).
 */
export function plainStep(signal: AbortSignal, callKey: string, random: () => number = Math.random): Step {
  const used = new Set<string>();
  const claim = (name: string) => {
    checkStepName(name);
    if (used.has(name)) throw new ProtocolError(JSON_RPC_CODES.internalError, duplicateStepMessage(name));
    used.add(name);
  };
  const run = async <T>(name: string, configOrFn: StepConfig | StepFunction<T>, maybeFn?: StepFunction<T>): Promise<T> => {
    const { config, fn } = doArguments(name, configOrFn, maybeFn);
    claim(name);
    for (let attempt = 1; ; attempt++) {
      let value: T;
      try {
        value = await runStepAttempt(name, fn, attempt, signal, config.timeoutMs);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (!mayRetry(attempt, config.retries)) throw new StepFailedError(name, attempt, stepErrorOf(error));
        await waitFor(retryDelay(attempt, config.retries!, random), signal);
        continue;
      }
      return recordableValue(name, attempt, value).value as T;
    }
  };
  const sleepFor = async (name: string, ms: number) => {
    claim(name);
    await waitFor(ms, signal);
  };
  return {
    do: run,
    sleep: async (name, ms) => sleepFor(name, checkSleepMs(name, ms)),
    sleepUntil: async (name, when) => sleepFor(name, Math.max(0, wakeTimeOf(name, when) - Date.now())),
    idempotencyKey: (name) => `${callKey}:step:${name}`,
    waitForEvent: async (name, options) => {
      checkWaitOptions(name, options);
      throw plainWaitRefusal(name);
    },
    // Nothing is replayed in a plain call: every gate is reached fresh, and takes the new path.
    patched: async (id) => {
      checkStepName(id);
      return true;
    },
    runTool: async (name) => {
      checkStepName(name);
      throw new TasklatchError(
        'INVALID_INPUT',
        `step ${JSON.stringify(name)}: runTool starts a child task, and this call is not a task; call the tool as a task (params.task) to use child tasks`,
      );
    },
    ...valueSteps(run),
  };
}
