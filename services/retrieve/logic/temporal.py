"""Temporal reasoning (pure): the time a question asks about, the time a memory speaks of.

``read_question`` turns a question into a ``TimeQuery``: whether it asks *when* (or in which
order), the calendar spans it names ("in May 2023", "on 8 May", "in 2022", "last week"), and
an anchor ("the week before X"). ``read_memory`` turns a memory into a ``MemoryTime``: the day
it was said (a stored turn's "[<date>]" prefix, else its ``created_at``) and the spans its
text names, relative expressions resolved against that day. ``temporal_gains`` lifts the
memories whose time answers the question's. English only; every rule says why it holds.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?"
    r"|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
           "a few": 3, "few": 3, "several": 4}  # fmt: skip
_COUNT = "(" + "|".join([r"\d{1,2}", *sorted(_NUMBER, key=len, reverse=True)]) + ")"

_DAY_MONTH = re.compile(rf"\b{_DAY} (?:of )?{_MONTH}\b,?(?: {_YEAR}\b)?")
_MONTH_DAY = re.compile(rf"\b{_MONTH} {_DAY}\b(?!:)(?:,? {_YEAR}\b)?")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},? {_YEAR}\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|of|since|early|late|mid|last|this|next) {_MONTH}\b")
_SEASON = re.compile(rf"\b(spring|summer|autumn|fall|winter)(?: of)? {_YEAR}\b")
_YEAR_ALONE = re.compile(rf"\b(?:in|during|of|since|year) {_YEAR}\b|^{_YEAR}$")
_AGO = re.compile(rf"\b{_COUNT} (day|week|month|year)s? ago\b")
_LAST = re.compile(rf"\b(?:last|this past|past) (night|weekend|week|month|year|{_WEEKDAY[1:-1]})\b")
_NEXT = re.compile(rf"\b(?:next|this coming|coming) (weekend|week|month|year|{_WEEKDAY[1:-1]})\b")
_ON_WEEKDAY = re.compile(rf"\b(?:on|this) {_WEEKDAY}\b")
_DEICTIC = re.compile(
    r"\b(the day before yesterday|yesterday|today|tonight|this morning|this afternoon|this evening|tomorrow"
    r"|recently|lately|the other day)\b"
)
#: substrings one of which every pattern above needs (a month, "day", a year, a deictic word, "ago"): most
#: memories name no time and are ruled out by these alone
_HINTS = (*(m[:3] for m in MONTHS), "day", "19", "20", "ago", "tonight", "this", "tomorrow", "recent", "lately",
          "last", "next", "past", "coming", "spring", "summer", "autumn", "fall", "winter")  # fmt: skip
_PREFIX_DATE = re.compile(rf"\b{_DAY} {_MONTH},? {_YEAR}\b")
_PREFIX = re.compile(r"^\s*\[([^\]]{4,60})\]\s*")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_ANCHOR = re.compile(r"\b(?:the (day|week|weekend|month|year) )?(before|after|prior to) (?!or\b)(.+)$")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset((
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "about", "did", "do",
    "does", "was", "were", "is", "are", "be", "been", "he", "she", "they", "i", "me", "my", "his", "her", "their",
    "them", "it", "its", "we", "our", "you", "your", "what", "which", "who", "when", "where", "why", "how", "happen",
    "happened", "go", "went", "going", "get", "got", "have", "had", "has", "that", "this", "there",
))  # fmt: skip


@dataclass(frozen=True, order=True)
class Span:
    """Calendar days ``start`` (inclusive) to ``end`` (exclusive)."""

    start: date
    end: date

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    @staticmethod
    def day(d: date) -> Span:
        return Span(d, d + timedelta(days=1))


@dataclass(frozen=True)
class Anchor:
    """ "the <unit> before/after <event>": the window's length in days, its side, the event's words."""

    before: bool
    days: int
    words: frozenset[str]


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


def _month(name: str) -> int:
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(name[:3]))


def month_span(year: int, month: int) -> Span:
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return Span(date(year, month, 1), end)


def _week_of(d: date) -> Span:
    monday = d - timedelta(days=d.weekday())
    return Span(monday, monday + timedelta(days=7))


def _weekday_before(ref: date, weekday: str) -> date:
    """The latest ``weekday`` strictly before ``ref``: "last Friday" said on a Saturday is the day
    before, said on a Friday a week before (the reading a listener takes without a calendar)."""
    back = (ref.weekday() - WEEKDAYS.index(weekday)) % 7 or 7
    return ref - timedelta(days=back)


def absolute_spans(text: str, years: Sequence[int]) -> list[Span]:
    """Calendar dates, months, seasons and years named in lower-cased ``text``.

    A date or month without a year is taken in each of ``years`` (a memory: the year it was
    said, since people name this year's months without the year; a question: any recent year,
    since it implies none). Matched text is consumed, so "8 May 2023" is one day, never also
    the year 2023. "May" counts as a month after "in", "during" or "since" only ("I may go").
    """
    out: list[Span] = []
    rest = text
    for pattern, kind in ((_DAY_MONTH, "dm"), (_MONTH_DAY, "md"), (_MONTH_YEAR, "my"), (_SEASON, "s")):
        for m in pattern.finditer(rest):
            g = m.groups()
            if kind == "dm":
                out += _days([int(g[2])] if g[2] else years, _month(g[1]), int(g[0]))
            elif kind == "md":
                out += _days([int(g[2])] if g[2] else years, _month(g[0]), int(g[1]))
            elif kind == "my":
                out.append(month_span(int(g[1]), _month(g[0])))
            else:
                out.append(_season(g[0], int(g[1])))
        rest = pattern.sub(" ", rest)
    for m in _IN_MONTH.finditer(rest):
        if m.group(1) != "may" or m.group(0).split()[0] in ("in", "during", "since"):
            out += [month_span(y, _month(m.group(1))) for y in years]
    for m in _YEAR_ALONE.finditer(rest):
        year = int(m.group(1) or m.group(2))
        out.append(Span(date(year, 1, 1), date(year + 1, 1, 1)))
    return out


def _days(years: Iterable[int], month: int, day: int) -> list[Span]:
    out = []
    for year in years:
        try:
            out.append(Span.day(date(year, month, day)))
        except ValueError:  # "31 February"
            continue
    return out


def _season(name: str, year: int) -> Span:
    """Northern-hemisphere meteorological seasons; winter YYYY is December YYYY to February YYYY+1."""
    start = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}[name]
    first = date(year, start, 1)
    end_month = start + 3
    return Span(first, date(year + 1, end_month - 12, 1) if end_month > 12 else date(year, end_month, 1))


def relative_spans(text: str, ref: date) -> list[Span]:
    """Relative expressions in lower-cased ``text``, resolved against ``ref`` (the day said).

    - "yesterday"/"last night" the day before, "today"/"this morning" the day itself, "tomorrow"
      the day after: their literal meaning;
    - "N days ago" that day; "N weeks ago" that day +-3 and "N months/years ago" that calendar
      month/year: people round weeks, months and years, not days;
    - "last week/month/year" the previous calendar unit, "next ..." the following one, "last
      weekend" the Saturday and Sunday before: calendar units as spoken;
    - "last Friday", "on Friday" the latest such day before ``ref`` (memories mostly report the
      past; "next Friday" the first after it);
    - "recently", "lately", "the other day" the month before: a vague past, still a time.
    """
    out: list[Span] = []
    one = timedelta(days=1)
    for m in _DEICTIC.finditer(text):
        word = m.group(1)
        offset = {"the day before yesterday": -2, "yesterday": -1, "tomorrow": 1}.get(word, 0)
        if word in ("recently", "lately", "the other day"):
            out.append(Span(ref - timedelta(days=30), ref + one))
        else:
            out.append(Span.day(ref + timedelta(days=offset)))
    for m in _AGO.finditer(text):
        raw, unit = m.group(1), m.group(2)
        n = int(raw) if raw.isdigit() else _NUMBER[raw]
        if unit == "day":
            out.append(Span.day(ref - timedelta(days=n)))
        elif unit == "week":
            mid = ref - timedelta(days=7 * n)
            out.append(Span(mid - timedelta(days=3), mid + timedelta(days=4)))
        elif unit == "month":
            y, mo = divmod(ref.year * 12 + ref.month - 1 - n, 12)
            out.append(month_span(y, mo + 1))
        else:
            out.append(Span(date(ref.year - n, 1, 1), date(ref.year - n + 1, 1, 1)))
    for m in _LAST.finditer(text):
        out.append(_unit(m.group(1), ref, -1))
    for m in _NEXT.finditer(text):
        out.append(_unit(m.group(1), ref, +1))
    for m in _ON_WEEKDAY.finditer(text):
        out.append(Span.day(_weekday_before(ref, m.group(1))))
    return out


def _unit(unit: str, ref: date, step: int) -> Span:
    """The calendar ``unit`` before (``step`` -1) or after (+1) the one holding ``ref``."""
    if unit == "night":
        return Span.day(ref - timedelta(days=1))
    if unit in WEEKDAYS:
        if step < 0:
            return Span.day(_weekday_before(ref, unit))
        ahead = (WEEKDAYS.index(unit) - ref.weekday()) % 7 or 7
        return Span.day(ref + timedelta(days=ahead))
    if unit == "week":
        week = _week_of(ref)
        return Span(week.start + timedelta(days=7 * step), week.end + timedelta(days=7 * step))
    if unit == "weekend":  # the last Saturday and Sunday wholly before ``ref``, or the first after it
        saturday = _unit("saturday", ref, step).start
        if step < 0 and ref.weekday() == 6:
            saturday -= timedelta(days=7)
        return Span(saturday, saturday + timedelta(days=2))
    if unit == "month":
        y, mo = divmod(ref.year * 12 + ref.month - 1 + step, 12)
        return month_span(y, mo + 1)
    return Span(date(ref.year + step, 1, 1), date(ref.year + step + 1, 1, 1))


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
      "before X": a month, the near past being what such questions mean).
    """
    lower = question.lower().strip()
    asks = bool(_WHEN_START.match(lower)) or "before or after" in lower or "after or before" in lower
    anchor = None
    if not asks and (m := _ANCHOR.search(lower)):
        words = content_words(m.group(3))
        if words:
            days = {"day": 1, "week": 7, "weekend": 3, "month": 31, "year": 366}.get(m.group(1) or "", 31)
            anchor = Anchor(before=m.group(2) != "after", days=days, words=words)
            lower = lower[: m.start()]
    years = range(now.year - 10, now.year + 1)
    spans = absolute_spans(lower, years) + relative_spans(lower, now)
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
        return date(int(d.group(3)), _month(d.group(2)), int(d.group(1))), content[m.end() :]
    except ValueError:
        return created, content


@functools.lru_cache(maxsize=8192)
def read_memory(content: str, created: date) -> MemoryTime:
    """A memory's day and the spans its text names (the prefix date is the day, never a span:
    every turn carries one, so it would make every memory "name a time")."""
    said, body = said_on(content, created)
    lower = body.lower()
    spans: list[Span] = []
    if any(hint in lower for hint in _HINTS):
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
    """The window "the <unit> before/after" the anchor's time: adjacent to it, ``days`` long."""
    if anchor.before:
        return Span(at.start - timedelta(days=anchor.days), at.start)
    return Span(at.end, at.end + timedelta(days=anchor.days))


def match(query: TimeQuery, memory: MemoryTime, targets: Sequence[Span]) -> float:
    """How well a memory's time answers the query (0..1).

    - with target spans: 1 when a time the memory names falls in one (it says the event was
      then); 0.5 when it names none but was said in one (said then is often, not always,
      happened then); 0 when it names another time;
    - a "when" question without a span: 1 when the memory names any time (the answer to when
      is a memory that says when), else 0.
    """
    if targets:
        if memory.spans:
            return 1.0 if any(s.overlaps(t) for s in memory.spans for t in targets) else 0.0
        said = Span.day(memory.said)
        return 0.5 if any(said.overlaps(t) for t in targets) else 0.0
    return 1.0 if query.asks_when and memory.spans else 0.0


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
