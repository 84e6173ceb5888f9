// Shadow mode on the bot's side (docs/design.md, section 3.6), as the Python client's
// worker/client/shadowing.py: a write the bot still does itself, with the worker's dry run of the
// same command asked for first and a report of what the write gave sent after, so the worker can
// say whether it would have decided the same.
//
// The bot is never held up for long and never fails because of the worker: the dry run is awaited
// at most `timeoutMs` (a timeout, or any failure to get it, is reported as timed out and never
// retried or looked up), and the report is published in the background (a failed publish is
// logged with console.warn).
import type { ShadowReport } from "@memory-worker/contracts";
import type { CommandKind } from "./subjects.js";

/** The kinds a bot may shadow: every command kind but memory.shadow itself. */
export type ShadowedKind = ShadowReport["kind"];

/** How long a shadowed call waits for the dry run before doing its own write without it. */
export const SHADOW_TIMEOUT_MS = 500;
/** The contract's bound on a report's `error`, in characters (code points). */
const ERROR_MAX_CHARS = 2000;

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
  command_id: string; issued_at: string; workspace_id: string; reply_to: string | null; dry_run?: boolean;
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

type Report = ShadowEnvelope & Pick<ShadowReport, "shadowed_id" | "kind" | "timed_out" | "result" | "error">;

export class Shadowing {
  private readonly reports = new Set<Promise<void>>();

  constructor(private readonly transport: ShadowTransport) {}

  /**
   * 1. The dry run of `command` (already marked `dry_run: true`, with the client's reply
   *    subject), awaited at most `timeoutMs`;
   * 2. `ownWrite()`, as the bot's write ran before shadow mode: its value is returned, its error
   *    thrown, unchanged;
   * 3. what it gave, `report(value)` (by default the value), or the error's message, published as
   *    memory.shadow in the background (`reportsSent()` waits for it).
   */
  async shadowed<T>(kind: ShadowedKind, command: ShadowEnvelope, ownWrite: () => Promise<T>,
    { report, timeoutMs = SHADOW_TIMEOUT_MS }: ShadowedOptions<T> = {}): Promise<T> {
    if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${timeoutMs}`);
    const timedOut = !(await this.dryRun(kind, command, timeoutMs));
    const reportOf = (given: Pick<Report, "result" | "error">): Report => ({
      command_id: this.transport.newCommandId(),
      issued_at: new Date().toISOString(),
      workspace_id: command.workspace_id,
      reply_to: null,
      shadowed_id: command.command_id,
      kind,
      timed_out: timedOut,
      ...given,
    });

    let value: T;
    try {
      value = await ownWrite();
    } catch (error) {
      this.reportLater(() => reportOf({ result: null, error: errorText(error) }));
      throw error;
    }
    this.reportLater(() => {
      const given: unknown = report === undefined ? value : report(value);
      if (typeof given !== "object" || given === null || Array.isArray(given)) {
        throw new TypeError(`the report of a ${kind} must be an object in its result shape, got ${describe(given)}`);
      }
      return reportOf({ result: given as Record<string, unknown>, error: null });
    });
    return value;
  }

  /** Wait until the reports published so far (and any they lead to) are sent or given up. */
  async reportsSent(): Promise<void> {
    while (this.reports.size > 0) await Promise.allSettled([...this.reports]);
  }

  /** Whether the worker answered the dry run in time (its answer is the worker's to keep). */
  private async dryRun(kind: ShadowedKind, command: ShadowEnvelope, timeoutMs: number): Promise<boolean> {
    try {
      return await this.transport.answeredWithin(kind, command, timeoutMs);
    } catch {
      return false; // the bot goes on, and the report says timed out
    }
  }

  /** Build the report and publish it, never awaited by the bot; a failure (the report() given,
   *  the encoding, the publish) is only logged. */
  private reportLater(build: () => Report): void {
    const sending = (async () => {
      let built: Report | undefined;
      try {
        built = build();
        await this.transport.publish("shadow", built);
      } catch (error) {
        const which = built === undefined ? "" : ` ${built.shadowed_id}`;
        console.warn(`memory worker: the shadow report${which} was not sent: ${errorText(error)}`);
      }
    })();
    this.reports.add(sending);
    void sending.finally(() => this.reports.delete(sending));
  }
}

/** The message of what a write threw, within the contract's bound and without NUL characters. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return Array.from(text.replaceAll("\u0000", "\ufffd")).slice(0, ERROR_MAX_CHARS).join("");
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}
