import { errors, RequestError } from "@nats-io/nats-core";
import { resultSubject } from "./subjects.js";
const OUTCOME_REQUEST = new TextEncoder().encode(JSON.stringify({ answer: "outcome" }));
const decoder = new TextDecoder();
/** Silence, as opposed to a broken connection: nobody answered, or not in time. */
export function isNoAnswer(err) {
    return err instanceof errors.TimeoutError || err instanceof errors.NoRespondersError
        || (err instanceof RequestError && err.isNoResponders());
}
/**
 * What became of a command of this workspace, or null when no worker answered. A worker that
 * predates the outcome answers the bare result or null: read as processed or unknown.
 */
export async function lookupOutcome(nc, workspaceId, commandId, { timeoutMs = 2000 } = {}) {
    let data;
    try {
        data = (await nc.request(resultSubject(workspaceId, commandId), OUTCOME_REQUEST, { timeout: timeoutMs })).data;
    }
    catch (err) {
        if (isNoAnswer(err))
            return null;
        throw err;
    }
    const answer = JSON.parse(decoder.decode(data));
    if (isOutcome(answer))
        return answer;
    if (answer === null)
        return { command_id: commandId, workspace_id: workspaceId, outcome: "unknown" };
    return { command_id: commandId, workspace_id: workspaceId, outcome: "processed",
        result: answer };
}
function isOutcome(value) {
    return typeof value === "object" && value !== null && typeof value.outcome === "string"
        && typeof value.command_id === "string";
}
