// What both memory panels share on the worker: sending a memory.manual command and reading back the
// row the panel shows. The panels keep their routes, modals and lists; only their operations (the
// objects the routes are given as `operations`) write through the worker.
import { CommandDeadLettered, isInvalidCommand } from "@memory-worker/client";
import type { InvalidCommandResult, ManualMemoryInput, ManualResult } from "@memory-worker/client";
import { log } from "@/utils/misc/logger";
import { dropInvalidated, memory, sendTwice } from "./memory.js";

export type ManualData = ManualResult["data"];

type ManualAnswer = ManualResult | InvalidCommandResult;

/** Send one panel command (`add`, `add_batch`, `edit`, `remove`): see sendManual. */
export function runPanelCommand(command: ManualMemoryInput): Promise<ManualData | null> {
  const client = memory();
  return sendManual(command, (sent) => client.manual(sent));
}

/**
 * Send one memory.manual command. The worker's answer, or null when it was not applied (refused
 * unapplied, set aside, or no answer after the second try): the panel then shows its write-failed
 * receipt.
 */
export async function sendManual<C extends { command_id?: string }>(command: C, send: (command: C) => Promise<ManualAnswer>):
  Promise<ManualData | null> {
  let result: ManualAnswer | null;
  try {
    result = await sendTwice(send, command);
  } catch (error) {
    if (!(error instanceof CommandDeadLettered)) throw error;
    log.error(`memory panel command dead-lettered: ${error.outcome.dead_letter?.reason}`, error);
    return null;
  }
  if (result === null) {
    log.warn("memory panel command: the memory service did not answer");
    return null;
  }
  if (isInvalidCommand(result)) {
    // The bot's doing (an entry over the worker's size limit, a lineage not this bot's): nothing changed.
    log.warn(`memory panel command refused unapplied: ${result.data.reason}`);
    return null;
  }
  // Before the route repaints: every cache that holds these memories drops them.
  dropInvalidated(result.invalidated);
  return result.data;
}

/** The worker's refusal when it is one the panel has a receipt for, else write-failed. */
export function panelStatus<S extends string>(data: ManualData | null, known: readonly S[]): { status: S | "write-failed" } {
  return { status: known.find((status) => status === data?.status) ?? "write-failed" };
}

/**
 * The row the panel shows after `added`, `updated` or `unchanged`: the worker answers with ids,
 * and has committed before it answers, so the panel reads the row back as it lists rows. `sent`
 * stands in when someone removed it again in between.
 */
export async function rowById<Row>(rows: Promise<Row[]>, idOf: (row: Row) => number | undefined,
  id: number | undefined, sent: Row): Promise<Row> {
  return (await rows).find((row) => id !== undefined && idOf(row) === id) ?? sent;
}
