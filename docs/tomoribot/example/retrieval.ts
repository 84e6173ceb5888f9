// `retrieval` of memory.create: what the worker needs to know before a save at the cap may replace
// a dormant memory (it never does unless all three hold and the workspace has decay on). These are
// TomoriBot's own facts, read the way its vectorize path reads them
// (memoriesDocumentOperations.ts): pgvector present, the configured embedding model, and the
// credentials resolved for it.
import type { MemoryClient } from "@memory-worker/client";
import type { ToolContext } from "@/types/tool/interfaces";
import { isRagAvailable } from "@/utils/db/ragAvailability";
import { llmModelRepo } from "@/utils/db/repositories";
import { log } from "@/utils/misc/logger";
import {
  CredentialUnavailableError,
  PersonalProviderRequiredError,
  getResolvedCapabilityModelId,
  resolveCapabilityCredentials,
} from "@/utils/provider/credentialResolver";
import type { ResolvedCredentials } from "@/utils/provider/credentialResolver";

type Retrieval = NonNullable<Parameters<MemoryClient["create"]>[0]["retrieval"]>;

async function embeddingCredentials(context: ToolContext): Promise<ResolvedCredentials | null> {
  try {
    return await resolveCapabilityCredentials(context.tomoriState.server_id, "embedding", {
      userId: context.internalUserId ?? null,
    });
  } catch (error) {
    if (!(error instanceof PersonalProviderRequiredError || error instanceof CredentialUnavailableError)) {
      log.warn("memory: embedding credentials could not be resolved", error);
    }
    return null;
  }
}

/**
 * Anything that cannot be established reads as "no": the save at the cap is then refused, as
 * TomoriBot (which never evicts) refuses it.
 */
export async function retrievalFacts(context: ToolContext): Promise<Retrieval> {
  const credentials = await embeddingCredentials(context);
  const modelId = (credentials ? getResolvedCapabilityModelId(credentials, "embedding") : null)
    ?? context.tomoriState.config.embedding_model_id ?? null;
  const model = modelId === null ? null : await llmModelRepo.loadEmbeddingModelById(modelId).catch(() => null);
  return {
    rag_available: isRagAvailable(),
    embedding_model: model?.codename ?? null,
    embedding_credentials: credentials !== null,
  };
}
