"""Pure checks of ``memory.import`` lines (no I/O): decode, refuse what an owner may not
write (``scope=global`` off the operator's subject, timestamps in the future, oversize
metadata), the stable id of a record whose id belongs to another owner, and the
"unchanged" comparison.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime

import msgspec

from memoryd.schemas.base import MAX_CONTENT_CHARS, MAX_KEY_LEN, MEMORY_TYPES, AgentId, SessionId
from memoryd.schemas.depth import MAX_JSON_DEPTH, json_depth_exceeds
from memoryd.schemas.memory import ImportLineError, MemoryRecord
from memoryd.schemas.text import nul_path
from services.ingest.logic.chat import (
    GLOBAL_REFUSED,
    MAX_CLOCK_SKEW,
    MAX_MEMORY_METADATA_BYTES,
    utc,
)

#: Namespace of the ids given to imported records whose id belongs to another owner.
IMPORT_NAMESPACE = uuid.UUID("6d656d6f-7279-6400-8000-696d706f7274")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")

_record_decoder = msgspec.json.Decoder(MemoryRecord)


def _check_record(rec: MemoryRecord, now: datetime, operator: bool) -> str | None:
    if rec.scope == "global" and not operator:
        return f"{GLOBAL_REFUSED} - at `$.scope`"
    if rec.scope == "session" and rec.session_id is None:
        return "scope 'session' needs a session_id - at `$.session_id`"
    for name in ("created_at", "updated_at", "last_accessed_at"):
        ts = getattr(rec, name)
        if ts is not None and utc(ts) > now + MAX_CLOCK_SKEW:
            return f"{name} {utc(ts).isoformat()} is in the future - at `$.{name}`"
    if len(msgspec.json.encode(rec.metadata)) > MAX_MEMORY_METADATA_BYTES:
        return f"metadata is over {MAX_MEMORY_METADATA_BYTES} bytes - at `$.metadata`"
    if not _UUID.match(rec.id):
        return f"id {rec.id!r} is not a UUID - at `$.id`"
    if not rec.content.strip():
        return "content is empty or whitespace - at `$.content`"
    if len(rec.content) > MAX_CONTENT_CHARS:
        return f"content has {len(rec.content)} characters; the limit is {MAX_CONTENT_CHARS} - at `$.content`"
    if rec.key is not None and (not rec.key.strip() or len(rec.key) > MAX_KEY_LEN):
        return f"key must be 1..{MAX_KEY_LEN} characters and not blank - at `$.key`"
    for name, tp in (("session_id", SessionId), ("agent_id", AgentId)):  # as every request checks them
        try:
            msgspec.convert(getattr(rec, name), tp | None)
        except msgspec.ValidationError as exc:
            return f"{exc} - at `$.{name}`"
    if rec.memory_type not in MEMORY_TYPES:  # pragma: no cover - the decoder checks the Literal
        return f"unknown memory_type {rec.memory_type!r}"
    found = nul_path(msgspec.to_builtins(rec))
    if found:
        return f"text contains a NUL character (U+0000) - at `{found}`"
    return None


def parse_import(
    lines: str, now: datetime, *, operator: bool = False
) -> tuple[list[tuple[int, MemoryRecord]], list[ImportLineError]]:
    """Decode and check every non-blank line; line numbers are 1-based.

    ``scope=global`` lines are refused unless ``operator`` (the operator's subject), and so
    are timestamps in the future (a future ``created_at`` would keep a memory first for
    the ``recent`` strategy).
    """
    records: list[tuple[int, MemoryRecord]] = []
    errors: list[ImportLineError] = []
    for number, line in enumerate(lines.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            if json_depth_exceeds(line):
                raise msgspec.DecodeError(f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
            rec = _record_decoder.decode(line)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
            errors.append(ImportLineError(line=number, error=str(exc) or type(exc).__name__))
            continue
        problem = _check_record(rec, now, operator)
        if problem:
            errors.append(ImportLineError(line=number, error=problem))
        else:
            records.append((number, rec))
    return records, errors


def import_id(owner: str, record_id: str) -> uuid.UUID:
    """The id an imported record gets when its own id belongs to another owner (stable)."""
    return uuid.uuid5(IMPORT_NAMESPACE, f"{owner}:{uuid.UUID(record_id)}")


#: Fields an import compares to decide "unchanged" (owner, source and timestamps excluded).
_COMPARED = ("content", "memory_type", "key", "session_id", "agent_id", "metadata", "scope", "state", "full_content")


def record_differs(existing: MemoryRecord, incoming: MemoryRecord) -> bool:
    if any(getattr(existing, f) != getattr(incoming, f) for f in _COMPARED):
        return True
    a, b = existing.expires_at, incoming.expires_at
    return (a is None) != (b is None) or (a is not None and b is not None and utc(a) != utc(b))
