import type { NatsConnection } from "@nats-io/nats-core";
import type { CommandOutcome } from "@memory-worker/contracts";
export interface LookupOptions {
    /** How long to wait for a worker's answer (default 2000). */
    timeoutMs?: number;
}
/** Silence, as opposed to a broken connection: nobody answered, or not in time. */
export declare function isNoAnswer(err: unknown): boolean;
/**
 * What became of a command of this workspace, or null when no worker answered. A worker that
 * predates the outcome answers the bare result or null: read as processed or unknown.
 */
export declare function lookupOutcome(nc: NatsConnection, workspaceId: string, commandId: string, { timeoutMs }?: LookupOptions): Promise<CommandOutcome | null>;
