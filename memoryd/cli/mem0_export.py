"""A mem0 export read as memoryd import lines, per owner (pure: no I/O).

mem0's ``get_all`` output (or its export JSON) is a list, or ``{"results": [...]}``, of
``{"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id", "agent_id"?,
"run_id"?}``. Each entry becomes a ``MemoryRecord``: ``user_id`` is the owner, ``agent_id`` the
agent, ``run_id`` the session, ``memory`` the content; ``metadata`` and ``created_at`` are kept,
and the key ``mem0:<id>`` (with an id derived from mem0's) makes a re-import match the memories
it made, so importing the same export twice changes nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

import msgspec

from memoryd.schemas.base import Owner
from memoryd.schemas.memory import ImportLineError, MemoryRecord

#: Namespace of the ids of memories imported from mem0 entries whose id is not a UUID.
MEM0_NAMESPACE = uuid.UUID("6d656d30-2d69-6d70-8000-6d656d6f7279")
KEY_PREFIX = "mem0:"


class Mem0Entry(msgspec.Struct, kw_only=True):
    """One memory of a mem0 export (other fields are ignored)."""

    id: str
    memory: str
    hash: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


def entries_of(data: bytes | str) -> list[Any]:
    """The export's entries (``ValueError`` when it is neither a list nor ``{"results": [...]}``)."""
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        doc = doc["results"]
    if not isinstance(doc, list):
        raise ValueError('a mem0 export is a list of memories, or {"results": [...]}')
    return doc


def memory_id(mem0_id: str) -> str:
    """mem0's id when it is a UUID (so the memory keeps it), else one derived from it (stable)."""
    try:
        return str(uuid.UUID(mem0_id))
    except ValueError:
        return str(uuid.uuid5(MEM0_NAMESPACE, mem0_id))


def record_of(entry: Mem0Entry, owner: str, now: datetime) -> MemoryRecord:
    created = entry.created_at or now
    return MemoryRecord(
        id=memory_id(entry.id),
        owner=owner,
        memory_type="factual",
        content=entry.memory,
        source="import",
        state="active",
        created_at=created,
        updated_at=entry.updated_at or created,
        content_hash=hashlib.sha256(entry.memory.encode("utf-8", "surrogatepass")).hexdigest(),
        key=KEY_PREFIX + entry.id,
        session_id=entry.run_id,
        agent_id=entry.agent_id,
        metadata=dict(entry.metadata or {}),
    )


def owner_problem(owner: str | None) -> str | None:
    """Why ``owner`` cannot be a memoryd owner (letters, digits, ``_ - : @``), or None."""
    if owner is None:
        return None
    try:
        msgspec.convert(owner, Owner)
    except msgspec.ValidationError:
        return f"{owner!r} cannot be an owner (letters, digits, _ - : @; at most 128): name one with --owner"
    return None


def import_lines(
    data: bytes | str, now: datetime, owner: str | None = None
) -> tuple[dict[str, list[str]], list[ImportLineError]]:
    """The import lines of each owner (``owner`` when given, else each entry's ``user_id``), and
    the entries that cannot be imported (``line``: the entry's 1-based position)."""
    by_owner: dict[str, list[str]] = {}
    errors: list[ImportLineError] = []
    for number, raw in enumerate(entries_of(data), start=1):
        try:
            entry = msgspec.convert(raw, Mem0Entry)
        except msgspec.ValidationError as exc:
            errors.append(ImportLineError(line=number, error=str(exc)))
            continue
        whose = owner or entry.user_id
        problem = owner_problem(whose)
        if whose is None or problem is not None:
            errors.append(ImportLineError(line=number, error=problem or "no user_id: name the owner with --owner"))
            continue
        line = msgspec.json.encode(record_of(entry, whose, now)).decode()
        by_owner.setdefault(whose, []).append(line)
    return by_owner, errors
