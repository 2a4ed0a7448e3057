"""Archival demotion (rules only, no LLM): which cold memories become summaries or archived.

Coldness is measured from `last_accessed_at` (or `created_at` for a memory never
recalled) to the run's snapshot time:

- cold >= `sleepCompressDays` -> `archived` (from active or summary; content untouched,
  so it stays listable and restorable);
- else cold >= `sleepArchiveDays` and active -> `summary`: content replaced by a short
  summary, the original kept in `full_content`;
- archived memories and global-scope memories are never touched.

Inside the write transaction the I/O layer re-reads `last_accessed_at` and applies a
demotion only when `still_cold(...)`: a memory recalled during the run is left alone.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

import msgspec

from services.sleep.receipt import DemotionResult

ACTIVE: Final = "active"
SUMMARY: Final = "summary"
ARCHIVED: Final = "archived"
GLOBAL_SCOPE: Final = "global"
SUMMARY_CHARS: Final = 120
ELLIPSIS: Final = "…"


class DemotionCandidate(msgspec.Struct, frozen=True, kw_only=True):
    """One memory as the demotion phase reads it."""

    id: str
    state: str
    last_accessed_at: datetime | None
    created_at: datetime
    content: str
    scope: str = "apiKey"  # apiKey | session | global (memories.scope)


class SummaryDemotion(msgspec.Struct, frozen=True, kw_only=True):
    """Set state `summary`, content := summary, full_content := the original."""

    id: str
    summary: str
    full_content: str


class DemotionPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What to demote, and what was looked at."""

    to_summary: tuple[SummaryDemotion, ...]
    to_archive: tuple[str, ...]
    counts: DemotionResult  # scanned, global_skipped


def short_summary(content: str, limit: int = SUMMARY_CHARS) -> str:
    """The first ~`limit` characters on a word boundary plus an ellipsis (whitespace collapsed).

    Text that fits is returned whole without an ellipsis; a first word longer than half the
    limit is cut hard at the limit.
    """
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rfind(" ")
    head = text[:cut] if cut >= limit // 2 else text[:limit]
    return head.rstrip(" ,;:-") + ELLIPSIS


def _cold_since(memory: DemotionCandidate) -> datetime:
    return memory.last_accessed_at if memory.last_accessed_at is not None else memory.created_at


def demotion_plan(
    memories: Iterable[DemotionCandidate],
    now: datetime,
    archive_days: int,
    compress_days: int,
) -> DemotionPlan:
    """Apply the rules of the module docstring at `now` (the run's snapshot time)."""
    archive_after = timedelta(days=archive_days)
    compress_after = timedelta(days=compress_days)
    to_summary: list[SummaryDemotion] = []
    to_archive: list[str] = []
    scanned = global_skipped = 0
    for memory in memories:
        scanned += 1
        if memory.scope == GLOBAL_SCOPE:
            global_skipped += 1
            continue
        if memory.state not in (ACTIVE, SUMMARY):
            continue
        cold = now - _cold_since(memory)
        if cold >= compress_after:
            to_archive.append(memory.id)
        elif cold >= archive_after and memory.state == ACTIVE:
            to_summary.append(
                SummaryDemotion(id=memory.id, summary=short_summary(memory.content), full_content=memory.content)
            )
    return DemotionPlan(
        to_summary=tuple(to_summary),
        to_archive=tuple(to_archive),
        counts=DemotionResult(scanned=scanned, global_skipped=global_skipped),
    )


def still_cold(last_accessed_at: datetime | None, snapshot_at: datetime) -> bool:
    """In-transaction re-check: False when the memory was accessed after the run's snapshot."""
    return last_accessed_at is None or last_accessed_at <= snapshot_at
