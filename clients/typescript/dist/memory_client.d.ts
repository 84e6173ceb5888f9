import type { NatsConnection } from "@nats-io/nats-core";
import type { CommandKinds, CommandResult, CreateMemory, InvalidCommandResult, ManualMemory, ManualResult, ReinforceMemories, ReinforceResult, SeedBio, SeedBioResult, ShadowReport, ShadowResult, UpdateMemory, UpdateResult } from "@memory-worker/contracts";
import { type ShadowedKind, type ShadowedOptions } from "./shadowing.js";
/** Commands published at the same moment go as one atomic batch of at most this many. */
export declare const BATCH_MAX_COMMANDS = 256;
type Filled = "command_id" | "issued_at" | "reply_to";
/** A command as a bot writes it: the client fills in command_id, issued_at and reply_to when omitted. */
export type CommandInput<C extends {
    command_id: string;
    issued_at: string;
    reply_to?: string | null;
}> = Omit<C, Filled> & Partial<Pick<C, Filled>>;
export type CreateMemoryInput = CommandInput<CreateMemory>;
export type ManualMemoryInput = CommandInput<ManualMemory>;
export type ReinforceMemoriesInput = CommandInput<ReinforceMemories>;
export type SeedBioInput = CommandInput<SeedBio>;
export type UpdateMemoryInput = CommandInput<UpdateMemory>;
export type ShadowReportInput = CommandInput<ShadowReport>;
/** The command of a kind as `send()` takes it, by its subject token (the contract's CommandKinds). */
export type CommandInputOf<K extends keyof CommandKinds> = CommandInput<CommandKinds[K]["command"]>;
/** What `send()` answers for a kind: its result, or an InvalidCommandResult where the contract says so. */
export type ReplyOf<K extends keyof CommandKinds> = CommandKinds[K]["reply"];
/** The command of each kind a bot may shadow, as `shadowed()` takes it. */
export type ShadowedCommands = {
    [K in ShadowedKind]: CommandInputOf<K>;
};
export interface MemoryClientOptions {
    /** How long a command may take, from publish to result, before ResultTimeout (default 15000). */
    timeoutMs?: number;
}
export interface SendOptions {
    /** This command's timeout instead of the client's. */
    timeoutMs?: number;
}
/**
 * One reply subscription per client; results are matched to commands by reply subject.
 * Retrying with the same command_id is always safe: the worker answers a repeat with the
 * stored result and changes nothing.
 */
export declare class MemoryClient {
    private readonly nc;
    private readonly timeoutMs;
    private readonly js;
    private readonly inboxPrefix;
    private readonly waiting;
    private readonly publisher;
    private readonly shadowing;
    private sub;
    private closed;
    private constructor();
    /** A client on a connection the bot opened (nats.js v3, any transport). */
    static start(nc: NatsConnection, { timeoutMs }?: MemoryClientOptions): Promise<MemoryClient>;
    /** Stop listening for results; commands still waiting reject. The connection stays open. */
    close(): Promise<void>;
    /**
     * A command of any kind of the contract, by its subject token, and its reply, typed by the
     * contract's CommandKinds (contracts/types): a kind added to the contract is sent here with no
     * change to this client. The methods below are this, named.
     */
    send<K extends keyof CommandKinds>(kind: K, command: CommandInputOf<K>, options?: SendOptions): Promise<ReplyOf<K>>;
    /** memory.create (the model's create_long_term_memory call) and its result. */
    create(command: CreateMemoryInput, options?: SendOptions): Promise<CommandResult>;
    /** memory.manual (a /memories or /personal memories panel action) and its result. */
    manual(command: ManualMemoryInput, options?: SendOptions): Promise<ManualResult | InvalidCommandResult>;
    /** memory.reinforce (the memories a reply used) and its result. */
    reinforce(command: ReinforceMemoriesInput, options?: SendOptions): Promise<ReinforceResult | InvalidCommandResult>;
    /** memory.seed_bio (a new proxy identity's bio) and its result. */
    seedBio(command: SeedBioInput, options?: SendOptions): Promise<SeedBioResult | InvalidCommandResult>;
    /**
     * memory.update (the model's update_long_term_memory call: edit a memory by its id, or delete
     * it with a blank memory_content) and its result, in TomoriBot's words.
     */
    update(command: UpdateMemoryInput, options?: SendOptions): Promise<UpdateResult | InvalidCommandResult>;
    /**
     * memory.shadow (a report of the bot's own write in shadow mode) and how the worker paired it
     * with its dry run; `shadowed()` sends the report for the bot, unanswered.
     */
    shadow(command: ShadowReportInput, options?: SendOptions): Promise<ShadowResult | InvalidCommandResult>;
    /**
     * Shadow mode (docs/design.md, section 3.6): the bot's own write, with the worker's dry run of
     * the same command beside it. 1. The command is sent with `dry_run: true` and its answer awaited
     * at most `timeoutMs` (default 500; a timeout or any failure is reported as timed out, never
     * retried); 2. `ownWrite()` runs, and its value is returned or its error thrown unchanged;
     * 3. what it gave (`report(value)`, by default the value itself, in the kind's result shape) or
     * the error's message is published as memory.shadow in the background: never awaited here, a
     * failure only logged. `shadowReportsSent()` waits for the reports.
     */
    shadowed<K extends ShadowedKind, T extends object>(kind: K, command: ShadowedCommands[K], ownWrite: () => Promise<T>, options?: ShadowedOptions<T>): Promise<T>;
    /** An own write whose value is not in the kind's result shape (or not an object) says what to report. */
    shadowed<K extends ShadowedKind, T>(kind: K, command: ShadowedCommands[K], ownWrite: () => Promise<T>, options: ShadowedOptions<T> & {
        report: (value: T) => Record<string, unknown>;
    }): Promise<T>;
    /** Wait for the shadow reports still being published (a test, or a bot shutting down). */
    shadowReportsSent(): Promise<void>;
    /** A fresh reply subject under this client's inbox. */
    replySubject(): string;
    /** The command with its command_id and issued_at filled in when omitted. */
    private complete;
    private sendCommand;
    /**
     * Shadow mode's dry run: publish, and wait at most `waitMs` from now (the publish included) for
     * the reply. Whether it came; nothing more is done about a silence (no lookup, no re-send), so
     * the bot is never held up longer. A publish still going at the deadline finishes unwatched.
     */
    private answeredWithin;
    /** Publish a command to JetStream, awaiting the stream's ack only. Its Nats-Msg-Id is its
     *  command_id, a dry run's `<command_id>:dry`: the real command may use that id next, and
     *  within the duplicate window JetStream would drop it as a repeat of the dry run. */
    private publishCommand;
    private sendRaw;
    /**
     * Processed: its stored result. Queued: wait for it. Dead-lettered as invalid: give up (it
     * would be refused again). Otherwise (never stored, or out of retries): send it again under
     * a new message id; the worker's inbox keeps a second delivery harmless.
     */
    private afterDuplicate;
    private publishOne;
    /** One atomic batch, or null: each then goes on its own, since only a single publish says
     *  which command a duplicate Nats-Msg-Id refused the batch for. */
    private publishBatch;
}
/**
 * Whether a manual, reinforce, seed_bio, shadow or update answer is the contract's InvalidCommandResult: the
 * worker refused the command without applying it (`data.reason` says why; a bug in the bot,
 * not something the user did). A create's refusal of that kind is a CommandResult with the
 * same status.
 */
export declare function isInvalidCommand(result: {
    data: {
        status: string;
    };
}): result is InvalidCommandResult;
export declare function newCommandId(): string;
export {};
