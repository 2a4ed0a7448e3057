// The official OpenAI SDK through memoryd's proxy: the gateway retrieves what it knows for the last
// user turn, injects it, forwards the call to the key's upstream, and remembers the exchange.
// MEMORYD_URL=http://127.0.0.1:8420 MEMORYD_API_KEY=mk_... MODEL=gpt-4o-mini node examples/proxy.mjs
import OpenAI from "openai";

import { MemoryClient } from "@memoryd/client";

const gateway = process.env.MEMORYD_URL ?? "http://127.0.0.1:8420";
const apiKey = process.env.MEMORYD_API_KEY; // memoryd keys create --owner my-app [--upstream URL]
if (!apiKey) throw new Error("set MEMORYD_API_KEY");
const memory = new MemoryClient({ baseUrl: gateway, apiKey });
const openai = new OpenAI({ baseURL: `${gateway}/v1`, apiKey });

const question = "Which language should I use for my web project?";
await memory.create("The user prefers TypeScript for web projects.", { key: "web-language" });
for (let i = 0; i < 100; i++) {
  const { memories } = await memory.search(question); // searchable by meaning once embedded
  if (memories.some((m) => m.content.includes("TypeScript"))) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}

const { data: completion, response } = await openai.chat.completions
  .create({ model: process.env.MODEL ?? "gpt-4o-mini", messages: [{ role: "user", content: question }] })
  .withResponse();
console.log(`memory: ${response.headers.get("x-memory-status")}, ${response.headers.get("x-memory-injected")} injected`);
console.log(`answer: ${completion.choices[0]?.message.content}`);
