// Delivering a save's notice plan with the bot's embed helpers. The worker decided where the
// notice goes (conversation, thought log, nowhere) from the workspace's settings and the
// channel's privacy; the bot only renders each destination it was given.
import type { CommandResult } from "@memory-worker/client";
import { log, sendNoticeEmbed } from "./bot-context.js";
import type { ExpandButton, NoticeEmbed, SendOptions } from "./bot-context.js";

export type NoticePlan = NonNullable<CommandResult["notice"]>;
type ConversationNotice = NonNullable<NoticePlan["conversation"]>;
type Card = NonNullable<ConversationNotice["card"]>;

function cardEmbed(card: Card, sourceUrl?: string | null): NoticeEmbed {
  return { title: card.title, fields: card.fields, footer: card.footer, sourceUrl };
}

/** The "show full text" button: the uncut text inline when it fits an embed, else notice.txt. */
function expandButton(expand: ConversationNotice["expand"], attachment: ConversationNotice["attachment"]):
  ExpandButton | undefined {
  if (expand === null) return undefined;
  if (expand.delivery === "description" && expand.description !== null) {
    return { label: expand.label, text: expand.description };
  }
  if (attachment !== null) {
    return { label: expand.label, file: { name: attachment.filename, content: attachment.content } };
  }
  return undefined;
}

/**
 * Post every destination of the plan. A failed post is logged and never undoes the save, and
 * never changes what the model is told: the memory is saved either way.
 */
export async function deliverNotice(plan: NoticePlan, personaUsername?: string): Promise<void> {
  const asPersona = personaUsername ? { username: personaUsername } : undefined;
  const posts: Array<[string, NoticeEmbed, SendOptions]> = [];
  const conversation = plan.conversation;
  if (conversation !== null) {
    const embed = conversation.mode === "card" && conversation.card !== null
      ? cardEmbed(conversation.card)
      : { title: conversation.title };
    posts.push([conversation.channel_id, embed, { expand: expandButton(conversation.expand, conversation.attachment), asPersona }]);
  }
  const thoughtLog = plan.thought_log;
  if (thoughtLog !== null) {
    posts.push([thoughtLog.channel_id, cardEmbed(thoughtLog.card, thoughtLog.source_url),
      { expand: expandButton(thoughtLog.expand, thoughtLog.attachment) }]);
  }
  if (posts.length === 0) {
    // A hidden memory_update notice with no thought-log copy allowed: nothing to show, by design.
    log.info(`memory notice not posted: ${plan.dropped_reason ?? "no destination"}`);
  }
  for (const [channelId, embed, options] of posts) {
    try {
      await sendNoticeEmbed(channelId, embed, options);
    } catch (error) {
      log.warn(`memory notice to ${channelId} failed (the memory is saved)`, error);
    }
  }
}
