"""Pure ingest rules (no I/O): which turns of a chat event are stored and how, the
opt-out header, text checks Postgres needs, size and clock limits, extract-job splitting
and list paging (import lines: ``logic.imports``).

Everything the chat consumer and the memory API decide without a database lives here
so it is tested without NATS or Postgres.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from memoryd.errors import Forbidden, TooLarge, ValidationFailed
from memoryd.schemas.base import MAX_CONTENT_CHARS, Role
from memoryd.schemas.events import ChatEvent, ExtractJob, Turn, other_parts
from memoryd.schemas.text import nul_path
from memoryd.subjects import CHAT_EVENTS, NO_MEMORY_HEADER

#: Header values that opt a request out of memory (case-insensitive).
NO_MEMORY_VALUES = frozenset({"true", "1", "yes"})
#: Extraction reads at most this much of a turn (its tail; docs/design.md "Extraction").
EXTRACT_TAIL_BYTES = 64 * 1024
#: An ExtractJob larger than this is split into parts (each published on its own).
MAX_EXTRACT_JOB_BYTES = 1024 * 1024
#: Encoded size limits of metadata: an event's (copied into each of its stored turns) and any
#: one memory's (API writes, imports, stored turns). With at most 1,000 turns per event, the
#: metadata one event can write is bounded by about 1,000 x (MAX_EVENT_METADATA_BYTES + ours).
MAX_EVENT_METADATA_BYTES = 8 * 1024
MAX_MEMORY_METADATA_BYTES = 16 * 1024
#: How far ahead of this service's clock a timestamp may be (clock skew between machines).
MAX_CLOCK_SKEW = timedelta(minutes=5)
GLOBAL_REFUSED = "global memories are written by an operator on mem.v1.rpc.admin.memory.*"


# --- headers and text ------------------------------------------------------------------------
def header_no_memory(headers: Mapping[str, str] | None) -> bool:
    """True when an ``x-memory-no-memory`` header (any case) says ``true|1|yes``."""
    for name, value in (headers or {}).items():
        if name.lower() == NO_MEMORY_HEADER and value.strip().lower() in NO_MEMORY_VALUES:
            return True
    return False


def check_text(fields: Mapping[str, Any]) -> None:
    """Raise ``ValidationFailed`` naming the first field whose text holds a NUL character."""
    for name, value in fields.items():
        found = nul_path(value, f"$.{name}")
        if found:
            raise ValidationFailed(f"text contains a NUL character (U+0000) - at `{found}`")


def check_metadata(metadata: Mapping[str, Any] | None, limit: int, path: str = "$.metadata") -> None:
    """Raise ``TooLarge`` when ``metadata`` encodes to more than ``limit`` bytes."""
    if not metadata:
        return
    size = len(msgspec.json.encode(metadata))
    if size > limit:
        raise TooLarge(f"metadata is {size} bytes; the limit is {limit} - at `{path}`")


def check_subject_owner(subject: str, owner: str) -> None:
    """An event on an owner-bound subject (``mem.v1.events.chat.<owner>``) must be that owner's:
    NATS permissions let a bound client publish only there, so it cannot act for another owner."""
    bound = subject.removeprefix(CHAT_EVENTS + ".") if subject.startswith(CHAT_EVENTS + ".") else None
    if bound is not None and bound != owner:
        raise Forbidden(f"an event on {subject} must be for owner {bound!r}, not {owner!r}")


def check_event(event: ChatEvent) -> None:
    """What decoding cannot check: text Postgres would reject, and the metadata size limit."""
    check_metadata(event.metadata, MAX_EVENT_METADATA_BYTES)
    check_text(
        {
            "session_id": event.session_id,
            "agent_id": event.agent_id,
            "provider": event.provider,
            "model": event.model,
            "messages": [{"content": m.text, "name": m.name} for m in event.messages],
        }
    )


def utc(ts: datetime) -> datetime:
    """A timezone-aware UTC datetime (a naive one is taken as UTC)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def check_expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    """``expires_at`` as UTC; ``ValidationFailed`` when it is not in the future."""
    if expires_at is None:
        return None
    when = utc(expires_at)
    if when <= now:
        raise ValidationFailed.at("$.expires_at", f"expires_at {when.isoformat()} is not in the future")
    return when


def text_hash(text: str) -> str:
    """sha256 hex of the UTF-8 text (the turn dedupe key; same as ``memories.content_hash``)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --- chat turns ------------------------------------------------------------------------------
def session_key(session_id: str | None, agent_id: str | None = None) -> str:
    """The ``turn_hashes`` session key: the session id, or '' for an event without one; an
    agent's events get a key of their own (two agents of one owner never share a turn)."""
    if agent_id is None:
        return session_id or ""
    return f"\x1fagent\x1f{agent_id}\x1f{session_id or ''}"


@dataclass(frozen=True)
class PlannedTurn:
    """One distinct turn of an event, ready to be stored and extracted."""

    index: int  # position in the event's messages
    role: Role
    hash: str  # of the full content (the dedupe key)
    content: str  # what is stored (cut to MAX_CONTENT_CHARS)
    extract_text: str  # what extraction reads (the tail)
    speaker: str | None
    created_at: datetime
    original_chars: int
    #: Non-text content parts of the message, by type (``{"image_url": 1}``): counted, not stored.
    other_parts: dict[str, int] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return len(self.content) < self.original_chars


def clip_head(text: str, max_chars: int = MAX_CONTENT_CHARS) -> str:
    return text if len(text) <= max_chars else text[:max_chars]


def clip_tail_bytes(text: str, max_bytes: int = EXTRACT_TAIL_BYTES) -> str:
    """The last ``max_bytes`` of the UTF-8 text, cut on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[-max_bytes:].decode("utf-8", "ignore")


def not_after(ts: datetime, now: datetime) -> datetime:
    """``ts`` as UTC, moved back to ``now`` when it lies more than ``MAX_CLOCK_SKEW`` ahead."""
    when = utc(ts)
    return now if when > now + MAX_CLOCK_SKEW else when


def plan_turns(event: ChatEvent, now: datetime | None = None) -> list[PlannedTurn]:
    """The event's distinct turns by (role, text hash), first occurrence kept.

    A message's text is its string content, or the text parts of a content-part array
    joined; a message with no text (an image alone) is not a turn. ``created_at`` is the
    event's ``occurred_at`` plus the turn's index in microseconds, so turns of one event
    keep their order when sorted by time. An ``occurred_at`` in the future (past the clock
    skew allowed) counts as ``now``: a client's clock cannot keep its turns first for the
    ``recent`` strategy.
    """
    base = not_after(event.occurred_at, now or datetime.now(UTC))
    seen: set[tuple[str, str]] = set()
    out: list[PlannedTurn] = []
    for i, msg in enumerate(event.messages):
        text = msg.text
        if not text.strip():
            continue
        digest = text_hash(text)
        if (msg.role, digest) in seen:
            continue
        seen.add((msg.role, digest))
        out.append(
            PlannedTurn(
                index=i,
                role=msg.role,
                hash=digest,
                content=clip_head(text),
                extract_text=clip_tail_bytes(text),
                speaker=msg.name,
                created_at=base + timedelta(microseconds=i),
                original_chars=len(text),
                other_parts=other_parts(msg.content),
            )
        )
    return out


def turn_metadata(event: ChatEvent, turn: PlannedTurn) -> dict[str, Any]:
    """Metadata of a stored raw turn: the application's event metadata, then ours (ours win)."""
    meta: dict[str, Any] = {
        **event.metadata,
        "role": turn.role,
        "event_id": event.event_id,
        "occurred_at": utc(event.occurred_at).isoformat(),
        "turn_index": turn.index,
    }
    if turn.speaker:
        meta["speaker"] = turn.speaker
    if event.provider:
        meta["provider"] = event.provider
    if event.model:
        meta["model"] = event.model
    if turn.other_parts:
        meta["content_parts"] = turn.other_parts
    if turn.truncated:
        meta["truncated"] = True
        meta["original_chars"] = turn.original_chars
    return meta


def extract_msg_id(owner: str, event_id: str, part: int = 0) -> str:
    """``Nats-Msg-Id`` of an event's ExtractJob (``:<part>`` only for a split job's later parts)."""
    base = f"extract:{owner}:{event_id}"
    return base if part == 0 else f"{base}:{part}"


def extract_jobs(
    event: ChatEvent, turns: Sequence[Turn], max_bytes: int = MAX_EXTRACT_JOB_BYTES
) -> list[tuple[str, ExtractJob]]:
    """The event's ExtractJob(s) with their msg ids; split by size, deterministically."""
    if not turns:
        return []
    parts: list[list[Turn]] = [[]]
    size = 0
    for turn in turns:
        n = len(msgspec.json.encode(turn)) + 1
        if parts[-1] and size + n > max_bytes:
            parts.append([])
            size = 0
        parts[-1].append(turn)
        size += n
    return [
        (
            extract_msg_id(event.owner, event.event_id, i),
            ExtractJob(
                event_id=event.event_id,
                owner=event.owner,
                turns=part,
                occurred_at=utc(event.occurred_at),
                session_id=event.session_id,
                agent_id=event.agent_id,
            ),
        )
        for i, part in enumerate(parts)
    ]


# --- listing ---------------------------------------------------------------------------------
def page_offset(limit: int, offset: int, page: int | None) -> int:
    """``page`` (1-based) wins over ``offset`` when given."""
    return (page - 1) * limit if page is not None else offset


def hit_rate(retrieved: int, total: int) -> float:
    """Share of the matching memories that retrieval ever returned (``last_accessed_at`` set)."""
    return round(retrieved / total, 4) if total else 0.0


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` literally anywhere (``%``, ``_`` and ``\\`` escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


# --- activity --------------------------------------------------------------------------------
class ActivityThrottle:
    """At most one activity announcement per owner per ``interval_s`` (the scheduler works in minutes)."""

    def __init__(self, interval_s: float, max_owners: int = 100_000) -> None:
        self.interval_s = interval_s
        self.max_owners = max_owners
        self._last: dict[str, float] = {}

    def due(self, owner: str, now: float) -> bool:
        last = self._last.get(owner)
        return last is None or now - last >= self.interval_s

    def mark(self, owner: str, now: float) -> None:
        if len(self._last) >= self.max_owners and owner not in self._last:
            self._last.clear()
        self._last[owner] = now
