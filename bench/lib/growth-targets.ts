import { GROWTH, growthScenario, growthSizes, sizeLabel } from '../scenarios/growth.js';
import type { Results } from './results.js';
import { fmt } from './stats.js';
import { runsOf } from './trials.js';

/**
 * The growth scenario's targets, each a ratio between its largest size and its smallest: tasks/get
 * p99 at most 2× (a lookup by key must not grow with the table), admission and the sweep at least
 * 0.5× of their rate (index maintenance grows with the table's depth, not its size). Every
 * figure names the sizes between and the middle one. Appended to `results.targets`.
 */
export function addGrowthTargets(results: Results, quick: boolean): void {
  const sizes = growthSizes(quick);
  for (const store of ['postgres', 'sqlite'] as const) {
    const scenario = growthScenario(store);
    const labels = sizes[store].map(sizeLabel);
    const small = labels[0] as string;
    const large = labels[labels.length - 1] as string;
    const middle = labels.slice(1, -1);
    const latency = (size: string) => results.latency.find((l) => l.scenario === scenario && l.name === GROWTH.get(size));
    const fact = (name: string) => results.facts.find((f) => f.scenario === scenario && f.name === name);

    const a = latency(small);
    const b = latency(large);
    if (a !== undefined && b !== undefined) {
      const curve = [a, ...middle.map(latency), b].map((l, k) => `${labels[k]}: ${l === undefined ? '–' : fmt(l.p99)} ms`).join(', ');
      results.targets.push({
        name: `${store} tasks/get p99 at ${large} stored tasks ≤ 2× p99 at ${small}`,
        pass: b.p99 <= 2 * a.p99,
        figure: `${fmt(b.p99 / a.p99)}× (p99 ${curve}; at ${large}${runsOf(b)})`,
      });
    }
    const rate = (what: 'admit' | 'sweep', label: string, unit: string) => {
      const x = fact(GROWTH[what](small));
      const y = fact(GROWTH[what](large));
      if (x === undefined || y === undefined) return;
      const curve = labels.map((size) => `${size}: ${fmt(fact(GROWTH[what](size))?.value ?? NaN)}${unit}`).join(', ');
      results.targets.push({
        name: `${store} ${label} at ${large} stored tasks ≥ 0.5× rate at ${small}`,
        pass: y.value >= 0.5 * x.value,
        figure: `${fmt(y.value / x.value)}× (${curve}; at ${large}: ${y.note ?? ''})`,
      });
    };
    rate('admit', 'admission rate @16 (guard)', '/s');
    rate('sweep', "retention's sweep rate (expired tasks, batches of 1000)", ' rows/s');
  }
}
