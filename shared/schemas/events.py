"""Messages that flow through JetStream: chat events, pipeline jobs, activity, dead letters."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from .base import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES_PER_EVENT,
    MemoryId,
    NonBlank,
    Owner,
    Role,
    SessionId,
    Wire,
)

EventId = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^\S+$")]
MessageText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=r"\S")]


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One message of a chat request or response (OpenAI shape, text content)."""

    role: Role
    content: MessageText
    name: Annotated[str, msgspec.Meta(max_length=256)] | None = None


class ChatEvent(Wire, frozen=True):
    """Chat traffic an application publishes to ``mem.v1.events.chat``.

    ``messages`` may be the whole conversation so far; memoryd stores each distinct
    turn once per owner and session. ``no_memory`` opts the request out entirely.
    """

    event_id: EventId
    owner: Owner
    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1, max_length=MAX_MESSAGES_PER_EVENT)]
    occurred_at: datetime
    session_id: SessionId | None = None
    provider: str | None = None
    model: str | None = None
    metadata: dict[str, Any] = {}
    no_memory: bool = False


class Turn(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A stored raw turn handed to extraction."""

    role: Role
    content: str
    memory_id: MemoryId | None = None
    speaker: str | None = None


class ExtractJob(Wire, frozen=True):
    """Turns of one event that were new for their owner and session."""

    event_id: EventId
    owner: Owner
    turns: list[Turn]
    occurred_at: datetime
    session_id: SessionId | None = None


class EmbedJob(Wire, frozen=True):
    """A memory whose content needs a vector (new, changed or reindexed)."""

    memory_id: MemoryId
    owner: Owner
    content_hash: str
    reason: Literal["new", "update", "reindex", "restore"] = "new"


class SleepRun(Wire, frozen=True):
    """A queued consolidation run for one owner (``mem.v1.jobs.sleep``)."""

    owner: Owner
    run_id: str
    reason: Literal["scheduled", "manual"] = "scheduled"
    requested_at: datetime | None = None
    #: Scheduled runs: the slot they fill (the last run's start, or ``first``); a worker
    #: drops a job whose slot is no longer current. None for manual runs.
    slot: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class Activity(Wire, frozen=True):
    """An owner did something (chat or API write); feeds the sleep scheduler."""

    owner: Owner
    at: datetime
    kind: Literal["chat", "api"] = "chat"
    session_id: SessionId | None = None


class DeadLetter(Wire, frozen=True):
    """A message that failed ``max_deliver`` times or could not be decoded."""

    stage: NonBlank
    subject: str
    error: str
    deliveries: int
    payload: bytes
    failed_at: datetime
    headers: dict[str, str] = {}
