import { createRequire } from 'node:module';
import { z } from 'zod';

/**
 * Which zod made a schema: zod 4 schemas carry `_zod`, zod 3 schemas (the `zod@3` package, or
 * `zod/v3` of zod 4) only `_def`. The MCP SDK accepts both, so a tools module may bring either.
 */
export function zodMajorOf(schema: unknown): 3 | 4 | null {
  if (typeof schema !== 'object' || schema === null) return null;
  if ('_zod' in schema) return 4;
  return '_def' in schema ? 3 : null;
}

type ZodToJsonSchema = (schema: unknown, options: Record<string, unknown>) => Record<string, unknown>;
let zod3Converter: ZodToJsonSchema | undefined;

/**
 * The JSON Schema `tools/list` shows for a tool's `inputSchema` (draft-07, what the caller
 * sends). zod 4 converts its own schemas; zod 4's converter reads `_zod` and throws on a zod 3
 * schema, so those go through `zod-to-json-schema`, the converter the MCP SDK uses for zod 3.
 * It is required on first use only, so servers whose tools are all zod 4 never load it.
 */
export function inputJsonSchema(schema: unknown): Record<string, unknown> {
  if (zodMajorOf(schema) === 4) return z.toJSONSchema(schema as z.ZodType, { target: 'draft-7', io: 'input' });
  zod3Converter ??= (createRequire(import.meta.url)('zod-to-json-schema') as { zodToJsonSchema: ZodToJsonSchema }).zodToJsonSchema;
  return zod3Converter(schema, {
    target: 'jsonSchema7',
    // Inline every subschema, as zod 4 does: a tool's input stays one self-contained object.
    $refStrategy: 'none',
    // The input side of transforms and pipes, and extra keys allowed unless the object is
    // `.strict()`: zod 3 strips unknown keys on input, as zod 4 does with `io: 'input'`.
    pipeStrategy: 'input',
    effectStrategy: 'input',
    removeAdditionalStrategy: 'strict',
  });
}

/** What a foreign schema's check says of a value: the parsed value, or an error saying why not. */
export type SchemaCheck = (value: unknown) => { success: true; data: unknown } | { success: false; error: Error };

/**
 * A tool's `inputSchema` made from a check of another schema library (an SDK's tool schema):
 * the subset of a zod object the registry, the wires and the worker use, `parse` and
 * `safeParse`, with no shape of its own (its JSON Schema comes from the tool's `definition`).
 */
export function schemaFromCheck(check: SchemaCheck): z.ZodObject {
  return {
    shape: {},
    safeParse: check,
    parse: (value: unknown): unknown => {
      const parsed = check(value);
      if (!parsed.success) throw parsed.error;
      return parsed.data;
    },
  } as unknown as z.ZodObject;
}
