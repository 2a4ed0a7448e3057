"""``memoryd.Memory`` and ``memoryd.AsyncMemory`` against a real stack, written as an application
would: add with metadata (read-your-writes), search with a threshold, history after an update,
delete; the gateway's errors arrive as the typed errors, and a 429 is retried after Retry-After.

The blocking client runs in a thread, as in a script: the stack shares this test's event loop."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from memoryd import AsyncMemory, Memory
from memoryd.errors import Forbidden, NotFound, RateLimited, Unauthorized, ValidationFailed

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]

SAID = "I prefer TypeScript for frontend work."
CHANGED = "I prefer Rust for frontend work."
RELATED = "Which programming language do I like for web frontends?"
UNRELATED = "gluon plasma in quantum chromodynamics"
THRESHOLD = 0.3


def sync_script(url: str, key: str, owner: str) -> None:
    with Memory(url, api_key=key) as memory:
        added = memory.add(SAID, user_id=owner, run_id="s1", metadata={"project": "web"})
        by_source = {m.source: m for m in added.memories}
        turn = by_source["chat_turn"]
        assert turn.content == SAID and turn.session_id == "s1"
        assert turn.metadata["project"] == "web" and turn.metadata["event_id"] == added.event_id
        assert "typescript" in by_source["rule"].content.lower()  # the extracted preference came with it

        hits = memory.search(RELATED, user_id=owner, threshold=THRESHOLD)
        assert turn.id in [h.id for h in hits]
        assert all(h.fts_rank is not None or (h.vec_score or 0) >= THRESHOLD for h in hits)
        assert memory.search(UNRELATED, user_id=owner, limit=5)  # something always ranks ...
        assert memory.search(UNRELATED, user_id=owner, threshold=THRESHOLD) == []  # ... nothing relevant

        other = memory.add("I always deploy on Fridays.", user_id=owner, metadata={"project": "ops"})
        deploy_turn = next(m for m in other.memories if m.source == "chat_turn")
        web = memory.search("frontend work and deploys", user_id=owner, filters={"project": "web"})
        assert [h.id for h in web] == [turn.id]  # the facts carry no project; the ops turn is another
        either = memory.search("frontend work and deploys", user_id=owner, filters={"project": {"in": ["web", "ops"]}})
        assert {h.id for h in either} == {turn.id, deploy_turn.id}
        listed = memory.get_all(user_id=owner, filters={"OR": [{"project": "ops"}, {"role": "nobody"}]})
        assert [m.id for m in listed] == [deploy_turn.id]
        with pytest.raises(ValidationFailed) as bad:
            memory.get_all(user_id=owner, filters={"project": {"gt": 1}})
        assert bad.value.field == "$.filters.project"
        assert [memory.delete(m.id).id for m in other.memories] == [m.id for m in other.memories]

        assert turn.id in [m.id for m in memory.get_all(user_id=owner)]
        updated = memory.update(turn.id, CHANGED, user_id=owner)
        assert updated.memory.content == CHANGED and memory.get(turn.id).content == CHANGED
        (entry,) = memory.history(turn.id, user_id=owner)
        assert (entry.old_content, entry.new_content, entry.reason) == (SAID, CHANGED, "api_update")

        assert memory.delete(turn.id, user_id=owner).removed.rows == 1
        with pytest.raises(NotFound):
            memory.get(turn.id)
        with pytest.raises(NotFound):
            memory.history(turn.id)
        assert memory.delete_all(user_id=owner).count == len(added.memories) - 1
        assert memory.get_all(user_id=owner) == []


async def async_script(url: str, key: str, owner: str) -> None:
    async with AsyncMemory(url, api_key=key) as memory:
        added = await memory.add(
            [{"role": "user", "content": SAID}, {"role": "assistant", "content": "Noted."}],
            user_id=owner,
            metadata={"project": "web"},
        )
        turns = [m for m in added.memories if m.source == "chat_turn"]
        assert [t.content for t in turns] == [SAID, "Noted."]
        assert all(t.metadata["project"] == "web" for t in turns)

        hits = await memory.search(RELATED, user_id=owner, threshold=THRESHOLD)
        assert turns[0].id in [h.id for h in hits]
        assert await memory.search(UNRELATED, user_id=owner, threshold=THRESHOLD) == []

        await memory.update(turns[0].id, CHANGED)
        (entry,) = await memory.history(turns[0].id)
        assert (entry.old_content, entry.new_content) == (SAID, CHANGED)
        await memory.delete(turns[0].id)
        with pytest.raises(NotFound):
            await memory.get(turns[0].id)
        assert (await memory.delete_all()).count == len(added.memories) - 1
        assert await memory.get_all() == []


async def test_sync_client_script(stack: Stack) -> None:
    await asyncio.to_thread(sync_script, stack.url, stack.alice_key, stack.alice)


async def test_async_client_script(stack: Stack) -> None:
    await async_script(stack.url, stack.bob_key, stack.bob)


async def test_the_gateway_errors_are_the_typed_errors(stack: Stack) -> None:
    async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:
        with pytest.raises(NotFound):
            await memory.get(str(uuid.uuid4()))
        with pytest.raises(ValidationFailed) as bad:
            await memory.get("not-a-memory-id")
        assert bad.value.field == "$.id"
        with pytest.raises(ValidationFailed) as bad:
            await memory.search("tea", threshold=2.0)
        assert bad.value.field == "$.threshold"
        with pytest.raises(Forbidden):
            await memory.get_all(user_id=stack.bob)
    async with AsyncMemory(stack.url, api_key="mk_not_a_key") as stranger:
        with pytest.raises(Unauthorized):
            await stranger.get_all()


async def test_429_is_retried_after_retry_after(stack: Stack) -> None:
    owner = f"limited-{uuid.uuid4().hex[:6]}"
    async with stack.client(stack.operator_key) as http:
        put = await http.put("/v1/settings", json={"owner": owner, "values": {"searchesPerSecond": 0.5}})
        assert put.status_code == 200, put.text
    await asyncio.sleep(1.5)  # every replica applies a setting within a second
    statuses: list[int] = []

    async def seen(response: httpx.Response) -> None:
        statuses.append(response.status_code)

    hooks = {"response": [seen]}
    async with AsyncMemory(stack.url, api_key=stack.operator_key, event_hooks=hooks) as memory:
        await memory.search("tea", user_id=owner)
        started = time.monotonic()
        await memory.search("tea", user_id=owner)  # over 0.5/s: 429 with Retry-After: 2, then answered
        waited = time.monotonic() - started
    assert statuses == [200, 429, 200]
    assert waited >= 1.5
    async with AsyncMemory(stack.url, api_key=stack.operator_key, max_retries=0) as impatient:
        with pytest.raises(RateLimited) as limited:
            await impatient.search("tea", user_id=owner)
    assert limited.value.retry_after_s >= 1.0


async def test_the_example_in_docs_clients_runs(stack: Stack) -> None:
    code = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "clients.md").read_text(), re.S)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {"MEMORYD_URL": stack.url, "MEMORYD_KEY": stack.alice_key, "PYTHONPATH": str(ROOT)}
    code = code.replace('"alice"', repr(stack.alice))
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    assert printed[0].endswith("I prefer TypeScript for web projects.")
    assert float(printed[0].split()[0]) >= 0.3
    assert printed[-1] == str([("I prefer TypeScript for web projects.", "I prefer Rust for web projects.")])
    async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:
        assert await memory.get_all() == []


async def test_filters_in_a_query_string_are_json_and_documented(stack: Stack) -> None:
    async with stack.client(stack.alice_key) as http:
        bad = await http.get("/v1/memories", params={"filters": "{nope"})
        assert bad.status_code == 400 and bad.json()["field"] == "$.filters", bad.text
        listed = await http.get("/v1/memories", params={"filters": '{"project": {"in": ["none"]}}'})
        assert listed.status_code == 200 and listed.json()["memories"] == []
        doc = (await http.get("/openapi.json")).json()
    (param,) = [p for p in doc["paths"]["/v1/memories"]["get"]["parameters"] if p["name"] == "filters"]
    assert "schema" not in param and "application/json" in param["content"]


def batch_script(url: str, key: str, owner: str, stranger: str) -> None:
    with Memory(url, api_key=key) as memory:
        done = memory.add_batch(
            [
                "Prefers window seats",
                {"content": "   "},
                {"content": "Flew to Oslo in March", "memory_type": "episodic", "metadata": {"trip": "oslo"}},
                {"messages": "I love cross-country skiing"},
            ],
            run_id="trip-9",
            metadata={"via": "batch"},
        )
        assert (done.stored, done.published, done.failed) == (2, 1, 1)
        seats, blank, oslo, chat = done.results
        assert seats.memory is not None and seats.created
        assert (seats.memory.content, seats.memory.session_id, seats.memory.metadata) == (
            "Prefers window seats",
            "trip-9",
            {"via": "batch"},
        )
        assert oslo.memory is not None and oslo.memory.memory_type == "episodic"
        assert oslo.memory.metadata == {"trip": "oslo"}  # an item's own metadata wins
        assert blank.error is not None and (blank.error.code, blank.error.field) == (400, "$.items[1].content")
        assert chat.event_id is not None and chat.duplicate is False
        turns = memory.wait_added(chat.event_id)
        turn = next(m for m in turns if m.source == "chat_turn")
        assert (turn.content, turn.session_id, turn.metadata["via"]) == (
            "I love cross-country skiing",
            "trip-9",
            "batch",
        )
        assert {m.id for m in memory.get_all(memory_type="episodic")} >= {oslo.memory.id}
        with pytest.raises(Forbidden):
            memory.add_batch(["not mine"], user_id=stranger)
        with pytest.raises(ValidationFailed) as empty:
            memory.add_batch([])
        assert empty.value.field == "$.items"


async def test_add_batch(stack: Stack) -> None:
    await asyncio.to_thread(batch_script, stack.url, stack.alice_key, stack.alice, stack.bob)
    async with stack.client(stack.alice_key) as http:
        bad = await http.post("/v1/memories/batch", json={"items": [{"content": 3}]})
        assert bad.status_code == 400 and bad.headers["content-type"].startswith("application/problem+json")
        assert bad.json()["field"] == "$.items[0].content"
        listed = (await http.get("/v1/memories", params={"q": "window seats"})).json()["memories"]
        assert [m["content"] for m in listed] == ["Prefers window seats"]
    async with AsyncMemory(stack.url, api_key=stack.bob_key) as memory:
        done = await memory.add_batch([{"content": "Drinks oat milk", "key": "milk"}])
        again = await memory.add_batch([{"content": "Drinks oat milk", "key": "milk"}])
        assert done.results[0].created and again.results[0].created is False
        assert done.results[0].memory is not None and again.results[0].memory is not None
        assert again.results[0].memory.id == done.results[0].memory.id


async def test_the_example_in_docs_from_mem0_runs(stack: Stack) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "from-mem0.md").read_text(), re.S)
    (code,) = [b for b in blocks if "from memoryd import Memory" in b]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {"MEMORYD_URL": stack.url, "MEMORYD_KEY": stack.alice_key, "PYTHONPATH": str(ROOT)}
    code = code.replace('"alice"', repr(stack.alice))
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    assert printed[0] == str(["Allergic to peanuts", "Lives in Lisbon"])
    assert "Lives in Lisbon" in printed[1:-1]
    assert "I prefer window seats on long flights." in printed[1:-1]  # the turn carries the agent_id
    assert printed[-1] == str([("Lives in Lisbon", "Lives in Porto")])
    async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:
        assert await memory.get_all() == []
