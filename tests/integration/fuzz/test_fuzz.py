"""Hostile payloads on every RPC and every consumed subject of memoryd (issue 8, fuzzing).

All five services run in-process once for the module on real NATS + PostgreSQL (a
scripted LLM behind the LLM phases). Every RPC operation (plain and owner-bound
subjects, health included), every JetStream subject a service consumes (chat events,
owner-bound chat events, extract, embed and sleep jobs) and the core-NATS inputs
(``settings.changed``, activity and its KV bucket) get ``MEMORYD_FUZZ_EXAMPLES`` hostile
payloads each from ``tests.support.hostile``; the properties are in ``harness``. At the
end every service still answers health and the pipeline still processes valid input.

The summary line ("fuzz: N cases over M subjects, K crashes") is printed and, with
``MEMORYD_FUZZ_REPORT=<path>``, written as JSON.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest
from hypothesis import strategies as st
from nats.errors import MaxPayloadError

from memoryd.client import MemoryClient
from memoryd.codec import decode, encode
from memoryd.connect import connect
from memoryd.errors import MemorydError, ValidationFailed
from memoryd.local.nats import MAX_PAYLOAD as NATS_MAX_PAYLOAD
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP, RPC_OPS, ChatEvent, ChatMessage, DeadLetter, RpcError, RpcOp
from memoryd.schemas.base import Owner
from memoryd.schemas.events import Activity
from memoryd.schemas.memory import MemoryGetRequest, MemoryGetResult, MemoryListRequest
from memoryd.schemas.ops import HealthRequest, SettingsPutRequest
from memoryd.schemas.retrieval import RetrieveRequest
from memoryd.subjects import (
    ACTIVITY_BUCKET,
    DLQ_STREAM,
    EVENTS_STREAM,
    JOBS_STREAM,
    MSG_ID_HEADER,
    OWNER_BOUND_OPS,
    SETTINGS_CHANGED,
    SLEEP_STREAM,
    activity_key,
    activity_subject,
    dlq_subject,
    owner_events_subject,
    owner_rpc_subject,
    rpc_subject,
)
from shared.bus.rpc import RpcServer
from shared.settings.env import NatsConfig
from tests.support.fake_llm import FakeLlm
from tests.support.hostile import UNICODE_EDGES, hostile_payloads, padded_to, subject_tokens
from tests.support.stack import run_services, service_config

from .cases import (
    ACTIVITY_EXAMPLE,
    ACTIVITY_OWNER,
    HEALTH_EXAMPLE,
    OWNER,
    SERVICES,
    WHEN,
    Seeds,
    StreamTarget,
    check_catalogue,
    embedded_documents,
    owner_of,
    rpc_examples,
    stream_targets,
)
from .harness import EXAMPLES, FUZZ_ID, PIPELINE, SUMMARY, FuzzStack, draw

pytestmark = pytest.mark.integration
OwnerOnly = msgspec.defstruct("OwnerOnly", [("owner", Owner)])

#: One reply for every LLM prompt (extraction, the sleep phases, summaries): valid and empty.
LLM_REPLY = json.dumps({"facts": [], "decisions": [], "patterns": [], "candidates": []})
SERVICE_ENV = {
    "MEMORYD_SLEEP_SCHEDULER": "false",  # runs only when asked for
    "MEMORYD_INGEST_CLEANUP_INTERVAL_S": "0",  # no periodic cleanup between a case's digests
    "MEMORYD_EMBED_SOURCE": "local",
}

RPC_SUBJECTS: list[tuple[str, str]] = [
    *[(rpc_subject(name), name) for name in RPC_OPS],
    *[(owner_rpc_subject(name, owner_of(name)), name) for name in OWNER_BOUND_OPS],
    (rpc_subject("health"), "health"),
    *[(f"{rpc_subject('health')}.{service}", "health") for service in SERVICES],
]


@pytest.fixture(scope="module")
async def stack(
    tmp_path_factory: pytest.TempPathFactory, pg_dsn: str, pool: asyncpg.Pool, request: pytest.FixtureRequest
) -> AsyncIterator[FuzzStack]:
    nats = EmbeddedNats(tmp_path_factory.mktemp("fuzz") / "nats")
    nats.start()
    try:
        async with FakeLlm() as llm:
            llm.handler = lambda req: LLM_REPLY
            extra = {"MEMORYD_NATS_MAX_DELIVER": "2", "MEMORYD_LLM_BASE_URL": llm.base_url, "MEMORYD_LLM_MODEL": "fake"}
            with pytest.MonkeyPatch.context() as env:
                for name, value in SERVICE_ENV.items():
                    env.setenv(name, value)
                async with run_services(SERVICES, service_config(nats.url, pg_dsn, extra)) as contexts:
                    nc = await connect(NatsConfig(url=nats.url), "fuzz")
                    try:
                        fuzz = await FuzzStack.open(nc, pool, contexts)
                        yield fuzz
                        stopped = stopped_services(contexts)
                    finally:
                        await nc.close()
        _report(fuzz, request, stopped)
    finally:
        nats.stop()


def stopped_services(contexts: dict[str, Any]) -> list[str]:
    """Services that stopped themselves or lost a background task."""
    return sorted(n for n, ctx in contexts.items() if ctx.stop.is_set() or any(t.done() for t in ctx.tasks))


def _report(fuzz: FuzzStack, request: pytest.FixtureRequest, stopped: list[str]) -> None:
    request.config.stash[SUMMARY] = fuzz.tally.summary()
    if path := os.environ.get("MEMORYD_FUZZ_REPORT"):
        report = fuzz.tally.report() | {"services_stopped": len(stopped), "stopped": stopped}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


@pytest.fixture(scope="module")
async def seeds(stack: FuzzStack) -> Seeds:
    client = MemoryClient(stack.nc)
    seed = (await client.create(OWNER, "I prefer green tea in the morning.", key="fuzz-seed", session_id="s1")).memory
    line = next(x for x in (await client.export(OWNER)).splitlines() if f'"{seed.id}"' in x)
    letter = DeadLetter(
        stage="fuzz",
        subject="mem.v1.jobs.fuzz",
        error="seeded",
        deliveries=1,
        payload=b"{}",
        failed_at=WHEN,
        headers={MSG_ID_HEADER: f"{FUZZ_ID}dlq-seed"},  # one of the fuzz run's own letters, not a stray one
    )
    ack = await stack.nc.jetstream().publish(dlq_subject("fuzz"), encode(letter))
    await stack.settle()
    return Seeds(seed.id, seed.content_hash, line, dlq_seq=ack.seq)


async def own_memory(stack: FuzzStack, *, archived: bool) -> str:
    """A memory for one test's valid delete or restore (later valid ones then get 404 or 409)."""
    memory = (await MemoryClient(stack.nc).create(OWNER, f"A note of its own {uuid.uuid4().hex[:6]}.")).memory
    if archived:
        await stack.pool.execute(
            "UPDATE memories SET state = 'archived', full_content = content WHERE id = $1", uuid.UUID(memory.id)
        )
    stack.forget_digest()
    return memory.id


async def parked_conflict(stack: FuzzStack) -> tuple[str, str]:
    """A review-queue entry of two memories of the owner (as sleep parks one) and the first memory."""
    client = MemoryClient(stack.nc)
    ids = sorted([(await client.create(OWNER, f"A parked note {uuid.uuid4().hex[:6]}.")).memory.id for _ in range(2)])
    entry = uuid.uuid4()
    await stack.pool.execute(
        "INSERT INTO conflict_pending (id, owner, memory_a, memory_b, reason) VALUES ($1, $2, $3, $4, 'fuzz')",
        *(entry, OWNER, uuid.UUID(ids[0]), uuid.UUID(ids[1])),
    )
    stack.forget_digest()
    return str(entry), ids[0]


def _decodes_as(payload: bytes, tp: type[Any]) -> bool:
    try:
        decode(payload, tp)
    except MemorydError:
        return False
    return True


def _assert_clean(stack: FuzzStack, subject: str) -> None:
    problems = stack.tally.of(subject)
    assert not problems, "\n".join(problems[:20])


# --- the catalogue -------------------------------------------------------------------------------
def test_every_rpc_and_consumed_subject_has_an_example() -> None:
    """A new operation or consumer fails here until it has an example (and so gets fuzzed)."""
    fake = Seeds(str(uuid.UUID(int=1)), "h", "{}")
    check_catalogue(rpc_examples(fake))
    assert {name for _, name in RPC_SUBJECTS} == {*RPC_OPS, HEALTH_OP.name}
    assert {s for s, _ in RPC_SUBJECTS} >= {owner_rpc_subject(op, owner_of(op)) for op in OWNER_BOUND_OPS}
    assert {(t.stream, t.durable) for t in stream_targets(fake)} == set(PIPELINE)


async def test_every_consumer_of_the_running_stack_is_fuzzed(stack: FuzzStack) -> None:
    """The services' durable consumers, read from JetStream, are exactly the ones fuzzed here."""
    running = set()
    for stream in (EVENTS_STREAM, JOBS_STREAM, SLEEP_STREAM, DLQ_STREAM):
        running |= {(stream, c.name) for c in await stack.js.consumers_info(stream) if not c.name.startswith("fuzz")}
    assert running == set(PIPELINE)


# --- RPC -----------------------------------------------------------------------------------------
def _op(name: str) -> Any:
    return HEALTH_OP if name == HEALTH_OP.name else RPC_OPS[name]


@pytest.mark.parametrize(("subject", "op_name"), RPC_SUBJECTS, ids=[s for s, _ in RPC_SUBJECTS])
async def test_rpc_subject(stack: FuzzStack, seeds: Seeds, subject: str, op_name: str) -> None:
    """The valid example succeeds; each hostile payload gets a 4xx (nothing written) or a valid result."""
    op = _op(op_name)
    example = HEALTH_EXAMPLE if op is HEALTH_OP else rpc_examples(seeds)[op_name]
    if op_name in ("memory.delete", "admin.memory.delete", "memory.restore", "admin.memory.restore"):
        archived = op_name.endswith("memory.restore")
        example = msgspec.structs.replace(example, id=await own_memory(stack, archived=archived))
    if op_name == "conflicts.resolve":  # settles the entry; later valid ones get 409
        entry, keep = await parked_conflict(stack)
        example = msgspec.structs.replace(example, id=entry, keep=keep)
    reply = await stack.rpc_case(subject, op, encode(example))
    assert reply is not None and not isinstance(reply, RpcError), f"the valid example was refused: {reply}"
    embedded = embedded_documents(seeds).get(op_name)
    for payload in draw(hostile_payloads(example, embedded=embedded), subject):
        await stack.rpc_case(subject, op, payload)
    _assert_clean(stack, subject)


async def test_owner_tokens_in_bound_subjects(stack: FuzzStack, seeds: Seeds) -> None:
    """``mem.v1.rpc.<op>.<token>``: success only when the payload's owner is the token, else 403/400."""
    family = "mem.v1.rpc.<op>.<token>"
    cases = st.tuples(st.sampled_from(["memory.list", "retrieve"]), subject_tokens, st.booleans())
    for op_name, token, same_owner in draw(cases, family):
        owner = token if same_owner else OWNER
        request_type = MemoryListRequest if op_name == "memory.list" else RetrieveRequest
        payload = json.dumps({"type": request_type.__struct_config__.tag, "owner": owner}).encode()
        to = owner_rpc_subject(op_name, token)
        reply = await stack.rpc_case(to, RPC_OPS[op_name], payload, label=family)
        valid_owner = _valid_owner(owner)
        expected = 200 if valid_owner and owner == token else 400 if not valid_owner else 403
        got = reply.code if isinstance(reply, RpcError) else 200
        if got != expected:
            stack.tally.violated(family, f"{op_name} on token {token!r}: {got}, expected {expected}", payload)
    _assert_clean(stack, family)


def _valid_owner(owner: str) -> bool:
    return _decodes_as(json.dumps({"owner": owner}).encode(), OwnerOnly)


# --- JetStream -------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(5), ids=["events.chat", "events.chat.owner", "extract", "embed", "sleep"])
async def test_stream_subject(stack: FuzzStack, seeds: Seeds, index: int) -> None:
    """Undecodable messages are dead-lettered at once, the others acked or dead-lettered with
    nothing written; a valid message afterwards is still processed."""
    target = stream_targets(seeds)[index]
    payloads = draw(hostile_payloads(target.example), target.subject)
    await stack.rejected_batch(target, [p for p in payloads if not _decodes_as(p, type(target.example))])
    for payload in [p for p in payloads if _decodes_as(p, type(target.example))]:
        await stack.stream_case(target, payload)
    assert await stack.stream_case(target, encode(target.example)), "a valid message after the fuzz was not acked"
    _assert_clean(stack, target.subject)


async def test_events_on_other_owners_subjects(stack: FuzzStack, seeds: Seeds) -> None:
    """A valid event on ``mem.v1.events.chat.<token>`` is stored only when the token is its owner."""
    family = "mem.v1.events.chat.<token>"
    target = stream_targets(seeds)[1]
    for token in draw(st.one_of(st.just(OWNER), subject_tokens), family, n=max(2, EXAMPLES // 2)):
        event = ChatEvent(
            event_id=f"tok-{uuid.uuid4().hex[:8]}",
            owner=OWNER,
            messages=[ChatMessage(role="user", content=f"token case {token!r}")],
            occurred_at=WHEN,
        )
        on_token = StreamTarget(owner_events_subject(token), target.stage, target.stream, target.durable, event)
        acked = await stack.stream_case(on_token, encode(event), label=family)
        if acked is not (token == OWNER):
            stack.tally.violated(family, f"token {token!r}: acked={acked}", encode(event))
    _assert_clean(stack, family)


# --- core NATS -------------------------------------------------------------------------------------
async def test_settings_changed_broadcast(stack: FuzzStack, seeds: Seeds) -> None:
    """Junk on ``mem.v1.settings.changed`` writes nothing, and a real change still reaches retrieve."""
    texts = st.sampled_from([*UNICODE_EDGES, OWNER, "*", ""]).map(lambda s: s.encode("utf-8", "surrogatepass"))
    payloads = draw(st.one_of(st.binary(max_size=300), texts), SETTINGS_CHANGED)
    before = await stack.digest()
    for payload in payloads:
        await stack.nc.publish(SETTINGS_CHANGED, payload)
        stack.tally.record(SETTINGS_CHANGED, False)
    await stack.nc.flush()
    await stack.check_unchanged(SETTINGS_CHANGED, before, b"<settings.changed batch>")
    owner = f"fuzz-settings-{uuid.uuid4().hex[:6]}"
    assert (await call(stack.nc, "retrieve", RetrieveRequest(owner=owner, query="tea"))).disabled_reason is None
    await call(stack.nc, "settings.put", SettingsPutRequest(owner=owner, values={"enabled": False}))
    stack.forget_digest()
    assert (await call(stack.nc, "retrieve", RetrieveRequest(owner=owner, query="tea"))).disabled_reason
    _assert_clean(stack, SETTINGS_CHANGED)


async def test_activity_subject_and_bucket(stack: FuzzStack, seeds: Seeds) -> None:
    """Junk activity (live subject and KV value) writes nothing; a sleep run for that owner still finishes."""
    subject = activity_subject(ACTIVITY_OWNER)
    kv = await stack.js.key_value(ACTIVITY_BUCKET)
    sleep_run = encode(rpc_examples(seeds)["sleep.run"])
    for payload in draw(hostile_payloads(ACTIVITY_EXAMPLE), subject):
        before = await stack.digest()
        await kv.put(activity_key(ACTIVITY_OWNER), payload)
        await stack.nc.publish(subject, payload)
        await stack.nc.flush()
        await stack.check_unchanged(subject, before, payload)
        stack.tally.record(subject, _decodes_as(payload, Activity))
        reply = await stack.rpc_case(rpc_subject("sleep.run"), RPC_OPS["sleep.run"], sleep_run)
        if (
            isinstance(reply, RpcError)
            or reply is None
            or reply.run is None
            or reply.run.status in ("queued", "running")
        ):
            stack.tally.violated(subject, f"the sleep run after it did not finish: {reply}", payload)
    _assert_clean(stack, subject)
    _assert_clean(stack, rpc_subject("sleep.run"))


# --- the oracle and the bugs it found ----------------------------------------------------------
async def test_the_checks_catch_a_crash_and_a_write_on_rejection(stack: FuzzStack) -> None:
    """The properties can fail: a deliberately broken endpoint's 500 and its write before a 400 are caught."""
    op = RpcOp("fuzz.selfcheck", MemoryGetRequest, MemoryGetResult, "fuzz")
    marker = f"selfcheck-{uuid.uuid4().hex[:6]}"

    async def broken(req: MemoryGetRequest) -> MemoryGetResult:
        if req.id.startswith("1"):
            await stack.pool.execute('INSERT INTO settings (owner, "values") VALUES ($1, $2)', marker, {})
            raise ValidationFailed("refused, but after writing")
        raise RuntimeError("boom")

    server = RpcServer(stack.nc, "fuzz-selfcheck", "0.0.0")
    await server.start()
    await server.add(op, broken, subject="mem.v1.fuzz.selfcheck")
    await server.wait_subscribed()
    try:
        for memory_id in (str(uuid.UUID(int=0)), "10000000-0000-0000-0000-000000000000"):
            payload = encode(MemoryGetRequest(owner=OWNER, id=memory_id))
            await stack.rpc_case("mem.v1.fuzz.selfcheck", op, payload, label=op.name)
        crash, write = stack.tally.of(op.name)
        assert "500 internal" in crash
        assert "rejected, yet tables changed: settings" in write
    finally:
        stack.tally.discard(op.name)
        await server.drain()
        await stack.pool.execute("DELETE FROM settings WHERE owner = $1", marker)
        stack.forget_digest()


@pytest.mark.parametrize("op_name", ["retrieve", "inject", "summarize"])
async def test_nul_in_session_id_is_a_400(stack: FuzzStack, seeds: Seeds, op_name: str) -> None:
    """Found by this fuzzing: a NUL in ``session_id`` reached PostgreSQL and came back as a 503
    (retrieve, inject) or a 500 (summarize)."""
    example = msgspec.structs.replace(rpc_examples(seeds)[op_name], session_id="s\x001")
    with pytest.raises(ValidationFailed, match=r"\$\.session_id"):
        await call(stack.nc, op_name, example)


# --- afterwards ------------------------------------------------------------------------------------
async def test_rpc_payloads_at_and_over_the_nats_max_payload(stack: FuzzStack, seeds: Seeds) -> None:
    """A request exactly at nats-server's max_payload reaches each service, which answers 413
    with nothing written; one byte over it the client refuses to send at all."""
    examples = rpc_examples(seeds)
    for subject, op_name in RPC_SUBJECTS:
        if op_name == HEALTH_OP.name:
            continue
        example = json.loads(msgspec.json.encode(examples[op_name]))
        reply = await stack.rpc_case(subject, RPC_OPS[op_name], padded_to(example, NATS_MAX_PAYLOAD))
        assert isinstance(reply, RpcError) and reply.code == 413, (subject, reply)
        _assert_clean(stack, subject)
    with pytest.raises(MaxPayloadError):
        await stack.nc.request(rpc_subject("memory.create"), b" " * (NATS_MAX_PAYLOAD + 1), timeout=5)


async def test_every_service_is_still_up(stack: FuzzStack, seeds: Seeds) -> None:
    """Health ok everywhere, no background task stopped, a fresh chat event flows to its vectors."""
    for service in SERVICES:
        health = await call(stack.nc, HEALTH_OP, HealthRequest(deep=True), subject=f"{rpc_subject('health')}.{service}")
        assert health.status == "ok", health
        ctx = stack.contexts[service]
        assert not ctx.stop.is_set(), f"{service} stopped itself"
        assert all(not t.done() for t in ctx.tasks), [t.get_name() for t in ctx.tasks if t.done()]
    owner = f"fuzz-after-{uuid.uuid4().hex[:6]}"
    await MemoryClient(stack.nc).publish_chat(owner, [{"role": "user", "content": "I prefer jasmine tea."}])
    await stack.settle()
    rows = await stack.pool.fetch(
        "SELECT m.id, e.memory_id IS NOT NULL AS embedded FROM memories m"
        " LEFT JOIN memory_embeddings e ON e.memory_id = m.id WHERE m.owner = $1",
        owner,
    )
    assert rows and all(r["embedded"] for r in rows), rows
    assert not stack.dlq.stray, [letter.error for letter in stack.dlq.stray]
    assert not stack.tally.violations, "\n".join(str(v) for v in stack.tally.violations[:20])
