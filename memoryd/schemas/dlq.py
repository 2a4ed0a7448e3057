"""Dead-letter queue RPCs (``admin.dlq.list|show|replay|drop``, operator only, served by ingest).

An entry is addressed by its sequence number in the ``MEM_DLQ`` stream. ``replay``
republishes the original message to its original subject (chat events and jobs are
idempotent, so a replay of something that was meanwhile stored stores nothing twice)
and removes the entry once JetStream has acknowledged the republished message.
Selecting by ``stage`` or ``all`` is explicit, so an empty request never touches every entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from memoryd.schemas.base import Wire

Seq = Annotated[int, msgspec.Meta(ge=1)]
Seqs = Annotated[list[Seq], msgspec.Meta(max_length=10_000)]


class DlqEntry(Wire, frozen=True):
    """One dead letter as listed: what failed, where, why, how often."""

    seq: int
    stage: str
    subject: str
    error: str
    deliveries: int
    failed_at: datetime
    size: int  # bytes of the original payload kept
    owner: str | None = None
    event_id: str | None = None


class DlqListRequest(Wire, frozen=True):
    stage: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100


class DlqListResult(Wire, frozen=True):
    entries: list[DlqEntry]
    total: int  # entries in the stream (any stage)
    bytes: int = 0


class DlqShowRequest(Wire, frozen=True):
    seq: Seq


class DlqShowResult(Wire, frozen=True):
    entry: DlqEntry
    payload: str  # the original message as text (UTF-8, undecodable bytes replaced)
    headers: dict[str, str] = {}


class DlqSelect(Wire, frozen=True):
    """Which entries: these sequence numbers, or every entry of ``stage``, or ``all``."""

    seqs: Seqs = []
    stage: str | None = None
    all: bool = False


class DlqReplayRequest(DlqSelect, frozen=True):
    pass


class DlqReplayResult(Wire, frozen=True):
    replayed: list[int]
    failed: dict[str, str] = {}  # seq -> why it was not replayed (kept in the DLQ)


class DlqDropRequest(DlqSelect, frozen=True):
    pass


class DlqDropResult(Wire, frozen=True):
    dropped: list[int]
    missing: list[int] = []
