"""Backpressure on the real stack: embed workers behind, embed down, streams at their byte limit.

- Workers behind (the ``embed`` durable paused): ingest keeps storing events, earlier memories are
  served by the vector tier, new turns by full text, and ``engine.status`` shows the lag draining.
- Embed stopped: ingest still stores, ``engine.status`` shows lag and failed probe, retrieval says
  it searched without vectors; restarting embed drains the lag.
- Events stream at ``MEMORYD_NATS_STREAM_MAX_BYTES`` with ingest paused: an event beyond it is
  refused to its publisher, every accepted one is processed on resume, and the stream accepts again.
- Jobs stream full: ingest and extract keep their messages unacked (nak, retry) rather than lose
  jobs; nothing goes to the DLQ and every event completes once the workers drain.

No timing assertions: what is checked is who served, what was refused, what was stored.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.errors import APIError, NotFoundError
from prometheus_client import REGISTRY

from memoryd.codec import decode, encode
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import ChatEvent, ChatMessage, EmbedJob
from memoryd.schemas.events import DeadLetter
from memoryd.schemas.memory import MemoryCreateRequest
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from memoryd.subjects import (
    CHAT_EVENTS,
    DLQ_STREAM,
    EMBED_CONSUMER,
    EMBED_JOBS,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    MSG_ID_HEADER,
)
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services, service_config

EMBEDDED = {
    "hike": "I love hiking mountain trails on weekends",
    "invoice": "The quarterly invoice is due on Friday",
    "rust": "My favourite programming language is Rust",
}
TINY_STREAM_BYTES = 16 * 1024


@pytest.fixture(autouse=True)
def service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_INGEST_CLEANUP_INTERVAL_S", "0")
    monkeypatch.setenv("MEMORYD_RETRIEVE_EMBED_TIMEOUT_S", "20")  # a loaded CI runner must not turn a tier off
    monkeypatch.setenv("MEMORYD_RETRIEVE_STORE_TIMEOUT_S", "20")


@pytest.fixture
def owner() -> str:
    return f"bp-{uuid.uuid4().hex[:10]}"


def chat(owner: str, i: int) -> ChatEvent:
    """Two turns, each with a word no other event has (``zq<i>user``, ``zq<i>bot``); the user turn
    states a preference, so extraction stores a rule fact for each event."""
    return ChatEvent(
        event_id=f"{owner}-ev{i}",
        owner=owner,
        session_id="s1",
        occurred_at=datetime.now(UTC),
        messages=[
            ChatMessage(role="user", content=f"I really love parcel number zq{i}user from the depot."),
            ChatMessage(role="assistant", content=f"Noted zq{i}bot, I will remember the parcel"),
        ],
    )


async def publish_event(nc: Client, event: ChatEvent) -> None:
    ack = await nc.jetstream().publish(CHAT_EVENTS, encode(event), headers={MSG_ID_HEADER: event.event_id})
    assert ack.stream == EVENTS_STREAM and not ack.duplicate


async def scalar(pool: asyncpg.Pool, sql: str, *args: object) -> int:
    return int(await pool.fetchval(sql, *args))


async def unembedded(pool: asyncpg.Pool, owner: str) -> int:
    return await scalar(pool, "SELECT count(*) FROM memories WHERE owner = $1 AND needs_reindex", owner)


async def published(pool: asyncpg.Pool, owner: str) -> int:
    return await scalar(pool, "SELECT count(*) FROM events WHERE owner = $1 AND published_at IS NOT NULL", owner)


async def status(nc: Client, owner: str) -> EngineStatusResult:
    result: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=owner))
    return result


async def retrieve(nc: Client, owner: str, query: str, strategy: str) -> RetrieveResult:
    req = RetrieveRequest(owner=owner, query=query, strategy=strategy)  # type: ignore[arg-type]
    result: RetrieveResult = await call(nc, "retrieve", req)
    return result


async def seed_embedded(nc: Client, pool: asyncpg.Pool, owner: str) -> dict[str, str]:
    """Memories created through the API and embedded by the running embed service."""
    ids = {}
    for name, text in EMBEDDED.items():
        created = await call(nc, "memory.create", MemoryCreateRequest(owner=owner, content=text))
        ids[name] = created.memory.id
    await eventually(lambda: _zero(unembedded(pool, owner)), "the seeded memories embedded")
    return ids


async def _zero(count: Awaitable[int]) -> bool:
    return await count == 0


async def pause(nc: Client, *durables: str, stream: str = JOBS_STREAM) -> None:
    """JetStream consumer pause: the durable delivers nothing until resumed (workers get no work)."""
    until = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for durable in durables:
        assert (await nc.jsm().pause_consumer(stream, durable, until)).paused


async def resume(nc: Client, *durables: str, stream: str = JOBS_STREAM) -> None:
    for durable in durables:
        assert not (await nc.jsm().resume_consumer(stream, durable)).paused


async def lag_drained(nc: Client, owner: str) -> bool:
    st = await status(nc, owner)
    return st.lag.get("embed") == 0 and st.lag.get("embed_ack_pending") == 0 and st.pending_reindex == 0


# --- embed behind / embed down ----------------------------------------------------------------
async def test_ingest_and_vector_retrieval_keep_working_while_embed_workers_lag(
    config: ServiceConfig, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    events = [chat(owner, i) for i in range(20)]
    async with run_services(["ingest", "embed", "retrieve"], config):
        ids = await seed_embedded(nc, pool, owner)
        await pause(nc, EMBED_CONSUMER)
        for event in events:
            await publish_event(nc, event)
        await eventually(lambda: _equals(published(pool, owner), len(events)), "ingest to store every event")

        behind = await status(nc, owner)
        assert behind.lag["embed"] == 2 * len(events) and behind.pending_reindex == 2 * len(events)
        assert behind.embedding["probe"]["ok"]  # queries are still embedded
        old = await retrieve(nc, owner, "walking outdoors in nature", "semantic")
        assert old.memories[0].id == ids["hike"] and old.fallbacks == []
        assert [(t.tier, t.served) for t in old.tiers] == [("pgvector", True)]
        new = await retrieve(nc, owner, "zq7user", "hybrid")  # a turn without a vector yet
        assert new.fallbacks == [] and {(t.tier, t.served) for t in new.tiers} == {
            ("keyword", True),
            ("pgvector", True),
        }
        hit = next(m for m in new.memories if "zq7user" in m.content)
        assert hit.fts_rank == 1 and hit.vec_rank is None  # found by full text, no vector yet

        await resume(nc, EMBED_CONSUMER)
        await eventually(lambda: lag_drained(nc, owner), "the embed lag to drain")
        caught_up = await retrieve(nc, owner, "Noted zq7bot, I will remember the parcel", "semantic")
    assert "zq7bot" in caught_up.memories[0].content and caught_up.memories[0].tier == "pgvector"
    assert caught_up.fallbacks == []


async def test_embed_service_stopped_then_started_drains_the_backlog(
    config: ServiceConfig, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    events = [chat(owner, i) for i in range(10)]
    async with run_services(["ingest", "retrieve"], config):
        async with run_services(["embed"], config):
            await seed_embedded(nc, pool, owner)
        for event in events:  # embed is stopped
            await publish_event(nc, event)
        await eventually(lambda: _equals(published(pool, owner), len(events)), "ingest to store every event")

        down = await status(nc, owner)
        assert down.lag["embed"] == 2 * len(events) and not down.embedding["probe"]["ok"]
        degraded = await retrieve(nc, owner, "zq3user", "hybrid")
        assert degraded.fallbacks == ["pgvector->keyword:embed_unavailable"]
        assert "zq3user" in degraded.memories[0].content  # full text still answers

        async with run_services(["embed"], config):
            await eventually(lambda: lag_drained(nc, owner), "the embed lag to drain")
            back = await retrieve(nc, owner, "walking outdoors in nature", "semantic")
    assert back.fallbacks == [] and back.memories[0].tier == "pgvector"


async def _equals(count: Awaitable[int], n: int) -> bool:
    return await count == n


# --- stream limits ------------------------------------------------------------------------------
@pytest.fixture
async def tiny_streams(nats_server: EmbeddedNats, pg_dsn: str) -> AsyncIterator[ServiceConfig]:
    """ingest, extract and embed on streams of ``TINY_STREAM_BYTES`` each; one delivery before the
    DLQ, so a failure wrongly taken for a poisoned message is dead-lettered at once."""
    extra = {"MEMORYD_NATS_STREAM_MAX_BYTES": str(TINY_STREAM_BYTES), "MEMORYD_NATS_MAX_DELIVER": "1"}
    cfg = service_config(nats_server.url, pg_dsn, extra)
    async with run_services(["ingest", "extract", "embed"], cfg):
        yield cfg


def is_full(exc: APIError) -> bool:
    return "maximum bytes" in (exc.description or "")


async def test_events_beyond_the_stream_limit_are_refused_and_the_accepted_ones_processed(
    tiny_streams: ServiceConfig, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    js = nc.jetstream()
    await pause(nc, INGEST_CONSUMER, stream=EVENTS_STREAM)  # ingest falls behind: events pile up
    accepted: list[str] = []
    refused: list[APIError] = []
    for i in range(10 * TINY_STREAM_BYTES // 200):  # far more than fits
        event = chat(owner, i)
        try:
            await publish_event(nc, event)
        except APIError as exc:
            refused.append(exc)
            if len(refused) == 3:
                break
        else:
            assert not refused, "an event was accepted after one was refused"
            accepted.append(event.event_id)
    assert accepted and len(refused) == 3 and all(is_full(e) for e in refused), refused
    await resume(nc, INGEST_CONSUMER, stream=EVENTS_STREAM)

    async def all_done() -> bool:
        turns = await scalar(pool, "SELECT count(*) FROM memories WHERE owner = $1 AND source = 'chat_turn'", owner)
        done = await published(pool, owner) == len(accepted) and turns == 2 * len(accepted)
        return done and await unembedded(pool, owner) == 0

    await eventually(all_done, "every accepted event stored, published and embedded")
    stored = {r["event_id"] for r in await pool.fetch("SELECT event_id FROM events WHERE owner = $1", owner)}
    assert stored == set(accepted)
    # MEM_EVENTS keeps an event only until ingest acks it: the limit counts unprocessed events,
    # so once ingest has caught up the stream is empty and accepts events again.
    await eventually(
        lambda: _equals(_stream_messages(js, EVENTS_STREAM), 0), "processed events to leave the events stream"
    )
    await publish_event(nc, chat(owner, 99_999))
    await eventually(lambda: _equals(_stored_events(pool, owner), len(accepted) + 1), "the new event stored")


async def test_ingest_keeps_an_event_unacked_while_the_jobs_stream_is_full(
    tiny_streams: ServiceConfig, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    js = nc.jetstream()
    await pause(nc, EMBED_CONSUMER, EXTRACT_CONSUMER)  # the workers fall behind: jobs pile up
    sent = 0
    while not await _jobs_refused(nc, pool, owner, sent):
        try:
            await publish_event(nc, chat(owner, sent))
        except APIError as exc:  # a job is larger than its event: the jobs stream must refuse first
            raise AssertionError(f"events stream full before ingest saw a refused job: {exc}") from exc
        sent += 1
        await eventually(lambda n=sent: _outcome_known(nc, pool, owner, n), f"event {sent} handled or retried")
    for _ in range(3):  # more events while the jobs stream is full: accepted and stored, not acked
        await publish_event(nc, chat(owner, sent))
        sent += 1
    await eventually(lambda: _equals(_stored_events(pool, owner), sent), "every event stored")

    unpublished = sent - await published(pool, owner)
    ingest = await js.consumer_info(EVENTS_STREAM, INGEST_CONSUMER)
    assert unpublished >= 4 and ingest.num_ack_pending == unpublished and ingest.num_redelivered >= 1
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 0  # retried, not dead-lettered

    # extract catches up first: its facts' embed jobs meet the full stream and are retried too
    await top_up(nc, owner)  # no room left for any job extract could publish
    naks = _extract_retries()
    await resume(nc, EXTRACT_CONSUMER)
    await eventually(
        lambda: _extract_hit_the_limit(nc, pool, owner, naks),
        "extract to meet the full jobs stream",
        state=lambda: _extract_state(nc, pool, owner, naks),
    )
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 0
    await resume(nc, EMBED_CONSUMER)

    async def progress() -> dict[str, object]:
        info = await js.consumer_info(EVENTS_STREAM, INGEST_CONSUMER)
        return {
            "unpublished": sent - await published(pool, owner),
            "unembedded": await unembedded(pool, owner),
            "ingest_ack_pending": info.num_ack_pending,
            "ingest_pending": info.num_pending,
            "jobs_in_stream": await _stream_messages(js, JOBS_STREAM),
            "dead_letters": await dead_letters(js),
        }

    async def completed() -> bool:
        return all(not v for v in (await progress()).values())

    # Each stage retries a full stream with backoff capped at 30 s (shared.bus.consumer.backoff_s),
    # and the chain event -> extract job -> fact embed job can meet that cap three times in turn.
    await eventually(completed, "every event published, embedded and acked", timeout=180.0, state=progress)
    extracted = await scalar(pool, "SELECT count(DISTINCT event_id) FROM extract_runs WHERE owner = $1", owner)
    by_source = dict(await pool.fetch("SELECT source, count(*) FROM memories WHERE owner = $1 GROUP BY source", owner))
    assert (extracted, by_source) == (sent, {"chat_turn": 2 * sent, "rule": sent})
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 0


async def top_up(nc: Client, owner: str) -> None:
    """Fill what room the jobs stream has left with the smallest jobs there are: embed jobs for
    memories that do not exist (embed acks them as deleted). The stream then refuses anyone."""
    for _ in range(TINY_STREAM_BYTES // 100):
        job = EmbedJob(memory_id=str(uuid.uuid4()), owner=owner, content_hash="0")
        try:
            await nc.jetstream().publish(EMBED_JOBS, encode(job))
        except APIError as exc:
            assert is_full(exc), exc
            return
    raise AssertionError("the jobs stream never filled up")


async def dead_letters(js: JetStreamContext, limit: int = 5) -> list[str]:
    """The subject and error of the first dead letters (none expected)."""
    if not await _stream_messages(js, DLQ_STREAM):
        return []
    out = []
    for seq in range(1, limit + 1):
        try:
            raw = await js.get_msg(DLQ_STREAM, seq)
        except NotFoundError:
            continue
        letter = decode(raw.data or b"", DeadLetter)
        out.append(f"{letter.stage} {letter.subject}: {letter.error[:300]}")
    return out


async def _stream_messages(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).state.messages)


async def _stored_events(pool: asyncpg.Pool, owner: str) -> int:
    return await scalar(pool, "SELECT count(*) FROM events WHERE owner = $1", owner)


async def _jobs_refused(nc: Client, pool: asyncpg.Pool, owner: str, sent: int) -> bool:
    """An event's jobs were refused: it is stored, not published, and ingest redelivered it."""
    if sent == 0:
        return False
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, INGEST_CONSUMER)
    return await published(pool, owner) < sent and info.num_redelivered >= 1


def _extract_retries() -> float:
    """How many messages the extract stage (in this process) has handed back for a retry after a
    transient failure, such as a publish the full jobs stream refused."""
    return REGISTRY.get_sample_value("memoryd_jobs_total", {"stage": "extract", "outcome": "retry_transient"}) or 0.0


async def _extract_hit_the_limit(nc: Client, pool: asyncpg.Pool, owner: str, naks_before: float) -> bool:
    """Extract committed a job's facts and then failed to publish their embed jobs: the job went
    back for a retry (or to the DLQ). Seen when extract naks it, not only once it is redelivered:
    a redelivery also waits for the nak's delay and for the worker to finish its whole batch."""
    js = nc.jetstream()
    runs = await scalar(pool, "SELECT count(*) FROM extract_runs WHERE owner = $1", owner)
    if runs == 0:
        return False
    if _extract_retries() > naks_before or (await js.consumer_info(JOBS_STREAM, EXTRACT_CONSUMER)).num_redelivered:
        return True
    return (await js.stream_info(DLQ_STREAM)).state.messages > 0


async def _extract_state(nc: Client, pool: asyncpg.Pool, owner: str, naks_before: float) -> dict[str, object]:
    """What the extract stage has done since it was resumed (said when the wait for it times out)."""
    js = nc.jetstream()
    info = await js.consumer_info(JOBS_STREAM, EXTRACT_CONSUMER)
    jobs = (await js.stream_info(JOBS_STREAM)).state
    return {
        "extract_runs": await scalar(pool, "SELECT count(*) FROM extract_runs WHERE owner = $1", owner),
        "extract_naks": _extract_retries() - naks_before,
        "paused": getattr(info, "paused", None),
        "delivered": info.delivered.stream_seq,
        "ack_pending": info.num_ack_pending,
        "redelivered": info.num_redelivered,
        "waiting_pulls": info.num_waiting,
        "undelivered": info.num_pending,
        "jobs": (jobs.messages, jobs.bytes),
        "dead_letters": await dead_letters(js),
    }


async def _outcome_known(nc: Client, pool: asyncpg.Pool, owner: str, sent: int) -> bool:
    return await published(pool, owner) == sent or await _jobs_refused(nc, pool, owner, sent)
