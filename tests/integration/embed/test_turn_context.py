"""Chat turns through ingest and embed (real NATS + Postgres, services in-process): a stored turn's
vector is its context text's ("[1:56 pm on 8 May, 2023] Caroline: <text>"), a direct memory's its content's."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.rpc import call
from memoryd.schemas.events import ChatMessage
from memoryd.schemas.memory import MemoryUpdateRequest, MemoryUpdateResult
from memoryd.schemas.ops import ReindexRequest, ReindexResult
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult, RetrievedMemory, RetrieveRequest, RetrieveResult
from services.embed.adapters import LocalEmbedder
from services.embed.handlers import Jobs
from shared.db import memories
from shared.db.memories import content_hash
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


async def _search(nc: Client, owner: str, query: str, strategy: str) -> dict[str, RetrievedMemory]:
    res: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(owner=owner, query=query, strategy=strategy))
    return {m.id: m for m in res.memories}


async def test_a_turn_an_older_ingest_wrote_without_context_is_found_by_both_sides_and_follows_edits(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig
) -> None:
    """During a rolling upgrade an ingest of an older version writes a turn without its context:
    the database fills it, the embed service embeds the stored head (the text tsv indexes), so
    the speaker's name finds it by keyword and the vector is the context text's; an edit of the
    speaker rewrites the head and re-embeds the turn."""
    owner = "ctx-rolling"
    said = (datetime.now(UTC) - timedelta(days=1)).replace(hour=13, minute=56, second=0, microsecond=0)
    when = f"[1:56 pm on {said.day} {said:%B}, {said.year}]"  # within the retention window
    mid = uuid.uuid4()
    content = "I adopted a beagle named Rex."
    await pool.execute(  # the columns an ingest of 0014's version writes: no context
        "INSERT INTO memories (id, owner, session_id, type, content, metadata, source, created_at, updated_at,"
        " content_hash) VALUES ($1, $2, 's1', 'episodic', $3, $4::text::jsonb, 'chat_turn', $5, $5, $6)",
        mid, owner, content, '{"speaker": "Annika", "role": "user"}', said, content_hash(content),
    )  # fmt: skip
    (other,) = await add_memories(pool, owner, ["The weather was rainy in Oslo."])
    embedder = LocalEmbedder.default()
    async with run_services(["ingest", "embed", "retrieve"], config):
        turn = await memories.get(pool, owner, str(mid))
        assert turn is not None
        await publish(nc.jetstream(), [job_of(turn), job_of(other)])

        async def embedded() -> bool:
            return await embedded_count(pool, [turn.id, other.id]) == 2

        await eventually(embedded, what="the turn and the memory embedded")
        head = f"{when} Annika:"
        assert await pool.fetchval("SELECT context FROM memories WHERE id = $1", mid) == head
        (want,) = embedder.embed([f"{head} {content}"])
        assert cosine((await vectors_of(pool, [turn.id]))[turn.id], want) > 0.9999
        # keyword: the speaker's name is no word of the content, yet finds the turn
        by_name = await _search(nc, owner, "Annika", "hybrid")
        assert next(iter(by_name)) == turn.id and by_name[turn.id].fts_rank == 1
        assert all(m.fts_rank is None for i, m in by_name.items() if i != turn.id)
        # dense: the turn's vector is its context text's (the score is that text's similarity)
        question = "When did Annika adopt a dog?"
        dense = await _search(nc, owner, question, "semantic")
        assert next(iter(dense)) == turn.id
        (q,) = embedder.embed([question])
        assert dense[turn.id].vec_score == pytest.approx(cosine(q, want), abs=2e-3)

        # an edit of the speaker: a new head, re-embedded, found by the new name only
        done: MemoryUpdateResult = await call(
            nc,
            "memory.update",
            MemoryUpdateRequest(owner=owner, id=turn.id, metadata={"speaker": "Bettina", "role": "user"}),
        )
        assert done.reembed is True
        new_head = f"{when} Bettina:"
        (edited,) = embedder.embed([f"{new_head} {content}"])

        async def re_embedded() -> bool:
            got = (await vectors_of(pool, [turn.id])).get(turn.id)
            return got is not None and cosine(got, edited) > 0.9999 and await embedded_count(pool, [turn.id]) == 1

        await eventually(re_embedded, what="the turn re-embedded with its new speaker")
        assert await pool.fetchval("SELECT context FROM memories WHERE id = $1", mid) == new_head
        new_name = await _search(nc, owner, "Bettina", "hybrid")
        assert next(iter(new_name)) == turn.id and new_name[turn.id].fts_rank == 1
        old_name = await _search(nc, owner, "Annika", "hybrid")
        assert turn.id not in old_name or old_name[turn.id].fts_rank is None


class _EditedWhileEmbedding:
    """A local source whose first call lets ``edit`` land while the batch is being embedded."""

    kind, model, dim, quantization, signature, resolution = "local", "all-MiniLM-L6-v2", 384, None, SIG, "test"

    def __init__(self, embedder: LocalEmbedder, edit: Callable[[], Awaitable[None]]) -> None:
        self.embedder, self.edit, self.texts = embedder, edit, list[str]()

    async def embed(self, texts: Sequence[str], *, urgent: bool = False) -> np.ndarray:
        await self.edit()
        self.edit = _nothing
        self.texts.extend(texts)
        return self.embedder.embed(list(texts))

    def health(self) -> str:
        return "ok"

    async def close(self) -> None:
        return None


async def _nothing() -> None:
    return None


async def test_a_speaker_edited_while_the_turn_is_embedded_is_embedded_again(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig
) -> None:
    """A batch reads a turn, its speaker is edited meanwhile: the vector just written carries the
    old head, so the turn stays marked for re-embedding and is queued again (as for a content edit)."""
    owner = "ctx-race"
    turn = await memories.insert(
        pool, owner=owner, memory_type="episodic", content="I adopted a beagle named Rex.", source="chat_turn",
        metadata={"speaker": "Ann", "role": "user"}, created_at=SAID,
    )  # fmt: skip
    store = PgVectorStore(pool)
    await store.ensure(SIG, 384)
    embedder = LocalEmbedder.default()

    async def edit() -> None:
        await pool.execute('UPDATE memories SET metadata = metadata || \'{"speaker": "Bea"}\' WHERE id = $1', turn.id)

    source = _EditedWhileEmbedding(embedder, edit)
    async with run_services(["embed"], config):  # serves the job queued again
        jobs = Jobs(pool, nc.jetstream(), [store], source, batch_max=8, batch_wait_s=0.01, pipeline=1)  # type: ignore[arg-type]
        assert await jobs.flush([job_of(turn)]) == ["embed"]
        assert source.texts == [f"[1:56 pm on 8 May, 2023] Ann: {turn.content}"]  # read before the edit
        (bea,) = embedder.embed([f"[1:56 pm on 8 May, 2023] Bea: {turn.content}"])

        async def re_embedded() -> bool:
            got = (await vectors_of(pool, [turn.id])).get(turn.id)
            return got is not None and cosine(got, bea) > 0.9999 and await embedded_count(pool, [turn.id]) == 1

        await eventually(re_embedded, what="the turn embedded again with its new speaker")
