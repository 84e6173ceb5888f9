// Delivering a tool's notice with TomoriBot's own sendMemoryEmbedWithExpand, on the worker's plan.
// The plan says where the `memory_update` notice goes (conversation: Minimal title or Verbose card,
// or hidden; the thought-log copy or none) and `embed` carries what the helper takes (colour,
// locale keys and variables, footer, full text, minimal-notice ref). The helper routes from the
// server config on the context it is given, so it is given a config that says what the plan says:
// it decides nothing again, and the bot renders mentions and the 600-character preview as before.
import type { NoticePlan } from "@memory-worker/client";
import type { MinimalNoticeRef, TomoriState } from "@/types/db/schema";
import type { StandardEmbedOptions } from "@/types/discord/embed";
import type { ToolContext } from "@/types/tool/interfaces";
import { getCachedUserRow } from "@/utils/cache/userCache";
import { memoryServerDiscId, renderMemoryNoticeContent } from "@/tools/functionCalls/memoryNoticeContent";
import { sendMemoryEmbedWithExpand } from "@/utils/discord/expandableEmbedNotice";
import { resolveTriggererDiscordId } from "@/utils/discord/targetResolver";
import { ColorCode, log } from "@/utils/misc/logger";

type NoticeEmbed = NonNullable<NoticePlan["embed"]>;

const COLORS: Record<NoticeEmbed["color"], ColorCode> = {
  success: ColorCode.SUCCESS,
  memory_update: ColorCode.MEMORY_UPDATE,
  error: ColorCode.ERROR,
};

/**
 * The tool's context with the notice settings replaced by the plan's decision:
 * - hidden: `memory_update` among the hidden keys exactly when the plan posts nothing in the
 *   conversation;
 * - verbosity: the plan's (Minimal posts the title alone);
 * - thought log: the plan's channel, or none when the plan gives no copy.
 * The helper's own checks at sending time (a DM, the private list, a channel it cannot fetch) can
 * only withhold the copy, never add one.
 */
function followingThePlan(context: ToolContext, plan: NoticePlan): ToolContext {
  const config = context.tomoriState.config;
  const otherHiddenKeys = config.tool_notice_hidden_keys.filter((key) => key !== "memory_update");
  const tomoriState: TomoriState = {
    ...context.tomoriState,
    config: {
      ...config,
      tool_notice_hidden_keys: plan.hidden ? [...otherHiddenKeys, "memory_update"] : otherHiddenKeys,
      tool_notice_verbosity: plan.verbosity,
      thought_log_channel_disc_id: plan.thought_log?.channel_id ?? null,
    },
  };
  return { ...context, tomoriState };
}

/** Whose name `{user}` shows: the memory's person, or for a server memory the triggerer, as before. */
async function userNameFor(context: ToolContext, embed: NoticeEmbed): Promise<string> {
  const named = embed.title_vars.user_nickname;
  if (named) return named;
  const triggererId = resolveTriggererDiscordId(context);
  const row = triggererId ? await getCachedUserRow(triggererId) : null;
  return row?.user_nickname ?? context.message?.author.displayName ?? triggererId ?? "User";
}

/** Post the notice where the plan says; a failed post is logged, never undoes the change or alters the model's answer. */
export async function deliverMemoryNotice(context: ToolContext, plan: NoticePlan): Promise<void> {
  const embed = plan.embed ?? null;
  if (embed === null || (plan.conversation === null && plan.thought_log === null)) {
    log.info(`memory notice not posted: ${plan.dropped_reason ?? "nothing to show"}`);
    return;
  }
  try {
    const rendered = await renderMemoryNoticeContent({
      content: embed.full_content,
      client: context.client,
      // Mentions resolve against this guild (the user's id in a DM), as the tools rendered them.
      serverId: memoryServerDiscId(context, "memory notice without a guild or a user"),
      userName: await userNameFor(context, embed),
      botNickname: context.tomoriState.persona_nickname,
      personalMemoriesEnabled: context.tomoriState.config.personal_memories_enabled ?? true,
    });
    const options: StandardEmbedOptions = {
      color: COLORS[embed.color],
      titleKey: embed.title_key,
      titleVars: embed.title_vars,
      descriptionKey: embed.description_key,
      descriptionVars: { ...embed.description_vars, memory_content: rendered.preview.text },
      footerKey: embed.footer_key,
    };
    const ref: MinimalNoticeRef | undefined = embed.ref ?? undefined;
    // After a Minimal post the helper records `ref` (recordMinimalNoticeRef), so a later context
    // build restores the title-only notice's body as `ID:N <content>`.
    await sendMemoryEmbedWithExpand(followingThePlan(context, plan), options, rendered.processedContent, ref);
  } catch (error) {
    log.warn("memory notice could not be posted (the change is made)", error);
  }
}
