import { coerceError } from '../core/errors.js';

/**
 * HTML built by one tagged template: every interpolated value is escaped unless it is markup the
 * same template built (`Html`). Task ids, tool names, tenants, results and errors are the
 * caller's text, so nothing reaches a page unescaped by accident; an array joins its items.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe inside an element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(value: Part): string {
  if (value instanceof Html) return value.text;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return (value as readonly Part[]).map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** A `<table id>` of `rows`, under a header row of `headings` (none when there are none). */
export function table(id: string, headings: readonly string[], rows: readonly Html[]): Html {
  return html`<table id="${id}">
    ${
      headings.length === 0
        ? ''
        : html`<thead>
            <tr>
              ${headings.map((h) => html`<th>${h}</th>`)}
            </tr>
          </thead>`
    }
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

/** A page section titled `title`: `none` (muted) when `rows` is empty, else their table. */
export function tableSection(title: string, none: string, id: string, headings: readonly string[], rows: readonly Html[]): Html {
  return html`<section>
    <h2>${title}</h2>
    ${rows.length === 0 ? html`<p class="muted">${none}</p>` : table(id, headings, rows)}
  </section>`;
}

/** A value as indented JSON text, for a `<pre>` (escaped like any other text when interpolated). */
export function jsonText(value: unknown): string {
  if (value === undefined) return '(none)';
  try {
    return JSON.stringify(value, null, 2) ?? typeof value;
  } catch (error) {
    // Stored values are JSON; a value that is not (a cycle in memory) is said, not shown.
    return `(not JSON: ${coerceError(error).message})`;
  }
}

/** A URL's path segment for a task id (any characters). */
export function taskPath(taskId: string, suffix = ''): string {
  return `/console/tasks/${encodeURIComponent(taskId)}${suffix}`;
}
