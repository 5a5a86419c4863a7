import type { Results, Target } from './results.js';
import { fmt } from './stats.js';

/** Variant names of the tasks/get-over-HTTP groups. */
export const POLL = {
  modern: 'tasks/get 2026-07-28 (stateless POST)',
  legacy: 'tasks/get 2025-11-25 (session, SDK transport)',
  bare: 'bare node:http, same reply body (transport ceiling)',
} as const;

export const pollGroup = (store: string) => `http tasks/get ${store}`;
export const capacityScenario = (store: string) => `polling capacity ${store}`;
export const CAPACITY_FACT = 'concurrently polled tasks held (tasks/get p99 within bound)';
export const MEMORY_SCENARIO = 'server memory';

/** Pollers the HTTP target is judged at. */
const AT = 16;

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
    const modern = results.ratios.find((r) => r.name === `${store} HTTP tasks/get 2026-07-28 ÷ bare node:http` && r.concurrency === AT);
    const legacy = results.ratios.find((r) => r.name === `${store} HTTP tasks/get 2025-11-25 ÷ bare node:http` && r.concurrency === AT);
    if (modern !== undefined) {
      targets.push({
        name: `${store} HTTP tasks/get 2026-07-28 ≥ 0.5× bare node:http @${AT}`,
        pass: modern.value >= 0.5,
        figure: `${fmt(modern.value)}× (2025-11-25 session: ${legacy === undefined ? '–' : `${fmt(legacy.value)}×`})`,
      });
    }
  }
  const capacity = results.facts.find((f) => f.scenario === capacityScenario('postgres') && f.name === CAPACITY_FACT);
  if (capacity !== undefined) {
    const sqlite = results.facts.find((f) => f.scenario === capacityScenario('sqlite') && f.name === CAPACITY_FACT);
    targets.push({
      name: 'polling capacity on PostgreSQL ≥ 5,000 tasks per server process',
      pass: capacity.value >= 5000,
      figure: `${fmt(capacity.value)} tasks${capacity.note === undefined ? '' : ` (${capacity.note})`}; SQLite ${sqlite === undefined ? '–' : fmt(sqlite.value)}`,
    });
  }
  results.targets.push(...targets);
}
