// The docs' example: remember a preference from chat traffic, then find it.
// MEMORYD_URL=http://127.0.0.1:8420 MEMORYD_API_KEY=mk_... node examples/quickstart.mjs
import { MemoryClient, NotFound } from "@memoryd/client";

const apiKey = process.env.MEMORYD_API_KEY; // memoryd keys create --owner my-app
if (!apiKey) throw new Error("set MEMORYD_API_KEY");
const memory = new MemoryClient({ baseUrl: process.env.MEMORYD_URL ?? "http://127.0.0.1:8420", apiKey });

await memory.add([{ role: "user", content: "I prefer window seats on long flights." }]);
const { memory: note } = await memory.create("The user is vegetarian.", { key: "diet" });

const query = "seat preference for flights";
let found = await memory.search(query);
for (let i = 0; i < 50 && !found.memories.some((m) => m.content.includes("window")); i++) {
  await new Promise((resolve) => setTimeout(resolve, 200)); // chat traffic is stored in the background
  found = await memory.search(query);
}
for (const m of found.memories) console.log(`${m.score.toFixed(3)} ${m.tier} ${m.content}`);

await memory.delete(note.id);
try {
  await memory.get(note.id);
} catch (error) {
  if (error instanceof NotFound) console.log(`deleted ${note.id}`);
}
