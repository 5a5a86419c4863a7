import { describe, expect, it } from 'vitest';
import { escapeHtml, html, jsonText } from '../../src/console/html.js';
import { parseListQuery, decodeAfter, encodeAfter } from '../../src/console/list-query.js';
import { textBlocks } from '../../src/console/task-page.js';
import { statusHistory } from '../../src/console/task-view.js';
import { HOSTILE } from './console-world.js';

// The console's HTML without a browser: every interpolation escaped, the list's query checked.

describe('the console HTML', () => {
  it('escapes every interpolated string, attribute or text, and joins arrays', () => {
    // Called under another name, so that no formatter reflows the markup.
    const tag = html;
    const out = tag`<a title="${HOSTILE.img}">${HOSTILE.script}</a><ul>${[HOSTILE.svg, 1]}</ul>`.text;
    expect(out).not.toMatch(/<script|<img|<svg/);
    expect(out).toBe(`<a title="${escapeHtml(HOSTILE.img)}">${escapeHtml(HOSTILE.script)}</a><ul>${escapeHtml(HOSTILE.svg)}1</ul>`);
    expect(escapeHtml(`&<>"'\``)).toBe('&amp;&lt;&gt;&quot;&#39;&#96;');
    expect(html`<p>${html`<b>${'<i>'}</b>`}</p>`.text).toBe('<p><b>&lt;i&gt;</b></p>');
    expect(html`${null}${undefined}${false}`.text).toBe('');
  });

  it('shows JSON as text and a result by its text blocks', () => {
    expect(jsonText({ a: '<b>' })).toBe('{\n  "a": "<b>"\n}');
    expect(jsonText(undefined)).toBe('(none)');
    expect(textBlocks({ content: [{ type: 'text', text: 'one' }, { type: 'image' }, { type: 'text', text: 'two' }] })).toEqual(['one', 'two']);
    expect(textBlocks('plain')).toEqual([]);
  });

  it('checks the list query before the store is asked', () => {
    expect(parseListQuery(new URLSearchParams('status=&tool=export&state=event')).filter).toEqual({ tool: 'export', waitingForEvent: true });
    expect(parseListQuery(new URLSearchParams('state=input')).filter).toEqual({ status: 'input_required' });
    expect(parseListQuery(new URLSearchParams('state=sleeping&tenant=acme')).filter).toEqual({ sleeping: true, tenant: 'acme' });
    for (const bad of ['status=done', 'state=asleep', 'tenant=a/b', 'limit=0', 'limit=501', 'after=x', 'status=completed&state=input']) {
      expect(() => parseListQuery(new URLSearchParams(bad)), bad).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    }
    const position = { createdAt: 1_750_000_000_000, taskId: 'a/b"<c>' };
    expect(decodeAfter(encodeAfter(position))).toEqual(position);
  });

  it('derives the status history from the exact audit lines, marking takeovers', () => {
    const line = (status: string, decision: string, detail: string | null = null, count?: number) => ({
      at: 1,
      surface: 'transition' as const,
      decision: decision as 'APPLY_TRANSITION',
      authKey: 'a/b',
      taskId: 't',
      correlationId: 'c',
      status,
      version: 1,
      detail,
      ...(count === undefined ? {} : { count }),
    });
    const history = statusHistory([
      line('working', 'ACCEPT_TASK'),
      line('working', 'APPLY_TRANSITION'),
      line('working', 'FOUND', null, 4),
      line('input_required', 'APPLY_ASK'),
      line('completed', 'APPLY_TRANSITION'),
    ]);
    expect(history.map((h) => h.status)).toEqual(['working', 'input_required', 'completed']);
  });
});
