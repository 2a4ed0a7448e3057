"""``MemorydStore`` against a real stack with LangGraph's own store semantics: put/get round trip,
update in place, delete, one key in two namespaces, search by prefix and by value filter (with
limit and offset), search by query ranking the relevant item first, ``list_namespaces`` with
prefix, suffix, wildcards and ``max_depth``, the namespace-to-owner mapping, typed errors, and a
compiled ``StateGraph`` reading and writing through the store. The blocking store runs in a
thread (the stack shares this test's event loop)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, PutOp

from memoryd import AsyncMemory
from memoryd.errors import ConfigError, Forbidden, ValidationFailed
from memoryd.integrations.langgraph import MemorydStore
from tests.support.eventually import eventually

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]


def root() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def sync_semantics(url: str, key: str) -> None:
    r = root()
    ns = (r, "prefs")
    with MemorydStore(url, api_key=key, owner_label=None) as store:
        assert store.get(ns, "lang") is None
        store.put(ns, "lang", {"content": "I write TypeScript", "score": 3, "tags": ["web"]})
        first = store.get(ns, "lang")
        assert first is not None
        assert (first.namespace, first.key) == (ns, "lang")
        assert first.value == {"content": "I write TypeScript", "score": 3, "tags": ["web"]}
        assert first.created_at == first.updated_at

        time.sleep(0.01)
        store.put(ns, "lang", {"content": "I write Rust", "score": 5})  # a field dropped, another changed
        second = store.get(ns, "lang")
        assert second is not None and second.value == {"content": "I write Rust", "score": 5}
        assert second.created_at == first.created_at and second.updated_at > first.updated_at

        store.put((r, "other"), "lang", {"content": "I write Go"})  # the same key in another namespace
        other = store.get((r, "other"), "lang")
        assert other is not None and other.value == {"content": "I write Go"}
        assert store.get(ns, "lang").value["content"] == "I write Rust"  # type: ignore[union-attr]

        store.delete(ns, "lang")
        assert store.get(ns, "lang") is None
        assert store.get((r, "other"), "lang") is not None
        store.delete(ns, "never-put")  # deleting nothing is no error

        # one batch runs in order: a read sees the writes before it
        results = store.batch([PutOp(ns, "a", {"n": 1}), GetOp(ns, "a"), PutOp(ns, "a", None), GetOp(ns, "a")])
        assert results[0] is None and results[2] is None and results[3] is None
        assert results[1] is not None and (results[1].key, results[1].value) == ("a", {"n": 1})


def sync_search(url: str, key: str) -> None:
    r = root()
    with MemorydStore(url, api_key=key, owner_label=None) as store:
        for i in range(6):
            store.put(
                (r, "docs", "even" if i % 2 == 0 else "odd"), f"d{i}", {"text": f"doc {i}", "n": i, "kind": "doc"}
            )
        store.put((r, "notes"), "n0", {"text": "a note", "n": 100, "kind": "note"})

        everything = store.search((r,), limit=20)
        assert len(everything) == 7
        assert {(i.namespace[-1], i.key) for i in everything if i.namespace[1] == "docs"} == {
            ("even", "d0"),
            ("odd", "d1"),
            ("even", "d2"),
            ("odd", "d3"),
            ("even", "d4"),
            ("odd", "d5"),
        }
        assert all(i.score is None for i in everything)
        assert {i.key for i in store.search((r, "docs", "even"))} == {"d0", "d2", "d4"}
        assert [i.key for i in store.search((r, "notes"))] == ["n0"]
        assert store.search((r, "nothing")) == []

        assert {i.key for i in store.search((r,), filter={"kind": "doc", "n": {"$gte": 3}})} == {"d3", "d4", "d5"}
        assert {i.key for i in store.search((r, "docs"), filter={"n": {"$ne": 0, "$lt": 2}})} == {"d1"}
        assert store.search((r,), filter={"kind": "poem"}) == []
        paged = [i.key for i in store.search((r, "docs"), limit=2, offset=0)]
        rest = [i.key for i in store.search((r, "docs"), limit=10, offset=2)]
        assert len(paged) == 2 and len(rest) == 4 and set(paged) | set(rest) == {f"d{i}" for i in range(6)}
        filtered_page = store.search((r, "docs"), filter={"kind": "doc"}, limit=2, offset=5)
        assert len(filtered_page) == 1

        with pytest.raises(ValidationFailed) as bad:
            store.search((r,), filter={"n": {"$regex": "x"}})
        assert bad.value.field == "$.filter.n.$regex"


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def sync_namespaces(url: str, key: str) -> None:
    r = root()
    with MemorydStore(url, api_key=key, owner_label=None) as store:
        for i, ns in enumerate(NAMESPACES):
            store.put((r, *ns), f"k{i}", {"i": i})

        def strip(found: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
            assert all(ns[0] == r for ns in found)
            return [ns[1:] for ns in found]

        assert strip(store.list_namespaces(prefix=(r,))) == sorted(NAMESPACES)
        assert strip(store.list_namespaces(prefix=(r, "a", "b"))) == [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
        ]
        assert strip(store.list_namespaces(prefix=(r,), suffix=("f",))) == [
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
        ]
        assert strip(store.list_namespaces(prefix=(r, "a"), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
        assert strip(store.list_namespaces(prefix=(r, "a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
        assert strip(store.list_namespaces(prefix=(r, "a", "b"), max_depth=4)) == [
            ("a", "b", "c"),
            ("a", "b", "d"),
            ("a", "b", "f"),
        ]
        assert strip(store.list_namespaces(prefix=(r,), max_depth=2)) == [("a",), ("admin",), ("b",), ("users",)]
        assert strip(store.list_namespaces(prefix=(r, "users"), limit=1, offset=1)) == [("users", "456", "settings")]
        assert store.list_namespaces(prefix=(r, "zzz")) == []


async def test_put_get_update_delete_sync(stack: Stack) -> None:
    await asyncio.to_thread(sync_semantics, stack.url, stack.alice_key)


async def test_search_by_prefix_and_filter_sync(stack: Stack) -> None:
    await asyncio.to_thread(sync_search, stack.url, stack.alice_key)


async def test_list_namespaces_sync(stack: Stack) -> None:
    await asyncio.to_thread(sync_namespaces, stack.url, stack.alice_key)


async def test_async_round_trip_and_query_search(stack: Stack) -> None:
    r = root()
    async with MemorydStore(stack.url, api_key=stack.alice_key, owner_label=None, index={"fields": ["text"]}) as store:
        await store.aput((r, "food"), "veg", {"text": "The user is vegetarian and avoids meat.", "topic": "diet"})
        await store.aput((r, "food"), "tea", {"text": "Green tea in the morning, never coffee.", "topic": "drinks"})
        await store.aput((r, "travel"), "seat", {"text": "Window seats on long flights.", "topic": "travel"})
        await store.aput((r, "travel"), "raw", {"text": "vegetarian meals on board"}, index=False)

        got = await store.aget((r, "food"), "veg")
        assert got is not None and got.value["topic"] == "diet"

        async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:

            async def embedded() -> bool:
                records = await memory.get_all(filters={"langgraph_ns.0": r})
                return len(records) == 4 and all(m.embedding_signature and not m.needs_reindex for m in records)

            await eventually(embedded, "the items' vectors")
        hits = await store.asearch((r,), query="Where should I sit on an airplane?", limit=3)
        keys = [h.key for h in hits]
        assert keys[0] == "seat"  # no word in common: the vector tier ranked it
        assert "raw" not in keys  # put with index=False is not searched by query
        hits = await store.asearch((r,), query="meat free food", limit=3)
        assert hits[0].key == "veg" and hits[0].score is not None and hits[0].score >= max(h.score or 0 for h in hits)
        assert hits[0].updated_at == got.updated_at and hits[0].value == got.value
        food = await store.asearch((r, "food"), query="window seats on long flights", limit=5)
        assert food and {h.key for h in food} <= {"veg", "tea"}  # the prefix holds for ranked search too
        only_drinks = await store.asearch((r,), query="meat free food", filter={"topic": "drinks"}, limit=5)
        assert [h.key for h in only_drinks] == ["tea"]

        assert await store.alist_namespaces(prefix=(r,)) == [(r, "food"), (r, "travel")]
        await store.adelete((r, "food"), "veg")
        assert await store.aget((r, "food"), "veg") is None
        assert [h.key for h in await store.asearch((r, "food"))] == ["tea"]


async def test_namespace_maps_to_owner(stack: Stack) -> None:
    """("memories", <user>) is that user's memory: an operator key writes for any owner, an
    owner's key only for its own, and the item is an ordinary memory of that owner."""
    r = root()
    async with (
        MemorydStore(stack.url, api_key=stack.operator_key) as store,
        AsyncMemory(stack.url, api_key=stack.operator_key) as memory,
    ):
        await store.aput((r, stack.bob, "thread-1"), "fav", {"content": "Bob likes jazz.", "mood": "calm"})
        item = await store.aget((r, stack.bob, "thread-1"), "fav")
        assert item is not None and item.value == {"content": "Bob likes jazz.", "mood": "calm"}
        [record] = await memory.get_all(user_id=stack.bob, filters={"langgraph_key": "fav", "langgraph_ns.0": r})
        assert record.owner == stack.bob and record.content == "Bob likes jazz."
        assert record.key == f'lg:["{r}","{stack.bob}","thread-1","fav"]'
        assert record.metadata["langgraph_ns"] == f"{r}.{stack.bob}.thread-1"
        assert record.created_at == item.created_at and record.updated_at == item.updated_at
        assert await memory.get_all(user_id=stack.alice, filters={"langgraph_ns.0": r}) == []

    async with MemorydStore(stack.url, api_key=stack.alice_key) as alice_store:
        with pytest.raises(Forbidden):
            await alice_store.aget((r, stack.bob, "thread-1"), "fav")
        with pytest.raises(Forbidden):
            await alice_store.aput((r, stack.bob), "x", {"content": "not alice's"})


async def test_namespace_maps_to_owner_agent_and_session(stack: Stack) -> None:
    """("memories", <user>, <agent>, <thread>) with agent_label=2 and session_label=3: the agent and
    thread are the memory's own columns, and a prefix naming an agent reaches only its items."""
    r = root()
    async with (
        MemorydStore(stack.url, api_key=stack.operator_key, agent_label=2, session_label=3) as store,
        AsyncMemory(stack.url, api_key=stack.operator_key) as memory,
    ):
        await store.aput((r, stack.bob, "support", "t1"), "tone", {"content": "Bob wants short answers."})
        await store.aput((r, stack.bob, "coder", "t2"), "lang", {"content": "Bob writes Go services."})
        await store.aput((r, stack.bob, "coder", "t3"), "editor", {"content": "Bob edits with Helix."})
        [support] = await memory.get_all(user_id=stack.bob, agent_id="support")
        assert (support.agent_id, support.session_id, support.content) == ("support", "t1", "Bob wants short answers.")
        coder = await memory.get_all(user_id=stack.bob, agent_id="coder", run_id="t2")
        assert [m.content for m in coder] == ["Bob writes Go services."]

        assert {i.key for i in await store.asearch((r, stack.bob, "coder"))} == {"lang", "editor"}
        assert [i.key for i in await store.asearch((r, stack.bob, "*", "t1"))] == ["tone"]
        ranked = await store.asearch((r, stack.bob, "support"), query="Which language does Bob write?", limit=5)
        assert [i.key for i in ranked] == ["tone"]  # the coder's better match is another agent's
        assert await store.alist_namespaces(prefix=(r, stack.bob, "coder")) == [
            (r, stack.bob, "coder", "t2"),
            (r, stack.bob, "coder", "t3"),
        ]
        got = await store.aget((r, stack.bob, "coder", "t3"), "editor")
        assert got is not None and got.value == {"content": "Bob edits with Helix."}
        assert await store.aget((r, stack.bob, "support", "t3"), "editor") is None
        await memory.delete_all(user_id=stack.bob, agent_id="coder")
        assert await store.asearch((r, stack.bob, "coder")) == []
        assert [i.key for i in await store.asearch((r, stack.bob))] == ["tone"]
        await store.adelete((r, stack.bob, "support", "t1"), "tone")


async def test_bad_input_is_a_typed_error(stack: Stack) -> None:
    with pytest.raises(ConfigError) as config:
        MemorydStore(stack.url, api_key=stack.alice_key, index={"dims": 3, "embed": "openai:text-embedding-3-small"})
    assert config.value.setting == "index.embed"
    async with MemorydStore(stack.url, api_key=stack.alice_key, owner_label=None) as store:
        with pytest.raises(ValidationFailed) as label:
            await store.abatch([PutOp(("a.b", "c"), "k", {"x": 1})])
        assert label.value.field == "$.namespace[0]"
        with pytest.raises(ValidationFailed) as value:
            await store.aput((root(),), "k", {"when": object()})
        assert value.value.field == "$.value"
        with pytest.raises(ValidationFailed) as ttl:
            await store.abatch([PutOp((root(),), "k", {"x": 1}, ttl=5.0)])
        assert ttl.value.field == "$.ttl"
    async with MemorydStore(stack.url, api_key=stack.operator_key) as operator_store:
        with pytest.raises(ValidationFailed) as owner:  # a label that cannot be an owner, at owner_label
            await operator_store.aput(("memories", "no owner!"), "k", {"x": 1})
        assert owner.value.field == "$.owner"


class Turn(TypedDict):
    user: str
    said: str
    recalled: list[str]


async def remember(state: Turn, runtime: Runtime[None]) -> dict[str, list[str]]:
    assert runtime.store is not None
    namespace = ("memories", state["user"])
    await runtime.store.aput(namespace, f"m{len(state['said'])}", {"content": state["said"]})
    found = await runtime.store.asearch(namespace, limit=10)
    return {"recalled": sorted(item.value["content"] for item in found)}


async def test_a_langgraph_graph_reads_and_writes_through_the_store(stack: Stack) -> None:
    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    async with MemorydStore(stack.url, api_key=stack.operator_key) as store:
        graph = builder.compile(store=store)
        user = f"u{uuid.uuid4().hex[:8]}"
        first = await graph.ainvoke({"user": user, "said": "I like tea.", "recalled": []})
        assert first["recalled"] == ["I like tea."]
        second = await graph.ainvoke({"user": user, "said": "I ride a bike to work.", "recalled": []})
        assert second["recalled"] == ["I like tea.", "I ride a bike to work."]
        async with AsyncMemory(stack.url, api_key=stack.operator_key) as memory:
            stored = await memory.get_all(user_id=user)
        assert sorted(m.content for m in stored) == ["I like tea.", "I ride a bike to work."]


async def test_the_example_in_docs_clients_runs(stack: Stack) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "clients.md").read_text(), re.S)
    (code,) = [b for b in blocks if "MemorydStore" in b]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {"MEMORYD_URL": stack.url, "MEMORYD_KEY": stack.alice_key, "PYTHONPATH": str(ROOT)}
    code = code.replace('"alice"', repr(stack.alice))
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "The user is vegetarian.",
        "diet The user is vegetarian.",
        "diet",
        str([("memories", stack.alice)]),
    ]
    async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:
        assert await memory.get_all(filters={"langgraph_ns.0": "memories"}) == []


def remember_sync(state: Turn, runtime: Runtime[None]) -> dict[str, list[str]]:
    assert runtime.store is not None
    namespace = ("memories", state["user"])
    runtime.store.put(namespace, f"m{len(state['said'])}", {"content": state["said"]})
    return {"recalled": sorted(item.value["content"] for item in runtime.store.search(namespace, limit=10))}


def run_sync_graph(url: str, key: str, user: str) -> list[list[str]]:
    builder = StateGraph(Turn)
    builder.add_node("remember", remember_sync)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    with MemorydStore(url, api_key=key) as store:
        graph = builder.compile(store=store)
        return [graph.invoke({"user": user, "said": said, "recalled": []})["recalled"] for said in ("Tea.", "Bikes.")]


async def test_a_sync_langgraph_graph_reads_and_writes_through_the_store(stack: Stack) -> None:
    user = f"u{uuid.uuid4().hex[:8]}"
    recalled = await asyncio.to_thread(run_sync_graph, stack.url, stack.operator_key, user)
    assert recalled == [["Tea."], ["Bikes.", "Tea."]]
