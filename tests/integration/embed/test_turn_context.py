"""Chat turns through ingest and embed (real NATS + Postgres, services in-process): a stored turn's
vector is its context text's ("[1:56 pm on 8 May, 2023] Caroline: <text>"), a direct memory's its content's."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.rpc import call
from memoryd.schemas.events import ChatMessage
from memoryd.schemas.ops import ReindexRequest, ReindexResult
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from services.embed.adapters import LocalEmbedder
from shared.db import memories
from shared.settings.env import ServiceConfig
from shared.vectors.pgvector import PgVectorStore, mark_embedded
from shared.vectors.port import VectorItem
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import SIG, add_memories, cosine, embedded_count, job_of, publish, vectors_of

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PREFIXED = "[1:56 pm on 8 May, 2023] Melanie: I painted a lake at sunrise."


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")


async def test_turns_embed_their_context_and_direct_memories_their_content(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig
) -> None:
    owner = "ctx-owner"
    messages = [
        ChatMessage(role="user", content="I went to a LGBTQ support group yesterday.", name="Caroline"),
        ChatMessage(role="assistant", content="That sounds like a meaningful step"),
        ChatMessage(role="user", content=PREFIXED, name="Melanie"),
    ]
    direct = await add_memories(pool, owner, ["Caroline went to a LGBTQ support group."])
    async with run_services(["ingest", "embed"], config):
        await MemoryClient(nc, timeout=30).publish_chat(owner, messages, session_id="s1", occurred_at=SAID)
        await publish(nc.jetstream(), [job_of(m) for m in direct])

        async def all_embedded() -> bool:
            n = await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", owner)
            ids = [str(r["id"]) for r in await pool.fetch("SELECT id FROM memories WHERE owner = $1", owner)]
            return n == 4 and await embedded_count(pool, ids, SIG) == 4

        await eventually(all_embedded, what="three turns and one direct memory embedded")
    rows = await pool.fetch("SELECT id, content, source FROM memories WHERE owner = $1", owner)
    by_content = {r["content"]: (str(r["id"]), r["source"]) for r in rows}
    stored = await vectors_of(pool, [i for i, _s in by_content.values()], SIG)
    expected = {
        "I went to a LGBTQ support group yesterday.": (
            "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday."
        ),
        "That sounds like a meaningful step": "[1:56 pm on 8 May, 2023] Assistant: That sounds like a meaningful step",
        PREFIXED: PREFIXED,  # already prefixed: embedded as it is, not twice
        "Caroline went to a LGBTQ support group.": "Caroline went to a LGBTQ support group.",
    }
    assert {c: s for c, (_i, s) in by_content.items()} == {
        **{c: "chat_turn" for c in list(expected)[:3]},
        "Caroline went to a LGBTQ support group.": "api",
    }
    embedder = LocalEmbedder.default()
    for content, text in expected.items():
        mid = by_content[content][0]
        want, bare = embedder.embed([text, content])
        assert cosine(stored[mid], want) > 0.9999, content
        if text != content:  # the context changed the vector: the bare text's is measurably elsewhere
            assert cosine(stored[mid], bare) < 0.99, content


OLD = SIG.removesuffix(":turn1")  # the signature of vectors embedded before turns carried their context


async def test_vectors_of_bare_turns_are_reindexed_to_context_vectors(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_META_POLL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_RETIRE_GRACE_S", "0")
    owner = "ctx-upgrade"
    turn = await memories.insert(
        pool,
        owner=owner,
        memory_type="episodic",
        content="I adopted a beagle named Rex.",
        source="chat_turn",
        metadata={"speaker": "Ann", "role": "user"},
        created_at=SAID,
    )
    (fact,) = await add_memories(pool, owner, ["Ann has a beagle named Rex."])
    embedder = LocalEmbedder.default()
    # the store as an older version left it: bare vectors under the old signature, active
    store = PgVectorStore(pool)
    await store.ensure(OLD, 384)
    bare = embedder.embed([turn.content, fact.content])
    await store.upsert(
        OLD, [VectorItem(memory_id=m.id, owner=owner, vector=bare[i]) for i, m in enumerate((turn, fact))]
    )
    await mark_embedded(pool, [(turn.id, turn.content_hash), (fact.id, fact.content_hash)], OLD)
    await pool.execute(
        "INSERT INTO memory_vec_meta (store, embedding_signature, active_dim) VALUES ('pgvector', $1, 384)"
        " ON CONFLICT (store) DO UPDATE SET embedding_signature = $1, active_dim = 384, pending_signature = NULL",
        OLD,
    )
    async with run_services(["embed"], config):
        meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
        assert (meta["embedding_signature"], meta["pending_signature"]) == (OLD, SIG)
        # until the reindex completes, queries are embedded for the old vectors retrieval searches
        before: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["Ann's dog"]))
        assert before.signature == OLD

        async def reindexed() -> bool:
            result: ReindexResult = await call(nc, "reindex", ReindexRequest())
            return result.pending == 0 and result.active_signature == SIG

        await eventually(reindexed, what="the reindex to the turn-context signature")
    stored = await vectors_of(pool, [turn.id, fact.id], SIG)
    context, plain = embedder.embed(["[1:56 pm on 8 May, 2023] Ann: I adopted a beagle named Rex.", fact.content])
    assert cosine(stored[turn.id], context) > 0.9999
    assert cosine(stored[fact.id], plain) > 0.9999 and cosine(stored[fact.id], bare[1]) > 0.9999
    assert cosine(stored[turn.id], bare[0]) < 0.99
