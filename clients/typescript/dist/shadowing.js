/** How long a shadowed call waits for the dry run before doing its own write without it. */
export const SHADOW_TIMEOUT_MS = 500;
/** The contract's bound on a report's `error`, in characters (code points). */
const ERROR_MAX_CHARS = 2000;
export class Shadowing {
    transport;
    reports = new Set();
    constructor(transport) {
        this.transport = transport;
    }
    /**
     * 1. The dry run of `command` (already marked `dry_run: true`, with the client's reply
     *    subject), awaited at most `timeoutMs`;
     * 2. `ownWrite()`, as the bot's write ran before shadow mode: its value is returned, its error
     *    thrown, unchanged;
     * 3. what it gave, `report(value)` (by default the value), or the error's message, published as
     *    memory.shadow in the background (`reportsSent()` waits for it).
     */
    async shadowed(kind, command, ownWrite, { report, timeoutMs = SHADOW_TIMEOUT_MS } = {}) {
        if (!(timeoutMs > 0))
            throw new RangeError(`timeoutMs must be positive, got ${timeoutMs}`);
        const timedOut = !(await this.dryRun(kind, command, timeoutMs));
        const reportOf = (given) => ({
            command_id: this.transport.newCommandId(),
            issued_at: new Date().toISOString(),
            workspace_id: command.workspace_id,
            reply_to: null,
            shadowed_id: command.command_id,
            kind,
            timed_out: timedOut,
            ...given,
        });
        let value;
        try {
            value = await ownWrite();
        }
        catch (error) {
            this.reportLater(() => reportOf({ result: null, error: errorText(error) }));
            throw error;
        }
        this.reportLater(() => {
            const given = report === undefined ? value : report(value);
            if (typeof given !== "object" || given === null || Array.isArray(given)) {
                throw new TypeError(`the report of a ${kind} must be an object in its result shape, got ${describe(given)}`);
            }
            return reportOf({ result: given, error: null });
        });
        return value;
    }
    /** Wait until the reports published so far (and any they lead to) are sent or given up. */
    async reportsSent() {
        while (this.reports.size > 0)
            await Promise.allSettled([...this.reports]);
    }
    /** Whether the worker answered the dry run in time (its answer is the worker's to keep). */
    async dryRun(kind, command, timeoutMs) {
        try {
            return await this.transport.answeredWithin(kind, command, timeoutMs);
        }
        catch {
            return false; // the bot goes on, and the report says timed out
        }
    }
    /** Build the report and publish it, never awaited by the bot; a failure (the report() given,
     *  the encoding, the publish) is only logged. */
    reportLater(build) {
        const sending = (async () => {
            let built;
            try {
                built = build();
                await this.transport.publish("shadow", built);
            }
            catch (error) {
                const which = built === undefined ? "" : ` ${built.shadowed_id}`;
                console.warn(`memory worker: the shadow report${which} was not sent: ${errorText(error)}`);
            }
        })();
        this.reports.add(sending);
        void sending.finally(() => this.reports.delete(sending));
    }
}
/** The message of what a write threw, within the contract's bound and without NUL characters. */
function errorText(error) {
    const text = error instanceof Error ? error.message || error.name : String(error);
    return Array.from(text.replaceAll("\u0000", "\ufffd")).slice(0, ERROR_MAX_CHARS).join("");
}
function describe(value) {
    return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}
