"""The pull-consumer loop on real JetStream: ack, retry, DLQ, term, keepalive."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from nats.aio.client import Client
from nats.js.api import StreamConfig

from memoryd.codec import decode, encode
from memoryd.errors import DependencyDown
from memoryd.schemas import DeadLetter, EmbedJob
from memoryd.subjects import DLQ_STREAM, EMBED_JOBS, JOBS_STREAM, dlq_subject
from shared.bus.consumer import ConsumerSpec, JobContext, PullConsumer, backoff_s
from shared.bus.provision import ensure_streams
from shared.settings.env import NatsConfig

MEM = "00000000-0000-0000-0000-0000000000{:02d}"


def job(i: int) -> EmbedJob:
    return EmbedJob(memory_id=MEM.format(i), owner="alice", content_hash=f"h{i}")


async def _run(nc: Client, handler, *, ack_wait: float = 30.0, until, timeout: float = 15.0):  # type: ignore[no-untyped-def]
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    spec = ConsumerSpec(
        stage="embed", stream=JOBS_STREAM, durable="t-embed", subject=EMBED_JOBS, max_deliver=3, ack_wait_s=ack_wait
    )
    stop = asyncio.Event()
    consumer = PullConsumer(js, spec, EmbedJob, handler)
    task = asyncio.create_task(consumer.run(stop))
    try:
        await asyncio.wait_for(until(), timeout=timeout)
    finally:
        stop.set()
        await task
    return js


async def _dlq(nc: Client) -> list[DeadLetter]:
    js = nc.jetstream()
    sub = await js.pull_subscribe(dlq_subject("embed"), durable=None, stream=DLQ_STREAM)
    try:
        msgs = await sub.fetch(100, timeout=1)
    except Exception:
        return []
    return [decode(m.data, DeadLetter) for m in msgs]


async def _pending(nc: Client) -> int:
    info = await nc.jetstream().stream_info(JOBS_STREAM)
    return int(info.state.messages)


async def test_success_acks_and_removes_from_work_queue(nc: Client) -> None:
    seen: list[str] = []
    done = asyncio.Event()

    async def handler(j: EmbedJob, ctx: JobContext) -> None:
        seen.append(j.memory_id)
        if len(seen) == 5:
            done.set()

    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    for i in range(5):
        await js.publish(EMBED_JOBS, encode(job(i)))
    await _run(nc, handler, until=done.wait)
    await asyncio.sleep(0.2)
    assert sorted(seen) == [MEM.format(i) for i in range(5)]
    assert await _pending(nc) == 0
    assert await _dlq(nc) == []


async def test_undecodable_goes_to_dlq_once_and_is_termed(nc: Client) -> None:
    calls = 0

    async def handler(j: EmbedJob, ctx: JobContext) -> None:
        nonlocal calls
        calls += 1

    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    await js.publish(EMBED_JOBS, b"\x00not json")
    await js.publish(EMBED_JOBS, b'{"type":"mem.v1.embed_job","memory_id":"nope","owner":"a","content_hash":"x"}')

    async def two_letters() -> None:
        while len(await _dlq(nc)) < 2:
            await asyncio.sleep(0.1)

    await _run(nc, handler, until=two_letters)
    letters = await _dlq(nc)
    assert calls == 0
    assert [letter.payload[:5] for letter in letters] == [b"\x00not ", b'{"typ']
    assert letters[0].error.startswith("validation: malformed JSON")
    assert "$.memory_id" in letters[1].error
    assert await _pending(nc) == 0


async def test_failing_handler_is_retried_then_dead_lettered(nc: Client) -> None:
    deliveries: list[int] = []

    async def handler(j: EmbedJob, ctx: JobContext) -> None:
        deliveries.append(ctx.deliveries)
        raise ValueError("poison")

    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    await js.publish(EMBED_JOBS, encode(job(1)), headers={"Nats-Msg-Id": "p1"})

    async def dead() -> None:
        while not await _dlq(nc):
            await asyncio.sleep(0.1)

    await _run(nc, handler, until=dead)
    assert deliveries == [1, 2, 3]
    [letter] = await _dlq(nc)
    assert letter.deliveries == 3 and letter.error == "ValueError: poison"
    assert decode(letter.payload, EmbedJob) == job(1)
    assert letter.headers.get("Nats-Msg-Id") == "p1"
    assert await _pending(nc) == 0


async def test_transient_failure_is_retried_not_dead_lettered(nc: Client) -> None:
    deliveries: list[int] = []
    done = asyncio.Event()

    async def handler(j: EmbedJob, ctx: JobContext) -> None:
        deliveries.append(ctx.deliveries)
        if len(deliveries) <= 4:  # more than max_deliver=3 transient failures
            raise DependencyDown("postgres restarting")
        done.set()

    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    await js.publish(EMBED_JOBS, encode(job(2)))
    await _run(nc, handler, until=done.wait, timeout=30)
    assert deliveries == [1, 2, 3, 4, 5]
    assert await _dlq(nc) == []


async def test_long_handler_is_kept_alive_not_redelivered(nc: Client) -> None:
    calls = 0
    done = asyncio.Event()

    async def handler(j: EmbedJob, ctx: JobContext) -> None:
        nonlocal calls
        calls += 1
        await asyncio.sleep(3.5)  # ack_wait is 2 s: in_progress must keep it
        done.set()

    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    await js.publish(EMBED_JOBS, encode(job(3)))
    await _run(nc, handler, ack_wait=2.0, until=done.wait)
    await asyncio.sleep(0.3)
    assert calls == 1


def test_backoff_grows_and_caps() -> None:
    assert [backoff_s(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert backoff_s(50) == 30.0


async def test_provisioning_is_idempotent_and_never_covers_rpc(nc: Client) -> None:
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    await ensure_streams(js, NatsConfig())  # second start changes nothing
    names = []
    for name in ("MEM_EVENTS", "MEM_JOBS", "MEM_SLEEP", "MEM_DLQ"):
        info = await js.stream_info(name)
        cfg: StreamConfig = info.config
        names.append(name)
        for subject in cfg.subjects or []:
            assert not subject.startswith("mem.v1.rpc"), subject
            assert subject not in (">", "mem.>", "mem.v1.>")
    assert names == ["MEM_EVENTS", "MEM_JOBS", "MEM_SLEEP", "MEM_DLQ"]
    # an RPC request gets "no responders", not a PubAck from a stream
    import nats.errors
    import pytest

    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request("mem.v1.rpc.retrieve", b"{}", timeout=1)
    _ = datetime.now(UTC)
