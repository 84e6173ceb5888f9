// A new message-proxy identity (PluralKit, PluralBuddy): its profile bio becomes one global
// memory of the identity, once. The worker checks everything the bot checked before (new
// identity, blank bio, the hosts' privacy and blacklist, the one-time rule, the cap). Fire and
// forget, as before: it must never delay the message that revealed the identity.
import { isInvalidCommand } from "@memory-worker/client";
import { log } from "./bot-context.js";
import { dropInvalidated, memory } from "./memory.js";

export interface NewIdentity {
  /** The guild the identity was seen in, or the user's id in a DM. */
  workspaceId: string;
  /** The identity's synthetic user id (pk:..., pb:...), whose users row and host links the bot wrote first. */
  identityUserDiscId: string;
  isNewIdentity: boolean;
  /** The proxy's description of the member, as fetched. */
  bio: string | null | undefined;
}

export function seedIdentityBio(identity: NewIdentity): void {
  memory()
    .seedBio({
      workspace_id: identity.workspaceId,
      identity_user_id: identity.identityUserDiscId,
      is_new_identity: identity.isNewIdentity,
      bio: identity.bio ?? null,
    })
    .then((result) => {
      // Refused unapplied (a bio over the worker's size limit): nothing changed.
      if (isInvalidCommand(result)) return log.warn(`bio seed refused: ${result.data.reason}`);
      dropInvalidated(result.invalidated);
      if (result.data.status === "skipped") log.info(`bio seed skipped: ${result.data.reason}`);
      else if (result.data.status === "failed") log.warn(`bio seed failed: ${result.data.reason}`);
    })
    .catch((error: unknown) => log.warn("bio seed not sent", error));
}
