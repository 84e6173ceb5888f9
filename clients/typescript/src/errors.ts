import type { CommandOutcome } from "@memory-worker/contracts";

/** No result arrived in time. The command may still be applied: retry with the same command_id. */
export class ResultTimeout extends Error {
  override readonly name = "ResultTimeout";
  readonly commandId: string;

  constructor(commandId: string, message: string) {
    super(message);
    this.commandId = commandId;
  }
}

/** The worker set the command aside without applying it (it is in MEMORY_DLQ); `outcome` says why. */
export class CommandDeadLettered extends Error {
  override readonly name = "CommandDeadLettered";
  readonly outcome: CommandOutcome;

  constructor(outcome: CommandOutcome) {
    const letter = outcome.dead_letter;
    const hint = letter && !letter.reply_to_allowed
      ? `; its reply_to is not allowed: it must start with one of ${letter.allowed_reply_prefixes.join(", ")}`
      : "";
    super(`command ${outcome.command_id} was dead-lettered (${letter?.reason}: ${letter?.error})${hint}`);
    this.outcome = outcome;
  }
}
