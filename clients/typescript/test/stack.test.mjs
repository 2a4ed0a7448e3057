// The client against a running memoryd gateway: MEMORYD_URL and MEMORYD_API_KEY (an owner key)
// name it; tests/e2e/test_typescript_client.py starts `memoryd up` and sets them.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { Forbidden, MemoryClient, NotFound, Unauthorized, ValidationFailed } from "../dist/index.js";

const baseUrl = process.env.MEMORYD_URL;
const apiKey = process.env.MEMORYD_API_KEY;
if (!baseUrl || !apiKey) throw new Error("set MEMORYD_URL and MEMORYD_API_KEY to a running gateway and an owner key");
const memory = new MemoryClient({ baseUrl, apiKey });

async function eventually(probe, what, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

test("health: every service answers an operator; an owner key is refused", async () => {
  await assert.rejects(memory.health(), Forbidden);
  const operatorKey = process.env.MEMORYD_OPERATOR_KEY;
  assert.ok(operatorKey, "set MEMORYD_OPERATOR_KEY to an operator key");
  const health = await new MemoryClient({ baseUrl, apiKey: operatorKey }).health();
  assert.equal(health.status, "ok", JSON.stringify(health.errors));
  for (const name of ["ingest", "extract", "embed", "retrieve", "sleep"]) {
    assert.equal(health.services?.[name]?.status, "ok", name);
  }
});

test("create, get, list, update, search, delete", async () => {
  const session = `ts-${randomUUID()}`;
  const created = await memory.create("The user keeps bonsai trees on the balcony.", {
    key: `bonsai:${session}`,
    session_id: session,
    metadata: { from: "typescript" },
  });
  assert.equal(created.created, true);
  const { id } = created.memory;
  assert.equal(created.memory.memory_type, "factual");
  assert.equal(created.memory.source, "api");

  const again = await memory.create("The user keeps bonsai trees on the balcony.", { key: `bonsai:${session}` });
  assert.equal(again.created, false);
  assert.equal(again.memory.id, id);

  const fetched = await memory.get(id);
  assert.equal(fetched.content, "The user keeps bonsai trees on the balcony.");
  assert.deepEqual(fetched.metadata, { from: "typescript" });
  assert.equal(fetched.session_id, session);

  const listed = await memory.list({ session_id: session, limit: 10 });
  assert.equal(listed.total, 1);
  assert.deepEqual(listed.memories.map((m) => m.id), [id]);

  const updated = await memory.update(id, { content: "The user keeps bonsai trees and ferns on the balcony." });
  assert.equal(updated.memory.content, "The user keeps bonsai trees and ferns on the balcony.");
  assert.equal((await memory.get(id)).content, updated.memory.content);

  const found = await eventually(async () => {
    const result = await memory.search("bonsai ferns balcony", { strategy: "hybrid", session_id: session });
    return result.memories.some((m) => m.id === id) && result;
  }, "the memory to be searchable");
  const hit = found.memories.find((m) => m.id === id);
  assert.ok(hit.score > 0 && hit.tokens > 0);
  assert.equal(found.strategy, "hybrid");
  assert.ok(found.tokens_used >= hit.tokens);

  const deleted = await memory.delete(id);
  assert.equal(deleted.id, id);
  assert.equal(deleted.removed.rows, 1);
  const gone = await memory.get(id).catch((e) => e);
  assert.ok(gone instanceof NotFound, String(gone));
  assert.equal(gone.status, 404);
});

test("add: chat turns are stored and extracted", async () => {
  const session = `ts-${randomUUID()}`;
  const messages = [
    { role: "user", content: "I prefer TypeScript for frontend work." },
    { role: "assistant", content: "Noted: TypeScript for the frontend." },
  ];
  const sent = await memory.add(messages, { session_id: session });
  assert.equal(sent.duplicate ?? false, false);
  assert.match(sent.event_id, /^[0-9a-f-]{36}$/);
  const repeated = await memory.add(messages, { session_id: session, event_id: sent.event_id });
  assert.deepEqual(repeated, { event_id: sent.event_id, duplicate: true }); // a retried publish is stored once

  const listed = await eventually(async () => {
    const result = await memory.list({ session_id: session, limit: 50 });
    const sources = new Set(result.memories.map((m) => m.source));
    return sources.has("chat_turn") && sources.has("rule") && result;
  }, "the chat turn and its extracted fact");
  const turns = listed.memories.filter((m) => m.source === "chat_turn").map((m) => m.content).sort();
  assert.deepEqual(turns, ["I prefer TypeScript for frontend work.", "Noted: TypeScript for the frontend."]);
  const facts = listed.memories.filter((m) => m.source === "rule");
  assert.ok(facts.some((m) => /typescript/i.test(m.content)), JSON.stringify(facts));
});

test("bad input is a typed error naming the field", async () => {
  const blank = await memory.create("   ").catch((e) => e);
  assert.ok(blank instanceof ValidationFailed, String(blank));
  assert.equal(blank.status, 400);
  assert.equal(blank.field, "$.content");

  const badLimit = await memory.list({ limit: 0 }).catch((e) => e);
  assert.ok(badLimit instanceof ValidationFailed, String(badLimit));
  assert.equal(badLimit.field, "$.limit");

  const noMessages = await memory.add([]).catch((e) => e);
  assert.ok(noMessages instanceof ValidationFailed, String(noMessages));
  assert.equal(noMessages.field, "$.messages");

  const wrongKey = await new MemoryClient({ baseUrl, apiKey: `${apiKey.slice(0, -4)}xxxx` }).list().catch((e) => e);
  assert.ok(wrongKey instanceof Unauthorized, String(wrongKey));
  assert.equal(wrongKey.errCode, "unauthorized");
});

test("clear removes the owner's memories", async () => {
  await memory.create("The user drinks green tea in the morning.", { memory_type: "procedural" });
  const cleared = await memory.clear({ memory_type: "procedural" });
  assert.ok(cleared.count >= 1, JSON.stringify(cleared));
  assert.equal(cleared.removed.rows, cleared.count);
  const left = await memory.list({ memory_type: "procedural" });
  assert.equal(left.total, 0);
});

test("addBatch: texts stored, messages published, each item on its own; agent_id narrows", async () => {
  const tag = randomUUID().slice(0, 8);
  const [agent, travel, session] = [`coder-${tag}`, `travel-${tag}`, `ts-${tag}`];
  const done = await memory.addBatch(
    [
      "The user collects vinyl records.",
      { content: "   " },
      { content: "Visited Kyoto in April.", memory_type: "episodic", agent_id: travel },
      { messages: "I always cycle to work." },
    ],
    { session_id: session, agent_id: agent, metadata: { via: "batch" } },
  );
  assert.deepEqual([done.stored, done.published, done.failed], [2, 1, 1]);
  const [vinyl, blank, kyoto, chat] = done.results;
  assert.deepEqual([vinyl.memory.agent_id, vinyl.memory.session_id, vinyl.memory.metadata], [agent, session, { via: "batch" }]);
  assert.deepEqual([kyoto.memory.agent_id, kyoto.memory.memory_type], [travel, "episodic"]); // an item's own agent wins
  assert.deepEqual([blank.error.code, blank.error.field], [400, "$.items[1].content"]);
  assert.match(chat.event_id, /^[0-9a-f-]{36}$/);

  const mine = await eventually(async () => {
    const result = await memory.list({ agent_id: agent, limit: 50 });
    const sources = new Set(result.memories.map((m) => m.source));
    return sources.has("chat_turn") && sources.has("rule") && result;
  }, "the batch's chat turn and its extracted fact");
  assert.ok(mine.memories.every((m) => m.agent_id === agent), JSON.stringify(mine.memories));
  assert.deepEqual((await memory.list({ agent_id: travel })).memories.map((m) => m.id), [kyoto.memory.id]);

  const found = await eventually(async () => {
    const result = await memory.search("vinyl records and Kyoto", { agent_id: agent, limit: 50 });
    return result.memories.some((m) => m.id === vinyl.memory.id) && result;
  }, "the agent's memory to be searchable");
  assert.ok(found.memories.every((m) => m.scope === "global" || m.agent_id === agent), JSON.stringify(found.memories));
  assert.ok(!found.memories.some((m) => m.id === kyoto.memory.id)); // another agent's memory

  const cleared = await memory.clear({ agent_id: agent });
  assert.equal(cleared.count, mine.memories.length);
  assert.equal((await memory.list({ agent_id: agent })).total, 0);
  assert.equal((await memory.list({ agent_id: travel })).total, 1);
  await memory.clear({ agent_id: travel });

  const empty = await memory.addBatch([]).catch((e) => e);
  assert.ok(empty instanceof ValidationFailed, String(empty));
  assert.equal(empty.field, "$.items");
});
