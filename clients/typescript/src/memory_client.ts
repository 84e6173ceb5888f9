// The bot side: publish a command to JetStream and await its result on a reply inbox. The
// same protocol as the Python client (worker/client/memory_client.py): Nats-Msg-Id is the
// command_id, the reply inbox lives under the connection's own inbox prefix and is subscribed
// before the publish, a duplicate ack or a silence is answered by the result lookup, and
// commands sent at the same moment go to JetStream as one atomic batch.
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { createInbox, nuid } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import type {
  CommandKinds, CommandOutcome, CommandResult, CreateMemory, InvalidCommandResult, ManualMemory, ManualResult,
  ReinforceMemories, ReinforceResult, SeedBio, SeedBioResult, ShadowReport, ShadowResult, UpdateMemory, UpdateResult,
} from "@memory-worker/contracts";
import { publishAtomic, type BatchMessage } from "./atomic.js";
import { Coalescer } from "./coalescer.js";
import { CommandDeadLettered, ResultTimeout } from "./errors.js";
import { lookupOutcome } from "./lookup.js";
import { Shadowing, type ShadowedKind, type ShadowedOptions, type ShadowEnvelope } from "./shadowing.js";
import { COMMANDS_STREAM, commandSubject, type CommandKind } from "./subjects.js";

/** Commands published at the same moment go as one atomic batch of at most this many. */
export const BATCH_MAX_COMMANDS = 256;
/** How long a batch's commit may take before its commands are sent one by one. */
const BATCH_ACK_TIMEOUT_MS = 5000;
// Lookup polling while a command is still queued.
const LOOKUP_POLL_MIN_MS = 50;
const LOOKUP_POLL_MAX_MS = 1000;
// Dead-letter reasons a re-send cannot cure: the command is refused the same way again.
const GIVE_UP_REASONS = new Set(["invalid_command", "unsupported_command"]);

type Filled = "command_id" | "issued_at" | "reply_to";
/** A command as a bot writes it: the client fills in command_id, issued_at and reply_to when omitted. */
export type CommandInput<C extends { command_id: string; issued_at: string; reply_to?: string | null }> =
  Omit<C, Filled> & Partial<Pick<C, Filled>>;
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
export type ShadowedCommands = { [K in ShadowedKind]: CommandInputOf<K> };

export interface MemoryClientOptions {
  /** How long a command may take, from publish to result, before ResultTimeout (default 15000). */
  timeoutMs?: number;
}

export interface SendOptions {
  /** This command's timeout instead of the client's. */
  timeoutMs?: number;
}

type Envelope = { command_id: string; issued_at: string; reply_to?: string | null; workspace_id: string };
type Pub = { subject: string; payload: Uint8Array; msgId: string };
type Waiter = { promise: Promise<Uint8Array>; resolve: (data: Uint8Array) => void; reject: (err: unknown) => void };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const TIMED_OUT = Symbol("timed out");

/**
 * One reply subscription per client; results are matched to commands by reply subject.
 * Retrying with the same command_id is always safe: the worker answers a repeat with the
 * stored result and changes nothing.
 */
export class MemoryClient {
  private readonly js: JetStreamClient;
  private readonly inboxPrefix: string;
  private readonly waiting = new Map<string, Waiter>();
  private readonly publisher: Coalescer<Pub, PubAck>;
  private readonly shadowing: Shadowing;
  private sub: Subscription | null = null;
  private closed = false;

  private constructor(private readonly nc: NatsConnection, private readonly timeoutMs: number) {
    this.js = jetstream(nc);
    // Under the connection's own inbox prefix: a bot whose permissions allow replies only
    // under a private prefix (connect({ inboxPrefix })) gets its results there.
    this.inboxPrefix = createInbox(connectionInboxPrefix(nc));
    this.publisher = new Coalescer<Pub, PubAck>((pubs) => this.publishBatch(pubs), (pub) => this.publishOne(pub),
      BATCH_MAX_COMMANDS, 2);
    this.shadowing = new Shadowing({
      newCommandId,
      answeredWithin: (kind, command, waitMs) => this.answeredWithin(kind, command, waitMs),
      publish: (kind, command) => this.publishCommand(kind, command),
    });
  }

  /** A client on a connection the bot opened (nats.js v3, any transport). */
  static async start(nc: NatsConnection, { timeoutMs = 15_000 }: MemoryClientOptions = {}): Promise<MemoryClient> {
    if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${timeoutMs}`);
    const client = new MemoryClient(nc, timeoutMs);
    let refused: Error | null = null;
    client.sub = nc.subscribe(`${client.inboxPrefix}.*`, {
      callback: (err, msg) => {
        if (err) {
          refused ??= err;
          return;
        }
        const waiter = client.waiting.get(msg.subject);
        if (waiter) {
          client.waiting.delete(msg.subject);
          waiter.resolve(msg.data);
        }
      },
    });
    // The subscription is on the server before any command can be answered to it (and a
    // refused one is reported before the flush's pong).
    await nc.flush();
    if (refused !== null) {
      const why: Error = refused;
      throw new Error(`MemoryClient cannot subscribe to its reply inbox ${client.inboxPrefix}.* (${why.message}); `
        + `under per-role permissions, connect as the bot's user with inboxPrefix "_INBOX.bot.<name>"`, { cause: why });
    }
    return client;
  }

  /** Stop listening for results; commands still waiting reject. The connection stays open. */
  async close(): Promise<void> {
    this.closed = true;
    const sub = this.sub;
    this.sub = null;
    if (sub && !sub.isClosed()) sub.unsubscribe();
    for (const waiter of this.waiting.values()) waiter.reject(new Error("the MemoryClient was closed"));
    this.waiting.clear();
  }

  /**
   * A command of any kind of the contract, by its subject token, and its reply, typed by the
   * contract's CommandKinds (contracts/types): a kind added to the contract is sent here with no
   * change to this client. The methods below are this, named.
   */
  send<K extends keyof CommandKinds>(kind: K, command: CommandInputOf<K>, options?: SendOptions): Promise<ReplyOf<K>> {
    return this.sendCommand(kind, command as Partial<Envelope> & { workspace_id: string }, options) as Promise<ReplyOf<K>>;
  }

  /** memory.create (the model's create_long_term_memory call) and its result. */
  create(command: CreateMemoryInput, options?: SendOptions): Promise<CommandResult> {
    return this.send("create", command, options);
  }

  // The other kinds' replies: their result, or an InvalidCommandResult (data.status
  // memory_command_invalid, data.reason) when the worker refused the command unapplied (over
  // its size limit, a lineage that is not its bot's). isInvalidCommand tells them apart.

  /** memory.manual (a /memories or /personal memories panel action) and its result. */
  manual(command: ManualMemoryInput, options?: SendOptions): Promise<ManualResult | InvalidCommandResult> {
    return this.send("manual", command, options);
  }

  /** memory.reinforce (the memories a reply used) and its result. */
  reinforce(command: ReinforceMemoriesInput, options?: SendOptions): Promise<ReinforceResult | InvalidCommandResult> {
    return this.send("reinforce", command, options);
  }

  /** memory.seed_bio (a new proxy identity's bio) and its result. */
  seedBio(command: SeedBioInput, options?: SendOptions): Promise<SeedBioResult | InvalidCommandResult> {
    return this.send("seed_bio", command, options);
  }

  /**
   * memory.update (the model's update_long_term_memory call: edit a memory by its id, or delete
   * it with a blank memory_content) and its result, in TomoriBot's words.
   */
  update(command: UpdateMemoryInput, options?: SendOptions): Promise<UpdateResult | InvalidCommandResult> {
    return this.send("update", command, options);
  }

  /**
   * memory.shadow (a report of the bot's own write in shadow mode) and how the worker paired it
   * with its dry run; `shadowed()` sends the report for the bot, unanswered.
   */
  shadow(command: ShadowReportInput, options?: SendOptions): Promise<ShadowResult | InvalidCommandResult> {
    return this.send("shadow", command, options);
  }

  /**
   * Shadow mode (docs/design.md, section 3.6): the bot's own write, with the worker's dry run of
   * the same command beside it. 1. The command is sent with `dry_run: true` and its answer awaited
   * at most `timeoutMs` (default 500; a timeout or any failure is reported as timed out, never
   * retried); 2. `ownWrite()` runs, and its value is returned or its error thrown unchanged;
   * 3. what it gave (`report(value)`, by default the value itself, in the kind's result shape) or
   * the error's message is published as memory.shadow in the background: never awaited here, a
   * failure only logged. `shadowReportsSent()` waits for the reports.
   */
  shadowed<K extends ShadowedKind, T extends object>(kind: K, command: ShadowedCommands[K], ownWrite: () => Promise<T>,
    options?: ShadowedOptions<T>): Promise<T>;
  /** An own write whose value is not in the kind's result shape (or not an object) says what to report. */
  shadowed<K extends ShadowedKind, T>(kind: K, command: ShadowedCommands[K], ownWrite: () => Promise<T>,
    options: ShadowedOptions<T> & { report: (value: T) => Record<string, unknown> }): Promise<T>;
  async shadowed<K extends ShadowedKind, T>(kind: K, command: ShadowedCommands[K], ownWrite: () => Promise<T>,
    options: ShadowedOptions<T> = {}): Promise<T> {
    let dry: ShadowEnvelope;
    try {
      dry = { ...this.complete(kind, command), dry_run: true, reply_to: this.replySubject() };
    } catch (error) {
      // Nothing of shadow mode reaches the bot: a command that cannot be built leaves the own write alone.
      console.warn(`memory.${kind}: shadow mode skipped, the command could not be built: ${String(error)}`);
      return ownWrite();
    }
    return this.shadowing.shadowed(kind, dry, ownWrite, options);
  }

  /** Wait for the shadow reports still being published (a test, or a bot shutting down). */
  shadowReportsSent(): Promise<void> {
    return this.shadowing.reportsSent();
  }

  /** A fresh reply subject under this client's inbox. */
  replySubject(): string {
    return `${this.inboxPrefix}.${nuid.next()}`;
  }

  /** The command with its command_id and issued_at filled in when omitted. */
  private complete(kind: CommandKind, input: Partial<Envelope> & { workspace_id: string }): Envelope {
    if (typeof input !== "object" || input === null || typeof input.workspace_id !== "string") {
      throw new TypeError(`memory.${kind}: a command needs a workspace_id string`);
    }
    return {
      ...input,
      command_id: input.command_id ?? newCommandId(),
      issued_at: input.issued_at ?? new Date().toISOString(),
      workspace_id: input.workspace_id,
    };
  }

  private async sendCommand(kind: CommandKind, input: Partial<Envelope> & { workspace_id: string },
    options: SendOptions = {}): Promise<unknown> {
    if (this.closed) throw new Error("the MemoryClient is closed");
    const command = this.complete(kind, input);
    if (typeof command.reply_to !== "string" || !command.reply_to.startsWith(`${this.inboxPrefix}.`)) {
      command.reply_to = this.replySubject();
    }
    const raw = await this.sendRaw(kind, command.workspace_id, encoder.encode(JSON.stringify(command)),
      command.command_id, command.reply_to, options.timeoutMs ?? this.timeoutMs, messageId(command));
    return JSON.parse(decoder.decode(raw));
  }

  /**
   * Shadow mode's dry run: publish, and wait at most `waitMs` from now (the publish included) for
   * the reply. Whether it came; nothing more is done about a silence (no lookup, no re-send), so
   * the bot is never held up longer. A publish still going at the deadline finishes unwatched.
   */
  private async answeredWithin(kind: CommandKind, command: ShadowEnvelope, waitMs: number): Promise<boolean> {
    const replyTo = command.reply_to;
    if (this.closed || replyTo === null) return false;
    const waiter = deferred();
    this.waiting.set(replyTo, waiter);
    try {
      const published = this.publishCommand(kind, command);
      // A refused publish ends the wait at once; an accepted one leaves it to the reply.
      const refused = published.then(() => new Promise<boolean>(() => undefined), () => false);
      return (await within(Promise.race([waiter.promise.then(() => true), refused]), waitMs)) === true;
    } finally {
      this.waiting.delete(replyTo);
    }
  }

  /** Publish a command to JetStream, awaiting the stream's ack only. Its Nats-Msg-Id is its
   *  command_id, a dry run's `<command_id>:dry`: the real command may use that id next, and
   *  within the duplicate window JetStream would drop it as a repeat of the dry run. */
  private async publishCommand(kind: CommandKind, command: ShadowEnvelope): Promise<void> {
    await this.publisher.call({ subject: commandSubject(kind, command.workspace_id),
      payload: encoder.encode(JSON.stringify(command)), msgId: messageId(command) });
  }

  private async sendRaw(kind: CommandKind, workspaceId: string, payload: Uint8Array, commandId: string,
    replyTo: string, waitMs: number, msgId: string = commandId): Promise<Uint8Array> {
    // Listening before the publish: the reply may come before the publish's own ack.
    const waiter = deferred();
    this.waiting.set(replyTo, waiter);
    try {
      const ack = await this.publisher.call({ subject: commandSubject(kind, workspaceId), payload, msgId });
      if (ack.duplicate) {
        // JetStream dropped the repeat as a duplicate, so no reply comes for it: the lookup
        // says what became of the first one.
        return await this.afterDuplicate(kind, workspaceId, payload, commandId, waiter, waitMs);
      }
      const data = await within(waiter.promise, waitMs);
      if (data !== TIMED_OUT) return data;
      // Silence: the reply may be lost, or the command refused where no reply goes.
      const outcome = await lookupOutcome(this.nc, workspaceId, commandId);
      if (outcome?.outcome === "processed") return encoder.encode(JSON.stringify(outcome.result));
      if (outcome?.outcome === "dead_lettered") throw new CommandDeadLettered(outcome);
      // The worker answers results and lookups only under its REPLY_SUBJECT_PREFIXES: a
      // connection whose inbox is elsewhere hears neither (docs/design.md, section 3.1).
      const hint = outcome === null ? `, nor did the result lookup answer: no worker is running, or this connection's`
        + ` inbox ${this.inboxPrefix}. is under none of the worker's REPLY_SUBJECT_PREFIXES, which it answers only` : "";
      throw new ResultTimeout(commandId, `no result for command ${commandId} within ${waitMs} ms${hint}`);
    } finally {
      this.waiting.delete(replyTo);
    }
  }

  /**
   * Processed: its stored result. Queued: wait for it. Dead-lettered as invalid: give up (it
   * would be refused again). Otherwise (never stored, or out of retries): send it again under
   * a new message id; the worker's inbox keeps a second delivery harmless.
   */
  private async afterDuplicate(kind: CommandKind, workspaceId: string, payload: Uint8Array, commandId: string,
    waiter: Waiter, waitMs: number): Promise<Uint8Array> {
    const deadline = Date.now() + waitMs;
    let poll = LOOKUP_POLL_MIN_MS;
    for (;;) {
      const outcome: CommandOutcome | null = await lookupOutcome(this.nc, workspaceId, commandId);
      const state = outcome?.outcome ?? "unknown";
      if (state === "processed") return encoder.encode(JSON.stringify(outcome!.result));
      if (state === "dead_lettered" && GIVE_UP_REASONS.has(outcome!.dead_letter?.reason ?? "")) {
        throw new CommandDeadLettered(outcome!);
      }
      if (state !== "queued") {
        await this.js.publish(commandSubject(kind, workspaceId), payload,
          { msgID: `${commandId}:resend:${nuid.next()}`, expect: { streamName: COMMANDS_STREAM } });
        break;
      }
      // Queued: the first delivery answers its own reply_to; ours gets it only when the
      // command reused it, so watch both the reply and the lookup.
      const left = deadline - Date.now();
      if (left <= 0) throw new ResultTimeout(commandId, `command ${commandId} still queued after ${waitMs} ms`);
      const data = await within(waiter.promise, Math.min(poll, left));
      if (data !== TIMED_OUT) return data;
      poll = Math.min(poll * 2, LOOKUP_POLL_MAX_MS);
    }
    const data = await within(waiter.promise, Math.max(deadline - Date.now(), 100));
    if (data !== TIMED_OUT) return data;
    throw new ResultTimeout(commandId, `no result for command ${commandId} within ${waitMs} ms`);
  }

  private publishOne(pub: Pub): Promise<PubAck> {
    return this.js.publish(pub.subject, pub.payload, { msgID: pub.msgId, expect: { streamName: COMMANDS_STREAM } });
  }

  /** One atomic batch, or null: each then goes on its own, since only a single publish says
   *  which command a duplicate Nats-Msg-Id refused the batch for. */
  private async publishBatch(pubs: Pub[]): Promise<PubAck[] | null> {
    const stored = await publishAtomic(this.js, pubs as BatchMessage[], BATCH_ACK_TIMEOUT_MS);
    if (stored === null) return null;
    const first = stored.seq - pubs.length + 1;
    return pubs.map((_, i) => ({ stream: stored.stream, seq: first + i, duplicate: false, domain: "" }) as PubAck);
  }
}

// The contract's two lists of kinds, CommandOutcome's `kind` and CommandKinds' keys, are one:
// a kind send() could not type fails to compile here.
type SameKinds<Missing extends never> = Missing;
type EveryKindIsSent = SameKinds<Exclude<CommandKind, keyof CommandKinds> | Exclude<keyof CommandKinds, CommandKind>>;

/**
 * Whether a manual, reinforce, seed_bio, shadow or update answer is the contract's InvalidCommandResult: the
 * worker refused the command without applying it (`data.reason` says why; a bug in the bot,
 * not something the user did). A create's refusal of that kind is a CommandResult with the
 * same status.
 */
export function isInvalidCommand(result: { data: { status: string } }): result is InvalidCommandResult {
  return result.data.status === "memory_command_invalid";
}

/** A new command id: 32 hex digits, like the Python client's uuid4().hex. */
/** A command's Nats-Msg-Id: its command_id, a dry run's `<command_id>:dry` (the real command may
 *  use that id next, and within the duplicate window JetStream would drop it as a repeat). */
function messageId(command: { command_id: string; dry_run?: boolean | null }): string {
  return command.dry_run === true ? `${command.command_id}:dry` : command.command_id;
}

export function newCommandId(): string {
  return globalThis.crypto.randomUUID().replaceAll("-", "");
}

function connectionInboxPrefix(nc: NatsConnection): string | undefined {
  // nats.js keeps the connect options on the connection; its own requests use this prefix.
  return (nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}

function deferred(): Waiter {
  let resolve!: (data: Uint8Array) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<Uint8Array>((res, rej) => { resolve = res; reject = rej; });
  promise.catch(() => undefined); // a waiter nobody awaits any more must not be an unhandled rejection
  return { promise, resolve, reject };
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => { timer = setTimeout(() => resolve(TIMED_OUT), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
