"""The authorization matrix (``shared.authz``) holds on a real nats-server with the real services.

nats-server runs with the ``auth.conf`` that ``memoryd up`` writes (``write_nats_auth``: every
role of ``shared.nats_auth`` plus one owner-bound client); ingest, extract, embed, retrieve
and sleep run in-process, each as its own NATS user. One connection per role tries every case
of the matrix (publish, subscribe, request) and the outcome is compared with the derived one:
``deny`` is nats-server's permissions violation, ``403`` the service's refusal (an RPC's error
reply, an import's line errors, a chat event dead-lettered as ``Forbidden``), ``allow`` any
other answer.

Every case expected to be denied or refused runs first, all roles at once; the database
digest (row count and hash of every table) must be the same after them, once the pipeline
is idle. The allowed cases run after that. ``MEMORYD_AUTHZ_REPORT=<file>`` writes the
figures (``make authz``; ``make security-docs`` renders them into docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client
from nats.aio.subscription import Subscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from memoryd.codec import decode, encode
from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from memoryd.local.up import credentials_file, nats_dir, write_nats_auth
from memoryd.schemas import ChatEvent, ChatMessage, Wire, dlq
from memoryd.schemas import conflicts as c
from memoryd.schemas import graph as gr
from memoryd.schemas import memory as m
from memoryd.schemas import ops as o
from memoryd.schemas import retrieval as r
from memoryd.subjects import (
    EMBED_CONSUMER,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    MSG_ID_HEADER,
    SLEEP_CONSUMER,
    SLEEP_STREAM,
    chat_msg_id,
    rpc_subject,
)
from shared import authz
from shared.authz import Case, Outcome
from shared.db.memories import content_hash
from shared.nats_auth import OPERATOR_ROLE, Credentials
from shared.service_names import BACKEND_SERVICES
from shared.settings.env import NatsConfig
from tests.support.digest import changed_tables, digest, digest_query
from tests.support.eventually import eventually
from tests.support.stack import consumers_idle, run_services, service_config

pytestmark = pytest.mark.integration

RUNNING = BACKEND_SERVICES
PIPELINE = [
    (EVENTS_STREAM, INGEST_CONSUMER),
    (JOBS_STREAM, EXTRACT_CONSUMER),
    (JOBS_STREAM, EMBED_CONSUMER),
    (SLEEP_STREAM, SLEEP_CONSUMER),
]
REPLY_TIMEOUT_S = 60.0  # generous: CI runners are loaded
SETTLE_TIMEOUT_S = 60.0
PER_ROLE_CONCURRENCY = 16
VIOLATION = re.compile(r'permissions violation for (publish|subscription) to "([^"]+)"')
NOW = datetime.now(UTC).replace(microsecond=0)


# --- what each case sends ------------------------------------------------------------------
def import_line(owner: str, global_memory: bool) -> str:
    text = f"authz import {uuid.uuid4().hex[:8]}"
    record = m.MemoryRecord(
        id=str(uuid.uuid4()),
        owner=owner,
        memory_type="factual",
        content=text,
        source="import",
        state="active",
        created_at=NOW,
        updated_at=NOW,
        content_hash=content_hash(text),
        scope="global" if global_memory else "apiKey",
    )
    return encode(record).decode()


def rpc_request(op: str, owner: str, global_memory: bool, global_id: str) -> Wire:
    """A valid, harmless request of ``op`` (dry runs, ids nobody holds, nothing older than a century)."""
    target = global_id if global_memory else str(uuid.uuid4())
    text = f"authz probe {uuid.uuid4().hex[:8]}"
    requests: dict[str, Wire] = {
        "memory.create": m.MemoryCreateRequest(
            owner=owner, content=text, scope="global" if global_memory else "apiKey"
        ),
        "memory.get": m.MemoryGetRequest(owner=owner, id=target),
        "memory.history": m.MemoryHistoryRequest(owner=owner, id=target),
        "memory.update": m.MemoryUpdateRequest(owner=owner, id=target, content=text),
        "memory.delete": m.MemoryDeleteRequest(owner=owner, id=target),
        "memory.restore": m.MemoryRestoreRequest(owner=owner, id=target),
        "memory.list": m.MemoryListRequest(owner=owner, limit=1),
        "memory.stats": m.MemoryStatsRequest(owner=owner),
        "memory.clear": m.MemoryClearRequest(owner=owner, older_than_days=36_500),
        "memory.export": m.MemoryExportRequest(owner=owner, limit=1),
        "memory.import": m.MemoryImportRequest(owner=owner, lines=import_line(owner, global_memory)),
        "memory.batch": m.MemoryBatchRequest(owner=owner, items=[m.BatchItem(content=text)]),
        "summarize": o.SummarizeRequest(older_than_days=36_500, owner=owner, dry_run=True),
        "cleanup": o.CleanupRequest(owner=owner, dry_run=True),
        "dlq.list": dlq.DlqListRequest(limit=1),
        "dlq.show": dlq.DlqShowRequest(seq=999_997),
        "dlq.replay": dlq.DlqReplayRequest(seqs=[999_999]),
        "dlq.drop": dlq.DlqDropRequest(seqs=[999_998]),
        "settings.get": o.SettingsGetRequest(owner=owner),
        "settings.put": o.SettingsPutRequest(owner=owner, values={}),
        "retrieve": r.RetrieveRequest(owner=owner, query="tea", limit=1),
        "inject": r.InjectRequest(owner=owner, messages=[ChatMessage(role="user", content="What do I drink?")]),
        "engine.status": o.EngineStatusRequest(owner=owner),
        "embed": r.EmbedRequest(texts=["tea"]),
        "reindex": o.ReindexRequest(owner=owner, dry_run=True),
        "sleep.run": o.SleepRunRequest(owner=owner),
        "sleep.status": o.SleepStatusRequest(owner=owner, limit=1),
        "conflicts.list": c.ConflictListRequest(owner=owner, limit=1),
        "conflicts.resolve": c.ConflictResolveRequest(owner=owner, id=str(uuid.uuid4()), action="dismiss"),
        "entities.list": gr.EntityListRequest(owner=owner, limit=1),
        "entities.relations": gr.RelationListRequest(owner=owner, limit=1),
        "health": o.HealthRequest(),
    }
    return requests[op.removeprefix("admin.")]


def chat_event(owner: str) -> tuple[bytes, dict[str, str], str]:
    event_id = f"authz-{uuid.uuid4().hex[:12]}"
    event = ChatEvent(
        event_id=event_id, owner=owner, messages=[ChatMessage(role="user", content="I prefer tea.")], occurred_at=NOW
    )
    payload = encode(event)
    return payload, {MSG_ID_HEADER: chat_msg_id(owner, event_id, payload)}, event_id


def owner_name(scope: str | None) -> str:
    return authz.OTHER if scope == "other" else authz.OWN


# --- one connection per role ---------------------------------------------------------------
class Prober:
    """Tries cases as one role and tells what happened to each."""

    def __init__(self, role: str, global_id: str) -> None:
        self.role = role
        self.global_id = global_id
        self.nc: Client | None = None
        self._violations: dict[tuple[str, str], asyncio.Event] = {}
        self._slots = asyncio.Semaphore(PER_ROLE_CONCURRENCY)
        self.spoofed_events: dict[str, Case] = {}  # event id -> case, refused asynchronously by ingest

    def _flag(self, kind: str, subject: str) -> asyncio.Event:
        # nats-py lower-cases the server's error text, subject included
        return self._violations.setdefault((kind, subject.lower()), asyncio.Event())

    async def on_error(self, exc: Exception) -> None:
        if match := VIOLATION.search(str(exc)):
            kind = "subscribe" if match.group(1) == "subscription" else "publish"
            self._flag(kind, match.group(2)).set()

    async def open(self, url: str, creds: Credentials) -> None:
        user = authz.user_of(self.role)
        cfg = NatsConfig(url=url, user=user, password=creds.passwords[user])
        self.nc = await connect(cfg, f"authz-{self.role}", reconnect_forever=False, on_error=self.on_error)

    async def sync(self) -> None:
        """Every -ERR the server sent for what was written so far has been seen: nats-py writes its
        PING ahead of queued commands, so let the flusher write them first."""
        assert self.nc is not None
        await asyncio.sleep(0.05)
        await self.nc.flush()

    async def run(self, batch: list[Case]) -> dict[Case, str]:
        subs: list[Subscription] = []
        pending: dict[Case, str] = {}

        async def one(case: Case) -> tuple[Case, str]:
            async with self._slots:
                return case, await self._try(case, subs)

        results = dict(await asyncio.gather(*(one(c) for c in batch)))
        await self.sync()
        for case, outcome in results.items():
            subject = authz.resolve(case.subject, self.role)
            if outcome == "sent":
                kind = "subscribe" if case.action == "subscribe" else "publish"
                outcome = Outcome.DENY if self._flag(kind, subject).is_set() else Outcome.ALLOW
            pending[case] = str(outcome)
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return pending

    async def _try(self, case: Case, subs: list[Subscription]) -> str:
        assert self.nc is not None
        subject = authz.resolve(case.subject, self.role)
        if case.action == "subscribe":
            subs.append(await self.nc.subscribe(subject))
            return "sent"
        if case.action == "publish":
            if case.family == "events":
                payload, headers, event_id = chat_event(owner_name(case.owner))
                if case.refused_by_service():
                    self.spoofed_events[event_id] = case
                await self.nc.publish(subject, payload, headers=headers)
            else:
                await self.nc.publish(subject, b"{}")
            return "sent"
        return await self._request(case, subject)

    async def _request(self, case: Case, subject: str) -> str:
        assert self.nc is not None
        if case.op is not None:
            payload = encode(rpc_request(case.op, owner_name(case.owner), case.global_memory, self.global_id))
        elif ".MSG.GET." in subject:
            payload = json.dumps({"last_by_subj": authz.msg_get_subject(subject, self.role)}).encode()
        else:
            payload = b""
        denied = asyncio.ensure_future(self._flag("publish", subject).wait())
        reply = asyncio.ensure_future(self.nc.request(subject, payload, timeout=REPLY_TIMEOUT_S))
        done, _ = await asyncio.wait({denied, reply}, return_when=asyncio.FIRST_COMPLETED)
        denied.cancel()
        if reply not in done:
            reply.cancel()
            with contextlib.suppress(BaseException):
                await reply
            return Outcome.DENY
        try:
            msg = reply.result()
        except NoRespondersError:
            return "no responder"
        except NatsTimeout:
            return "no reply"
        return classify(msg.data)

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.close()


def classify(data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return Outcome.ALLOW
    if isinstance(body, dict):
        if body.get("code") == 403 and "err_code" in body:
            return Outcome.REFUSED
        if "imported" in body and body.get("errors") and not (body["imported"] or body.get("updated")):
            return Outcome.REFUSED  # an import refuses line by line
    return Outcome.ALLOW


# --- the stack -----------------------------------------------------------------------------
@pytest.fixture
def authed_nats(tmp_path: Path) -> Iterator[tuple[EmbeddedNats, Credentials]]:
    """nats-server with the users and permissions ``memoryd up`` gives it (plus one owner-bound client)."""
    creds = Credentials.load_or_create(credentials_file(tmp_path))
    creds.add_bound_client(authz.BOUND_USER, [authz.OWN])
    server = EmbeddedNats(nats_dir(tmp_path), extra_config=write_nats_auth(tmp_path, creds))
    server.start()
    yield server, creds
    server.stop()


async def refused_events(operator: Client, spoofed: dict[str, Case]) -> set[str]:
    """Event ids of ``spoofed`` that ingest dead-lettered as Forbidden."""
    found: set[str] = set()

    async def all_in() -> bool:
        reply = await operator.request(rpc_subject("admin.dlq.list"), encode(dlq.DlqListRequest(limit=10_000)), 10)
        entries = decode(reply.data, dlq.DlqListResult).entries
        found.update(e.event_id for e in entries if e.event_id in spoofed and "Forbidden" in e.error)
        return found >= spoofed.keys()

    with contextlib.suppress(AssertionError):
        await eventually(all_in, "the spoofed chat events in the DLQ", timeout=20)
    return found


def write_report(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


async def test_every_role_on_every_subject_gets_what_the_role_definitions_say(
    authed_nats: tuple[EmbeddedNats, Credentials], pg_dsn: str, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    server, creds = authed_nats
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_INGEST_CLEANUP_INTERVAL_S", "0")
    plan = authz.matrix()

    async with contextlib.AsyncExitStack() as stack:
        users = {name: {"MEMORYD_NATS_USER": name, "MEMORYD_NATS_PASSWORD": creds.passwords[name]} for name in RUNNING}
        for name, env in users.items():  # each as its own user (one at a time: they provision the streams)
            await stack.enter_async_context(run_services([name], service_config(server.url, pg_dsn, env)))

        probers = {role: Prober(role, "") for role in authz.ROLES}
        for prober in probers.values():
            await prober.open(server.url, creds)
            stack.push_async_callback(prober.close)
        operator = probers[OPERATOR_ROLE].nc
        assert operator is not None

        # the global memory the "global" cases name (written the one way there is: by the operator)
        seed = m.MemoryCreateRequest(owner=authz.OWN, content="The office opens at nine.", scope="global")
        reply = await operator.request(rpc_subject("admin.memory.create"), encode(seed), REPLY_TIMEOUT_S)
        global_id = decode(reply.data, m.MemoryCreateResult).memory.id
        for prober in probers.values():
            prober.global_id = global_id

        # 1. everything that must be denied or refused, every role at once; nothing may change
        await eventually(
            lambda: consumers_idle(operator, PIPELINE), "the pipeline to be idle", timeout=SETTLE_TIMEOUT_S
        )
        sql = await digest_query(pool)
        before = await digest(pool, sql)
        refusals = {role: [c for c, row in plan if row[role] != Outcome.ALLOW] for role in authz.ROLES}
        observed: dict[str, dict[Case, str]] = dict(
            zip(
                authz.ROLES,
                await asyncio.gather(*(probers[role].run(refusals[role]) for role in authz.ROLES)),
                strict=True,
            )
        )
        spoofed = {  # chat events NATS let through that ingest must dead-letter
            eid: (role, c)
            for role, p in probers.items()
            for eid, c in p.spoofed_events.items()
            if observed[role][c] == Outcome.ALLOW
        }
        dead = await refused_events(operator, {eid: c for eid, (_role, c) in spoofed.items()})
        for eid, (role, case) in spoofed.items():
            if eid in dead and observed[role][case] == Outcome.ALLOW:
                observed[role][case] = Outcome.REFUSED
        await eventually(
            lambda: consumers_idle(operator, PIPELINE), "the pipeline to be idle", timeout=SETTLE_TIMEOUT_S
        )
        after = await digest(pool, sql)
        side_effects = changed_tables(before, after)

        # 2. everything that is allowed
        allowed = {role: [c for c, row in plan if row[role] == Outcome.ALLOW] for role in authz.ROLES}
        results = await asyncio.gather(*(probers[role].run(allowed[role]) for role in authz.ROLES))
        for role, got in zip(authz.ROLES, results, strict=True):
            observed[role].update(got)

    mismatches = [
        f"{role} {case.label} [{case.scope}]: expected {row[role]}, got {observed[role][case]}"
        for case, row in plan
        for role in authz.ROLES
        if observed[role][case] != str(row[role])
    ]
    tried = sum(len(v) for v in observed.values())
    summary = authz.counts() | {
        "tried": tried,
        "mismatches": len(mismatches),
        "side_effects": len(side_effects),
        "seconds": round(time.monotonic() - started, 1),
    }
    if report := os.environ.get("MEMORYD_AUTHZ_REPORT"):
        write_report(Path(report), summary)
    assert tried == summary["cells"]
    assert not side_effects, f"denied cases changed tables: {side_effects}"
    assert not mismatches, "\n".join(mismatches)
