import { principalOf } from '../core/principal.js';
import { isTerminal, type Millis } from '../core/types.js';
import { html, jsonText, table, tableSection, taskPath, type Html } from './html.js';
import { at, duration, page } from './layout.js';
import { statusHistory, type TaskView } from './task-view.js';

/** The task page: status, history, step timeline, questions, children, events, audit, outcome. */
export function taskPage(view: TaskView, now: Millis): string {
  const { record, dispatch, inputs, parked } = view.inspection;
  const { tenant, subject } = principalOf(record.authKey);
  const terminal = isTerminal(record.status);
  const summary = html`<h1>Task <span class="mono" id="task-id">${record.taskId}</span></h1>
    <table class="facts">
      <tbody>
        <tr>
          <th>status</th>
          <td>
            <span class="status status-${record.status}" id="status">${record.status}</span
            >${record.statusMessage === null ? '' : html` <span class="muted">${record.statusMessage}</span>`}
          </td>
        </tr>
        <tr>
          <th>tenant / subject</th>
          <td>${tenant} / ${subject}</td>
        </tr>
        <tr>
          <th>app · tool · version</th>
          <td>${record.app} · <span id="tool">${record.toolName ?? ''}</span> · ${record.toolVersion ?? ''}</td>
        </tr>
        <tr>
          <th>created · updated</th>
          <td>${at(record.createdAt)} · ${at(record.lastUpdatedAt)} (${duration(now - record.createdAt)} old)</td>
        </tr>
        <tr>
          <th>version · attempt</th>
          <td>${record.version} · ${record.attempt}</td>
        </tr>
        <tr>
          <th>lease</th>
          <td>${record.leaseOwner === null ? 'none' : html`${record.leaseOwner} until ${at(record.leaseExpiresAt)}`}</td>
        </tr>
        <tr>
          <th>dispatch</th>
          <td>${dispatch === null ? 'none' : html`due ${at(dispatch.availableAt)}${dispatch.doneAt === null ? '' : html`, closed ${at(dispatch.doneAt)}`}`}</td>
        </tr>
        ${
          parked === null
            ? ''
            : html`<tr>
                <th>parked</th>
                <td>since ${at(parked.parkedAt)} (${parked.parks} times)</td>
              </tr>`
        }
        ${
          record.parentTaskId === undefined
            ? ''
            : html`<tr>
                <th>parent</th>
                <td><a href="${taskPath(record.parentTaskId)}">${record.parentTaskId}</a></td>
              </tr>`
        }
        ${
          record.expiresAt === null
            ? ''
            : html`<tr>
                <th>expires</th>
                <td>${at(record.expiresAt)}</td>
              </tr>`
        }
      </tbody>
    </table>
    ${terminal ? '' : html`<p><a id="cancel" href="${taskPath(record.taskId, '/cancel')}">Cancel this task…</a></p>`}`;
  const body = html`${summary} ${outcomeSection(view)} ${timelineSection(view)} ${historySection(view)}
  ${tableSection(
    'Questions and answers',
    'none',
    'questions',
    ['key', 'asked', 'question', 'answer'],
    inputs.map(
      (q) =>
        html`<tr>
          <td class="mono">${q.key}</td>
          <td>${at(q.askedAt)}</td>
          <td><pre>${jsonText(q.request)}</pre></td>
          <td>
            ${
              q.answeredAt === null
                ? html`<span class="muted">waiting${q.deadlineAt === null ? '' : html` until ${at(q.deadlineAt)}`}</span>`
                : html`${at(q.answeredAt)}
                    <pre>${jsonText(q.response)}</pre>`
            }
          </td>
        </tr>`,
    ),
  )}
  ${tableSection(
    'Children',
    'none',
    'children',
    [],
    view.children.map(
      (c) =>
        html`<tr>
          <td class="id"><a href="${taskPath(c.taskId)}">${c.taskId}</a></td>
          <td><span class="status status-${c.status}">${c.status}</span></td>
          <td>${c.toolName ?? ''}</td>
        </tr>`,
    ),
  )}
  ${eventsSection(view)} ${auditSection(view)}`;
  return page(`Task ${record.taskId}`, body, terminal ? null : { url: `/console/api${taskPath(record.taskId).slice('/console'.length)}` });
}

function outcomeSection(view: TaskView): Html {
  const { record } = view.inspection;
  if (!isTerminal(record.status))
    return html`<section>
      <h2>Request</h2>
      <pre id="request">${jsonText(record.request)}</pre>
    </section>`;
  const label = record.status === 'completed' ? 'Result' : record.status === 'failed' ? 'Error' : 'Outcome';
  const texts = textBlocks(record.result);
  return html`<section>
    <h2>${label}</h2>
    <div id="result" class="${record.status === 'failed' ? 'error' : ''}">
      ${texts.length === 0 ? html`<pre>${jsonText(record.result)}</pre>` : texts.map((t) => html`<pre class="text-block">${t}</pre>`)}
    </div>
    ${
      texts.length === 0
        ? ''
        : html`<details>
            <summary>result as stored</summary>
            <pre>${jsonText(record.result)}</pre>
          </details>`
    }
    <details>
      <summary>request</summary>
      <pre>${jsonText(record.request)}</pre>
    </details>
  </section>`;
}

/** The text blocks of a tool result (`content[].text`), as the client shows them; none for other values. */
export function textBlocks(result: unknown): string[] {
  const content = (result as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return [];
  return content.flatMap((block: unknown) => {
    const text = (block as { type?: unknown; text?: unknown } | null)?.text;
    return typeof text === 'string' ? [text] : [];
  });
}

function timelineSection(view: TaskView): Html {
  if (view.steps.length === 0)
    return html`<section>
      <h2>Steps</h2>
      <p class="muted" id="no-steps">no steps recorded</p>
    </section>`;
  const start = Math.min(...view.steps.map((s) => s.startedAt));
  const end = Math.max(...view.steps.map((s) => Math.max(s.updatedAt, s.wakeAt ?? 0)));
  const span = Math.max(1, end - start);
  const rows = view.steps.map((s) => {
    const left = ((s.startedAt - start) / span) * 100;
    const width = (Math.max(s.updatedAt, s.wakeAt ?? s.updatedAt) - s.startedAt) / span;
    return html`<tr class="step" data-position="${s.position}">
      <td>${s.position}</td>
      <td class="mono step-name">${s.name}</td>
      <td>${s.kind}</td>
      <td><span class="status">${s.status}</span>${s.concurrent ? html` <span class="muted">concurrent</span>` : ''}</td>
      <td>${s.attempts}${s.attempts > 1 ? html` <span class="muted">(${s.attempts - 1} retries)</span>` : ''}</td>
      <td>${at(s.startedAt)}</td>
      <td>${duration(s.updatedAt - s.startedAt)}</td>
      <td>${s.wakeAt === null ? '' : html`${s.status === 'waiting' ? 'until' : 'wakes'} ${at(s.wakeAt)}`}</td>
      <td><span class="bar" data-left="${left.toFixed(1)}" data-width="${(width * 100).toFixed(1)}"></span></td>
      <td>
        ${s.error === null ? '' : html`<pre class="error">${s.error.name === undefined ? '' : `${s.error.name}: `}${s.error.message}</pre>`}${
          s.value === undefined
            ? ''
            : html`<details>
                <summary>value (${s.valueBytes} B)</summary>
                <pre>${jsonText(s.value)}</pre>
              </details>`
        }
      </td>
    </tr>`;
  });
  return html`<section>
    <h2>Steps</h2>
    ${table('steps', ['#', 'name', 'kind', 'status', 'attempts', 'started', 'took', 'wait', 'timeline', 'value / error'], rows)}
  </section>`;
}

function historySection(view: TaskView): Html {
  const history = statusHistory(view.audit);
  return tableSection(
    'Status history',
    'no status written',
    'history',
    [],
    history.map(
      (h) =>
        html`<tr>
          <td>${at(h.at)}</td>
          <td><span class="status status-${h.status}">${h.status}</span></td>
          <td>v${h.version ?? ''}</td>
          <td>${h.decision}${h.takeover ? html` <strong>takeover</strong>` : ''}</td>
          <td class="mono">${h.correlationId}</td>
        </tr>`,
    ),
  );
}

function eventsSection(view: TaskView): Html {
  const events = view.audit.filter((l) => l.surface === 'event');
  return tableSection(
    'Events',
    'none',
    'events',
    [],
    events.map(
      (e) =>
        html`<tr>
          <td>${at(e.at)}</td>
          <td class="mono">${e.detail ?? ''}</td>
          <td>${e.decision}</td>
          <td>${e.authKey}</td>
        </tr>`,
    ),
  );
}

function auditSection(view: TaskView): Html {
  return html`<section>
    <h2>Audit</h2>
    ${table(
      'audit',
      ['at', 'surface', 'decision', 'auth key', 'status', 'correlation', 'detail', 'count'],
      view.audit.map(
        (l) =>
          html`<tr>
            <td>${at(l.at)}${l.lastAt === undefined || l.lastAt === l.at ? '' : html` – ${at(l.lastAt)}`}</td>
            <td>${l.surface}</td>
            <td>${l.decision}</td>
            <td>${l.authKey}</td>
            <td>${l.status ?? ''}${l.version === null || l.version === undefined ? '' : html` v${l.version}`}</td>
            <td class="mono">${l.correlationId}</td>
            <td>${l.detail ?? ''}</td>
            <td>${l.count ?? ''}</td>
          </tr>`,
      ),
    )}
  </section>`;
}
