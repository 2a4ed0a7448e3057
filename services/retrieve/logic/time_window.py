"""Time-window candidates (pure): the memories said in the time a question asks about.

"What did Mel do in May 2023?" or "the week before Jon adopted the dog" names a time, and the
turn that answers it often shares a single word with the question: it is then missing from the
keyword and vector lists' tops, and the temporal reasoning (``temporal.temporal_gains``) can only
lift what is there. ``asked_spans`` gives the calendar spans such a question asks about (its named
dates, months, seasons, years and relative times, and the window around its anchor, the anchor
found among the candidates as the reasoning finds it); ``ranges_us`` the same spans as
``created_at`` ranges; ``extend`` appends the best keyword matches stored within them (ranked by
their own BM25 score, found by ``OwnerIndex.search_within``) to the keyword list below its top (``window_lists``),
as a deeper keyword list would have held them, so they take part in the same fusion and gains.
Only the day a memory was stored is read (its ``created_at``), not a "[<date>]" prefix in its
text or the times it names: those are text, which an index of lexemes cannot filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime

from services.retrieve.logic.fusion import Fused, RankedList
from services.retrieve.logic.plan import MemoryRow
from services.retrieve.logic.temporal import Span, anchor_time, read_memory, read_question, window

_EPOCH_DAY = date(1970, 1, 1).toordinal()
_DAY_US = 86_400_000_000


def names_time(question: str, now: date) -> bool:
    """Whether ``question`` names a time or a window (``asked_spans`` may find spans), read before
    the candidates' texts are: most questions name none."""
    query = read_question(question, now)
    return bool(query.spans) or query.anchor is not None


def asked_spans(
    question: str, now: date, scores: Mapping[str, float], memories: Mapping[str, tuple[str, date]]
) -> tuple[Span, ...]:
    """The spans ``question`` asks about: those it names (``read_question``, against ``now``), and
    for "the week before/after X" the window next to X's time, X being the memory among ``memories``
    (id -> content, day stored; those in ``scores``) the reasoning takes for it (``anchor_time``);
    none for a question that names no time ("When did ...?" asks for one: any time may answer)."""
    query = read_question(question, now)
    spans = list(query.spans)
    if query.anchor is not None:
        times = {i: (scores[i], read_memory(c, day)) for i, (c, day) in memories.items() if i in scores}
        found = anchor_time(query.anchor, times)
        if found is not None:
            spans.append(window(query.anchor, found[1]))
    return tuple(spans)


def asked_ranges(
    question: str, now: date, fused: Sequence[Fused], rows: Mapping[str, MemoryRow]
) -> list[tuple[int, int]]:
    """The ``created_at`` ranges (``ranges_us``) of the spans ``question`` asks about
    (``asked_spans``), its anchor looked up among the ``fused`` candidates and their ``rows``;
    none for a question naming no time (checked first: the candidates' texts are then not read)."""
    if not names_time(question, now):
        return []
    scores = {f.memory_id: f.score for f in fused}
    moments = {i: (r.content, r.day) for i, r in rows.items()}
    return ranges_us(asked_spans(question, now, scores, moments))


def ranges_us(spans: Sequence[Span]) -> list[tuple[int, int]]:
    """``spans`` as ``created_at`` ranges in µs since the epoch (UTC days, start inclusive, end
    exclusive), overlapping or touching ones merged, in order."""
    out: list[tuple[int, int]] = []
    for start, end in sorted((_us(s.start), _us(s.end)) for s in spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _us(d: date) -> int:
    return (d.toordinal() - _EPOCH_DAY) * _DAY_US


def stored_within(created: datetime | int, ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether a memory stored at ``created`` (a datetime or µs since the epoch) is within ``ranges``."""
    at = created if isinstance(created, int) else _datetime_us(created)
    return any(start <= at < end for start, end in ranges)


def _datetime_us(at: datetime) -> int:
    delta = at.astimezone(UTC).replace(tzinfo=None) - datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def extra(within: RankedList, present: set[str], cap: int) -> list[tuple[str, float]]:
    """The first ``cap`` of ``within`` (the keyword matches stored in the asked time, best first)
    not ``present`` among the candidates already."""
    out: list[tuple[str, float]] = []
    for memory_id, raw in within:
        if len(out) >= cap:
            break
        if memory_id not in present:
            out.append((memory_id, raw))
    return out


def window_lists(lists: Mapping[str, RankedList], depth: int, picks: RankedList) -> dict[str, RankedList]:
    """The ranked lists to fuse again with the window's ``picks``: each list's top ``depth``, the
    keyword list's followed by ``picks`` (fused as one list: min-max over both)."""
    out: dict[str, RankedList] = {source: ranked[:depth] for source, ranked in lists.items()}
    out["fts"] = [*lists.get("fts", [])[:depth], *picks]
    return out
