import type { InputRequest } from '../core/input-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { ProtocolError } from './protocol-error.js';

/** What a client answers to an `elicitation/create`. */
export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The client capability each kind of input request needs. */
export const CAPABILITY_OF: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/**
 * Only what the requesting client declared may be asked: a request it cannot answer ends the
 * call (and its task) with missing capability naming the capability, before anything else happens. A kind
 * of request no client capability covers is refused the same way.
 */
export function checkAskable(requests: Readonly<Record<string, InputRequest>>, capabilities: Record<string, unknown> | null): void {
  const keys = Object.keys(requests);
  if (keys.length === 0) throw new ProtocolError(JSON_RPC_CODES.internalError, 'ask() needs at least one input request');
  for (const key of keys) {
    const { method } = requests[key]!;
    const capability = CAPABILITY_OF[method];
    if (capability === undefined)
      throw new ProtocolError(JSON_RPC_CODES.internalError, `input request ${JSON.stringify(key)}: ${method} is not an input request a client can answer`);
    if (capabilities?.[capability] === undefined) {
      throw new ProtocolError(
        JSON_RPC_CODES.missingCapability,
        `input request ${JSON.stringify(key)} (${method}) needs the client's ${capability} capability, which the request did not declare`,
        {
          requiredCapabilities: { [capability]: {} },
        },
      );
    }
  }
}

/** Options of one ask. */
export interface AskOptions {
  /**
   * In a task: how long (ms) each question of this ask may stay unanswered; past that the task
   * ends failed. Counted from the ask's first storing, so a re-run keeps the deadline it had.
   */
  timeoutMs?: number;
}

/** How one kind of call gets answers: from stored answers (tasks), the request (MRTR) or the client at once. */
export type Ask = (requests: Record<string, InputRequest>, options?: AskOptions) => Promise<Record<string, unknown>>;

/** The longest timeout: any clock reading plus this stays a safe integer (≈4,000 years). */
const MAX_TIMEOUT_MS = 2 ** 47;

/** A timeout that cannot name an instant is a bug in the tool: it ends the call before anything is asked. */
export function checkAskOptions(options: AskOptions): void {
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new ProtocolError(JSON_RPC_CODES.internalError, `ask() timeoutMs must be a positive number of milliseconds (at most 2^47), not ${String(timeoutMs)}`);
  }
}

/** The asking part of a `ToolContext`, over one way of asking; keys default to one per call. */
export function askingContext(ask: Ask, capabilities: Record<string, unknown> | null) {
  let calls = 0;
  const checked: Ask = async (requests, options = {}) => {
    checkAskable(requests, capabilities);
    checkAskOptions(options);
    return ask(requests, options);
  };
  const one = async (method: string, params: Record<string, unknown>, options: OneAskOptions) => {
    const { key, ...rest } = options;
    const name = key ?? `input-${++calls}`;
    return (await checked({ [name]: { method, params } }, rest))[name];
  };
  return {
    ask: checked,
    elicit: async (params: { message: string; requestedSchema: Record<string, unknown>; [key: string]: unknown }, options: OneAskOptions = {}) =>
      (await one('elicitation/create', params, options)) as ElicitResult,
    sample: async (params: Record<string, unknown>, options: OneAskOptions = {}) => one('sampling/createMessage', params, options),
    listRoots: async (options: OneAskOptions = {}) => (await one('roots/list', {}, options)) as { roots: Array<{ uri: string; name?: string }> },
  };
}

/** Options of a one-question ask: its key beside the ask's options. */
export type OneAskOptions = AskOptions & { key?: string };

/**
 * Thrown by an `ask` that cannot be answered within the call (2026-07-28 plain calls): the
 * call answers with these input requests instead (MRTR), and runs again once they are answered.
 * `answered` holds every answer given so far, to be carried in the signed request state.
 */
export class InputNeeded extends Error {
  override readonly name = 'InputNeeded';

  constructor(
    readonly requests: Record<string, InputRequest>,
    readonly answered: Record<string, unknown>,
  ) {
    super(`input needed: ${Object.keys(requests).join(', ')}`);
  }
}

/** Whether an answer has the shape of a result of the request's kind (a wrong one is asked again). */
export function isAnswerTo(request: InputRequest, answer: unknown): boolean {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return false;
  const a = answer as Record<string, unknown>;
  switch (request.method) {
    case 'elicitation/create':
      return a.action === 'accept' || a.action === 'decline' || a.action === 'cancel';
    case 'sampling/createMessage':
      return typeof a.role === 'string' && typeof a.content === 'object' && a.content !== null;
    case 'roots/list':
      return Array.isArray(a.roots);
    default:
      return false;
  }
}
