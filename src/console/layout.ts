import { html, type Html } from './html.js';

/** Every console page: the stylesheet and the one script, both from this listener. */
export function page(title: string, body: Html, live: { url: string } | null = null): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · tasklatch console</title>
<link rel="stylesheet" href="/console/console.css">
<script src="/console/console.js" defer></script>
</head>
<body${live === null ? '' : html` data-live="${live.url}"`}>
<header><a href="/console" class="brand">tasklatch console</a>
<form method="get" action="/console" class="find"><input name="id" placeholder="task id" aria-label="task id"><button>Find</button></form></header>
<main>
${body}
</main>
</body>
</html>`.text;
}

/** Milliseconds as a short duration (`850 ms`, `3.2 s`, `4 m 10 s`). */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} m`;
}

export function at(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '' : new Date(ms).toISOString();
}

export const CONSOLE_CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
header { display: flex; gap: 1rem; align-items: center; padding: .6rem 1rem; background: #1b2a41; }
header a.brand { color: #fff; font-weight: 600; text-decoration: none; }
header form.find { margin-left: auto; }
main { padding: 1rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.id, td.mono, pre { font-family: ui-monospace, monospace; }
pre { background: #fff; border: 1px solid #e3e6ea; padding: .5rem; white-space: pre-wrap; word-break: break-all; max-height: 20rem; overflow: auto; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; margin-bottom: .8rem; align-items: end; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; }
.status { padding: 0 .4rem; border-radius: .6rem; background: #e3e6ea; }
.status-working { background: #d6e9ff; } .status-completed { background: #d5f5dd; }
.status-failed { background: #ffd9d6; } .status-cancelled { background: #eee; } .status-input_required { background: #fff0c2; }
section { margin-bottom: 1.2rem; }
h2 { font-size: 16px; margin: .8rem 0 .4rem; }
.bar { display: inline-block; height: .6rem; background: #5b8def; min-width: 2px; }
.muted { color: #6a737d; }
.error { color: #a4161a; }
nav.pages { margin-top: .8rem; }
`;
