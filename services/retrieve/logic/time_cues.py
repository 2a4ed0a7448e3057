"""Time cues in English text (pure): does a question ask *when*, does a memory say *when*?

A question that asks when something happened is answered by a memory that places it in time
("last Friday", "two weeks ago", "yesterday"); the hybrid temporal boost
(``fusion.temporal_gains``) lifts such memories for such questions. Both tests are plain
patterns, cheap enough to run over every fused candidate: a question asks when when its first
word is "when"; a text says when when it holds a relative time expression or a weekday.
Calendar dates and month names are left out on purpose: a stored turn may carry its own date
as a prefix, which would make every memory "say when".
"""

from __future__ import annotations

import re

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_SPAN = rf"(?:week|weekend|month|year|night|summer|winter|spring|fall|morning|evening|{_WEEKDAY})"
#: matched on the lower-cased text (a case-insensitive pattern costs twice as much)
_TIME_EXPRESSION = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|recently|(?:last|next|this|past) {_SPAN}|{_WEEKDAY}s?)\b"
)
#: substrings every match holds one of: most texts are ruled out by these alone (~3 us a text against ~12)
_HINTS = ("yesterday", "today", "tonight", "tomorrow", "ago", "recently", "day", "last ", "next ", "this ", "past ")
_FIRST_WORD = re.compile(r"\W*(\w+)")


def asks_when(question: str) -> bool:
    """True when the question's first word is "when" (any case)."""
    first = _FIRST_WORD.match(question)
    return first is not None and first.group(1).casefold() == "when"


def says_when(text: str) -> bool:
    """True when ``text`` holds a relative time expression or a weekday ("last week", "ago", "Friday")."""
    lower = text.lower()
    return any(hint in lower for hint in _HINTS) and _TIME_EXPRESSION.search(lower) is not None
