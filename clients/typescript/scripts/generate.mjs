// Writes src/openapi.ts from ../openapi.json: the routes this client calls and the schemas they
// reach, as TypeScript types. `--check` writes nothing and exits 1 when the committed file differs,
// so a route or schema the client uses that disappears or changes from the document fails the build.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DOCUMENT = fileURLToPath(new URL("../../openapi.json", import.meta.url));
const TARGET = fileURLToPath(new URL("../src/openapi.ts", import.meta.url));
// The operations (operationId) MemoryClient calls; a new method adds its operation here.
export const USED = [
  "search",
  "events_publish",
  "memories_create",
  "memories_get",
  "memories_list",
  "memories_update",
  "memories_delete",
  "memories_clear",
  "memories_batch",
  "health",
];
const REF = "#/components/schemas/";

const pascal = (id) => id.replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
const refName = (ref) => {
  if (!ref.startsWith(REF)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(REF.length);
};

function typeOf(schema, refs) {
  if (schema.$ref) {
    refs.add(refName(schema.$ref));
    return refName(schema.$ref);
  }
  if (schema.anyOf) return [...new Set(schema.anyOf.map((s) => typeOf(s, refs)))].join(" | ");
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.type)) return schema.type.map((t) => typeOf({ ...schema, type: t }, refs)).join(" | ");
  switch (schema.type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return schema.items ? `Array<${typeOf(schema.items, refs)}>` : "unknown[]";
    case "object":
      if (schema.properties) return `{ ${members(schema, refs, "").join(" ")} }`;
      if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
        return `Record<string, ${typeOf(schema.additionalProperties, refs)}>`;
      }
      return "Record<string, unknown>";
    default:
      return "unknown";
  }
}

function doc(schema, indent) {
  const lines = [];
  if (schema.description) lines.push(...schema.description.replaceAll("``", "`").split("\n"));
  if ("default" in schema) lines.push(`@default ${JSON.stringify(schema.default)}`);
  if (lines.length === 0) return [];
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`.trimEnd()), `${indent} */`];
}

function members(schema, refs, indent) {
  const required = new Set(schema.required ?? []);
  const out = [];
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (indent) out.push(...doc(prop, indent));
    out.push(`${indent}${name}${required.has(name) ? "" : "?"}: ${typeOf(prop, refs)};`);
  }
  return out;
}

function iface(name, schema, refs) {
  return [...doc({ description: schema.description }, ""), `export interface ${name} {`, ...members(schema, refs, "  "), "}"];
}

export function generate(openapi) {
  const byId = new Map();
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, op] of Object.entries(methods)) byId.set(op.operationId, { path, method: method.toUpperCase(), op });
  }
  const schemas = openapi.components.schemas;
  const refs = new Set(["Problem"]);
  const routes = [];
  const queries = [];
  const operations = [];
  for (const id of USED) {
    const found = byId.get(id);
    if (!found) throw new Error(`operation ${id} is not in the OpenAPI document`);
    const { path, method, op } = found;
    routes.push(`  ${id}: { method: ${JSON.stringify(method)}, path: ${JSON.stringify(path)} },`);
    const parts = [];
    const params = (op.parameters ?? []).filter((p) => p.in === "path");
    if (params.length) parts.push(`path: { ${params.map((p) => `${p.name}: string;`).join(" ")} };`);
    const query = (op.parameters ?? []).filter((p) => p.in === "query");
    if (query.length) {
      const name = `${pascal(id)}Query`;
      // a parameter is described by `schema`, or by `content` when it is JSON (`?filters=`)
      const props = Object.fromEntries(query.map((p) => [p.name, p.schema ?? p.content?.["application/json"]?.schema ?? {}]));
      const required = query.filter((p) => p.required).map((p) => p.name);
      queries.push("", ...iface(name, { description: `Query parameters of ${method} ${path}.`, properties: props, required }, refs));
      parts.push(`query: ${name};`);
    }
    const body = op.requestBody?.content?.["application/json"]?.schema;
    if (body) parts.push(`body: ${typeOf(body, refs)};`);
    const result = op.responses?.["200"]?.content?.["application/json"]?.schema;
    if (!result) throw new Error(`operation ${id} has no JSON result`);
    parts.push(`result: ${typeOf(result, refs)};`);
    operations.push(`  ${id}: { ${parts.join(" ")} };`);
  }
  const done = new Set();
  const blocks = [];
  while (refs.size > done.size) {
    for (const name of [...refs].sort()) {
      if (done.has(name)) continue;
      done.add(name);
      if (!schemas[name]) throw new Error(`schema ${name} is not in the OpenAPI document`);
      blocks.push({ name, lines: iface(name, schemas[name], refs) });
    }
  }
  blocks.sort((a, b) => a.name.localeCompare(b.name));
  return [
    "// Generated by `npm run generate` (scripts/generate.mjs) from clients/openapi.json: the routes",
    "// this client calls and the schemas they reach. Edit the generator or the gateway, not this file.",
    `// OpenAPI ${openapi.openapi}, ${openapi.info.title} ${openapi.info.version}.`,
    "",
    "export const ROUTES = {",
    ...routes,
    "} as const;",
    "",
    "/** Per operation: its path parameters, query parameters, JSON body and JSON result. */",
    "export interface Operations {",
    ...operations,
    "}",
    ...queries,
    ...blocks.flatMap((b) => ["", ...b.lines]),
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate(JSON.parse(readFileSync(DOCUMENT, "utf8")));
  if (process.argv.includes("--check")) {
    let committed = "";
    try {
      committed = readFileSync(TARGET, "utf8");
    } catch {}
    if (committed !== text) {
      console.error("src/openapi.ts differs from clients/openapi.json: run `npm run generate` and review the change");
      process.exit(1);
    }
  } else {
    writeFileSync(TARGET, text);
  }
}
