import { describe, expect, it } from 'vitest';
import type { StepWrite } from '../../src/core/step-rules.js';
import {
  checkJournalPosition,
  checkSuspension,
  decodeStepValue,
  encodeStepValue,
  MAX_STEP_ERROR_CHARS,
  prepareStepWrite,
  retryingMessage,
  sleepingMessage,
  stepSizeMessage,
} from '../../src/core/step-value.js';
import { T0 } from '../support/records.js';

const cyclic: Record<string, unknown> = { a: 1 };
cyclic['self'] = cyclic;
class Money {
  constructor(readonly cents: number) {}
}

describe('encodeStepValue', () => {
  it.each([
    { name: 'undefined: no value', value: undefined, text: null, bytes: 0 },
    { name: 'JSON null is a value', value: null, text: 'null', bytes: 4 },
    { name: 'a string, counted in UTF-8 bytes', value: 'é', text: '"é"', bytes: 4 },
    { name: 'nested plain data', value: { a: [1, true, { b: 'x' }] }, text: '{"a":[1,true,{"b":"x"}]}', bytes: 24 },
    { name: 'an undefined property is dropped', value: { a: 1, b: undefined }, text: '{"a":1}', bytes: 7 },
    { name: 'a null-prototype object', value: Object.assign(Object.create(null) as object, { a: 1 }), text: '{"a":1}', bytes: 7 },
  ])('$name', ({ value, text, bytes }) => {
    expect(encodeStepValue('s', value)).toEqual({ text, bytes });
    expect(decodeStepValue(text)).toEqual(value === undefined ? undefined : JSON.parse(text));
  });

  it.each([
    { name: 'a function', value: { f: () => 1 }, problem: 'a function at $.f' },
    { name: 'a bigint', value: [1n], problem: 'a bigint at $[0]' },
    { name: 'a symbol', value: Symbol('x'), problem: 'a symbol at $' },
    { name: 'NaN', value: { n: Number.NaN }, problem: 'NaN at $.n' },
    { name: 'Infinity', value: -Infinity, problem: '-Infinity at $' },
    { name: 'a Date', value: { when: new Date(T0) }, problem: 'a Date at $.when (return date.toISOString())' },
    { name: 'a class instance', value: new Money(5), problem: 'a Money instance at $' },
    { name: 'a Map', value: new Map(), problem: 'a Map instance at $' },
    { name: 'a cycle', value: cyclic, problem: 'a cycle at $.self' },
    { name: 'undefined in an array', value: [1, undefined], problem: 'undefined at $[1]' },
    { name: 'a hole in an array', value: [1, , 3], problem: 'undefined at $[1]' },
    { name: 'a symbol key', value: { [Symbol('k')]: 1 }, problem: 'a symbol key at $' },
  ])('refuses $name, naming the step', ({ value, problem }) => {
    expect(() => encodeStepValue('charge', value)).toThrow(`step "charge" returned a value JSON cannot carry exactly: ${problem}`);
  });

  it('refuses nesting deeper than it walks', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(() => encodeStepValue('d', deep)).toThrow(/nesting deeper than 256 levels/);
  });

  it('the same object twice (not a cycle) is fine', () => {
    const shared = { a: 1 };
    expect(encodeStepValue('s', [shared, shared]).text).toBe('[{"a":1},{"a":1}]');
  });
});

const base: StepWrite = { position: 0, name: 'charge', kind: 'do', status: 'completed', attempts: 1, startedAt: T0, value: { id: 1 } };

describe('prepareStepWrite', () => {
  it('keeps only what a status uses', () => {
    const p = prepareStepWrite({ ...base, error: { message: 'x' }, wakeAt: T0 + 5 });
    expect(p).toMatchObject({ valueText: '{"id":1}', valueBytes: 8, error: null, errorText: null, wakeAt: null });
    const r = prepareStepWrite({ ...base, status: 'retrying', attempts: 2, error: { message: 'boom', name: 'Error' }, wakeAt: T0 + 5 });
    expect(r).toMatchObject({ value: undefined, valueText: null, valueBytes: 0, error: { message: 'boom', name: 'Error' }, wakeAt: T0 + 5 });
    expect(r.errorText).toBe('{"message":"boom","name":"Error"}');
  });

  it('clips a long error message', () => {
    const p = prepareStepWrite({ ...base, status: 'failed', error: { message: 'x'.repeat(MAX_STEP_ERROR_CHARS + 10) } });
    expect(p.error!.message).toBe(`${'x'.repeat(MAX_STEP_ERROR_CHARS)}… (${MAX_STEP_ERROR_CHARS + 10} characters)`);
  });

  it.each([
    { name: 'an empty name', step: { name: '' }, error: /a step name is text of 1 to 200 characters/ },
    { name: 'a name too long', step: { name: 'n'.repeat(201) }, error: /a step name/ },
    { name: 'a NUL in the name', step: { name: 'a\u0000b' }, error: /a step name/ },
    { name: 'a negative position', step: { position: -1 }, error: /position must be a whole number/ },
    { name: 'a fractional attempt count', step: { attempts: 1.5 }, error: /attempts must be a whole number/ },
    { name: 'an unknown kind', step: { kind: 'wait' as 'do' }, error: /kind must be one of do, sleep/ },
    { name: 'a sleep completed', step: { kind: 'sleep' as const }, error: /a sleep step is recorded sleeping or woke, not completed/ },
    {
      name: 'a step sleeping',
      step: { status: 'sleeping' as const, wakeAt: T0 },
      error: /a do step is recorded completed or failed or retrying, not sleeping/,
    },
    { name: 'a sleep without its wake', step: { kind: 'sleep' as const, status: 'sleeping' as const }, error: /needs its wakeAt/ },
    { name: 'a retry without its wake', step: { status: 'retrying' as const, error: { message: 'x' } }, error: /needs its wakeAt/ },
    { name: 'a failure without its error', step: { status: 'failed' as const }, error: /needs its error/ },
    { name: 'a value JSON cannot carry', step: { value: new Date(T0) }, error: /a Date at \$/ },
  ])('refuses $name', ({ step, error }) => {
    expect(() => prepareStepWrite({ ...base, ...step })).toThrow(error);
  });
});

describe('messages', () => {
  it('name the step, the sizes and the wake time', () => {
    expect(stepSizeMessage('big', 300_000, 262_144)).toBe('step "big" returned 300000 bytes of JSON, more than the 262144 bytes a step may record');
    expect(sleepingMessage('cool-down', Date.parse('2026-12-02T05:00:00.000Z'))).toBe('sleeping until 2026-12-02T05:00:00.000Z (step "cool-down")');
    expect(retryingMessage('charge', 2, 4, Date.parse('2026-12-02T05:00:00.000Z'))).toBe('retrying step "charge" (attempt 2 of 4) at 2026-12-02T05:00:00.000Z');
  });
});

describe('checkSuspension and checkJournalPosition', () => {
  it('pass what a store keeps and refuse the rest', () => {
    expect(() => checkSuspension(null)).not.toThrow();
    expect(() => checkSuspension({ wakeAt: T0, statusMessage: 'sleeping' })).not.toThrow();
    expect(() => checkSuspension({ wakeAt: Number.NaN, statusMessage: 'x' })).toThrow(/wakeAt must be epoch milliseconds/);
    expect(() => checkSuspension({ wakeAt: T0 + 0.5, statusMessage: 'x' })).toThrow(/wakeAt/);
    expect(() => checkSuspension({ wakeAt: T0, statusMessage: '\ud800' })).toThrow(/status message is text/);
    expect(() => checkSuspension({ wakeAt: T0, statusMessage: 7 })).toThrow(/status message is text/);
    expect(() => checkJournalPosition(0)).not.toThrow();
    expect(() => checkJournalPosition(2 ** 31)).toThrow(/whole number from 0 to 2147483647/);
    expect(() => checkJournalPosition(-1)).toThrow(/not -1/);
  });
});
