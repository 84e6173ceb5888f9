// Subject names and the token encoding, as contracts/subjects.py defines them (the
// contract's x-nats.tokenEncoding): an id goes into a subject as is when it is made of
// [A-Za-z0-9_:-], else as its UTF-8 bytes with every other byte percent-encoded.

import type { CommandOutcome } from "@memory-worker/contracts";

/** The command kinds (`memory.<kind>.<workspace>`): the contract's, from its command registry (contracts/registry.py). */
export type CommandKind = NonNullable<CommandOutcome["kind"]>;
export type CacheName = "tomori_state" | "user";
export type Scope = "server" | "personal";

export const COMMANDS_STREAM = "MEMORY_COMMANDS";
export const EVENTS_STREAM = "MEMORY_EVENTS";
export const DLQ_STREAM = "MEMORY_DLQ";
export const INVALIDATE_FILTER = "cache.invalidate.>";

const SAFE = /^[A-Za-z0-9_:-]+$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

function isSafeByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
    || b === 0x5f || b === 0x3a || b === 0x2d; // _ : -
}

/** A subject token for an id: kept as is when it is safe, else percent-encoded UTF-8 bytes. */
export function encodeToken(id: string): string {
  if (typeof id !== "string" || id === "") {
    throw new TypeError("an id used in a subject must be a non-empty string");
  }
  if (SAFE.test(id)) return id;
  let out = "";
  for (const b of encoder.encode(id)) {
    out += isSafeByte(b) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The inverse of encodeToken. Throws on bytes that are not UTF-8. */
export function decodeToken(token: string): string {
  if (!token.includes("%")) return token;
  const bytes: number[] = [];
  for (let i = 0; i < token.length;) {
    const hex = token.slice(i + 1, i + 3);
    if (token[i] === "%" && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 3;
    } else {
      const cp = token.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      bytes.push(...encoder.encode(ch));
      i += ch.length;
    }
  }
  return decoder.decode(new Uint8Array(bytes));
}

/** `memory.<kind>.<workspace>`: where a bot publishes a command (JetStream, MEMORY_COMMANDS). */
export function commandSubject(kind: CommandKind, workspaceId: string): string {
  return `memory.${kind}.${encodeToken(workspaceId)}`;
}

/** `memory.result.<workspace>.<command>`: core request/reply, what became of a command. */
export function resultSubject(workspaceId: string, commandId: string): string {
  return `memory.result.${encodeToken(workspaceId)}.${encodeToken(commandId)}`;
}

export function savedSubject(scope: Scope, ownerId: string): string {
  return `memory.saved.${scope}.${encodeToken(ownerId)}`;
}

export function evictedSubject(scope: Scope, ownerId: string): string {
  return `memory.evicted.${scope}.${encodeToken(ownerId)}`;
}

export function removedSubject(scope: Scope, ownerId: string): string {
  return `memory.removed.${scope}.${encodeToken(ownerId)}`;
}

/** `memory.updated.<scope>.<owner>`: the model replaced a memory's text (memory.update). */
export function updatedSubject(scope: Scope, ownerId: string): string {
  return `memory.updated.${scope}.${encodeToken(ownerId)}`;
}

/** `cache.invalidate.<cache>.<key>`: a committed change made this bot cache entry stale. */
export function invalidateSubject(cache: string, key: string): string {
  return `cache.invalidate.${cache}.${encodeToken(key)}`;
}

const PLAIN_SUBJECT = /^[^\s*>.]+(\.[^\s*>.]+)*$/;

/**
 * Whether `reply` is the ack subject of a delivery of `consumer` on `stream`, the only subject a
 * reader acknowledges on (contracts/subjects.py, is_ack_subject): `$JS.ACK.<stream>.<consumer>.`
 * and five numbers, or with `<domain>.<account hash>` after ACK (and a trailing token) on newer
 * servers. Anything else on a reader's inbox was not delivered by its consumer.
 */
export function isAckSubject(reply: string, stream: string, consumer: string): boolean {
  if (!PLAIN_SUBJECT.test(reply)) return false;
  const tokens = reply.split(".");
  if (tokens[0] !== "$JS" || tokens[1] !== "ACK") return false;
  const at = tokens.length === 9 ? 2 : tokens.length >= 11 ? 4 : 0;
  return at > 0 && tokens[at] === stream && tokens[at + 1] === consumer
    && tokens.slice(at + 2, at + 7).every((t) => /^[0-9]+$/.test(t));
}
