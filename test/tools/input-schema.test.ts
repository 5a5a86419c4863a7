import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { inputJsonSchema, zodMajorOf } from '../../src/tools/input-schema.js';

describe('inputJsonSchema', () => {
  it('tells zod 4 from zod 3 and from anything else', () => {
    expect(zodMajorOf(z.object({}))).toBe(4);
    expect(zodMajorOf(z3.object({}))).toBe(3);
    for (const other of [null, undefined, {}, { safeParse: () => ({}), shape: {} }, 'z.object'] as unknown[]) expect(zodMajorOf(other)).toBeNull();
  });

  it('gives a zod 3 schema what zod 4 gives its twin: draft-07, inline, the input side', () => {
    const point3 = z3.object({ x: z3.number(), y: z3.number() });
    const point4 = z.object({ x: z.number(), y: z.number() });
    const v3 = inputJsonSchema(z3.object({ from: point3, to: point3, label: z3.string().transform((s) => s.length), kind: z3.enum(['a', 'b']).default('a') }));
    const v4 = inputJsonSchema(z.object({ from: point4, to: point4, label: z.string().transform((s) => s.length), kind: z.enum(['a', 'b']).default('a') }));
    expect(v3.$schema).toBe('http://json-schema.org/draft-07/schema#');
    const point = { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] };
    // A reused subschema is written out each time, never a $ref.
    expect(v3.properties).toMatchObject({ from: point, to: point, label: { type: 'string' }, kind: { type: 'string', enum: ['a', 'b'], default: 'a' } });
    expect(v4.properties).toMatchObject({ from: point, to: point, label: { type: 'string' }, kind: { type: 'string', enum: ['a', 'b'], default: 'a' } });
    expect(v3.required).toEqual(v4.required);
    expect(JSON.stringify(v3)).not.toContain('$ref');
  });

  it('closes a zod 3 object to extra keys only when it is strict, as zod 3 validates', () => {
    expect(inputJsonSchema(z3.object({ a: z3.string() })).additionalProperties).not.toBe(false);
    expect(z3.object({ a: z3.string() }).safeParse({ a: 'x', extra: 1 }).success).toBe(true);
    expect(inputJsonSchema(z3.object({ a: z3.string() }).strict()).additionalProperties).toBe(false);
    expect(z3.object({ a: z3.string() }).strict().safeParse({ a: 'x', extra: 1 }).success).toBe(false);
  });
});
