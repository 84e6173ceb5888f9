import type { CommandOutcome } from "@memory-worker/contracts";
/** The command kinds (`memory.<kind>.<workspace>`): the contract's, from its command registry (contracts/registry.py). */
export type CommandKind = NonNullable<CommandOutcome["kind"]>;
export type CacheName = "tomori_state" | "user";
export type Scope = "server" | "personal";
export declare const COMMANDS_STREAM = "MEMORY_COMMANDS";
export declare const EVENTS_STREAM = "MEMORY_EVENTS";
export declare const DLQ_STREAM = "MEMORY_DLQ";
export declare const INVALIDATE_FILTER = "cache.invalidate.>";
/** A subject token for an id: kept as is when it is safe, else percent-encoded UTF-8 bytes. */
export declare function encodeToken(id: string): string;
/** The inverse of encodeToken. Throws on bytes that are not UTF-8. */
export declare function decodeToken(token: string): string;
/** `memory.<kind>.<workspace>`: where a bot publishes a command (JetStream, MEMORY_COMMANDS). */
export declare function commandSubject(kind: CommandKind, workspaceId: string): string;
/** `memory.result.<workspace>.<command>`: core request/reply, what became of a command. */
export declare function resultSubject(workspaceId: string, commandId: string): string;
export declare function savedSubject(scope: Scope, ownerId: string): string;
export declare function evictedSubject(scope: Scope, ownerId: string): string;
export declare function removedSubject(scope: Scope, ownerId: string): string;
/** `memory.updated.<scope>.<owner>`: the model replaced a memory's text (memory.update). */
export declare function updatedSubject(scope: Scope, ownerId: string): string;
/** `cache.invalidate.<cache>.<key>`: a committed change made this bot cache entry stale. */
export declare function invalidateSubject(cache: string, key: string): string;
/**
 * Whether `reply` is the ack subject of a delivery of `consumer` on `stream`, the only subject a
 * reader acknowledges on (contracts/subjects.py, is_ack_subject): `$JS.ACK.<stream>.<consumer>.`
 * and five numbers, or with `<domain>.<account hash>` after ACK (and a trailing token) on newer
 * servers. Anything else on a reader's inbox was not delivered by its consumer.
 */
export declare function isAckSubject(reply: string, stream: string, consumer: string): boolean;
