"""Temporal reasoning (pure): the time a question asks about, the time a memory speaks of.

``read_question`` turns a question into a ``TimeQuery``: whether it asks *when* (or in which
order), the calendar spans it names ("in May 2023", "on 8 May", "in 2022", "last week"), and
an anchor ("the week before X"). ``read_memory`` turns a memory into a ``MemoryTime``: the day
it was said (a stored turn's "[<date>]" prefix, else its ``created_at``) and the spans its
text names, relative expressions resolved against that day (the expressions themselves are
read by ``time_expressions``). ``temporal_gains`` lifts the memories whose time answers the
question's. English only; every rule says why it holds.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from services.retrieve.logic.time_expressions import (
    COUNT,
    HINTS,
    MONTH,
    WEEKDAY,
    WEEKDAYS,
    YEAR,
    Span,
    absolute_spans,
    count,
    month_of,
    month_span,
    relative_spans,
)

__all__ = ["Anchor", "MemoryTime", "Span", "TimeQuery", "month_span", "read_memory", "read_question", "temporal_gains"]

_PREFIX_DATE = re.compile(rf"\b(\d{{1,2}}) {MONTH},? {YEAR}\b")
_PREFIX = re.compile(r"^\s*\[([^\]]{4,60})\]\s*")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_UNIT_DAYS = {"day": 1, "week": 7, "weekend": 3, "month": 31, "year": 366}
_ANCHOR = re.compile(
    rf"\b(?:(?:the|in the) (day|week|weekend|month|year|{WEEKDAY[1:-1]})s? "
    rf"|(?:in |within )?(?:the )?{COUNT} (day|week|month|year)s? )?"
    r"(before|after|prior to) (?!or\b)(.+)$"
)
#: an anchor that opens with a date ("3 August", "the 3rd of June", "August 3", "June 2023", "2023-08-03")
_DATE_HEAD = re.compile(
    rf"^(?:the )?(?:\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {MONTH}|{MONTH} \d|{MONTH},? {YEAR}|\d{{4}}-\d)"
)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset((
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "about", "did", "do",
    "does", "was", "were", "is", "are", "be", "been", "he", "she", "they", "i", "me", "my", "his", "her", "their",
    "them", "it", "its", "we", "our", "you", "your", "what", "which", "who", "when", "where", "why", "how", "happen",
    "happened", "go", "went", "going", "get", "got", "have", "had", "has", "that", "this", "there",
))  # fmt: skip


@dataclass(frozen=True)
class Anchor:
    """ "the <unit> before/after <event>": the window's length in days, its side, the event's words."""

    before: bool
    days: int
    words: frozenset[str]
    weekday: int | None = None  # "the Sunday before X": only that day of the window


@dataclass(frozen=True)
class TimeQuery:
    asks_when: bool = False
    spans: tuple[Span, ...] = ()
    anchor: Anchor | None = None

    @property
    def temporal(self) -> bool:
        return self.asks_when or bool(self.spans) or self.anchor is not None


@dataclass(frozen=True)
class MemoryTime:
    said: date  # the day the memory was said (prefix date, else created_at)
    spans: tuple[Span, ...]  # the times its text names, resolved against ``said``
    body: str  # the text without its date prefix

    @property
    def words(self) -> frozenset[str]:
        return content_words(self.body)


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


_WHEN_START = re.compile(
    r"^\W*(?:when\b|what (?:time|date|day|year|month|week)\b|which (?:year|month|day|date|week)\b|how long ago\b)"
)


@functools.lru_cache(maxsize=1024)  # a search reads its question twice (to skip the rows, then to gain)
def read_question(question: str, now: date) -> TimeQuery:
    """The time a question asks about.

    - it asks *when* when it opens with "when", "what/which date|day|month|year" or "how long
      ago", or asks "before or after": the answer is a memory that places events in time;
    - a named date, month, season or year is a span to find events in ("in May 2023", "in
      2022"); a month without a year means any year's (no year is implied by the question);
    - "last week", "yesterday" and the like are resolved against ``now`` (the asker's today);
    - "the week/day/month before/after X" anchors a window of that length on X's date (bare
      "before X": a month, the near past being what such questions mean; "the Sunday before X"
      that day of the week before);
    - when X opens with a date ("the week before 3 August 2023"), the window is on that date:
      there is no event to look up.
    """
    lower = question.lower().strip()
    asks = bool(_WHEN_START.match(lower)) or "before or after" in lower or "after or before" in lower
    years = range(now.year - 10, now.year + 1)
    anchor = None
    on_dates: list[Span] = []
    if not asks and (m := _ANCHOR.search(lower)):
        words = content_words(m.group(5))
        if words:
            # "two weeks before X": that many units; "the week before X": one; bare "before X": a month
            unit = m.group(1)
            days = 7 if unit in WEEKDAYS else _UNIT_DAYS[unit] if unit else 31
            if m.group(2):
                days = _UNIT_DAYS[m.group(3)] * count(m.group(2))
            weekday = WEEKDAYS.index(unit) if unit in WEEKDAYS else None
            anchor = Anchor(before=m.group(4) != "after", days=days, words=words, weekday=weekday)
            lower = lower[: m.start()]
            if _DATE_HEAD.match(m.group(5)) and (dated := absolute_spans(" ".join(m.group(5).split()[:5]), years)):
                on_dates, anchor = [window(anchor, d) for d in dated], None
    spans = absolute_spans(lower, years) + relative_spans(lower, now) + on_dates
    return TimeQuery(asks_when=asks, spans=tuple(spans), anchor=anchor)


def said_on(content: str, created: date) -> tuple[date, str]:
    """The day a memory was said and its text without the prefix: a stored turn carries its own
    date as "[<date>] ..." (imported or replayed history keeps it there), else ``created``."""
    m = _PREFIX.match(content)
    if m is None:
        return created, content
    inner = m.group(1).lower()
    if iso := _ISO.search(inner):
        try:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3))), content[m.end() :]
        except ValueError:
            return created, content
    if (d := _PREFIX_DATE.search(inner)) is None:
        return created, content
    try:
        return date(int(d.group(3)), month_of(d.group(2)), int(d.group(1))), content[m.end() :]
    except ValueError:
        return created, content


@functools.lru_cache(maxsize=8192)
def read_memory(content: str, created: date) -> MemoryTime:
    """A memory's day and the spans its text names (the prefix date is the day, never a span:
    every turn carries one, so it would make every memory "name a time")."""
    said, body = said_on(content, created)
    lower = body.lower()
    spans: list[Span] = []
    if any(hint in lower for hint in HINTS):
        spans = absolute_spans(lower, (said.year,)) + relative_spans(lower, said)
    return MemoryTime(said=said, spans=tuple(sorted(set(spans))), body=body)


def anchor_time(anchor: Anchor, memories: Mapping[str, tuple[float, MemoryTime]]) -> tuple[str, Span] | None:
    """The memory of the event an anchor names and its time: the memory sharing most of the
    anchor's words (at least half), one that names a time before one that does not (it dates
    the event; a later mention does not), then the better score; read at the first time it
    names, else the day it was said."""
    best: tuple[int, bool, float] | None = None
    found: str | None = None
    need = (len(anchor.words) + 1) // 2
    for memory_id, (score, m) in memories.items():
        shared = len(anchor.words & m.words)
        if shared < need:
            continue
        key = (shared, bool(m.spans), score)
        if best is None or key > best:
            best, found = key, memory_id
    if found is None:
        return None
    m = memories[found][1]
    return found, m.spans[0] if m.spans else Span.day(m.said)


def window(anchor: Anchor, at: Span) -> Span:
    """The window "the <unit> before/after" the anchor's time, ``days`` long and adjacent to the
    anchor's day; when its time is a span ("last month"), the window of any of its days (the
    event may be on any of them, so must the answer's)."""
    one = timedelta(days=1)
    if anchor.before:
        out = Span(at.start - timedelta(days=anchor.days), at.end - one)
    else:
        out = Span(at.start + one, at.end + timedelta(days=anchor.days))
    if anchor.weekday is None:
        return out
    first = out.start + timedelta(days=(anchor.weekday - out.start.weekday()) % 7)
    last = out.end - one - timedelta(days=((out.end - one).weekday() - anchor.weekday) % 7)
    return Span(first, last + one)


#: the match of a memory said within the asked time but naming none, and of one naming only a vague time
#: ("recently"): said then is often, not always, happened then, and "lately" places it no better
SAID = 0.5


def match(query: TimeQuery, memory: MemoryTime, targets: Sequence[Span]) -> float:
    """How well a memory's time answers the query (0..1).

    - with target spans: 1 when a time the memory names falls in one (it says the event was
      then); ``SAID`` when it names none but was said in one, or names only a vague time that
      falls in one; 0 when it names another time;
    - a "when" question without a span: 1 when the memory names a time (the answer to when is
      a memory that says when), ``SAID`` when only a vague one, else 0.
    """
    if targets:
        if memory.spans:
            inside = [s for s in memory.spans if any(s.overlaps(t) for t in targets)]
            return max((_weight(s) for s in inside), default=0.0)
        said = Span.day(memory.said)
        return SAID if any(said.overlaps(t) for t in targets) else 0.0
    return max(_weight(s) for s in memory.spans) if query.asks_when and memory.spans else 0.0


def _weight(span: Span) -> float:
    return SAID if span.vague else 1.0


def temporal_gains(
    scores: Mapping[str, float],
    memories: Mapping[str, tuple[str, date]],
    question: str,
    share: float,
    now: date,
    lift: float = 0.0,
) -> dict[str, float]:
    """Each memory (``memories``: id -> content, the day it was stored) gains ``share`` x its ``match`` x its
    score; a question that asks no time changes nothing. The anchor's own memory matches fully:
    its date is half of the answer. ``lift`` (0..1) sets how much of that score is the best
    candidate's instead, for questions naming a time or a window (``scale``)."""
    if not (math.isfinite(lift) and 0 <= lift <= 1):
        raise ValueError(f"lift must be within 0..1, got {lift}")
    out = dict(scores)
    if share <= 0:
        return out
    query = read_question(question, now)
    if not query.temporal:
        return out
    times = {i: read_memory(c, day) for i, (c, day) in memories.items() if i in scores}
    targets = list(query.spans)
    anchor_id = None
    if query.anchor is not None:
        found = anchor_time(query.anchor, {i: (scores[i], t) for i, t in times.items()})
        if found is not None:
            anchor_id = found[0]
            targets.append(window(query.anchor, found[1]))
    if not targets and not query.asks_when:
        return out
    top = max(scores.values(), default=0.0) if targets and lift else 0.0
    for i, t in times.items():
        gain = 1.0 if i == anchor_id else match(query, t, targets)
        if gain:
            out[i] += share * gain * (scale(scores[i], top, lift) if targets else scores[i])
    return out


def scale(own: float, top: float, lift: float) -> float:
    """The score a time match multiplies: ``lift`` of the way from the memory's own score to the
    best candidate's. "What did X do in May?" or "the week before X" asks for a time as much as
    for words: a memory whose time falls in the window answers it even when it shares few words
    with the question, so part of its gain is on the scale of the ranking, not of its own
    word match (a bare "when" question names no time: its gains stay proportional)."""
    return own if lift == 0 else (1 - lift) * own + lift * top
