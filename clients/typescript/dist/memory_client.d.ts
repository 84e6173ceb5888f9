import type { NatsConnection } from "@nats-io/nats-core";
import type { CommandResult, CreateMemory, InvalidCommandResult, ManualMemory, ManualResult, ReinforceMemories, ReinforceResult, SeedBio, SeedBioResult, UpdateMemory, UpdateResult } from "@memory-worker/contracts";
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
    private sub;
    private closed;
    private constructor();
    /** A client on a connection the bot opened (nats.js v3, any transport). */
    static start(nc: NatsConnection, { timeoutMs }?: MemoryClientOptions): Promise<MemoryClient>;
    /** Stop listening for results; commands still waiting reject. The connection stays open. */
    close(): Promise<void>;
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
    /** A fresh reply subject under this client's inbox. */
    replySubject(): string;
    private send;
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
 * Whether a manual, reinforce, seed_bio or update answer is the contract's InvalidCommandResult: the
 * worker refused the command without applying it (`data.reason` says why; a bug in the bot,
 * not something the user did). A create's refusal of that kind is a CommandResult with the
 * same status.
 */
export declare function isInvalidCommand(result: {
    data: {
        status: string;
    };
}): result is InvalidCommandResult;
/** A new command id: 32 hex digits, like the Python client's uuid4().hex. */
export declare function newCommandId(): string;
export {};
