// A new message-proxy identity's profile bio becomes one global memory of the identity, once:
// seedMessageProxyIdentityBio (src/utils/messageProxy/bioSeeding.ts) on the worker. The worker
// checks what the function checked (new identity, blank bio, a host at full privacy or blacklisted
// in the server, the cap) plus the one-time rule, under the identity's lock. The caller fires it
// without awaiting, as before (persistMessageProxyIdentity's `seedIdentityBio` dependency), and
// passes one more fact: whose DM it is, for the workspace id.
import { isInvalidCommand } from "@memory-worker/client";
import type { SeedBioInput } from "@memory-worker/client";
import type { MessageProxyBioSeedArgs } from "@/utils/messageProxy/bioSeeding";
import { log } from "@/utils/misc/logger";
import { dropInvalidated, memory, sendTwice } from "./memory.js";

export type WorkerBioSeedArgs = MessageProxyBioSeedArgs & {
  /** In a DM (no serverDiscId): the user the bot talks with, the sender the message's attestation names. */
  dmUserDiscId: string | undefined;
};

/** The seed as a memory.seed_bio command, or null when there is neither a guild nor a DM user
 *  (shadow mode sends the same: shadowBioSeed.ts). */
export function seedBioCommand(args: WorkerBioSeedArgs): SeedBioInput | null {
  // The workspace is the guild, or in a DM the user's own id: the worker's convention for a DM.
  const workspaceId = args.serverDiscId || args.dmUserDiscId;
  if (!workspaceId) return null;
  return {
    command_id: crypto.randomUUID(),
    workspace_id: workspaceId,
    identity_user_id: args.identityUserDiscId,
    is_new_identity: args.isNewIdentity,
    bio: args.description ?? null,
  };
}

export async function seedMessageProxyIdentityBio(args: WorkerBioSeedArgs): Promise<void> {
  const command = seedBioCommand(args);
  if (command === null) {
    log.warn(`bio seed for ${args.identityUserDiscId} skipped: neither a guild nor a DM user`);
    return;
  }
  const client = memory();
  const result = await sendTwice((sent) => client.seedBio(sent), command);
  if (result === null) {
    log.warn(`bio seed for ${args.identityUserDiscId}: the memory service did not answer`);
  } else if (isInvalidCommand(result)) {
    log.warn(`bio seed refused unapplied: ${result.data.reason}`);
  } else {
    dropInvalidated(result.invalidated);
    if (result.data.status !== "seeded") log.info(`bio seed ${result.data.status}: ${result.data.reason}`);
  }
}
