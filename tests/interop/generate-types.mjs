// Writes contracts/types/index.d.ts, every payload type of contracts/schema/*.schema.json and the command
// kinds of contracts/asyncapi.json (CommandKinds, what a client's send() is typed by). `--check` writes nothing and exits 1 when a file differs.
import { compile } from 'json-schema-to-typescript';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const contracts = fileURLToPath(new URL('../../contracts/', import.meta.url));
const schemaDir = `${contracts}schema/`;
const typesDir = `${contracts}types/`;
const check = process.argv.includes('--check');
const banner = '/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */';

// One file: every schema's definitions merged (the same name is the same msgspec Struct in
// every file, so it must be the same schema), each payload type declared once.
const defs = {};
const roots = [];
for (const file of readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json')).sort()) {
  const name = file.replace(/\.schema\.json$/, '');
  const { $defs = {}, $schema, $id, ...schema } = JSON.parse(readFileSync(schemaDir + file, 'utf8'));
  // The root type takes the name of the type the file is about (its $ref), or the file's.
  const root = schema.$ref ? schema.$ref.split('/').pop() : toPascal(name);
  for (const [def, body] of Object.entries({ ...$defs, ...(schema.$ref ? {} : { [root]: schema }) })) {
    if (def in defs && JSON.stringify(defs[def]) !== JSON.stringify(body)) {
      throw new Error(`${file}: $defs/${def} differs from the same name in another schema`);
    }
    defs[def] = body;
  }
  roots.push(root);
}
const contract = {
  title: 'MemoryWorkerPayloads', type: 'object', additionalProperties: false,
  properties: Object.fromEntries(roots.map((r) => [r, { $ref: `#/$defs/${r}` }])), $defs: defs,
};
const ts = await compile(markAnyJson(contract), 'MemoryWorkerPayloads', {
  bannerComment: banner,
  additionalProperties: false, // unknown fields are ignored on input, and only ever added on output
  unreachableDefinitions: false,
});
const expected = new Map([['index.d.ts', ts + commandKinds(JSON.parse(readFileSync(`${contracts}asyncapi.json`, 'utf8')))]]);

let stale = [];
if (!check) mkdirSync(typesDir, { recursive: true });
for (const [file, text] of expected) {
  const path = typesDir + file;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : null;
  if (current === text) continue;
  stale.push(file);
  if (!check) writeFileSync(path, text);
}
// Declarations no schema makes any more (a removed or renamed payload) are stale too.
for (const file of existsSync(typesDir) ? readdirSync(typesDir) : []) {
  if (file.endsWith('.d.ts') && !expected.has(file)) {
    stale.push(file);
    if (!check) unlinkSync(typesDir + file);
  }
}
if (check && stale.length) {
  console.error(`stale TypeScript declarations (run \`make schemas\` and commit): ${stale.join(', ')}`);
  process.exit(1);
}
console.log(stale.length ? stale.join('\n') : 'types up to date');

// A property with no type at all (tool_args) is any JSON: `unknown`, not an object.
function markAnyJson(node) {
  if (Array.isArray(node)) return node.map(markAnyJson);
  if (node === null || typeof node !== 'object') return node;
  // A $ref with siblings (`type` beside it) would be declared as a type of its own, once per use.
  // A property's description is kept through a one-branch allOf, which declares no new type
  // and becomes the property's JSDoc.
  if (typeof node.$ref === 'string') {
    const ref = { $ref: node.$ref };
    return node.description ? { allOf: [ref], description: node.description } : ref;
  }
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, markAnyJson(v)]));
  for (const [key, prop] of Object.entries(out.properties ?? {})) {
    const typed = ['type', '$ref', 'enum', 'const', 'anyOf', 'oneOf', 'allOf'].some((k) => k in prop);
    if (!typed) out.properties[key] = { ...prop, tsType: 'unknown' };
  }
  return out;
}

function toPascal(name) {
  return name.split(/[._]/).map((p) => p[0].toUpperCase() + p.slice(1)).join('');
}

// Each command channel the worker receives on, with a reply (the registry's kinds, in its order):
// its subject token, the message a bot sends there and the messages its reply may be.
function commandKinds(asyncapi) {
  const messages = (ref) => Object.keys(asyncapi.channels[ref.split('/').pop()].messages);
  const address = (op) => asyncapi.channels[op.channel.$ref.split('/').pop()].address ?? '';
  const command = /^memory\.(\w+)\.\{workspace_id\}$/;
  const ops = Object.values(asyncapi.operations).filter((op) => op.action === 'receive' && op.reply);
  const rows = ops.filter((op) => command.test(address(op))).map((op) => {
    const kind = address(op).match(command)[1];
    return `  ${kind}: { command: ${messages(op.channel.$ref).join(' | ')}; reply: ${messages(op.reply.channel.$ref).join(' | ')} };\n`;
  });
  return '/**\n * Every command kind (contracts/registry.py), by its subject token memory.<kind>.<workspace>: the\n'
    + ' * command a bot sends and the reply it gets (contracts/asyncapi.json).\n */\n'
    + `export interface CommandKinds {\n${rows.join('')}}\n`;
}
