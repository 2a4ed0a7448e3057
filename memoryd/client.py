"""``MemoryClient``: what an application uses to talk to memoryd over NATS.

    async with await MemoryClient.connect() as memory:  # finds `memoryd up` (see memoryd/credentials.py)
        await memory.publish_chat("alice", [{"role": "user", "content": "I prefer TypeScript."}])
        await memory.wait_searchable("alice", "TypeScript")
        hits = await memory.retrieve("alice", "which language?")

``connect`` takes a URL, ``user``/``password`` or a credentials file, else the environment
(``MEMORYD_NATS_URL``/``_CREDENTIALS``), else the file ``memoryd up`` wrote. ``publish_chat``
validates and size-checks the event as the service will and publishes it under
``subjects.chat_msg_id`` (owner, event id, digest): a retry is stored once and no other owner's
id can suppress it. Every other call (the memory API is in ``memoryd.client_memories``) is an RPC
returning the result Struct or raising the typed error (an owner-bound user acting for another
owner: ``Forbidden``). Each call is an OpenTelemetry span (API only) whose ``traceparent`` travels
with the message.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client

from memoryd import tracing
from memoryd.access import Access, PermissionWatch
from memoryd.client_memories import MemoryCalls
from memoryd.codec import decode, encode, validation_failed
from memoryd.connect import NatsEndpoint, connect
from memoryd.credentials import Role, resolve
from memoryd.errors import DependencyDown, TooLarge, ValidationFailed
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP, RpcOp
from memoryd.schemas.base import MAX_PAYLOAD_BYTES
from memoryd.schemas.events import ChatEvent, ChatMessage
from memoryd.schemas.graph import EntityListRequest, EntityListResult, RelationListRequest, RelationListResult
from memoryd.schemas.ops import (
    CleanupRequest,
    CleanupResult,
    EngineStatusRequest,
    EngineStatusResult,
    HealthRequest,
    HealthResult,
    SummarizeRequest,
    SummarizeResult,
)
from memoryd.schemas.retrieval import InjectRequest, InjectResult, RetrieveRequest, RetrieveResult
from memoryd.schemas.text import nul_path
from memoryd.subjects import MSG_ID_HEADER, chat_msg_id, rpc_subject

MessageLike = ChatMessage | Mapping[str, Any]


def _messages(messages: Sequence[MessageLike]) -> list[ChatMessage]:
    out = []
    for i, m in enumerate(messages):
        try:
            out.append(m if isinstance(m, ChatMessage) else msgspec.convert(dict(m), ChatMessage))
        except msgspec.ValidationError as exc:
            raise validation_failed(exc, prefix=f"$.messages[{i}]") from exc
    return out


def _encode(value: Any) -> bytes:
    try:
        return encode(value)
    except UnicodeEncodeError as exc:
        raise ValidationFailed(f"text is not valid UTF-8 (lone surrogate at position {exc.start})") from exc
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValidationFailed(f"cannot encode request: {exc}") from exc


class MemoryClient(MemoryCalls):
    """Async client of memoryd; wraps an existing NATS connection or opens its own.

    ``owners`` binds a wrapped connection to those owners (owner-bound subjects); ``role``
    says which role it has when that is known (``application`` or ``owner-bound``).
    """

    def __init__(
        self,
        nc: Client,
        *,
        timeout: float = 10.0,
        owns_connection: bool = False,
        role: Role | None = "application",
        owners: Sequence[str] | None = None,
        user: str | None = None,
        watch: PermissionWatch | None = None,
    ) -> None:
        self.nc = nc
        self.timeout = timeout
        self._owns = owns_connection
        self.access = Access(role, owners, user, watch)

    @classmethod
    async def connect(
        cls,
        nats_url: str | None = None,
        *,
        user: str | None = None,
        password: str | None = None,
        credentials: str | os.PathLike[str] | None = None,
        owners: Sequence[str] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        timeout: float = 10.0,
        name: str = "memoryd-client",
    ) -> MemoryClient:
        """Connect as memoryd/credentials.py resolves it (``ConfigError`` naming the setting when
        nothing is configured or nothing answers); ``owners`` binds the user to those owners."""
        creds = resolve(
            nats_url, user=user, password=password, credentials=credentials, owners=owners, data_dir_path=data_dir
        )
        watch = PermissionWatch()
        nc = await connect(
            NatsEndpoint(url=creds.url, user=creds.user, password=creds.password),
            name,
            reconnect_forever=False,
            on_error=watch.on_error,
            inbox_prefix=creds.reply_prefix(),
        )
        return cls(
            nc,
            timeout=timeout,
            owns_connection=True,
            role=creds.role,
            owners=creds.owners,
            user=creds.user,
            watch=watch,
        )

    async def close(self) -> None:
        if self._owns:
            await self.nc.drain()

    async def __aenter__(self) -> MemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, op: str | RpcOp, request: Any, **kw: Any) -> Any:
        _encode(request)  # raise ValidationFailed for text that cannot go on the wire
        timeout = kw.pop("timeout", self.timeout)
        if "subject" in kw:
            return await call(self.nc, op, request, timeout=timeout, **kw)
        name = op if isinstance(op, str) else op.name

        async def send(subject: str) -> Any:
            return await call(self.nc, op, request, timeout=timeout, subject=subject)

        return await self.access.send(name, getattr(request, "owner", None), send)

    # --- chat events ---------------------------------------------------------------------------
    async def publish_chat(
        self,
        owner: str,
        messages: Sequence[MessageLike],
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        event_id: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        no_memory: bool = False,
        occurred_at: datetime | None = None,
    ) -> str:
        """Publish a chat event (``mem.v1.events.chat``, or ``.<owner>`` for an owner-bound
        user); return its event id."""
        event = ChatEvent(
            event_id=event_id or uuid.uuid4().hex,
            owner=owner,
            messages=_messages(messages),
            occurred_at=occurred_at or datetime.now(UTC),
            session_id=session_id,
            agent_id=agent_id,
            provider=provider,
            model=model,
            metadata=metadata or {},
            no_memory=no_memory,
        )
        data = _encode(event)
        if len(data) > MAX_PAYLOAD_BYTES:
            raise TooLarge(f"chat event is {len(data)} bytes; the limit is {MAX_PAYLOAD_BYTES}")
        decode(data, ChatEvent)  # the service's own validation, before anything is sent
        found = nul_path(msgspec.json.decode(data))
        if found:  # ingest would dead-letter the event after the publish was acknowledged: say so now
            raise ValidationFailed.at(found, "text contains a NUL character (U+0000)")

        async def send(subject: str) -> None:
            attributes = {"messaging.system": "nats", "messaging.destination.name": subject, "memoryd.owner": owner}
            with tracing.span(f"publish {subject}", tracing.SpanKind.PRODUCER, attributes=attributes) as span:
                span.set_attribute("memoryd.event_id", event.event_id)
                headers = tracing.inject({MSG_ID_HEADER: chat_msg_id(owner, event.event_id, data)})
                try:
                    await self.nc.jetstream().publish(subject, data, headers=headers, timeout=self.timeout)
                except (nats.errors.Error, TimeoutError) as exc:
                    raise DependencyDown(f"cannot publish to {subject}: {type(exc).__name__}: {exc}") from exc

        await self.access.send(None, owner, send)
        return event.event_id

    # --- retrieval and operations --------------------------------------------------------------
    async def retrieve(self, owner: str, query: str = "", **options: Any) -> RetrieveResult:
        """Ranked memories for ``query`` (options as in ``RetrieveRequest``)."""
        result: RetrieveResult = await self._call("retrieve", RetrieveRequest(owner=owner, query=query, **options))
        return result

    async def wait_searchable(
        self, owner: str, query: str, *, timeout: float = 30.0, interval: float = 0.2, **options: Any
    ) -> RetrieveResult:
        """Retrieve ``query`` until it finds something (what was just published has been
        ingested and indexed); the first result with a hit, or ``TimeoutError``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = await self.retrieve(owner, query, **options)
            if result.memories:
                return result
            if loop.time() + interval > deadline:
                raise TimeoutError(f"no memory of {owner!r} matched {query!r} within {timeout} s")
            await asyncio.sleep(interval)

    async def inject(self, owner: str, messages: Sequence[MessageLike], **options: Any) -> InjectResult:
        """``messages`` with the owner's memory injected (options as in ``InjectRequest``)."""
        req = InjectRequest(owner=owner, messages=_messages(messages), **options)
        result: InjectResult = await self._call("inject", req)
        return result

    async def health(self, service: str | None = None, *, deep: bool = False) -> HealthResult:
        """Health of one service (``ingest``, ...), or of whichever answers first."""
        subject = f"{rpc_subject('health')}.{service}" if service else None
        result: HealthResult = await self._call(HEALTH_OP, HealthRequest(deep=deep), subject=subject)
        return result

    async def engine_status(self, owner: str | None = None) -> EngineStatusResult:
        result: EngineStatusResult = await self._call("engine.status", EngineStatusRequest(owner=owner))
        return result

    async def summarize(
        self, older_than_days: int, *, owner: str | None = None, session_id: str | None = None, dry_run: bool = False
    ) -> SummarizeResult:
        """Compact memories older than ``older_than_days`` into one summary per owner and session
        (originals archived, restorable); ``dry_run`` only counts the candidates. ``owner=None``:
        every owner (operator credentials)."""
        req = SummarizeRequest(older_than_days=older_than_days, owner=owner, session_id=session_id, dry_run=dry_run)
        result: SummarizeResult = await self._call("summarize", req, timeout=max(self.timeout, 60.0))
        return result

    async def cleanup(self, *, owner: str | None = None, dry_run: bool = False) -> CleanupResult:
        """Remove expired memories and those past ``retentionDays`` from every store (``owner=None``:
        every owner, operator credentials); ``dry_run`` reports what would go."""
        req = CleanupRequest(owner=owner, dry_run=dry_run)
        result: CleanupResult = await self._call("cleanup", req, timeout=max(self.timeout, 60.0))
        return result

    # --- the entity graph (read-only) ------------------------------------------------------------
    async def entities(
        self,
        owner: str,
        *,
        entity_id: str | None = None,
        q: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> EntityListResult:
        """The owner's entities, most mentioned first; with ``entity_id`` it and its neighbours."""
        req = EntityListRequest(owner=owner, entity_id=entity_id, q=q, kind=kind, limit=limit, offset=offset)
        result: EntityListResult = await self._call("entities.list", req)
        return result

    async def relations(
        self,
        owner: str,
        *,
        entity_id: str | None = None,
        relation: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> RelationListResult:
        """The owner's entity relations, newest first (affective edges carry emotion and kind)."""
        req = RelationListRequest(owner=owner, entity_id=entity_id, relation=relation, limit=limit, offset=offset)
        result: RelationListResult = await self._call("entities.relations", req)
        return result
