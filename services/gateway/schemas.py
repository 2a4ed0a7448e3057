"""Bodies and replies only the gateway has (everything else is the RPC catalogue's own Structs)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from memoryd.schemas.base import MAX_MESSAGES_PER_EVENT, AgentId, SessionId
from memoryd.schemas.events import ChatMessage, EventId
from memoryd.schemas.ops import HealthResult, SleepRunRecord


class ServicesHealth(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Deep health of every service (``status`` ok only when all are ok)."""

    status: str
    services: dict[str, HealthResult] = {}
    errors: dict[str, str] = {}


class SleepReceipt(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    run_id: str
    owner: str
    status: str
    receipt: str
    finished_at: datetime | None = None


class SleepReceiptsResult(msgspec.Struct, frozen=True, kw_only=True):
    receipts: list[SleepReceipt]

    @classmethod
    def of(cls, runs: list[SleepRunRecord]) -> SleepReceiptsResult:
        return cls(
            receipts=[
                SleepReceipt(
                    run_id=r.run_id, owner=r.owner, status=r.status, receipt=r.receipt, finished_at=r.finished_at
                )
                for r in runs
                if r.receipt
            ]
        )


class ChatPublishRequest(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A chat event as an application posts it (the owner comes from the key)."""

    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1, max_length=MAX_MESSAGES_PER_EVENT)]
    owner: str | None = None
    session_id: SessionId | None = None
    agent_id: AgentId | None = None
    event_id: EventId | None = None
    provider: str | None = None
    model: str | None = None
    metadata: dict[str, Any] = {}
    no_memory: bool = False
    occurred_at: datetime | None = None


class ChatPublishResult(msgspec.Struct, frozen=True, kw_only=True):
    """``duplicate``: this owner already published this very event (same id and fields) moments
    ago, so it is stored once; the same id from another owner is another event."""

    event_id: str
    duplicate: bool = False


class ExportQuery(msgspec.Struct, frozen=True, kw_only=True):
    owner: str | None = None
    include_archived: bool = True


class Readiness(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """``/readyz``: ``ready`` or ``not ready``; ``memory`` (every service's health) only for an operator key."""

    status: str
    memory: ServicesHealth | None = None
