// A JavaScript bot written from contracts/ alone (asyncapi.json and schema/), run against the
// real worker by tests/e2e/test_e2e_interop.py. It checks the document with @asyncapi/parser,
// reads subjects, reply channels and schemas out of it, sends panel commands and a create,
// retries the create safely, asks the result lookup, reads events through its own consumer,
// and validates every payload and header it sees with Ajv. It prints one JSON summary line;
// the exit code is 0 only when every check held.
//
// Environment: NATS_URL, WORKSPACE_ID (a server row with decay on, self teaching on), LINEAGE
// (4 dormant memories there, one below the worker's cap of 5).
import { Parser, fromFile } from '@asyncapi/parser';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { jetstream, DeliverPolicy } from '@nats-io/jetstream';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';

const CONTRACTS = fileURLToPath(new URL('../../contracts/', import.meta.url));
const WORKSPACE = process.env.WORKSPACE_ID;
const LINEAGE = Number(process.env.LINEAGE);
const summary = { diagnostics: [], validated: {}, checks: [], failures: [] };

function check(ok, what, detail) {
  (ok ? summary.checks : summary.failures).push(ok ? what : `${what}: ${JSON.stringify(detail)}`);
  return ok;
}

// --- The document -------------------------------------------------------------------------
const parsed = await fromFile(new Parser(), `${CONTRACTS}asyncapi.json`).parse();
summary.diagnostics = parsed.diagnostics.map((d) => ({ severity: d.severity, code: d.code, message: d.message }));
check(parsed.document !== undefined, 'the parser accepts asyncapi.json', summary.diagnostics);
const doc = JSON.parse(readFileSync(`${CONTRACTS}asyncapi.json`, 'utf8'));
check(parsed.document?.messages().get('CreateMemory')?.payload()?.properties()?.command_id !== undefined,
  'the parser resolves payloads into the schema files', 'CreateMemory has no command_id');

// --- Schemas ------------------------------------------------------------------------------
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
for (const file of readdirSync(`${CONTRACTS}schema`)) ajv.addSchema(JSON.parse(readFileSync(`${CONTRACTS}schema/${file}`)));
const bySchemaFile = (ref) => ajv.getSchema(JSON.parse(readFileSync(`${CONTRACTS}${ref}`)).$id);
const message = (name) => doc.components.messages[name];

function validate(name, value) {
  const msg = message(name);
  const v = bySchemaFile(msg.payload.$ref);
  summary.validated[name] = (summary.validated[name] ?? 0) + 1;
  return check(v(value), `${name} payload valid`, { value, errors: v.errors });
}

function validateHeaders(name, hdrs) {
  const schema = message(name).headers;
  if (!schema) return true;
  const plain = Object.fromEntries([...(hdrs?.keys() ?? [])].map((k) => [k, hdrs.get(k)]));
  const v = ajv.compile(schema);
  return check(v(plain), `${name} headers valid`, { plain, errors: v.errors });
}

// A reply may be any message of the reply channel: exactly one must fit.
function validateOneOf(channelId, value) {
  const names = Object.keys(doc.channels[channelId].messages);
  const fits = names.filter((n) => bySchemaFile(message(n).payload.$ref)(value));
  check(fits.length === 1, `${channelId}: exactly one message fits`, { value, fits });
  if (fits.length === 1) validate(fits[0], value);
  return fits[0];
}

// --- Subjects, from the channel addresses and x-nats.tokenEncoding --------------------------
const encodeToken = (id) => /^[A-Za-z0-9_:-]+$/.test(id) ? id
  : [...Buffer.from(id, 'utf8')].map((b) => /[A-Za-z0-9_:-]/.test(String.fromCharCode(b))
    ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
const address = (channelId, params) => doc.channels[channelId].address
  .replace(/\{(\w+)\}/g, (_, p) => encodeToken(params[p]));
const replyChannel = (opId) => doc.operations[opId].reply.channel.$ref.split('/').pop();
const channelOf = (subject) => Object.entries(doc.channels).find(([, c]) => c.address
  && new RegExp(`^${c.address.replace(/\./g, '\\.').replace(/\{\w+\}/g, '[^.]+')}$`).test(subject))?.[0];

const nc = await connect({ servers: process.env.NATS_URL, name: 'interop-bot' });
const js = jetstream(nc);
const enc = (v) => new TextEncoder().encode(JSON.stringify(v));
const dec = (data) => JSON.parse(new TextDecoder().decode(data));

try {
  // Our own consumer on the events of this workspace, from now on (MEMORY_EVENTS keeps them for every reader).
  const streamOf = doc['x-nats'].streams;
  const events = Object.keys(streamOf).find((s) => streamOf[s].subjects.includes('memory.saved.>'));
  const ws = encodeToken(WORKSPACE);
  const consumer = await js.consumers.get(events, {
    filter_subjects: [`memory.saved.server.${ws}`, `memory.evicted.server.${ws}`, `memory.removed.server.${ws}`,
      `cache.invalidate.tomori_state.${ws}`, 'metrics.memory_eviction'],
    deliver_policy: DeliverPolicy.New,
  });
  // What these commands publish: add, create (with an eviction), edit, remove.
  const want = { memorySaved: 3, memoryEvicted: 1, memoryRemoved: 1, cacheInvalidate: 4, memoryEvictionMetric: 1 };
  const seen = Object.fromEntries(Object.keys(want).map((k) => [k, 0]));
  const complete = () => Object.entries(want).every(([k, n]) => seen[k] >= n);
  let allArrived;
  const arrived = new Promise((resolve) => { allArrived = resolve; });
  const messages = await consumer.consume();
  const reading = (async () => {
    for await (const m of messages) {
      const channelId = channelOf(m.subject);
      const name = Object.keys(doc.channels[channelId].messages)[0];
      const body = m.json();
      validate(name, body);
      validateHeaders(name, m.headers);
      if ('event_id' in body) check(m.headers.get('Nats-Msg-Id') === body.event_id, 'Nats-Msg-Id is the event id', body);
      seen[channelId] += 1;
      if (complete()) allArrived();
    }
  })();

  async function command(opId, fields, { msgId, replyTo, listen = true } = {}) {
    const body = { command_id: fields.command_id ?? randomUUID(), issued_at: new Date().toISOString(),
      reply_to: replyTo === undefined ? `_INBOX.${randomUUID().replaceAll('-', '')}` : replyTo,
      workspace_id: WORKSPACE, ...fields };
    validate(Object.keys(doc.channels[doc.operations[opId].channel.$ref.split('/').pop()].messages)[0], body);
    const sub = listen ? nc.subscribe(body.reply_to, { max: 1, timeout: 20000 }) : null;
    const subject = address(doc.operations[opId].channel.$ref.split('/').pop(), { workspace_id: WORKSPACE });
    const ack = await js.publish(subject, enc(body), { msgID: msgId ?? body.command_id });
    return { body, ack, reply: sub ? (async () => { for await (const m of sub) return dec(m.data); })() : null };
  }

  async function lookup(commandId, outcome = true) {
    const subject = address('resultLookup', { workspace_id: WORKSPACE, command_id: commandId });
    const answer = dec((await nc.request(subject, outcome ? enc({ answer: 'outcome' }) : new Uint8Array(), { timeout: 5000 })).data);
    validateOneOf('resultLookupReply', answer);
    return answer;
  }

  // Panels: add, then (after the create) edit and remove.
  const manual = (action, extra) => command('receiveManual', {
    actor: { id: '130000000000000001', is_manager: true }, scope: 'server', action, lineage_id: LINEAGE,
    persona_id: 1, ...extra });
  const added = await (await manual('add', { content: '{user} likes the sea', tags: 'sea, #general' })).reply;
  validateOneOf(replyChannel('receiveManual'), added);
  check(added.data.status === 'added', 'panel add', added);

  // The create, at the cap: it forgets a dormant memory to make room.
  const commandId = `bot-7.turn 1/tool-call:${randomUUID()}`; // odd characters: encoded in the lookup subject
  const create = { command_id: commandId, tool_args: { memory_content: '{user} likes green tea', memory_scope: 'server_wide' },
    persona: { id: 1, lineage_id: LINEAGE, name: 'Tomori' }, bot_user_id: '990000000000000001',
    triggerer: { id: '110000000000000001', name: 'someone' }, channel: { id: '120000000000000001', url: null },
    retrieval: { rag_available: true, embedding_model: 'm', embedding_credentials: true } };
  const first = await command('receiveCreate', create);
  const result = await first.reply;
  validateOneOf(replyChannel('receiveCreate'), result);
  check(result.data.status === 'memory_saved_with_eviction', 'the create evicted', result);

  // Retry 1, exactly as sent: JetStream drops it (duplicate), so no reply comes; the lookup has it.
  const again = await command('receiveCreate', create, { replyTo: first.body.reply_to, listen: false });
  check(again.ack.duplicate === true, 'an identical re-send is a duplicate', again.ack);
  const outcome = await lookup(commandId);
  check(outcome.outcome === 'processed' && outcome.kind === 'create' && isDeepStrictEqual(outcome.result, result),
    'the lookup answers the stored result', outcome);
  check(isDeepStrictEqual(await lookup(commandId, false), result), 'the original lookup answer is the bare result', {});
  // Retry 2, past the duplicate window: same command id, a new message id; the inbox answers.
  const resent = await command('receiveCreate', create, { msgId: `${commandId}:resend:${randomUUID()}` });
  check(resent.ack.duplicate === false, 'a new message id is stored', resent.ack);
  const second = await resent.reply;
  validateOneOf(replyChannel('receiveCreate'), second);
  check(isDeepStrictEqual(second, result), 'a re-sent command gets the stored result', second);

  const edited = await (await manual('edit', { memory_id: added.data.memory_id, content: '{user} loves the sea' })).reply;
  validateOneOf(replyChannel('receiveManual'), edited);
  check(edited.data.status === 'updated', 'panel edit', edited);
  const removed = await (await manual('remove', { memory_id: added.data.memory_id })).reply;
  validateOneOf(replyChannel('receiveManual'), removed);
  check(removed.data.status === 'removed', 'panel remove', removed);

  // A reply_to the worker may not publish to: no reply; the lookup says why.
  const refused = await command('receiveManual', {
    actor: { id: '130000000000000001', is_manager: true }, scope: 'server', action: 'add', lineage_id: LINEAGE,
    content: 'never saved' }, { replyTo: 'bot.private.replies', listen: false });
  let letter = null;
  for (let i = 0; i < 100 && !letter; i++) {
    const o = await lookup(refused.body.command_id);
    if (o.outcome === 'dead_lettered') letter = o.dead_letter;
    else await new Promise((r) => setTimeout(r, 100));
  }
  check(letter?.reason === 'invalid_command' && letter.reply_to_allowed === false
    && isDeepStrictEqual(letter.allowed_reply_prefixes, doc['x-nats'].replySubjectPrefixes.default),
  'a refused reply_to is reported by the lookup', letter);
  check((await lookup(`never-sent-${randomUUID()}`)).outcome === 'unknown', 'an unknown command is unknown', {});

  // Every event of these commands, through our consumer.
  await Promise.race([arrived, new Promise((r) => setTimeout(r, 15000))]);
  check(complete(), 'every event arrived', seen);
  summary.events = seen;
  summary.created_memory_id = result.data.memory_id;
  summary.command_id = commandId;
  await messages.close();
  await reading;
} catch (err) {
  summary.failures.push(`bot crashed: ${err?.stack ?? err}`);
} finally {
  await nc.close();
}
console.log(JSON.stringify(summary));
process.exit(summary.failures.length ? 1 : 0);
