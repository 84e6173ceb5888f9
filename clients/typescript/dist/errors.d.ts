import type { CommandOutcome } from "@memory-worker/contracts";
/** No result arrived in time. The command may still be applied: retry with the same command_id. */
export declare class ResultTimeout extends Error {
    readonly name = "ResultTimeout";
    readonly commandId: string;
    constructor(commandId: string, message: string);
}
/** The worker set the command aside without applying it (it is in MEMORY_DLQ); `outcome` says why. */
export declare class CommandDeadLettered extends Error {
    readonly name = "CommandDeadLettered";
    readonly outcome: CommandOutcome;
    constructor(outcome: CommandOutcome);
}
