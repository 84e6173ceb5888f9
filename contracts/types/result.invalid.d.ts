/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * The answer to a command of any kind that could not be decoded or whose envelope is
 * invalid (DESIGN.md 3.2); it is dead-lettered with reason invalid_command, never applied.
 * A create's reply of this kind also fits the create result.
 */
export interface InvalidCommandResult {
  command_id: string;
  data: InvalidData;
  error: string;
  success: false;
}
export interface InvalidData {
  reason: string;
  status: "memory_command_invalid";
}
