"""English time expressions as calendar spans (pure): what ``temporal`` reads in questions and memories.

``absolute_spans`` finds the dates, months, parts of months, seasons and years a text names;
``relative_spans`` the expressions whose day depends on when they were said ("yesterday", "two
weeks ago", "last summer", "earlier this month", "in three days"), resolved against that day.
Each rule is a reading a listener takes without a calendar, and says why beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month (meteorological)
MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?"
    r"|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
YEAR = r"((?:19|20)\d{2})"
WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SEASON_NAME = r"(spring|summer|autumn|fall|winter)"
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
           "a few": 3, "few": 3, "several": 4}  # fmt: skip
COUNT = "(" + "|".join([r"\d{1,2}", *sorted(_NUMBER, key=len, reverse=True)]) + ")"

# a part of a month is a third of it: "early" the 1st-10th, "mid" the 11th-20th, "late"/"the end of" the rest
_PART = r"(early|mid|middle of|late|the beginning of|the start of|the middle of|the end of)"
_PART_OF_MONTH = re.compile(rf"\b{_PART}[- ]{MONTH}\b(?:,? {YEAR}\b)?")
_DAY_MONTH = re.compile(rf"\b{_DAY} (?:of )?{MONTH}\b,?(?: {YEAR}\b)?")
_MONTH_DAY = re.compile(rf"\b{MONTH} {_DAY}\b(?!:)(?:,? {YEAR}\b)?")
_MONTH_YEAR = re.compile(rf"\b{MONTH},? {YEAR}\b")
_ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)?\d{2})\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|of|since|early|late|mid|last|this|next) {MONTH}\b")
_SEASON = re.compile(rf"\b{_SEASON_NAME}(?: of)? {YEAR}\b")
_IN_SEASON = re.compile(rf"\b(?:in|during|over) (?:the )?{_SEASON_NAME}\b(?! of (?:19|20)\d{{2}})")
_YEAR_ALONE = re.compile(rf"\b(?:in|during|of|since|year) {YEAR}\b|^{YEAR}$")
_AGO = re.compile(rf"\b{COUNT} (day|week|month|year)s? (?:ago|back)\b")
_IN_COUNT = re.compile(rf"\b(?:in|within) {COUNT} (day|week|month|year)s?\b(?! ago| back| before| after)")
_BEFORE_LAST = re.compile(r"\bthe (week|weekend|month|year) before last\b")
_LAST = re.compile(rf"\b(?:last|this past|past) (night|weekend|week|month|year|{WEEKDAY[1:-1]})\b")
_NEXT = re.compile(rf"\b(?:next|this coming|coming) (weekend|week|month|year|{WEEKDAY[1:-1]})\b")
_THIS = re.compile(r"\b(earlier|later)? ?this (week|month|year)\b")
_WEEKEND = re.compile(r"\b(?:over|on|at) the weekend\b|\bthis weekend\b")
_SEASON_REL = re.compile(rf"\b(last|this past|this|next) {_SEASON_NAME}\b")
_ON_WEEKDAY = re.compile(rf"\b(?:on|this) {WEEKDAY}\b")
_DEICTIC = re.compile(
    r"\b(the day before yesterday|yesterday|today|tonight|this morning|this afternoon|this evening|tomorrow"
    r"|recently|lately|the other day)\b"
)
#: substrings one of which every pattern above needs (a month, "day", a year, a deictic word, "ago", a
#: numeric date's separator): most memories name no time and are ruled out by these alone
HINTS = (*(m[:3] for m in MONTHS), "day", "19", "20", "ago", "back", "tonight", "this", "tomorrow", "recent",
         "lately", "last", "next", "past", "coming", "spring", "summer", "autumn", "fall", "winter", "week",
         "month", "year", "/")  # fmt: skip
_APPROXIMATE = frozenset(("a few", "few", "several", "a couple of", "couple of"))
_VAGUE = frozenset(("recently", "lately", "the other day"))


@dataclass(frozen=True, order=True)
class Span:
    """Calendar days ``start`` (inclusive) to ``end`` (exclusive); ``vague``: a time only roughly placed."""

    start: date
    end: date
    vague: bool = False

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    @staticmethod
    def day(d: date) -> Span:
        return Span(d, d + timedelta(days=1))


def count(raw: str) -> int:
    """A count as written: "3", "three", "a few" (three: "a few" is more than a couple)."""
    return int(raw) if raw.isdigit() else _NUMBER[raw]


def month_of(name: str) -> int:
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(name[:3]))


def month_span(year: int, month: int) -> Span:
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return Span(date(year, month, 1), end)


def season_span(name: str, year: int) -> Span:
    """Northern-hemisphere meteorological seasons; winter YYYY is December YYYY to February YYYY+1."""
    start = SEASONS[name]
    first = date(year, start, 1)
    end_month = start + 3
    return Span(first, date(year + 1, end_month - 12, 1) if end_month > 12 else date(year, end_month, 1))


def _part_of_month(part: str, year: int, month: int) -> Span:
    whole = month_span(year, month)
    if part in ("early", "the beginning of", "the start of"):
        return Span(whole.start, whole.start + timedelta(days=10))
    if part in ("mid", "middle of", "the middle of"):
        return Span(whole.start + timedelta(days=10), whole.start + timedelta(days=20))
    return Span(whole.start + timedelta(days=20), whole.end)


def absolute_spans(text: str, years: Sequence[int]) -> list[Span]:
    """Calendar dates, parts of months, months, seasons and years named in lower-cased ``text``.

    A date, month or season without a year is taken in each of ``years`` (a memory: the year it
    was said, since people name this year's months without the year; a question: any recent
    year, since it implies none). Matched text is consumed, so "8 May 2023" is one day, never
    also the year 2023. "May" counts as a month after "in", "during" or "since" only ("I may go").
    """
    out: list[Span] = []
    rest = text
    for m in _ISO_DATE.finditer(rest):  # "2023-06-03": year, month, day in that order by the standard
        out += _days([int(m.group(1))], int(m.group(2)), int(m.group(3)))
    rest = _ISO_DATE.sub(" ", rest)
    for m in _SLASH_DATE.finditer(rest):  # "6/3/2023": month-first and day-first both, unless one cannot be
        a, b, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
        year = y if y > 99 else 2000 + y
        out += sorted(set(_days([year], a, b) + _days([year], b, a)))
    rest = _SLASH_DATE.sub(" ", rest)
    for m in _PART_OF_MONTH.finditer(rest):
        month = month_of(m.group(2))
        out += [_part_of_month(m.group(1), y, month) for y in ([int(m.group(3))] if m.group(3) else years)]
    rest = _PART_OF_MONTH.sub(" ", rest)
    for pattern, kind in ((_DAY_MONTH, "dm"), (_MONTH_DAY, "md"), (_MONTH_YEAR, "my"), (_SEASON, "s")):
        for m in pattern.finditer(rest):
            g = m.groups()
            if kind == "dm":
                out += _days([int(g[2])] if g[2] else years, month_of(g[1]), int(g[0]))
            elif kind == "md":
                out += _days([int(g[2])] if g[2] else years, month_of(g[0]), int(g[1]))
            elif kind == "my":
                out.append(month_span(int(g[1]), month_of(g[0])))
            else:
                out.append(season_span(g[0], int(g[1])))
        rest = pattern.sub(" ", rest)
    for m in _IN_MONTH.finditer(rest):
        if m.group(1) != "may" or m.group(0).split()[0] in ("in", "during", "since"):
            out += [month_span(y, month_of(m.group(1))) for y in years]
    for m in _IN_SEASON.finditer(rest):  # "in the summer": that season of the year(s), as a bare month
        out += [season_span(m.group(1), y) for y in years]
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


def relative_spans(text: str, ref: date) -> list[Span]:
    """Relative expressions in lower-cased ``text``, resolved against ``ref`` (the day said).

    - "yesterday"/"last night" the day before, "today"/"this morning" the day itself, "tomorrow"
      the day after: their literal meaning;
    - "N days ago" that day; "N weeks ago" that day +-3 and "N months/years ago" that calendar
      month/year: people round weeks, months and years, not days ("back" is "ago");
    - "in N days/weeks/..." the same rounding ahead: a plan told with its delay;
    - "last week/month/year" the previous calendar unit, "next ..." the following one, "the week
      before last" the one before that, "last weekend" the Saturday and Sunday before: calendar
      units as spoken;
    - "this week/month/year" the unit holding ``ref``; "earlier this ..." its part up to ``ref``,
      "later this ..." its part after: the speaker places the event on one side of today;
    - "over the weekend" the latest weekend begun by ``ref`` (a report), "this weekend" the one
      of ``ref``'s week;
    - "last summer" the latest summer over by ``ref``, "this summer" the one of ``ref``'s year,
      "next summer" the first to begin after it;
    - "last Friday", "on Friday" the latest such day before ``ref`` (memories mostly report the
      past; "next Friday" the first after it);
    - "recently", "lately", "the other day" the month before, marked vague: a time roughly placed.
    """
    out: list[Span] = []
    one = timedelta(days=1)
    for m in _DEICTIC.finditer(text):
        word = m.group(1)
        offset = {"the day before yesterday": -2, "yesterday": -1, "tomorrow": 1}.get(word, 0)
        if word in _VAGUE:
            out.append(Span(ref - timedelta(days=30), ref + one, vague=True))
        else:
            out.append(Span.day(ref + timedelta(days=offset)))
    for m in _AGO.finditer(text):
        out.append(_counted(m.group(1), m.group(2), ref, -1))
    for m in _IN_COUNT.finditer(text):
        out.append(_counted(m.group(1), m.group(2), ref, +1))
    for m in _BEFORE_LAST.finditer(text):
        out.append(_unit(m.group(1), ref, -2))
    text = _BEFORE_LAST.sub(" ", text)
    for m in _LAST.finditer(text):
        out.append(_unit(m.group(1), ref, -1))
    for m in _NEXT.finditer(text):
        out.append(_unit(m.group(1), ref, +1))
    for m in _THIS.finditer(text):
        unit = _unit(m.group(2), ref, 0)
        side = m.group(1)
        out.append(Span(unit.start, ref + one) if side == "earlier" else Span(ref, unit.end) if side else unit)
    for m in _WEEKEND.finditer(text):
        saturday = ref - timedelta(days=(ref.weekday() - 5) % 7)  # the latest Saturday on or before ``ref``
        if m.group(0).startswith("this") and ref.weekday() < 5:
            saturday += timedelta(days=7)
        out.append(Span(saturday, saturday + timedelta(days=2)))
    for m in _SEASON_REL.finditer(text):
        out.append(_season_from(m.group(2), ref, m.group(1)))
    for m in _ON_WEEKDAY.finditer(text):
        out.append(Span.day(_weekday_before(ref, m.group(1))))
    return out


def _counted(raw: str, unit: str, ref: date, sign: int) -> Span:
    """``raw`` ``unit``s before (``sign`` -1) or after (+1) ``ref``, rounded as people round them."""
    n = sign * count(raw)
    if unit == "day":
        day = ref + timedelta(days=n)
        # "a few days" is not a number: the day either side of its count too
        return Span(day - timedelta(days=1), day + timedelta(days=2)) if raw in _APPROXIMATE else Span.day(day)
    if unit == "week":
        mid = ref + timedelta(days=7 * n)
        return Span(mid - timedelta(days=3), mid + timedelta(days=4))
    if unit == "month":
        y, mo = divmod(ref.year * 12 + ref.month - 1 + n, 12)
        return month_span(y, mo + 1)
    return Span(date(ref.year + n, 1, 1), date(ref.year + n + 1, 1, 1))


def _season_from(name: str, ref: date, which: str) -> Span:
    """The season ``name`` "last" (the latest over by ``ref``), "this" (of ``ref``'s year; a winter
    is the one holding January and February) or "next" (the first begun after ``ref``)."""
    this = season_span(name, ref.year - 1 if name == "winter" and ref.month <= 2 else ref.year)
    if which == "this":
        return this
    if which == "next":
        return this if this.start > ref else season_span(name, this.start.year + 1)
    return this if this.end <= ref else season_span(name, this.start.year - 1)


def _week_of(d: date) -> Span:
    monday = d - timedelta(days=d.weekday())
    return Span(monday, monday + timedelta(days=7))


def _weekday_before(ref: date, weekday: str) -> date:
    """The latest ``weekday`` strictly before ``ref``: "last Friday" said on a Saturday is the day
    before, said on a Friday a week before (the reading a listener takes without a calendar)."""
    back = (ref.weekday() - WEEKDAYS.index(weekday)) % 7 or 7
    return ref - timedelta(days=back)


def _unit(unit: str, ref: date, step: int) -> Span:
    """The calendar ``unit`` ``step`` units from the one holding ``ref`` (-1 the one before, 0 its own)."""
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
        saturday = _unit("saturday", ref, 1 if step > 0 else -1).start
        if step < 0 and ref.weekday() == 6:
            saturday -= timedelta(days=7)
        saturday += timedelta(days=7 * (step + 1 if step < 0 else step - 1))
        return Span(saturday, saturday + timedelta(days=2))
    if unit == "month":
        y, mo = divmod(ref.year * 12 + ref.month - 1 + step, 12)
        return month_span(y, mo + 1)
    return Span(date(ref.year + step, 1, 1), date(ref.year + step + 1, 1, 1))
