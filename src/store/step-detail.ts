import type { StepWrite } from '../core/step-rules.js';

/**
 * The audit detail of one recorded step, the same in every store: `name@position status`
 * (`charge-card@2 completed`, `cool-down@3 woke`), so that a trail says which step of the journal
 * a line is about; a patch gate's marker says so (`patch add-a2@1 completed`: its id has a
 * namespace of its own, and may be a step's name).
 */
export function stepDetail(step: Pick<StepWrite, 'name' | 'position' | 'status' | 'kind'>): string {
  return `${step.kind === 'patch' ? 'patch ' : ''}${step.name}@${step.position} ${step.status}`;
}
