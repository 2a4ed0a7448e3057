"""The text a stored chat turn is embedded as: when it was said, who said it, what was said.

A turn is stored as the application sent it (the bare text); its speaker and time live in
metadata and ``created_at``. Embedded alone, "I went there last week" carries neither who nor
when, so the embed service embeds ``turn_context_text`` for raw turns (``source=chat_turn``) and
every other memory as stored. Ingest stores the head alone (``turn_context_head``) in
``memories.context``, which the full-text vector indexes with the content. A text already
opening with ``"[<date>] <speaker>:"`` is kept as it is (no second prefix). ``TURN_CONTEXT_TAG``
names this format in the embedding signature (``shared.vectors.signature``): a change of format
is a signature change and reindexes.
Pure: ingest, the embed service and the benchmarks use the same functions.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

#: this format's name in an embedding signature (change it whenever the text below changes)
TURN_CONTEXT_TAG = "turn1"
#: a speaker name longer than this is cut (metadata can hold anything)
MAX_SPEAKER_CHARS = 64
#: a text that already carries its context: "[<date>] <speaker>: ..." (a digit in the brackets)
_PREFIXED = re.compile(r"^\s*\[(?=[^\]\n]{0,79}\d)[^\]\n]{1,80}\] +[^\s:\[\]][^:\n]{0,79}:")


def said_on(when: datetime) -> str:
    """When a turn was said (UTC; a naive time is taken as UTC): ``"1:56 pm on 8 May, 2023"``
    (with the time of day and this spelling it measured best of the forms tried)."""
    t = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return f"{t.hour % 12 or 12}:{t.minute:02d} {'am' if t.hour < 12 else 'pm'} on {t.day} {t:%B}, {t.year}"


def has_context(text: str) -> bool:
    """Whether ``text`` already opens with a ``"[<date>] <speaker>:"`` prefix."""
    return _PREFIXED.match(text) is not None


def speaker_label(speaker: str | None, role: str | None) -> str | None:
    """Who said a turn: its speaker's name, else its role (``"User"``, ``"Assistant"``), else None."""
    name = " ".join((speaker or "").split())[:MAX_SPEAKER_CHARS].strip()
    if name:
        return name
    label = (role or "").strip().capitalize()
    return label or None


def turn_context_head(text: str, said_at: datetime | None, speaker: str | None, role: str | None = None) -> str | None:
    """``"[1:56 pm on 8 May, 2023] Caroline:"``: when a turn was said and who said it (parts that are
    unknown are left out); None when ``text`` carries its context already or nothing is known.
    Ingest stores it in ``memories.context`` (indexed for keyword search with the content)."""
    if has_context(text):
        return None
    who = speaker_label(speaker, role)
    head = " ".join(part for part in (f"[{said_on(said_at)}]" if said_at else "", f"{who}:" if who else "") if part)
    return head or None


def turn_context_text(text: str, said_at: datetime | None, speaker: str | None, role: str | None = None) -> str:
    """``"[1:56 pm on 8 May, 2023] Caroline: <text>"``: the turn with ``turn_context_head``;
    ``text`` unchanged when it carries its context already."""
    head = turn_context_head(text, said_at, speaker, role)
    return f"{head} {text}" if head else text
