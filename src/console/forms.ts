import type { TaskRecord } from '../core/types.js';
import { html, taskPath } from './html.js';
import { page } from './layout.js';

/** The token form: the only way a browser gets a session cookie. */
export function loginPage(problem: string | null, next: string): string {
  return page(
    'Sign in',
    html`<h1>Operator token</h1>
      <p>This console needs the token the operator listener was started with (the one <code>/metrics</code> asks for).</p>
      ${problem === null ? '' : html`<p class="error" role="alert">${problem}</p>`}
      <form method="post" action="/console/login" id="login">
        <input type="hidden" name="next" value="${next}" />
        <label>token <input type="password" name="token" autocomplete="current-password" required autofocus /></label>
        <button>Open the console</button>
      </form>`,
  );
}

/** The confirmation step of a cancel: a form that posts with the session's CSRF token. */
export function confirmCancelPage(record: TaskRecord, csrf: string): string {
  return page(
    `Cancel ${record.taskId}`,
    html`<h1>Cancel task <span class="mono">${record.taskId}</span>?</h1>
      <p>
        It is <span class="status status-${record.status}">${record.status}</span> (tool <span class="mono">${record.toolName ?? ''}</span>, version
        ${record.version}). Cancelling latches it <strong>cancelled</strong> for good, tells the worker running it to stop, cancels its running children and is
        audited as the operator's decision.
      </p>
      <form method="post" action="${taskPath(record.taskId, '/cancel')}" id="confirm-cancel">
        <input type="hidden" name="csrf" value="${csrf}" />
        <input type="hidden" name="version" value="${record.version}" />
        <button id="confirm">Yes, cancel it</button> <a href="${taskPath(record.taskId)}">No, go back</a>
      </form>`,
  );
}
