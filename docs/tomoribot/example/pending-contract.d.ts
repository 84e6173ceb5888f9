// PROVISIONAL (issue 37): the contract additions that three other branches are building, declared
// here from the fixed wire ("The wire of the new command") and the lead's plan so that the
// example compiles before they land. The lead deletes this file when merging them:
//   issue-37-update  memory.update: MemoryClient.update, UpdateMemory, UpdateResult
//   issue-37-create  Persona.naming, NoticePlan.embed (what sendMemoryEmbedWithExpand takes)
//   issue-37-import  memory.manual's action "import" (strategy, entries)
// The example names none of the types below: it reaches them through MemoryClient["update"],
// NoticePlan["embed"] and the command literals, so once this file is gone it compiles against the
// generated declarations (contracts/types/index.d.ts) unchanged, or names what differs.
import type {
  CommandInput,
  CommandResult,
  CreateMemory,
  InvalidCommandResult,
  ManualMemory,
  ManualResult,
  SendOptions,
} from "@memory-worker/client";

declare module "@memory-worker/contracts" {
  type ByAddressingStyle = { masculine?: string; feminine?: string; neutral?: string };

  /** The persona's naming affixes (TomoriBot's tomoriState.naming_config), for the resolver's affix strip. */
  export interface PersonaNaming {
    prefixes?: ByAddressingStyle;
    suffixes?: ByAddressingStyle;
  }

  interface Persona {
    naming?: PersonaNaming | null;
  }

  /** What TomoriBot's sendMemoryEmbedWithExpand takes, decided by the worker (plan, decision 6). */
  export interface NoticeEmbed {
    color: "success" | "memory_update" | "error";
    title_key: string;
    title_vars: Record<string, string>;
    description_key: string;
    /** memory_content is the content as stored, macros kept: the bot renders it and cuts the preview. */
    description_vars: Record<string, string | number>;
    footer_key: string;
    full_content: string;
    /** The minimal-notice ref of a save; null for a delete. */
    ref: { kind: "server_memory" | "personal_memory"; id: number } | null;
  }

  interface NoticePlan {
    embed?: NoticeEmbed | null;
  }

  interface ManualData {
    /** import with strategy replace: how many stored memories the import replaced. */
    removed_count?: number;
  }
}

declare module "@memory-worker/client" {
  /** memory.update.<workspace token>: the envelope and the tool-call fields of memory.create. */
  export interface UpdateMemory extends Omit<CreateMemory, "retrieval"> {}

  export interface UpdateResultData {
    status:
      | "memory_updated_successfully"
      | "memory_deleted_successfully"
      | "memory_command_invalid"
      | `memory_update_failed_${
        | "invalid_args"
        | "disabled"
        | "invalid_content"
        | "ambiguous_user"
        | "user_not_found"
        | "invalid_scope"
        | "internal_error"
        | "not_found"
        | "invalid_target"
        | "privacy_restricted"
        | "db_error"
        | "error"}`;
    reason?: string | null;
    scope?: string | null;
    memory_id?: number | null;
    content_saved?: string | null;
    content_deleted?: string | null;
    target_user?: string;
    candidates?: string[];
  }

  /** The shape of a create's result, with the update's data. */
  export interface UpdateResult extends Omit<CommandResult, "data"> {
    data: UpdateResultData;
  }

  /** memory.manual with action import: one destination (scope, owner, lineage), all or nothing. */
  export interface ManualImport extends Omit<ManualMemory, "action" | "content" | "contents" | "memory_id" | "tags"> {
    action: "import";
    strategy: "merge" | "replace";
    entries: Array<{ content: string; tags: string[] }>;
  }

  interface MemoryClient {
    update(command: CommandInput<UpdateMemory>, options?: SendOptions): Promise<UpdateResult>;
    manual(command: CommandInput<ManualImport>, options?: SendOptions): Promise<ManualResult | InvalidCommandResult>;
  }
}
