// `create_long_term_memory` (src/tools/functionCalls/memoryTool.ts) on the worker. MemoryTool keeps
// its declaration (name, description, parameters, category, requiresFeatureFlag, isEnabled); its
// execute becomes `return executeCreateLongTermMemory(args, context)`. The worker checks the
// arguments, the settings, the target, privacy and the limit, saves, and words the answer as the
// tool did; the bot gathers the turn's facts, drops the stale cache entries and posts the notice.
import type { ToolContext, ToolResult } from "@/types/tool/interfaces";
import { memory } from "./memory.js";
import { retrievalFacts } from "./retrieval.js";
import { requestedTarget, runToolCall, toolCallFacts } from "./toolCall.js";
import type { CreateCommand } from "./toolCall.js";

/** The tool call as a memory.create command (shadow mode sends the same: shadowTools.ts). */
export async function createCommand(args: Record<string, unknown>, context: ToolContext): Promise<CreateCommand> {
  // Only a target_user save resolves a target; the arguments go to the worker as they came.
  const target = args.memory_scope === "target_user" ? requestedTarget(args) : undefined;
  const [facts, retrieval] = await Promise.all([toolCallFacts(context, target), retrievalFacts(context)]);
  return { ...facts, tool_args: args, retrieval };
}

export async function executeCreateLongTermMemory(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult> {
  const client = memory();
  return runToolCall((command) => client.create(command), await createCommand(args, context), context,
    "memory_save_failed_internal_error");
}
