// `update_long_term_memory` (src/tools/functionCalls/updateLongTermMemoryTool.ts) on the worker:
// the model edits a memory by the `ID:N` it was shown, or deletes it with a blank memory_content,
// in either scope. UpdateLongTermMemoryTool keeps its declaration; its execute becomes
// `return executeUpdateLongTermMemory(args, context)`. The worker finds the row of this server and
// lineage (personal: of the target, this lineage or global), checks privacy and host protection
// for an edit (never for a delete), writes under the owner's lock, and answers with the tool's own
// statuses and texts.
import type { UpdateMemoryInput } from "@memory-worker/client";
import type { ToolContext, ToolResult } from "@/types/tool/interfaces";
import { memory } from "./memory.js";
import { requestedTarget, runToolCall, toolCallFacts } from "./toolCall.js";

/** The tool call as a memory.update command (shadow mode sends the same: shadowTools.ts). */
export async function updateCommand(args: Record<string, unknown>, context: ToolContext): Promise<UpdateMemoryInput> {
  // A named target makes it a personal memory's update; without one it is a server memory's.
  const facts = await toolCallFacts(context, requestedTarget(args));
  return { ...facts, tool_args: args };
}

export async function executeUpdateLongTermMemory(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult> {
  const client = memory();
  return runToolCall((command) => client.update(command), await updateCommand(args, context), context,
    "memory_update_failed_internal_error");
}
