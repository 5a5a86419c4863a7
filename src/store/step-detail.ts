import type { StepWrite } from '../core/step-rules.js';

/**
 * The audit detail of one recorded step, the same in every store: `name@position status`
 * (`charge-card@2 completed`), so that a trail says which step of the journal a line is about.
 */
export function stepDetail(step: Pick<StepWrite, 'name' | 'position' | 'status'>): string {
  return `${step.name}@${step.position} ${step.status}`;
}
