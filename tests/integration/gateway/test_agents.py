"""The agent dimension through the gateway, as an application uses it with ``memoryd.Memory``:
two agents of one owner each remember; a search or listing with one agent never reaches the
other's memories (but does reach global ones), without an agent it reaches both; deleting one
agent's memories leaves the other's; an export/import round trip keeps the agent.

Its own module (its own stack): it adds a global memory, which every owner's search would see."""

from __future__ import annotations

import asyncio
import uuid

import msgspec
import pytest

from memoryd import AsyncMemory, Memory
from memoryd.errors import ValidationFailed
from memoryd.schemas.retrieval import RetrievedMemory

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CODER_SAID = "I prefer TypeScript for frontend work."
TRAVEL_SAID = "I prefer window seats on long flights."
ASKED = "What do I prefer?"


def own(hits: list[RetrievedMemory]) -> set[str]:
    """The ids of the hits that are not global memories (another module may have left some)."""
    return {h.id for h in hits if h.scope != "global"}


def agents_script(url: str, key: str, owner: str, global_id: str) -> tuple[str, set[str]]:
    """Runs as a script would; returns the owner's export, taken before the coder's memories were
    deleted, and the ids of the coder's memories."""
    with Memory(url, api_key=key) as memory:
        coder = memory.add(CODER_SAID, user_id=owner, agent_id="coder", metadata={"project": "web"})
        travel = memory.add(TRAVEL_SAID, user_id=owner, agent_id="travel", run_id="trip-1")
        assert {m.source for m in coder.memories} == {"chat_turn", "rule"}  # the fact inherits the agent too
        assert {m.agent_id for m in coder.memories} == {"coder"}
        assert {(m.agent_id, m.session_id) for m in travel.memories} == {("travel", "trip-1")}
        coder_ids, travel_ids = {m.id for m in coder.memories}, {m.id for m in travel.memories}

        for strategy in ("hybrid", "semantic", "exact"):
            hits = memory.search(ASKED, user_id=owner, agent_id="coder", strategy=strategy, limit=50)
            assert own(hits) == coder_ids and global_id in {h.id for h in hits}, strategy
            assert {h.agent_id for h in hits if h.scope != "global"} == {"coder"}
            both = memory.search(ASKED, user_id=owner, strategy=strategy, limit=50)
            assert own(both) == coder_ids | travel_ids and global_id in {h.id for h in both}, strategy
        trip = memory.search(ASKED, user_id=owner, agent_id="travel", run_id="trip-1", limit=50)
        assert own(trip) == travel_ids
        assert own(memory.search(ASKED, user_id=owner, agent_id="coder", run_id="trip-1", limit=50)) == set()
        assert own(memory.search(ASKED, user_id=owner, agent_id="nobody", limit=50)) == set()

        assert {m.id for m in memory.get_all(user_id=owner, agent_id="travel")} == travel_ids
        assert {m.id for m in memory.get_all(user_id=owner)} == coder_ids | travel_ids
        filtered = memory.get_all(user_id=owner, agent_id="coder", filters={"project": "web"})
        assert [m.content for m in filtered] == [CODER_SAID]
        assert memory.get_all(user_id=owner, agent_id="travel", filters={"project": "web"}) == []

        exported = memory._http.get("/v1/export", params={"owner": owner})
        assert exported.status_code == 200, exported.text
        assert {msgspec.json.decode(line)["agent_id"] for line in exported.text.splitlines()} == {"coder", "travel"}

        cleared = memory.delete_all(user_id=owner, agent_id="coder")
        assert cleared.count == len(coder_ids) and cleared.removed.pgvector_vectors == len(coder_ids)
        assert {m.id for m in memory.get_all(user_id=owner)} == travel_ids
        assert own(memory.search(ASKED, user_id=owner, agent_id="coder", limit=50)) == set()
        assert own(memory.search(ASKED, user_id=owner, limit=50)) == travel_ids
        return exported.text, coder_ids


async def settled(memory: AsyncMemory, owner: str, memory_id: str, timeout: float = 30.0) -> None:
    """Wait until the memory has its vector (semantic search finds it)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        record = await memory.get(memory_id, user_id=owner)
        if record.embedding_signature is not None and not record.needs_reindex:
            return
        assert asyncio.get_running_loop().time() < deadline, f"no vector for {memory_id}"
        await asyncio.sleep(0.1)


async def test_two_agents_of_one_owner(stack: Stack) -> None:
    owner, admin = f"agents-{uuid.uuid4().hex[:6]}", f"admin-{uuid.uuid4().hex[:6]}"
    async with AsyncMemory(stack.url, api_key=stack.operator_key) as memory:
        async with stack.client(stack.operator_key) as http:
            made = await http.post(
                "/v1/memories", json={"owner": admin, "content": "Everyone prefers short answers.", "scope": "global"}
            )
        assert made.status_code in (200, 201), made.text
        global_id = made.json()["memory"]["id"]
        try:
            await settled(memory, admin, global_id)
            exported, coder_ids = await asyncio.to_thread(
                agents_script, stack.url, stack.operator_key, owner, global_id
            )
            async with stack.client(stack.operator_key) as http:
                back = await http.post("/v1/import", json={"owner": owner, "lines": exported})
                assert back.status_code == 200, back.text
                assert (back.json()["imported"], back.json()["unchanged"]) == (2, 2), back.text
                coder = await memory.get_all(user_id=owner, agent_id="coder")
                assert {m.id for m in coder} == coder_ids and {m.agent_id for m in coder} == {"coder"}
                again = await http.post("/v1/import", json={"owner": owner, "lines": exported})
                assert (again.json()["imported"], again.json()["unchanged"]) == (0, 4), again.text
            assert (await memory.delete_all(user_id=owner)).count == 4
        finally:
            await memory.delete(global_id, user_id=admin)


async def test_agent_id_is_checked_like_session_id(stack: Stack) -> None:
    async with AsyncMemory(stack.url, api_key=stack.alice_key) as memory:
        with pytest.raises(ValidationFailed) as long:
            await memory.search("tea", agent_id="a" * 257)
        assert long.value.field == "$.agent_id"
        with pytest.raises(ValidationFailed) as empty:
            await memory.get_all(agent_id="")
        assert empty.value.field == "$.agent_id"
        with pytest.raises(ValidationFailed) as nul:
            await memory.create("tea", agent_id="a\x00b")
        assert "agent_id" in (nul.value.field or nul.value.description)
        with pytest.raises(ValidationFailed) as nul_event:
            await memory.add("tea", agent_id="a\x00b", wait=False)
        assert "agent_id" in (nul_event.value.field or nul_event.value.description)
