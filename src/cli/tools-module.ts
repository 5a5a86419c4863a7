import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { coerceError, TasklatchError } from '../core/errors.js';
import { inputJsonSchema, zodMajorOf } from '../tools/input-schema.js';
import type { TaskTool } from '../tools/tool.js';

/**
 * Whether a `--tools` value names a module rather than a named set: a path (`./tools.js`,
 * `/srv/tools.mjs`, `lib/tools.js`) or a file name with a script extension.
 */
export function isToolsPath(value: string): boolean {
  return /[/\\]/.test(value) || /\.(m|c)?[jt]s$/.test(value);
}

/**
 * Loads the user's tools module of `--tools PATH`: its default export, or else a named `tools`,
 * as an array of tool definitions or a function (sync or async) returning one. Schemas may come
 * from zod 4 or zod 3. Every problem (the module does not load, exports nothing usable, a
 * definition is malformed, a schema has no JSON Schema, a tool is defined twice) is a
 * TasklatchError naming the file, thrown before anything starts.
 */
export async function loadToolsModule(file: string): Promise<TaskTool[]> {
  const path = resolve(file);
  const problem = (text: string) => new TasklatchError('INVALID_INPUT', `--tools ${file}: ${text}`);
  if (!existsSync(path)) throw problem('no such file');
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw problem(`the module does not load: ${coerceError(error).message}`);
  }
  const exported = loaded.default !== undefined ? loaded.default : loaded.tools;
  if (exported === undefined) throw problem('exports no tools (expected a default export or a named export "tools")');
  let value: unknown = exported;
  if (typeof exported === 'function') {
    try {
      value = await (exported as () => unknown)();
    } catch (error) {
      throw problem(`its tools function threw: ${coerceError(error).message}`);
    }
  }
  if (!Array.isArray(value)) throw problem(`exports ${describe(value)}, not an array of tool definitions (or a function returning one)`);
  if (value.length === 0) throw problem('exports an empty list of tools');
  const seen = new Set<string>();
  return value.map((tool: unknown, index) => {
    const why = toolProblem(tool);
    if (why !== null) throw problem(`tool #${index + 1}${nameOf(tool)}: ${why}`);
    // tools/list converts the schema on every listing: one that cannot be converted (z.date(),
    // a transform zod cannot describe) is refused here rather than on a client's first request.
    try {
      inputJsonSchema((tool as TaskTool).inputSchema);
    } catch (error) {
      throw problem(`tool #${index + 1}${nameOf(tool)}: its inputSchema has no JSON Schema: ${oneLine(error)}`);
    }
    const { name } = tool as TaskTool;
    if (seen.has(name)) throw problem(`defines tool ${JSON.stringify(name)} twice`);
    seen.add(name);
    return tool as TaskTool;
  });
}

/** What is wrong with one exported tool definition, or null when it has the shape of a `TaskTool`. */
function toolProblem(tool: unknown): string | null {
  if (typeof tool !== 'object' || tool === null) return `is ${describe(tool)}, not a tool definition`;
  const t = tool as Record<string, unknown>;
  if (typeof t.name !== 'string' || t.name === '') return 'has no name';
  if (typeof t.description !== 'string') return 'has no description';
  if (typeof t.handler !== 'function') return 'has no handler function';
  const schema = t.inputSchema as { safeParse?: unknown; shape?: unknown } | undefined;
  if (typeof schema?.safeParse !== 'function' || typeof schema.shape !== 'object' || zodMajorOf(schema) === null)
    return 'has no zod object inputSchema (z.object({...}) of zod 4 or zod 3)';
  const support = (t.execution as { taskSupport?: unknown } | undefined)?.taskSupport;
  if (t.execution !== undefined && support !== 'required' && support !== 'optional' && support !== 'forbidden')
    return `has execution.taskSupport ${JSON.stringify(support)}; expected "required", "optional" or "forbidden"`;
  return null;
}

function oneLine(error: unknown): string {
  return coerceError(error).message.split('\n')[0] ?? '';
}

function nameOf(tool: unknown): string {
  const name = (tool as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name !== '' ? ` (${name})` : '';
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * The app a tools module belongs to when `--app` names none: the `name` of the nearest
 * `package.json` above the module (the package it ships in, the same in every process that
 * loads it), else the module's file name without its extension.
 */
export function appOfToolsModule(file: string): string {
  const path = resolve(file);
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const name = packageNameIn(dir);
    if (name !== null) return name;
    if (dirname(dir) === dir) break;
  }
  return basename(path, extname(path));
}

/** The `name` of `dir/package.json`, or null when there is none (no file, no name, not JSON). */
function packageNameIn(dir: string): string | null {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return null;
  try {
    const name = (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown } | null)?.name;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    return null;
  }
}
