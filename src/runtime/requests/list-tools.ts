import type { RequestHost } from './host.js';

export interface ListToolsRequest {
  /** Whether the client can follow a task (2025-11-25: session `tasks` capability; 2026-07-28: the extension in the request). */
  clientTakesTasks: boolean;
}

/** A tool as `tools/list` shows it; `execution` is present only where the client should read it. */
export type ListedTool = Record<string, unknown> & { name: string; execution?: { taskSupport?: string } };

export interface ListToolsOutcome {
  kind: 'tools';
  tools: ListedTool[];
}

/**
 * What a client sees of the tools, one rule for both wires. A client that takes tasks sees each
 * tool's `execution` as declared. A client without tasks, with the task tools on, sees its
 * `required` tools without `execution`: it calls them plainly (SDK clients refuse, before
 * sending, a plain call of a tool listed `required`) and gets the task as text to follow with
 * `task_status` / `task_result` / `task_cancel` (listed with the others), as `decideCallMode`
 * answers such a call. Without the task tools a `required` tool is shown as it is: a plain call
 * of it is refused, and the listing says so before the client tries.
 */
export function listTools(host: Pick<RequestHost, 'tools' | 'taskTools'>, request: ListToolsRequest): ListToolsOutcome {
  const tools = host.tools.list() as ListedTool[];
  if (request.clientTakesTasks || !host.taskTools) return { kind: 'tools', tools };
  return { kind: 'tools', tools: tools.map((tool) => (tool.execution?.taskSupport === 'required' ? withoutExecution(tool) : tool)) };
}

/** A listed tool without its `execution` member. */
export function withoutExecution(tool: ListedTool): ListedTool {
  const { execution: _execution, ...rest } = tool;
  return rest;
}
