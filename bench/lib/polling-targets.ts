import type { Results, Target } from './results.js';
import { fmt } from './stats.js';

/** Variant names of the tasks/get-over-HTTP groups. */
export const POLL = {
  modern: 'tasks/get 2026-07-28 (stateless POST)',
  legacy: 'tasks/get 2025-11-25 (session)',
  bare: 'bare node:http, same reply body (transport ceiling)',
} as const;

export const pollGroup = (store: string) => `http tasks/get ${store}`;
export const capacityScenario = (store: string) => `polling capacity ${store}`;
export const CAPACITY_FACT = 'concurrently polled tasks held (tasks/get p99 within bound)';
export const MEMORY_SCENARIO = 'server memory';

/** Pollers the HTTP target is judged at. */
const AT = 16;

/** The server's CPU per request at the judged pollers on `wire`, as measured beside the ratio. */
function cpuNote(results: Results, store: string, wire: '2026-07-28' | '2025-11-25'): string {
  const variant = wire === '2026-07-28' ? POLL.modern : POLL.legacy;
  const fact = results.facts.find((f) => f.scenario === pollGroup(store) && f.name === `server CPU per request: ${variant} @${AT}`);
  return fact === undefined ? '' : `; server CPU ${fmt(fact.value)} µs per request`;
}

/** Ratios of the polling scenarios and their targets, appended to the run's. */
export function addPollingTargets(results: Results): void {
  for (const store of ['sqlite', 'postgres']) {
    const group = pollGroup(store);
    for (const c of [16, 64]) {
      results.addRatio(`${store} HTTP tasks/get 2026-07-28 ÷ bare node:http`, c, [group, POLL.modern], [group, POLL.bare]);
      results.addRatio(`${store} HTTP tasks/get 2025-11-25 ÷ bare node:http`, c, [group, POLL.legacy], [group, POLL.bare]);
    }
  }
  const targets: Target[] = [];
  for (const store of ['sqlite', 'postgres']) {
    for (const [wire, other] of [
      ['2026-07-28', '2025-11-25 session'],
      ['2025-11-25', '2026-07-28'],
    ] as const) {
      const ratio = results.ratios.find((r) => r.name === `${store} HTTP tasks/get ${wire} ÷ bare node:http` && r.concurrency === AT);
      const beside = results.ratios.find((r) => r.name === `${store} HTTP tasks/get ${other.slice(0, 10)} ÷ bare node:http` && r.concurrency === AT);
      if (ratio === undefined) continue;
      targets.push({
        name: `${store} HTTP tasks/get ${wire} ≥ 0.6× bare node:http @${AT}, reads of the stored record`,
        pass: ratio.value >= 0.6,
        figure: `${fmt(ratio.value)}×${ratio.trials === undefined ? '' : `, median of runs ${ratio.trials.map((t) => `${fmt(t)}×`).join(' / ')}`} (${other}: ${beside === undefined ? '–' : `${fmt(beside.value)}×`}${cpuNote(results, store, wire)})`,
      });
    }
  }
  for (const store of ['postgres', 'sqlite']) {
    const capacity = results.facts.find((f) => f.scenario === capacityScenario(store) && f.name === CAPACITY_FACT);
    if (capacity === undefined) continue;
    targets.push({
      name: `polling capacity on ${store === 'postgres' ? 'PostgreSQL' : 'SQLite'} ≥ 8,000 tasks polled at 1/s per server process, per-window p99 < 50 ms`,
      pass: capacity.value >= 8000,
      figure: `${fmt(capacity.value)} tasks${capacity.note === undefined ? '' : ` (${capacity.note})`}`,
    });
  }
  results.targets.push(...targets);
}
