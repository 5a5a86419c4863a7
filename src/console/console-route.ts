import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { coerceError, isTasklatchError, TasklatchError } from '../core/errors.js';
import type { RequestorSurface } from '../service/requestor-surface.js';
import type { TaskStore } from '../store/types.js';
import { ConsoleAuth, sessionCookie } from './console-auth.js';
import { CONSOLE_SCRIPT } from './console-script.js';
import { confirmCancelPage, loginPage } from './forms.js';
import { taskPath } from './html.js';
import { CONSOLE_CSS } from './layout.js';
import { listPage, listRow, nextPageOf } from './list-page.js';
import { parseListQuery } from './list-query.js';
import { taskPage } from './task-page.js';
import { liveState, readTaskView } from './task-view.js';

/** What the console reads and the one write it makes. */
export interface ConsoleOptions {
  store: TaskStore;
  /** The guard's requestor surface: an operator's cancel goes through it (`cancelAsOperator`). */
  requestor: Pick<RequestorSurface, 'cancelAsOperator'>;
  /** The operator listener's token (`/metrics`'s); absent, the console is open. */
  token?: string | undefined;
  clock?: () => number;
}

/** Answers a request under `/console`; false for any other path (the operator listener's `ExtraRoute`). */
export type ConsoleRoute = (req: IncomingMessage, res: ServerResponse, pathname: string) => Promise<boolean>;

/** Every console answer: nothing loads from elsewhere, nothing frames it, nothing is cached. */
export const CONSOLE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
} as const;

const HTML = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_FORM_BYTES = 8 * 1024;

/**
 * The web console under `/console` of the operator listener (never the public `/mcp` one):
 * server-rendered pages of the tasks and one task, their JSON under `/console/api/`, the static
 * `console.js` and `console.css`, the token form, and the cancel's confirmation and POST.
 */
export function consoleRoute(options: ConsoleOptions): ConsoleRoute {
  const auth = new ConsoleAuth(options.token);
  const clock = options.clock ?? Date.now;
  return async (req, res, pathname) => {
    if (pathname !== '/console' && !pathname.startsWith('/console/')) return false;
    const send = (status: number, type: string, body: string, extra: Record<string, string> = {}) =>
      res.writeHead(status, Object.assign({ 'content-type': type }, CONSOLE_HEADERS, extra)).end(req.method === 'HEAD' ? undefined : body);
    if (pathname === '/console/console.js') return (send(200, 'text/javascript; charset=utf-8', CONSOLE_SCRIPT), true);
    if (pathname === '/console/console.css') return (send(200, 'text/css; charset=utf-8', CONSOLE_CSS), true);
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (pathname === '/console/login') {
      if (!auth.required) return (send(303, HTML, '', { location: '/console' }), true);
      if (req.method === 'POST') {
        if (!sameOrigin(req)) return (send(403, HTML, loginPage('this form must be sent from the console itself', '/console')), true);
        const form = await readForm(req).catch(() => null);
        if (form === null) return (send(413, HTML, loginPage('the form is too large', '/console')), true);
        const next = safeNext(form.get('next'));
        if (!auth.tokenMatches(form.get('token') ?? '')) return (send(401, HTML, loginPage('that is not the token', next)), true);
        return (send(303, HTML, '', { location: next, 'set-cookie': sessionCookie(auth.newSession()) }), true);
      }
      return (send(200, HTML, loginPage(null, safeNext(url.searchParams.get('next')))), true);
    }
    const session = auth.sessionOf(req);
    const api = pathname.startsWith('/console/api/');
    if (session === null) {
      if (api) return (send(401, JSON_TYPE, JSON.stringify({ error: 'unauthorized: the console needs its token' }), { 'www-authenticate': 'Bearer' }), true);
      return (send(401, HTML, loginPage(null, safeNext(`${pathname}${url.search}`))), true);
    }
    const match = /^\/console(\/api)?\/tasks\/([^/]+)(\/cancel)?$/.exec(pathname);
    const isPost = req.method === 'POST';
    if (req.method !== 'GET' && req.method !== 'HEAD' && !(isPost && match?.[3] !== undefined && match[1] === undefined)) {
      return (send(405, JSON_TYPE, JSON.stringify({ error: 'method not allowed' }), { allow: 'GET, HEAD' }), true);
    }
    try {
      if (pathname === '/console' || pathname === '/console/' || pathname === '/console/api/tasks') {
        const now = clock();
        const id = url.searchParams.get('id');
        if (!api && id !== null && id !== '') {
          const found = await options.store.inspectTask({ taskId: id });
          if (found !== null) return (send(303, HTML, '', { location: taskPath(id) }), true);
          const none = { records: [], hasMore: false };
          return (send(404, HTML, listPage(url.searchParams, none, now, `no task ${JSON.stringify(id)} in this store`)), true);
        }
        let query;
        try {
          query = parseListQuery(url.searchParams);
        } catch (error) {
          if (!isTasklatchError(error, 'INVALID_INPUT')) throw error;
          if (api) return (send(400, JSON_TYPE, JSON.stringify({ error: error.message })), true);
          return (send(400, HTML, listPage(url.searchParams, { records: [], hasMore: false }, now, error.message)), true);
        }
        const found = await options.store.findTasks(query);
        if (api) return (send(200, JSON_TYPE, JSON.stringify({ tasks: found.records.map((r) => listRow(r, now)), nextPage: nextPageOf(found) })), true);
        return (send(200, HTML, listPage(url.searchParams, found, now)), true);
      }
      if (match === null) return (send(404, JSON_TYPE, JSON.stringify({ error: 'not found' })), true);
      let taskId: string;
      try {
        taskId = decodeURIComponent(match[2]!);
      } catch {
        return (send(400, JSON_TYPE, JSON.stringify({ error: 'the task id in the path is not well encoded' })), true);
      }
      if (match[3] !== undefined) return (await cancelStep(req, send, { auth, session, taskId, options, api: match[1] !== undefined }), true);
      const view = await readTaskView(options.store, taskId);
      if (view === null) {
        const missing = `no task ${JSON.stringify(taskId)} in this store`;
        return (
          api
            ? send(404, JSON_TYPE, JSON.stringify({ error: missing }))
            : send(404, HTML, listPage(new URLSearchParams(), { records: [], hasMore: false }, clock(), missing)),
          true
        );
      }
      if (api) return (send(200, JSON_TYPE, JSON.stringify(liveState(view))), true);
      return (send(200, HTML, taskPage(view, clock())), true);
    } catch (error) {
      if (isTasklatchError(error, 'INVALID_INPUT')) return (send(400, JSON_TYPE, JSON.stringify({ error: error.message })), true);
      // A store that fails is said as such (503, retry later), never as an answer about a task.
      const message = isTasklatchError(error) && error.code !== 'INTERNAL' ? error.message : `the store failed: ${coerceError(error).message}`;
      return (send(503, JSON_TYPE, JSON.stringify({ error: message }), { 'retry-after': '1' }), true);
    }
  };
}

type Send = (status: number, type: string, body: string, extra?: Record<string, string>) => unknown;

/** GET: the confirmation page; POST (same origin, the session's CSRF token): the operator's cancel. */
async function cancelStep(
  req: IncomingMessage,
  send: Send,
  input: { auth: ConsoleAuth; session: string; taskId: string; options: ConsoleOptions; api: boolean },
): Promise<void> {
  const { auth, session, taskId, options } = input;
  if (input.api) {
    send(404, JSON_TYPE, JSON.stringify({ error: 'not found' }));
    return;
  }
  if (req.method !== 'POST') {
    const seen = await options.store.inspectTask({ taskId });
    if (seen === null) send(404, JSON_TYPE, JSON.stringify({ error: `no task ${JSON.stringify(taskId)} in this store` }));
    else send(200, HTML, confirmCancelPage(seen.record, auth.csrfFor(session)));
    return;
  }
  // A bearer request carries no ambient credential; a browser's must come from this origin with the form's token.
  if (session !== 'bearer') {
    const form = await readForm(req);
    if (!sameOrigin(req) || !auth.csrfMatches(session, form.get('csrf') ?? '')) {
      send(403, JSON_TYPE, JSON.stringify({ error: 'forbidden: a cancel must come from the console page that confirmed it' }));
      return;
    }
  }
  const out = await options.requestor.cancelAsOperator({ taskId, correlationId: `operator:console:${randomUUID()}` });
  if (out.record === null) send(404, JSON_TYPE, JSON.stringify({ error: `no task ${JSON.stringify(taskId)} to cancel (${out.decision})` }));
  else send(303, HTML, '', { location: taskPath(taskId) });
}

/**
 * Whether a browser's POST comes from a page of this listener: its Origin names this host, or
 * (a page served with `Referrer-Policy: no-referrer` posts `Origin: null`) the browser says the
 * request is same-origin (`Sec-Fetch-Site`). Anything else, or neither header, is refused.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const { origin, host } = req.headers;
  if (origin !== undefined && origin !== 'null') return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
  return req.headers['sec-fetch-site'] === 'same-origin';
}

/** Where the login form sends the browser after: a console path only (never another site). */
function safeNext(next: string | null | undefined): string {
  return next !== null && next !== undefined && /^\/console(?:[/?]|$)/.test(next) && !next.startsWith('//') ? next : '/console';
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new TasklatchError('INVALID_INPUT', 'the form is too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
