"""The dead-letter queue: a read-only database is an outage (retried, never dead-lettered), and
``admin.dlq.*`` lists, shows, replays and drops letters; a replay stores an event exactly once.

PostgreSQL is made read-only the way a failover to a standby looks to a client:
``default_transaction_read_only`` on the database and every connection cut, so the pool
reconnects into read-only sessions (SQLSTATE 25006 on every write).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.cli.main import cli, run_cli
from memoryd.codec import encode
from memoryd.errors import NotFound, ValidationFailed
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import DeadLetter
from memoryd.schemas.dlq import (
    DlqDropRequest,
    DlqDropResult,
    DlqListRequest,
    DlqListResult,
    DlqReplayRequest,
    DlqReplayResult,
    DlqShowRequest,
    DlqShowResult,
)
from memoryd.subjects import CHAT_EVENTS, DLQ_STREAM, dlq_subject
from shared.service import ServiceContext
from tests.support.eventually import eventually

from .conftest import chat, dead_letters, event_row, publish, turns, wait_event

pytestmark = pytest.mark.slow


@pytest.fixture
async def admin(pg_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_dsn)
    yield conn
    await set_read_only(conn, False)
    await conn.close()


async def set_read_only(conn: asyncpg.Connection, on: bool) -> None:
    db = await conn.fetchval("SELECT current_database()")
    action = "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
    await conn.execute(f'ALTER DATABASE "{db}" {action}')
    await conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db
    )


def letter_for(event_bytes: bytes, error: str) -> DeadLetter:
    return DeadLetter(
        stage="ingest",
        subject=CHAT_EVENTS,
        error=error,
        deliveries=5,
        payload=event_bytes,
        failed_at=datetime.now(UTC),
        headers={"Nats-Msg-Id": "original", "x-request-id": "r-1"},
    )


async def test_read_only_database_is_retried_never_dead_lettered_then_a_replay_stores_once(
    nc: Client, ingest: ServiceContext, admin: asyncpg.Connection, owner: str
) -> None:
    js = nc.jetstream()
    event = chat(owner, ("user", "I prefer tea over coffee"), ("assistant", "Tea it is."))
    await set_read_only(admin, True)
    await publish(nc, event, msg_id=event.event_id)
    # max_deliver is 2 here: a permanent error would be dead-lettered within a second or two
    await asyncio.sleep(4.0)
    assert await event_row(admin, owner, event.event_id) is None  # type: ignore[arg-type]
    assert [d for d in await dead_letters(nc) if owner.encode() in d.payload] == []
    # the same event as an older release dead-lettered it during the outage
    ack = await js.publish(
        dlq_subject("ingest"),
        encode(
            letter_for(encode(event), "ReadOnlySQLTransactionError: cannot execute INSERT in a read-only transaction")
        ),
    )

    await set_read_only(admin, False)
    await wait_event(admin, owner, event.event_id)  # type: ignore[arg-type]
    listed: DlqListResult = await call(nc, "admin.dlq.list", DlqListRequest(stage="ingest"))
    mine = [e for e in listed.entries if e.seq == ack.seq]
    assert mine and mine[0].owner == owner and mine[0].event_id == event.event_id
    assert "ReadOnly" in mine[0].error and mine[0].deliveries == 5

    shown: DlqShowResult = await call(nc, "admin.dlq.show", DlqShowRequest(seq=ack.seq))
    assert event.event_id in shown.payload and shown.headers["x-request-id"] == "r-1"

    replayed: DlqReplayResult = await call(nc, "admin.dlq.replay", DlqReplayRequest(seqs=[ack.seq]))
    assert replayed.replayed == [ack.seq] and replayed.failed == {}
    with pytest.raises(NotFound):
        await call(nc, "admin.dlq.show", DlqShowRequest(seq=ack.seq))
    await eventually(lambda: _consumer_idle(nc), what="the replayed event consumed")
    stored = await turns(admin, owner)  # type: ignore[arg-type]
    assert sorted(r["content"] for r in stored) == ["I prefer tea over coffee", "Tea it is."]
    count = await admin.fetchval("SELECT count(*) FROM events WHERE owner = $1", owner)
    assert count == 1


async def _consumer_idle(nc: Client) -> bool:
    info = await nc.jetstream().consumer_info("MEM_EVENTS", "ingest")
    return not info.num_pending and not info.num_ack_pending


async def test_replay_of_an_event_never_stored_stores_it_and_a_cut_letter_stays(
    nc: Client,
    nats_server: EmbeddedNats,
    ingest: ServiceContext,
    admin: asyncpg.Connection,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through the RPCs, and ``memoryd dlq list|drop`` as an operator types them."""
    js = nc.jetstream()
    owner = f"o-{uuid.uuid4().hex[:10]}"
    event = chat(owner, ("user", "I always test with real servers"))
    good = await js.publish(dlq_subject("ingest"), encode(letter_for(encode(event), "AdminShutdownError: x")))
    cut = await js.publish(
        dlq_subject("ingest"), encode(letter_for(b'{"owner": "x"', "E: y [payload of 9000000 bytes cut to 524288]"))
    )
    result: DlqReplayResult = await call(nc, "admin.dlq.replay", DlqReplayRequest(seqs=[good.seq, cut.seq, 999_999]))
    assert result.replayed == [good.seq]
    assert set(result.failed) == {str(cut.seq), "999999"} and "part of the payload" in result.failed[str(cut.seq)]
    await wait_event(admin, owner, event.event_id)  # type: ignore[arg-type]
    assert [r["content"] for r in await turns(admin, owner)] == ["I always test with real servers"]  # type: ignore[arg-type]

    with pytest.raises(ValidationFailed):
        await call(nc, "admin.dlq.drop", DlqDropRequest())
    dropped: DlqDropResult = await call(nc, "admin.dlq.drop", DlqDropRequest(seqs=[cut.seq, 999_999]))
    assert dropped.dropped == [cut.seq] and dropped.missing == [999_999]
    info = await js.stream_info(DLQ_STREAM)
    poison = await js.publish(dlq_subject("extract"), encode(letter_for(b"{}", "E: permanent")))
    argv = ["dlq", "list", "--stage", "extract", "--nats-url", nats_server.url]
    assert await asyncio.to_thread(run_cli, cli, argv, "memoryd") == 0
    out = capsys.readouterr().out
    assert f"{poison.seq} " in out and "E: permanent" in out
    assert await asyncio.to_thread(run_cli, cli, ["dlq", "replay", "--nats-url", nats_server.url], "memoryd") == 2
    argv = ["dlq", "drop", str(poison.seq), "--nats-url", nats_server.url]
    assert await asyncio.to_thread(run_cli, cli, argv, "memoryd") == 0
    assert "dropped 1" in capsys.readouterr().out
    remaining: DlqListResult = await call(nc, "admin.dlq.list", DlqListRequest())
    assert remaining.total == info.state.messages
    assert {e.seq for e in remaining.entries}.isdisjoint({good.seq, cut.seq})
