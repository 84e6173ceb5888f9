import type { NatsConnection } from "@nats-io/nats-core";
import { errors, RequestError } from "@nats-io/nats-core";
import type { CommandOutcome } from "@memory-worker/contracts";
import { resultSubject } from "./subjects.js";

const OUTCOME_REQUEST = new TextEncoder().encode(JSON.stringify({ answer: "outcome" }));
const decoder = new TextDecoder();

export interface LookupOptions {
  /** How long to wait for a worker's answer (default 2000). */
  timeoutMs?: number;
}

/** Silence, as opposed to a broken connection: nobody answered, or not in time. */
export function isNoAnswer(err: unknown): boolean {
  return err instanceof errors.TimeoutError || err instanceof errors.NoRespondersError
    || (err instanceof RequestError && err.isNoResponders());
}

/**
 * What became of a command of this workspace, or null when no worker answered. A worker that
 * predates the outcome answers the bare result or null: read as processed or unknown.
 */
export async function lookupOutcome(nc: NatsConnection, workspaceId: string, commandId: string,
  { timeoutMs = 2000 }: LookupOptions = {}): Promise<CommandOutcome | null> {
  let data: Uint8Array;
  try {
    data = (await nc.request(resultSubject(workspaceId, commandId), OUTCOME_REQUEST, { timeout: timeoutMs })).data;
  } catch (err) {
    if (isNoAnswer(err)) return null;
    throw err;
  }
  const answer: unknown = JSON.parse(decoder.decode(data));
  if (isOutcome(answer)) return answer;
  if (answer === null) return { command_id: commandId, workspace_id: workspaceId, outcome: "unknown" };
  return { command_id: commandId, workspace_id: workspaceId, outcome: "processed",
    result: answer as CommandOutcome["result"] };
}

function isOutcome(value: unknown): value is CommandOutcome {
  return typeof value === "object" && value !== null && typeof (value as { outcome?: unknown }).outcome === "string"
    && typeof (value as { command_id?: unknown }).command_id === "string";
}
