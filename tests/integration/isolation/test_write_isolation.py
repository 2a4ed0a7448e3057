"""Tenant isolation of the write paths, as a property, with NATS authentication on.

nats-server runs with ``memoryd up``'s users (``tests.support.auth``); each service, each tenant
(an owner-bound user), the application role and the operator act as their own user. Hypothesis
drives sequences of writes, many hostile (other owners' or guessed ids, ``scope=global``, future
``created_at`` in imports, a bound user naming another owner, settings changes by clients,
per-owner quotas). After every step the database holds exactly the oracle's rows
(``oracle.Oracle``); each tenant's list, export, retrieve and inject show only its own rows and
the operator's global ones; ``memory.get`` of any other id is 404; no answer carries a canary its
caller may not see. ``MEMORYD_WRITE_ISOLATION_EXAMPLES`` (default 12) and ``_STEPS`` (default 4)
size the run; examples are derandomized unless ``MEMORYD_ISOLATION_RANDOM`` is set.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.errors import Forbidden, MemorydError, NotFound, QuotaExceeded
from memoryd.rpc import call
from memoryd.schemas import ChatMessage
from memoryd.schemas.memory import (
    MemoryClearRequest,
    MemoryCreateRequest,
    MemoryDeleteRequest,
    MemoryExportRequest,
    MemoryGetRequest,
    MemoryImportRequest,
    MemoryListRequest,
    MemoryRecord,
    MemoryRestoreRequest,
    MemoryUpdateRequest,
)
from memoryd.schemas.ops import SettingsPutRequest
from memoryd.schemas.retrieval import InjectRequest, RetrieveRequest
from memoryd.subjects import owner_rpc_subject
from tests.support.auth import AuthBus, run_as_roles, start_auth_bus

from .helpers import CANARY, property_settings, tenant_user
from .oracle import ImportLine, Oracle, Row

EXAMPLES = int(os.environ.get("MEMORYD_WRITE_ISOLATION_EXAMPLES", "12"))
STEPS = int(os.environ.get("MEMORYD_WRITE_ISOLATION_STEPS", "4"))
TENANTS = ("ana", "Ana", "ana:team", "bo-1")  # each with its own owner-bound user
STRANGER = "zed"  # no user of its own: only the application role writes for it
OWNERS = (*TENANTS, STRANGER)
KEYS = (None, None, "pref", "home")
WORDS = ("kestrel", "invoice", "marathon", "violin", "paella", "orchid")
HOSTILE = ("%", "_", "' OR owner <> '", "*", "ana%", "global")
IMPORT_KINDS = ("new", "archived", "foreign_id", "own_id", "global", "future")
_canaries = itertools.count(0x10000000)


def new_canary() -> str:
    return f"cnry{next(_canaries):08x}"


def text(owner: str, word: str, canary: str) -> str:
    return f"{owner} keeps notes on {word} {canary}"


# --- fixtures -----------------------------------------------------------------------------------
class Callers(msgspec.Struct, kw_only=True):
    """Every connection of the test: the application role, each tenant's bound user (raw and
    as a ``MemoryClient``), each tenant as a client that claims every owner, the operator."""

    app: Client
    app_client: MemoryClient
    bound: dict[str, Client]
    liars: dict[str, MemoryClient]
    operator: Client


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBus]:
    bound = {tenant_user(i): [owner] for i, owner in enumerate(TENANTS)}
    auth = start_auth_bus(Path(tmp_path_factory.mktemp("write-iso")), bound)
    yield auth
    auth.server.stop()


@pytest.fixture(scope="module")
async def callers(bus: AuthBus, pg_dsn: str) -> AsyncIterator[Callers]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORYD_EMBED_SOURCE", "local")
        mp.setenv("MEMORYD_INGEST_CLEANUP_INTERVAL_S", "0")
        mp.setenv("MEMORYD_RETRIEVE_EMBED_TIMEOUT_S", "20")
        async with run_as_roles(["ingest", "embed", "retrieve"], bus, pg_dsn):
            c = Callers(
                app=await bus.connect_as("client"),
                app_client=await bus.client_as("client"),
                bound={owner: await bus.connect_as(tenant_user(i)) for i, owner in enumerate(TENANTS)},
                liars={owner: await bus.client_as(tenant_user(i), owners=OWNERS) for i, owner in enumerate(TENANTS)},
                operator=await bus.connect_as("operator"),
            )
            yield c
            for nc in (c.app, c.operator, *c.bound.values()):
                await nc.close()
            for mc in (c.app_client, *c.liars.values()):
                await mc.close()


@pytest.fixture(scope="module")
async def oracle(callers: Callers) -> Oracle:
    """Two memories per owner from the application role, two global ones from the operator."""
    model = Oracle()
    for owner in OWNERS:
        for word in WORDS[:2]:
            await create(callers, model, ("app", owner), None, "apiKey", word)
    for owner in ("ana:team", "bo-1"):
        await create(callers, model, ("operator", owner), None, "global", "handbook")
    return model


# --- routes and expectations --------------------------------------------------------------------
Actor = tuple[str, str]  # ("bound" | "app" | "operator", owner)


def route(c: Callers, actor: Actor, op: str) -> tuple[Client, str, str | None]:
    """The connection, the op (``admin.<op>`` for the operator) and the subject for ``actor``."""
    kind, owner = actor
    if kind == "bound":
        return c.bound[owner], op, owner_rpc_subject(op, owner)
    if kind == "operator":
        return c.operator, f"admin.{op}", None
    return c.app, op, None


async def answer(refusal: type[MemorydError] | None, nc: Client, op: str, req: Any, subject: str | None) -> Any:
    """The call's result when ``refusal`` is None, else check that the call raised it."""
    if refusal is None:
        return await call(nc, op, req, subject=subject)
    with pytest.raises(refusal) as refused:
        await call(nc, op, req, subject=subject)
    assert not CANARY.search(refused.value.description), refused.value.description
    return None


async def create(c: Callers, model: Oracle, actor: Actor, key: str | None, scope: str, word: str) -> None:
    owner, operator = actor[1], actor[0] == "operator"
    canary = new_canary()
    refusal, match = model.expect_create(owner, key, scope, operator=operator)
    session = "s1" if scope == "session" else None
    req = MemoryCreateRequest(owner=owner, content=text(owner, word, canary), key=key, scope=scope, session_id=session)  # type: ignore[arg-type]
    nc, op, subject = route(c, actor, "memory.create")
    res = await answer(refusal, nc, op, req, subject)
    if res is None:
        return
    if match is not None:
        assert res.memory.id == match.id and not res.created
        match.canary, match.state = canary, "active"
        if operator:  # an operator write sets the scope it names
            match.scope = scope
            model.created(match, operator=True)
    else:
        assert res.created and res.memory.owner == owner
        model.created(Row(id=res.memory.id, owner=owner, canary=canary, scope=scope, key=key), operator=operator)


def import_line(model: Oracle, owner: str, line: ImportLine) -> str:
    now = datetime.now(UTC)
    created = now + timedelta(days=1) if line.kind == "future" else now - timedelta(days=1)
    rec = MemoryRecord(
        id=line.record_id,
        owner=STRANGER if line.kind == "foreign_id" else owner,  # the request's owner is the one that counts
        memory_type="factual",
        content=text(owner, "import", line.canary),
        source="import",
        state="archived" if line.kind == "archived" else "active",
        created_at=created,
        updated_at=created,
        content_hash="x",
        scope="global" if line.kind == "global" else "apiKey",
    )
    return msgspec.json.encode(rec).decode()


async def import_(c: Callers, model: Oracle, actor: Actor, lines: list[ImportLine]) -> None:
    owner, operator = actor[1], actor[0] == "operator"
    body = "\n".join(import_line(model, owner, line) for line in lines)
    nc, op, subject = route(c, actor, "memory.import")
    ok = model.expect_import(owner, lines, operator=operator)
    res = await call(nc, op, MemoryImportRequest(owner=owner, lines=body), subject=subject)
    assert bool(res.errors) != ok, (lines, res)
    assert not CANARY.search(msgspec.json.encode(res.errors).decode())


async def by_id(c: Callers, model: Oracle, actor: Actor, what: str, memory_id: str) -> None:
    owner, operator = actor[1], actor[0] == "operator"
    nc, op, subject = route(c, actor, f"memory.{what}")
    if what == "update":
        canary = new_canary()
        refusal = model.expect_update(owner, memory_id, canary, operator=operator)
        req: Any = MemoryUpdateRequest(owner=owner, id=memory_id, content=text(owner, "update", canary))
    elif what == "delete":
        refusal = model.expect_delete(owner, memory_id, operator=operator)
        req = MemoryDeleteRequest(owner=owner, id=memory_id)
    else:
        refusal = model.expect_restore(owner, memory_id)
        req = MemoryRestoreRequest(owner=owner, id=memory_id)
    res = await answer(refusal, nc, op, req, subject)
    if what == "delete" and res is not None:
        assert res.removed.rows == 1


async def clear(c: Callers, model: Oracle, actor: Actor) -> None:
    nc, op, subject = route(c, actor, "memory.clear")
    expected = model.expect_clear(actor[1])
    res = await call(nc, op, MemoryClearRequest(owner=actor[1]), subject=subject)
    assert res.count == expected


async def impersonate(c: Callers, model: Oracle, tenant: str, victim: str, what: str, memory_id: str) -> None:
    """A bound user names ``victim`` in a request on its own subject (403 from the service) and
    on the victim's subject (NATS refuses it: ``Forbidden`` from the client)."""
    requests: dict[str, Any] = {
        "memory.create": MemoryCreateRequest(owner=victim, content=text(victim, "forged", new_canary())),
        "memory.update": MemoryUpdateRequest(owner=victim, id=memory_id, content=f"forged {new_canary()}"),
        "memory.delete": MemoryDeleteRequest(owner=victim, id=memory_id),
        "memory.clear": MemoryClearRequest(owner=victim),
        "memory.import": MemoryImportRequest(
            owner=victim, lines=import_line(model, victim, ImportLine("new", memory_id, new_canary()))
        ),
        "memory.list": MemoryListRequest(owner=victim),
        "retrieve": RetrieveRequest(owner=victim, query="notes", strategy="exact"),
    }
    req = requests[what]
    await answer(Forbidden, c.bound[tenant], what, req, owner_rpc_subject(what, tenant))
    liar = c.liars[tenant]
    with pytest.raises(Forbidden):
        await liar.access.send(what, victim, lambda subject: call(liar.nc, what, req, subject=subject))


async def settings_refused(c: Callers, tenant: str, victim: str) -> None:
    """Neither role may change settings, for any owner."""
    req = SettingsPutRequest(owner=victim, values={"maxMemories": 1})
    for mc in (c.app_client, c.liars[tenant]):
        with pytest.raises(Forbidden):
            await mc.access.send("settings.put", victim, lambda s, mc=mc: call(mc.nc, "settings.put", req, subject=s))


async def quota_for_one_owner(c: Callers, model: Oracle, owner: str, other: str) -> None:
    """The operator caps ``owner`` at what it holds: its creates get 429, ``other``'s do not."""
    held = len(model.owned(owner))
    await call(c.operator, "settings.put", SettingsPutRequest(owner=owner, values={"maxMemories": max(held, 1)}))
    for _ in range(50):  # ingest's settings cache follows the change
        try:
            await create(c, model, ("app", owner), None, "apiKey", "quota")
        except QuotaExceeded:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"{owner}'s quota never applied")
    await create(c, model, ("app", other), None, "apiKey", "quota")
    await call(c.operator, "settings.put", SettingsPutRequest(owner=owner, values={"maxMemories": 0}))
    for _ in range(50):
        try:
            await create(c, model, ("app", owner), None, "apiKey", "quota")
            return
        except QuotaExceeded:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{owner}'s quota never lifted")


# --- the views after each step --------------------------------------------------------------------
async def export_ids(nc: Client, owner: str, subject: str | None, page: int) -> list[str]:
    ids: list[str] = []
    after: str | None = None
    while True:
        res = await call(
            nc, "memory.export", MemoryExportRequest(owner=owner, after_id=after, limit=page), subject=subject
        )
        ids += [msgspec.json.decode(line, type=MemoryRecord).id for line in res.lines.splitlines()]
        if res.next_after_id is None:
            return ids
        after = res.next_after_id


def bound_subject(op: str, owner: str | None) -> str | None:
    return owner_rpc_subject(op, owner) if owner else None


async def check_views(data: st.DataObject, c: Callers, model: Oracle, pool: asyncpg.Pool) -> None:
    rows = await pool.fetch("SELECT id::text, owner, content, state, scope, key FROM memories")
    stored = {r["id"]: (r["owner"], *CANARY.findall(r["content"]), r["state"], r["scope"], r["key"]) for r in rows}
    assert stored == model.snapshot()

    page = data.draw(st.integers(1, 8), label="export page")
    for owner in OWNERS:
        mine = model.owned(owner)
        listed = await call(c.app, "memory.list", MemoryListRequest(owner=owner, limit=1000))
        assert {m.id for m in listed.memories} == mine and not model.leaks(listed, mine)
        for nc, bound_owner in [(c.bound[owner], owner)] if owner in c.bound else []:
            listed = await call(
                nc,
                "memory.list",
                MemoryListRequest(owner=owner, limit=1000),
                subject=bound_subject("memory.list", bound_owner),
            )
            assert {m.id for m in listed.memories} == mine and not model.leaks(listed, mine)
            exported = await export_ids(nc, owner, bound_subject("memory.export", bound_owner), page)
            assert sorted(exported) == sorted(mine)
            exact = RetrieveRequest(owner=owner, query="notes", strategy="exact", limit=100, max_tokens=8000)
            res = await call(nc, "retrieve", exact, subject=bound_subject("retrieve", bound_owner))
            assert {m.id for m in res.memories} <= model.allowed(owner) and not model.leaks(res, model.allowed(owner))

    owner = data.draw(st.sampled_from(OWNERS), label="asking owner")
    allowed = model.allowed(owner)
    others = sorted({model.rows[i].canary for i in model.rows} - {model.rows[i].canary for i in allowed})
    vocabulary = [*WORDS, *HOSTILE, *others]  # other owners' canaries, asked for by name
    query = " ".join(pick(data, vocabulary, "word") for _ in range(data.draw(st.integers(1, 3), label="words")))
    strategy = data.draw(st.sampled_from(["semantic", "hybrid"]), label="strategy")
    req = RetrieveRequest(owner=owner, query=query, strategy=strategy, limit=40, max_tokens=8000)  # type: ignore[arg-type]
    res = await call(c.app, "retrieve", req)
    assert {m.id for m in res.memories} <= allowed and not model.leaks(res, allowed)
    inject = InjectRequest(owner=owner, messages=[ChatMessage(role="user", content=query)], max_tokens=8000)
    injected = await call(c.app, "inject", inject)
    echoed = [m.content.replace(query, "") for m in injected.messages]  # the query may name a canary
    assert {m.id for m in injected.injected} <= allowed
    assert not model.leaks([injected.injected, injected.context, echoed], allowed)

    for memory_id in [
        pick(data, model.guesses(), "probe") for _ in range(data.draw(st.integers(1, 3), label="probes"))
    ]:
        get = MemoryGetRequest(owner=owner, id=memory_id)
        await answer(None if memory_id in model.owned(owner) else NotFound, c.app, "memory.get", get, None)


# --- the property -------------------------------------------------------------------------------
def pick(data: st.DataObject, items: list[str], label: str) -> str:
    """One of ``items``, a list that changes as the world does: drawn as an index, so that the
    same choices always make the same draws (Hypothesis replays choice sequences)."""
    return items[data.draw(st.integers(0, 1 << 16), label=label) % len(items)]


def actors() -> st.SearchStrategy[Actor]:
    return st.one_of(
        st.tuples(st.just("bound"), st.sampled_from(TENANTS)), st.tuples(st.just("app"), st.sampled_from(OWNERS))
    )


async def step(data: st.DataObject, c: Callers, model: Oracle) -> str:
    """One drawn operation; its name."""
    kind = data.draw(
        st.sampled_from(
            [
                "create",
                "create",
                "update",
                "delete",
                "restore",
                "import",
                "import",
                "clear",
                "impersonate",
                "settings",
                "operator",
                "quota",
            ]
        ),
        label="step",
    )
    actor = data.draw(actors(), label="actor")
    guess = pick(data, [*model.guesses(), str(data.draw(st.uuids(), label="random id"))], "id")
    if kind == "create":
        scope = data.draw(st.sampled_from(["apiKey", "apiKey", "session", "global"]), label="scope")
        await create(c, model, actor, data.draw(st.sampled_from(KEYS)), scope, data.draw(st.sampled_from(WORDS)))
    elif kind in ("update", "delete", "restore"):
        await by_id(c, model, actor, kind, guess)
    elif kind == "import":
        specs = data.draw(st.lists(st.sampled_from(IMPORT_KINDS), min_size=1, max_size=3), label="lines")
        owned = sorted(model.owned(actor[1])) or [guess]
        foreign = sorted(set(model.rows) - set(owned)) or [guess]
        lines = [
            ImportLine(
                kind=k,  # type: ignore[arg-type]
                record_id={
                    "own_id": pick(data, owned, "own id"),
                    "foreign_id": pick(data, foreign, "foreign id"),
                }.get(k, str(data.draw(st.uuids()))),
                canary=new_canary(),
            )
            for k in specs
        ]
        await import_(c, model, actor, lines)
    elif kind == "clear":
        await clear(c, model, actor)
    elif kind == "impersonate":
        tenant = data.draw(st.sampled_from(TENANTS), label="tenant")
        victim = data.draw(st.sampled_from([o for o in OWNERS if o != tenant]), label="victim")
        what = data.draw(
            st.sampled_from(
                [
                    "memory.create",
                    "memory.update",
                    "memory.delete",
                    "memory.clear",
                    "memory.import",
                    "memory.list",
                    "retrieve",
                ]
            ),
            label="op",
        )
        await impersonate(c, model, tenant, victim, what, guess)
    elif kind == "settings":
        tenant = data.draw(st.sampled_from(TENANTS), label="tenant")
        await settings_refused(c, tenant, data.draw(st.sampled_from(OWNERS), label="victim"))
    elif kind == "operator":
        owner = data.draw(st.sampled_from(OWNERS), label="global owner")
        what = data.draw(st.sampled_from(["create", "update", "delete", "import"]), label="admin op")
        shared = sorted(model.shared() & model.owned(owner)) or [guess]
        if what == "create":
            await create(c, model, ("operator", owner), data.draw(st.sampled_from(KEYS)), "global", "handbook")
        elif what == "import":
            await import_(
                c, model, ("operator", owner), [ImportLine("global", str(data.draw(st.uuids())), new_canary())]
            )
        else:
            await by_id(c, model, ("operator", owner), what, pick(data, shared, "global id"))
    else:
        owner, other = data.draw(st.lists(st.sampled_from(OWNERS), min_size=2, max_size=2, unique=True), label="quota")
        await quota_for_one_owner(c, model, owner, other)
    return kind


@pytest.mark.timeout(900)  # about two minutes on an idle runner; a loaded one needs more
@property_settings(EXAMPLES)
@given(data=st.data())
async def test_no_write_crosses_an_owner(
    data: st.DataObject, callers: Callers, oracle: Oracle, pool: asyncpg.Pool
) -> None:
    await check_views(data, callers, oracle, pool)
    for _ in range(data.draw(st.integers(1, STEPS), label="steps")):
        await step(data, callers, oracle)
        await check_views(data, callers, oracle, pool)
