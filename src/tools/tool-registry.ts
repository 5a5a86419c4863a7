import type { ToolDescriptor } from '../core/types.js';
import { taskSupportOf } from '../core/create-rules.js';
import { toolDigest } from '../core/digest.js';
import { TasklatchError } from '../core/errors.js';
import { checkToolVersion, defaultToolVersion } from '../core/version-rules.js';
import { JOURNAL_MISMATCH_ACTIONS } from '../core/park-rules.js';
import { inputJsonSchema } from './input-schema.js';
import type { TaskTool } from './tool.js';

/** The tools a server offers, by name, with their `tools/list` entries prepared once. */
export class ToolRegistry {
  private readonly byName = new Map<string, TaskTool>();
  private readonly digests = new Map<string, string>();
  private readonly versions = new Map<string, string>();

  constructor(tools: readonly TaskTool[]) {
    for (const tool of tools) {
      if (this.byName.has(tool.name)) throw new TasklatchError('INVALID_INPUT', `tool ${tool.name} is defined twice`);
      // Checked here too, before anything starts: a tool need not come through defineTool.
      if (tool.version !== undefined) checkToolVersion(tool.version, `version of tool ${tool.name}`);
      // A misspelt option would otherwise park (the default) where its author asked to fail.
      const mismatch: unknown = tool.onJournalMismatch;
      if (mismatch !== undefined && !(JOURNAL_MISMATCH_ACTIONS as readonly unknown[]).includes(mismatch)) {
        throw new TasklatchError('INVALID_INPUT', `tool ${tool.name}: onJournalMismatch is 'park' or 'fail'`);
      }
      this.byName.set(tool.name, tool);
    }
  }

  get(name: string): TaskTool | undefined {
    return this.byName.get(name);
  }

  /** The names of the tools, in registration order. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /**
   * The digest of a tool's definition (`toolDigest`: name, input and output schema, execution),
   * computed once; null for a tool not in the registry. Admission stores it with the task, and a
   * worker compares it with its own before it runs the task.
   */
  digest(name: string): string | null {
    const tool = this.byName.get(name);
    if (tool === undefined) return null;
    let digest = this.digests.get(name);
    if (digest === undefined) {
      const schemas = tool.definition ?? { inputSchema: inputJsonSchema(tool.inputSchema) };
      digest = toolDigest({ name, ...schemas, ...(tool.execution === undefined ? {} : { execution: tool.execution }) });
      this.digests.set(name, digest);
    }
    return digest;
  }

  /**
   * The version of a tool's code (`TaskTool.version`, else `defaultToolVersion` of its handler's
   * source text and its definition digest), computed once; null for a tool not in the registry.
   * Admission stores it with the task (`TaskRecord.toolVersion`), and a worker announces it and
   * claims by it (`src/core/version-rules.ts`).
   */
  version(name: string): string | null {
    const tool = this.byName.get(name);
    if (tool === undefined) return null;
    let version = this.versions.get(name);
    if (version === undefined) {
      version =
        tool.version === undefined
          ? defaultToolVersion(tool.handler.toString(), this.digest(name)!)
          : checkToolVersion(tool.version, `version of tool ${name}`);
      this.versions.set(name, version);
    }
    return version;
  }

  /** True when at least one tool can run as a task. */
  get anyTaskSupport(): boolean {
    return [...this.byName.values()].some((t) => taskSupportOf(t) !== 'forbidden');
  }

  /** The guard's view of a tool: name and execution only. */
  descriptor(tool: TaskTool): ToolDescriptor {
    return tool.execution === undefined ? { name: tool.name } : { name: tool.name, execution: tool.execution };
  }

  /** `tools/list` entries. */
  list(): Array<Record<string, unknown>> {
    return [...this.byName.values()].map((tool) => ({
      name: tool.name,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      inputSchema: inputJsonSchema(tool.inputSchema),
      ...(tool.execution === undefined ? {} : { execution: tool.execution }),
    }));
  }
}
