"""Messages that flow through JetStream: chat events, pipeline jobs, activity, dead letters."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from memoryd.schemas.base import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES_PER_EVENT,
    AgentId,
    MemoryId,
    NonBlank,
    Owner,
    Role,
    SessionId,
    Wire,
)

EventId = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[^\s\x00-\x1f\x7f-\x9f]+$(?!\n)")]
MessageText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=r"\S")]
#: Most parts one message's content may have (OpenAI content-part arrays).
MAX_CONTENT_PARTS = 1_000
#: Part types whose ``text`` is the message's text (Chat Completions and Responses shapes).
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
#: OpenAI content parts, kept as they came (``image_url``, ``input_audio``, ``file``, ...).
ContentParts = Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1, max_length=MAX_CONTENT_PARTS)]


def content_text(content: str | list[dict[str, Any]]) -> str:
    """A message content's text: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") in TEXT_PART_TYPES and isinstance(p.get("text"), str))


def other_parts(content: str | list[dict[str, Any]]) -> dict[str, int]:
    """How many parts of each non-text type a content has (``{"image_url": 2}``)."""
    counts: dict[str, int] = {}
    if isinstance(content, list):
        for part in content:
            kind = part.get("type")
            if kind not in TEXT_PART_TYPES:
                key = kind if isinstance(kind, str) else "unknown"
                counts[key] = counts.get(key, 0) + 1
    return counts


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One message of a chat request or response, OpenAI shape: ``content`` is a string or a
    content-part array (``[{"type": "text", "text": ...}, {"type": "image_url", ...}]``).

    ``text`` is what memory reads: the string, or the text parts joined; other parts are
    kept as they are (injection passes them on) and never an error.
    """

    role: Role
    content: MessageText | ContentParts
    name: Annotated[str, msgspec.Meta(max_length=256)] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.content, list) and len(self.text) > MAX_MESSAGE_CHARS:
            raise ValueError(f"text parts hold {len(self.text)} characters; the limit is {MAX_MESSAGE_CHARS}")

    @property
    def text(self) -> str:
        return content_text(self.content)


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
    #: the agent the conversation is with: its memories carry it (mem0's ``agent_id``)
    agent_id: AgentId | None = None
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
    agent_id: AgentId | None = None


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
    kind: Literal["chat", "api", "read"] = "chat"
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
