"""A memory's history as callers read it: each stored change paired with the text it became.

``content_history`` keeps only the text a change replaced; the text it became is the next
change's old text, and for the newest change the memory's current text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memoryd.schemas.memory import HistoryEntry


@dataclass(frozen=True)
class StoredChange:
    old_content: str
    reason: str
    changed_at: datetime
    run_id: str | None = None


def history_entries(changes: Sequence[StoredChange], current: str) -> list[HistoryEntry]:
    """``changes`` oldest first -> entries with ``new_content`` filled in."""
    if not changes:
        return []
    following = [c.old_content for c in changes[1:]] + [current]
    return [
        HistoryEntry(
            old_content=c.old_content, new_content=new, reason=c.reason, changed_at=c.changed_at, run_id=c.run_id
        )
        for c, new in zip(changes, following, strict=True)
    ]
