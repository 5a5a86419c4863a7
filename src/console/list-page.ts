import { principalOf } from '../core/principal.js';
import { TASK_STATUSES, type Millis, type TaskRecord } from '../core/types.js';
import type { OperatorPage } from '../store/task-operations.js';
import { html, table, taskPath, type Html } from './html.js';
import { at, duration, page } from './layout.js';
import { encodeAfter, LIST_STATES } from './list-query.js';

/** The list's row of one task, as the JSON API gives it. */
export function listRow(record: TaskRecord, now: Millis) {
  const { tenant, subject } = principalOf(record.authKey);
  return {
    taskId: record.taskId,
    status: record.status,
    tenant,
    subject,
    app: record.app,
    tool: record.toolName,
    toolVersion: record.toolVersion,
    createdAt: record.createdAt,
    lastUpdatedAt: record.lastUpdatedAt,
    ageMs: now - record.createdAt,
    parentTaskId: record.parentTaskId ?? null,
  };
}

/** The next page's token, or null on the last page. */
export function nextPageOf(found: OperatorPage): string | null {
  const last = found.records.at(-1);
  return found.hasMore && last !== undefined ? encodeAfter(last) : null;
}

export function listPage(params: URLSearchParams, found: OperatorPage, now: Millis, problem: string | null = null): string {
  const value = (name: string) => params.get(name) ?? '';
  const option = (current: string, option: string, label: string) =>
    html`<option value="${option}" ${current === option ? html` selected` : ''}>${label}</option>`;
  const next = nextPageOf(found);
  const nextParams = new URLSearchParams([...params].filter(([k]) => k !== 'after'));
  if (next !== null) nextParams.set('after', next);
  const filters = html`<form method="get" action="/console" class="filters" id="filters">
    <label
      >status<select name="status">
        <option value="">any</option>
        ${TASK_STATUSES.map((s) => option(value('status'), s, s))}
      </select></label
    >
    <label>tenant<input name="tenant" value="${value('tenant')}" /></label>
    <label>app<input name="app" value="${value('app')}" /></label>
    <label>tool<input name="tool" value="${value('tool')}" /></label>
    <label>version<input name="version" value="${value('version')}" /></label>
    <label
      >waiting<select name="state">
        <option value="">any</option>
        ${Object.entries(LIST_STATES).map(([k, label]) => option(value('state'), k, label))}
      </select></label
    >
    <button>Filter</button> <a href="/console">clear</a>
  </form>`;
  const rows = found.records.map((r) => {
    const row = listRow(r, now);
    return html`<tr data-task-id="${row.taskId}">
      <td class="id"><a href="${taskPath(row.taskId)}">${row.taskId}</a></td>
      <td><span class="status status-${row.status}">${row.status}</span></td>
      <td>${row.tenant}</td>
      <td>${row.subject}</td>
      <td>${row.app}</td>
      <td class="tool">${row.tool ?? ''}</td>
      <td>${row.toolVersion ?? ''}</td>
      <td title="${at(row.createdAt)}">${duration(row.ageMs)} ago</td>
      <td>${row.parentTaskId === null ? '' : html`<a href="${taskPath(row.parentTaskId)}">parent</a>`}</td>
    </tr>`;
  });
  const body: Html = html`<h1>Tasks</h1>
    ${filters} ${problem === null ? '' : html`<p class="error" role="alert">${problem}</p>`}
    ${table('tasks', ['task', 'status', 'tenant', 'subject', 'app', 'tool', 'version', 'created', ''], rows)}
    ${found.records.length === 0 ? html`<p class="muted" id="empty">no tasks match</p>` : ''}
    <nav class="pages">
      ${params.has('after') ? html`<a href="/console?${new URLSearchParams([...params].filter(([k]) => k !== 'after')).toString()}">first page</a> ` : ''}${next === null ? '' : html`<a id="next" href="/console?${nextParams.toString()}">next page</a>`}
    </nav>`;
  return page('Tasks', body);
}
