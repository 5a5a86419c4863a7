import { describe, expect, it } from 'vitest';
import { rowToStep, type StepRow } from '../../src/store/step-row.js';

const row = (value: string | null): StepRow => ({
  task_id: 't',
  position: 0,
  name: 'a',
  kind: 'do',
  status: 'completed',
  attempts: 1,
  value,
  error: null,
  value_bytes: value === null ? 0 : Buffer.byteLength(value),
  wake_at_ms: null,
  concurrent: 0,
  started_at_ms: '1',
  updated_at_ms: 2,
});

describe('a journal row as a step record', () => {
  it('keeps its value as JSON text until it is read, then parses it once', () => {
    // Text no parser accepts: reading the row does not parse it, reading the value does.
    const bad = rowToStep(row('{not json'));
    expect(bad.valueBytes).toBe(9);
    expect(() => bad.value).toThrow(SyntaxError);
    const good = rowToStep(row('{"n":[1,"é"]}'));
    const first = good.value;
    expect(first).toEqual({ n: [1, 'é'] });
    expect(good.value).toBe(first);
    // A copy, JSON and equality see the value as a plain property.
    expect({ ...good }.value).toBe(first);
    expect(JSON.parse(JSON.stringify(good))).toMatchObject({ value: { n: [1, 'é'] }, startedAt: 1, updatedAt: 2 });
    good.value = undefined;
    expect(good.value).toBeUndefined();
    expect(rowToStep(row(null)).value).toBeUndefined();
  });
});
