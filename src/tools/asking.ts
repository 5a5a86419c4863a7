import type { InputRequest } from '../core/input-rules.js';
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
 * call (and its task) with -32021 naming the capability, before anything else happens. A kind
 * of request no client capability covers is refused the same way.
 */
export function checkAskable(requests: Readonly<Record<string, InputRequest>>, capabilities: Record<string, unknown> | null): void {
  const keys = Object.keys(requests);
  if (keys.length === 0) throw new ProtocolError(-32603, 'ask() needs at least one input request');
  for (const key of keys) {
    const { method } = requests[key]!;
    const capability = CAPABILITY_OF[method];
    if (capability === undefined)
      throw new ProtocolError(-32603, `input request ${JSON.stringify(key)}: ${method} is not an input request a client can answer`);
    if (capabilities?.[capability] === undefined) {
      throw new ProtocolError(
        -32021,
        `input request ${JSON.stringify(key)} (${method}) needs the client's ${capability} capability, which the request did not declare`,
        {
          requiredCapabilities: { [capability]: {} },
        },
      );
    }
  }
}

/** How one kind of call gets answers: from stored answers (tasks), the request (MRTR) or the client at once. */
export type Ask = (requests: Record<string, InputRequest>) => Promise<Record<string, unknown>>;

/** The asking part of a `ToolContext`, over one way of asking; keys default to one per call. */
export function askingContext(ask: Ask, capabilities: Record<string, unknown> | null) {
  let calls = 0;
  const checked: Ask = async (requests) => {
    checkAskable(requests, capabilities);
    return ask(requests);
  };
  const one = async (method: string, params: Record<string, unknown>, key?: string) => {
    const name = key ?? `input-${++calls}`;
    return (await checked({ [name]: { method, params } }))[name];
  };
  return {
    ask: checked,
    elicit: async (params: { message: string; requestedSchema: Record<string, unknown>; [key: string]: unknown }, options: { key?: string } = {}) =>
      (await one('elicitation/create', params, options.key)) as ElicitResult,
    sample: async (params: Record<string, unknown>, options: { key?: string } = {}) => one('sampling/createMessage', params, options.key),
    listRoots: async (options: { key?: string } = {}) => (await one('roots/list', {}, options.key)) as { roots: Array<{ uri: string; name?: string }> },
  };
}

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
