// Errors and retries against a scripted HTTP server: problem documents become typed errors,
// 429/503 are retried a bounded number of times after Retry-After, a long Retry-After is not waited.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import {
  ConnectionFailed,
  DependencyDown,
  MemoryClient,
  NotFound,
  RateLimited,
  RemoteError,
  ValidationFailed,
  parseRetryAfter,
  retryDelayS,
} from "../dist/index.js";

const PROBLEM = "application/problem+json";
let server;
let baseUrl;
let script = []; // answers for the next requests, in order: [status, headers, body]
let seen = [];

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const [status, headers, reply] = script.shift() ?? [500, {}, "script exhausted"];
      res.writeHead(status, headers).end(typeof reply === "string" ? reply : JSON.stringify(reply));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${server.address().port}/`;
});

after(() => server.close());

const client = (options = {}) => new MemoryClient({ baseUrl, apiKey: "mk_test_secret", ...options });
const problem = (status, err_code, extra = {}) => [
  status,
  { "content-type": PROBLEM },
  { type: `urn:memoryd:error:${err_code}`, title: "t", status, detail: `${err_code} detail`, err_code, ...extra },
];
const run = (answers) => {
  script = [...answers];
  seen = [];
};

test("Retry-After as seconds or an HTTP date", () => {
  assert.equal(parseRetryAfter("3"), 3);
  assert.equal(parseRetryAfter("0.5"), 0.5);
  assert.equal(parseRetryAfter(null), null);
  assert.equal(parseRetryAfter("soon"), null);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:07 GMT", now), 7);
  const policy = { maxRetries: 2, maxDelayS: 10, baseDelayS: 0.5 };
  assert.deepEqual([0, 1, 2].map((a) => retryDelayS(503, a, null, policy)), [0.5, 1, null]);
  assert.equal(retryDelayS(429, 0, 4, policy), 4);
  assert.equal(retryDelayS(429, 0, 11, policy), null);
  assert.equal(retryDelayS(500, 0, 1, policy), null);
});

test("a 429 is retried after Retry-After, with the same request", async () => {
  run([problem(429, "rate_limited", {}), [200, { "content-type": "application/json" }, { event_id: "e", duplicate: false }]]);
  script[0][1]["retry-after"] = "0";
  const result = await client().add([{ role: "user", content: "hi" }]);
  assert.deepEqual(result, { event_id: "e", duplicate: false });
  assert.equal(seen.length, 2);
  assert.equal(seen[0].body, seen[1].body);
  const sent = JSON.parse(seen[0].body);
  assert.match(sent.event_id, /^[0-9a-f-]{36}$/); // generated once, so the retry is the same event
  assert.equal(seen[0].headers.authorization, "Bearer mk_test_secret");
  assert.equal(seen[0].url, "/v1/events");
});

test("a Retry-After over maxDelayS is not waited: RateLimited carries it", async () => {
  run([[...problem(429, "rate_limited")]]);
  script[0][1] = { "content-type": PROBLEM, "retry-after": "60" };
  const error = await client().search("x").catch((e) => e);
  assert.ok(error instanceof RateLimited, String(error));
  assert.equal(error.retryAfterS, 60);
  assert.equal(error.status, 429);
  assert.equal(seen.length, 1);
});

test("503 is retried maxRetries times, then DependencyDown", async () => {
  run([problem(503, "dependency_down"), problem(503, "dependency_down"), problem(503, "dependency_down")]);
  const error = await client({ retry: { baseDelayS: 0.01 } }).health().catch((e) => e);
  assert.ok(error instanceof DependencyDown, String(error));
  assert.equal(error.errCode, "dependency_down");
  assert.equal(seen.length, 3);
});

test("a create without a key is not repeated after a 503", async () => {
  run([problem(503, "dependency_down"), problem(503, "dependency_down")]);
  const error = await client({ retry: { baseDelayS: 0.01 } }).create("I like tea").catch((e) => e);
  assert.ok(error instanceof DependencyDown);
  assert.equal(seen.length, 1);
});

test("problem documents become typed errors with their fields", async () => {
  run([problem(400, "validation", { field: "$.content" })]);
  const invalid = await client().create(" ").catch((e) => e);
  assert.ok(invalid instanceof ValidationFailed);
  assert.equal(invalid.field, "$.content");
  assert.equal(invalid.message, "validation: validation detail");

  run([problem(404, "not_found")]);
  const missing = await client({ owner: "alice" }).get("a/b").catch((e) => e);
  assert.ok(missing instanceof NotFound);
  assert.equal(seen[0].url, "/v1/memories/a%2Fb");
  assert.equal(seen[0].headers["x-memory-owner"], "alice");

  run([problem(500, "internal", { error_id: "abc123" })]);
  const internal = await client().list({ limit: 5, q: null }).catch((e) => e);
  assert.ok(internal instanceof RemoteError);
  assert.equal(internal.errorId, "abc123");
  assert.equal(seen[0].url, "/v1/memories?limit=5");

  run([[502, { "content-type": "text/html" }, "<html>bad gateway</html>"]]);
  const html = await client().list().catch((e) => e);
  assert.ok(html instanceof RemoteError);
  assert.equal(html.status, 502);
  assert.equal(html.errCode, "http_502");
});

test("an unreachable gateway is ConnectionFailed", async () => {
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const port = closed.address().port;
  closed.close();
  await once(closed, "close");
  const error = await new MemoryClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k" }).health().catch((e) => e);
  assert.ok(error instanceof ConnectionFailed, String(error));
  assert.equal(error.status, 0);
});
