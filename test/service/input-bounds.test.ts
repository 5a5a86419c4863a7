import { describe, expect, it } from 'vitest';
import { checkCallInput, INPUT_BOUNDS } from '../../src/service/input-bounds.js';

/** The message `checkCallInput` refuses `params` with, or null. */
function refusal(params: Record<string, unknown>): string | null {
  try {
    checkCallInput(params, null);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('checkCallInput', () => {
  it('names where an unstorable string or key is, each step of its path cut to 40 characters', () => {
    expect(refusal({ name: 't', arguments: { a: { b: 'x\u0000' } } })).toBe('params.arguments.a.b holds a NUL or an unpaired surrogate');
    expect(refusal({ name: 't', arguments: { list: [1, { z: '\ud800' }] } })).toBe('params.arguments.list.1.z holds a NUL or an unpaired surrogate');
    expect(refusal({ name: 't', arguments: { ['k\u0000']: 1 } })).toBe('params.arguments has a key with a NUL or an unpaired surrogate');
    const long = 'k'.repeat(50);
    expect(refusal({ name: 't', arguments: { [long]: '\udc00' } })).toBe(`params.arguments.${'k'.repeat(40)} holds a NUL or an unpaired surrogate`);
    expect(refusal({ name: '\u0000' })).toBe('params.name holds a NUL or an unpaired surrogate');
  });

  it('refuses nesting past the bound, and passes storable input of any shape', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < INPUT_BOUNDS.jsonDepth; i++) deep = [deep];
    expect(refusal({ name: 't', arguments: { deep } })).toBe(`params is nested deeper than ${INPUT_BOUNDS.jsonDepth} levels`);
    expect(refusal({ name: 't', arguments: { a: [1, 'two', null, { b: true, c: ['ünï ✓ 😀'] }] }, _meta: { x: {} } })).toBeNull();
  });
});
