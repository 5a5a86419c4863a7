import { GROUP, V } from '../scenarios/admission.js';
import type { BenchConfig } from './config.js';
import { fmt } from './stats.js';
import type { Results, Target } from './results.js';
import { runsOf } from './trials.js';

/** Latency row names shared by the scenarios and the targets. */
export const READ = {
  getAudited: 'tasks/get via the guard (auditReads on, the default)',
  getQuiet: 'tasks/get via the guard (auditReads off)',
  getWire: 'tasks/get via MCP in-memory (TaskServer: auditReads on)',
  firstAudited: 'tasks/list first page via the guard (auditReads on)',
  firstQuiet: 'tasks/list first page via the guard (auditReads off)',
  deepAudited: 'tasks/list deep page via the guard (auditReads on)',
  deepQuiet: 'tasks/list deep page via the guard (auditReads off)',
} as const;

export const WAKE_SCENARIO = 'wake-up after terminal write';

/** The concurrency the targets are judged at. */
const AT = 16;

/** Ratios between cells of one run, and each target with PASS/MISS and its figure. */
export function computeRatiosAndTargets(results: Results, config: BenchConfig): void {
  for (const c of config.concurrency) {
    for (const [group, label] of [
      [GROUP.postgres, 'postgres'],
      [GROUP.sqlite, 'sqlite'],
    ] as const) {
      for (const variant of [V.mcpMemory, V.mcpHttp, V.wireHttp, V.service]) {
        results.addRatio(`${label} ${variant} ÷ raw ceiling`, c, [group, variant], [group, V.ceiling]);
      }
    }
    results.addRatio('postgres raw ceiling + notify ÷ raw ceiling', c, [GROUP.postgres, V.ceilingNotify], [GROUP.postgres, V.ceiling]);
    results.addRatio('postgres MCP in-memory ÷ same without LISTEN', c, [GROUP.postgres, V.mcpMemory], [GROUP.postgres, V.mcpNoListen]);
    for (const [group, label] of [
      [GROUP.memory, 'memory'],
      [GROUP.sqlite, 'sqlite'],
      [GROUP.postgres, 'postgres'],
    ] as const) {
      results.addRatio(`${label} requestor.create ÷ same without active-task limit`, c, [group, V.service], [group, V.serviceNoLimit]);
    }
    for (const [group, label] of [
      [GROUP.memory, 'memory'],
      [GROUP.sqlite, 'sqlite'],
      [GROUP.postgres, 'postgres'],
    ] as const) {
      results.addRatio(`${label} tasklatch MCP in-memory ÷ SDK experimental tasks (InMemoryTaskStore)`, c, [group, V.mcpMemory], [GROUP.memory, V.sdk]);
    }
    results.addRatio('postgres tasklatch MCP in-memory ÷ pg-boss send', c, [GROUP.postgres, V.mcpMemory], [GROUP.postgres, V.bossSend]);
    results.addRatio('postgres tasklatch MCP HTTP ÷ pg-boss send', c, [GROUP.postgres, V.mcpHttp], [GROUP.postgres, V.bossSend]);
    results.addRatio('postgres tasklatch 2026-07-28 HTTP ÷ pg-boss send', c, [GROUP.postgres, V.wireHttp], [GROUP.postgres, V.bossSend]);
    results.addRatio('postgres requestor.create ÷ pg-boss send', c, [GROUP.postgres, V.service], [GROUP.postgres, V.bossSend]);
    results.addRatio('lifecycle tasklatch create→complete ÷ pg-boss send→fetch→complete', c, [GROUP.postgres, V.lifeTasklatch], [GROUP.postgres, V.lifeBoss]);
  }

  const targets: Target[] = [];
  const ratioTarget = (name: string, ratioName: string, min: number, context: string) => {
    const r = results.ratios.find((x) => x.name === ratioName && x.concurrency === AT);
    if (r === undefined) return;
    const runs = r.trials === undefined ? '' : `median of runs ${r.trials.map((t) => `${fmt(t)}×`).join(' / ')}; `;
    targets.push({ name, pass: r.value >= min, figure: `${fmt(r.value)}× (${runs}${context})` });
  };
  const service = (group: string) =>
    results.ratios.find((x) => x.name.startsWith(group) && x.name.includes('requestor.create') && x.name.endsWith('raw ceiling') && x.concurrency === AT);
  ratioTarget(
    'PostgreSQL admission ≥ 0.7× raw ceiling @16',
    `postgres ${V.mcpMemory} ÷ raw ceiling`,
    0.7,
    `MCP in-memory; HTTP ${ratioFigure(results, `postgres ${V.mcpHttp} ÷ raw ceiling`)}, guard ${service('postgres') === undefined ? '–' : fmt(service('postgres')?.value ?? NaN)}×`,
  );
  ratioTarget(
    'SQLite admission ≥ 0.7× raw ceiling @16',
    `sqlite ${V.mcpMemory} ÷ raw ceiling`,
    0.7,
    `MCP in-memory; HTTP ${ratioFigure(results, `sqlite ${V.mcpHttp} ÷ raw ceiling`)}, guard ${service('sqlite') === undefined ? '–' : fmt(service('sqlite')?.value ?? NaN)}×`,
  );
  ratioTarget(
    'PostgreSQL admission through the MCP path ≥ 1× pg-boss send @16',
    'postgres tasklatch MCP in-memory ÷ pg-boss send',
    1,
    `MCP in-memory; HTTP ${ratioFigure(results, 'postgres tasklatch MCP HTTP ÷ pg-boss send')}, guard ${ratioFigure(results, 'postgres requestor.create ÷ pg-boss send')}`,
  );

  // Admission over HTTP: the 2026-07-28 wire judged, the 2025-11-25 sessions (the SDK 1.x client) beside it.
  for (const [label, store] of [
    ['SQLite', 'sqlite'],
    ['PostgreSQL', 'postgres'],
  ] as const) {
    ratioTarget(
      `${label} HTTP admission (2026-07-28) ≥ 0.5× raw ceiling @16`,
      `${store} ${V.wireHttp} ÷ raw ceiling`,
      0.5,
      `a task call per POST; 2025-11-25 wire over HTTP (SDK client, sessions) ${ratioFigure(results, `${store} ${V.mcpHttp} ÷ raw ceiling`)}`,
    );
  }
  ratioTarget(
    'PostgreSQL HTTP admission (2026-07-28) ≥ 1× pg-boss send @16',
    'postgres tasklatch 2026-07-28 HTTP ÷ pg-boss send',
    1,
    `a task call per POST; 2025-11-25 wire over HTTP (SDK client, sessions) ${ratioFigure(results, 'postgres tasklatch MCP HTTP ÷ pg-boss send')}`,
  );

  for (const store of ['postgres', 'sqlite']) {
    const row = (name: string) => results.latency.find((l) => l.scenario === `reads ${store}` && l.name === name);
    const latencyTarget = (label: string, audited: string, quiet: string, max: number) => {
      const a = row(audited);
      const q = row(quiet);
      if (a === undefined) return;
      targets.push({
        name: `${store} ${label} p99 < ${max} ms`,
        pass: a.p99 < max,
        figure: `p99 ${fmt(a.p99)} ms${runsOf(a)} (auditReads off: ${q === undefined ? '–' : fmt(q.p99)} ms)`,
      });
    };
    latencyTarget('tasks/get at scale', READ.getAudited, READ.getQuiet, 2);
    latencyTarget('tasks/list first page at scale', READ.firstAudited, READ.firstQuiet, 5);
    latencyTarget('tasks/list deep page at scale', READ.deepAudited, READ.deepQuiet, 5);
  }

  for (const row of results.latency.filter((l) => l.scenario === WAKE_SCENARIO)) {
    targets.push({ name: `wake-up p99 < 5 ms: ${row.name}`, pass: row.p99 < 5, figure: `p99 ${fmt(row.p99)} ms, p50 ${fmt(row.p50)} ms${runsOf(row)}` });
  }
  results.targets = targets;
}

function ratioFigure(results: Results, name: string): string {
  const r = results.ratios.find((x) => x.name === name && x.concurrency === AT);
  return r === undefined ? '–' : `${fmt(r.value)}×`;
}
