"""The one EmbedJob publisher on real JetStream: dedupe ids, trace context, typed failure."""

from __future__ import annotations

import re

import pytest
from nats.aio.client import Client

from memoryd import tracing
from memoryd.codec import decode
from memoryd.errors import DependencyDown
from memoryd.schemas import EmbedJob
from memoryd.subjects import EMBED_JOBS, JOBS_STREAM, MSG_ID_HEADER
from shared.bus.embed_jobs import CONCURRENT_PUBLISHES, no_msg_id, publish_embed_jobs
from shared.bus.provision import ensure_streams
from shared.settings.env import NatsConfig

MEM = "00000000-0000-0000-0000-{:012d}"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def job(i: int, digest: str = "h") -> EmbedJob:
    return EmbedJob(memory_id=MEM.format(i), owner="alice", content_hash=f"{digest}{i}", reason="new")


async def queued(nc: Client) -> list[tuple[EmbedJob, dict[str, str]]]:
    js = nc.jetstream()
    info = await js.stream_info(JOBS_STREAM)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(JOBS_STREAM, seq)
        if msg.subject == EMBED_JOBS:
            out.append((decode(msg.data, EmbedJob), dict(msg.headers or {})))
    return out


async def test_jobs_carry_the_content_dedupe_id_and_the_current_trace(nc: Client) -> None:
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    with tracing.span("extract mem.v1.jobs.extract", tracing.SpanKind.CONSUMER, headers={"traceparent": TRACEPARENT}):
        acks = await publish_embed_jobs(js, [job(1), job(2)])
    assert [bool(a.duplicate) for a in acks] == [False, False]
    again = await publish_embed_jobs(js, [job(1), job(1, "edited")])  # same content, then new content
    assert [bool(a.duplicate) for a in again] == [True, False]
    got = await queued(nc)
    assert [j for j, _ in got] == [job(1), job(2), job(1, "edited")]
    assert [h[MSG_ID_HEADER] for _, h in got] == [
        f"embed:{MEM.format(1)}:h1",
        f"embed:{MEM.format(2)}:h2",
        f"embed:{MEM.format(1)}:edited1",
    ]
    assert [h.get("traceparent") for _, h in got] == [TRACEPARENT, TRACEPARENT, None]


async def test_a_caller_may_name_its_own_dedupe_id_or_none(nc: Client) -> None:
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    acks = await publish_embed_jobs(js, [job(1), job(1)], msg_id=no_msg_id)
    assert [bool(a.duplicate) for a in acks] == [False, False]  # a requeue always gets through
    mine = await publish_embed_jobs(js, [job(1), job(1)], msg_id=lambda j: f"reindex:{j.memory_id}")
    assert [bool(a.duplicate) for a in mine] == [False, True]
    got = await queued(nc)
    assert [h.get(MSG_ID_HEADER) for _, h in got] == [None, None, f"reindex:{MEM.format(1)}"]


async def test_more_jobs_than_one_chunk_are_all_published_in_order(nc: Client) -> None:
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    jobs = [job(i) for i in range(CONCURRENT_PUBLISHES * 2 + 3)]
    acks = await publish_embed_jobs(js, jobs)
    assert [a.seq for a in acks] == sorted(a.seq for a in acks) and len({a.seq for a in acks}) == len(jobs)
    assert [j for j, _ in await queued(nc)] == jobs


async def test_no_jobs_stream_is_a_dependency_down(nc: Client) -> None:
    with pytest.raises(DependencyDown, match=f"cannot publish to {re.escape(EMBED_JOBS)}"):
        await publish_embed_jobs(nc.jetstream(), [job(1)], timeout=1.0)
