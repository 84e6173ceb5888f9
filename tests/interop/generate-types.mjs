// Writes contracts/types/<name>.d.ts from each contracts/schema/<name>.schema.json, plus an
// index naming every payload type. `--check` writes nothing and exits 1 when a file differs.
import { compile } from 'json-schema-to-typescript';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const contracts = fileURLToPath(new URL('../../contracts/', import.meta.url));
const schemaDir = `${contracts}schema/`;
const typesDir = `${contracts}types/`;
const check = process.argv.includes('--check');
const banner = '/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */';

const expected = new Map();
const index = [banner];
for (const file of readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json')).sort()) {
  const name = file.replace(/\.schema\.json$/, '');
  const schema = JSON.parse(readFileSync(schemaDir + file, 'utf8'));
  // The root type takes the name of the type the file is about (its $ref), or the file's.
  const root = schema.$ref ? schema.$ref.split('/').pop() : toPascal(name);
  const ts = await compile(markAnyJson({ ...schema, title: root }), root, {
    bannerComment: banner,
    additionalProperties: false, // unknown fields are ignored on input, and only ever added on output
    unreachableDefinitions: false,
  });
  expected.set(`${name}.d.ts`, ts);
  index.push(`export type { ${root} } from './${name}';`);
}
expected.set('index.d.ts', index.join('\n') + '\n');

let stale = [];
if (!check) mkdirSync(typesDir, { recursive: true });
for (const [file, text] of expected) {
  const path = typesDir + file;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : null;
  if (current === text) continue;
  stale.push(file);
  if (!check) writeFileSync(path, text);
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
