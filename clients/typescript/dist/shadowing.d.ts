import type { ShadowReport } from "@memory-worker/contracts";
import type { CommandKind } from "./subjects.js";
/** The kinds a bot may shadow: every command kind but memory.shadow itself. */
export type ShadowedKind = ShadowReport["kind"];
/** How long a shadowed call waits for the dry run before doing its own write without it. */
export declare const SHADOW_TIMEOUT_MS = 500;
export interface ShadowedOptions<T> {
    /**
     * What the bot's own write gave, in the shadowed kind's result shape (`success`, `message` or
     * `error`, `data` with its `status` and the rest, `notice`). Every field given is compared with
     * the dry run's; a field left out is not. By default the value as it is (it must be an object).
     */
    report?: (value: T) => Record<string, unknown>;
    /** How long to wait for the dry run's answer before the bot's own write goes on without it (default 500). */
    timeoutMs?: number;
}
/** A command ready to send: completed by the client (command_id, issued_at, its own reply_to). */
export type ShadowEnvelope = {
    command_id: string;
    issued_at: string;
    workspace_id: string;
    reply_to: string | null;
    dry_run?: boolean;
};
/** What shadowing needs of the client that owns it. */
export interface ShadowTransport {
    /** A fresh command id. */
    newCommandId(): string;
    /** Publish `command` and wait at most `waitMs`, its publish included, for its reply: whether one
     *  came. Never a re-send or a result lookup. */
    answeredWithin(kind: CommandKind, command: ShadowEnvelope, waitMs: number): Promise<boolean>;
    /** Publish `command` to JetStream; no reply is awaited. */
    publish(kind: CommandKind, command: ShadowEnvelope): Promise<void>;
}
export declare class Shadowing {
    private readonly transport;
    private readonly reports;
    constructor(transport: ShadowTransport);
    /**
     * 1. The dry run of `command` (already marked `dry_run: true`, with the client's reply
     *    subject), awaited at most `timeoutMs`;
     * 2. `ownWrite()`, as the bot's write ran before shadow mode: its value is returned, its error
     *    thrown, unchanged;
     * 3. what it gave, `report(value)` (by default the value), or the error's message, published as
     *    memory.shadow in the background (`reportsSent()` waits for it).
     */
    shadowed<T>(kind: ShadowedKind, command: ShadowEnvelope, ownWrite: () => Promise<T>, { report, timeoutMs }?: ShadowedOptions<T>): Promise<T>;
    /** Wait until the reports published so far (and any they lead to) are sent or given up. */
    reportsSent(): Promise<void>;
    /** Whether the worker answered the dry run in time (its answer is the worker's to keep). */
    private dryRun;
    /** Build the report and publish it, never awaited by the bot; a failure (the report() given,
     *  the encoding, the publish) is only logged. */
    private reportLater;
}
