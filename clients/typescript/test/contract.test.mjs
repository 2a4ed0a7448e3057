// The generated types follow clients/openapi.json: the committed src/openapi.ts is what the
// generator makes of it, and a route or schema the client uses that disappears or changes
// from the document changes (or stops) the generation.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { USED, generate } from "../scripts/generate.mjs";

const document = () => JSON.parse(readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"));
const committed = readFileSync(new URL("../src/openapi.ts", import.meta.url), "utf8");

test("src/openapi.ts is what the generator makes of clients/openapi.json", () => {
  assert.equal(generate(document()), committed);
});

test("every route the client calls is in the document with its method", () => {
  const doc = document();
  for (const id of USED) {
    const found = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op.operationId === id)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    assert.equal(found.length, 1, `${id}: ${found}`);
    assert.match(committed, new RegExp(`${id}: \\{ method: "${found[0].split(" ")[0]}", path: "${found[0].split(" ")[1].replace(/[{}]/g, "\\$&")}" \\}`));
  }
});

test("a route the client uses that disappears stops the generation", () => {
  const doc = document();
  delete doc.paths["/v1/search"];
  assert.throws(() => generate(doc), /operation search is not in the OpenAPI document/);
});

test("a schema the client uses that changes changes the generated types", () => {
  const doc = document();
  doc.components.schemas.RetrievedMemory.properties.score = { type: "string" };
  const changed = generate(doc);
  assert.notEqual(changed, committed);
  assert.match(changed, /export interface RetrievedMemory \{[^}]*\n {2}score: string;/);
  delete doc.components.schemas.MemoryRecord;
  assert.throws(() => generate(doc), /schema MemoryRecord is not in the OpenAPI document/);
});
