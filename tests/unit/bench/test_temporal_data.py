"""The generated temporal check: deterministic, dated as told, and each question's evidence follows from the dates."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from bench import locomo, temporal, temporal_data


@pytest.fixture(scope="module")
def generated() -> list[temporal_data.Generated]:
    return temporal_data.generate(3, seed=5)


def test_the_same_seed_gives_the_same_conversations(generated: list[temporal_data.Generated]) -> None:
    again = temporal_data.generate(3, seed=5)
    assert [g.conversation for g in again] == [g.conversation for g in generated]
    assert temporal_data.generate(1, seed=6)[0].conversation != generated[0].conversation


def test_sessions_are_dated_over_months_in_locomo_form(generated: list[temporal_data.Generated]) -> None:
    for g in generated:
        turns = g.conversation.turns
        first, last = turns[0].occurred_at, turns[-1].occurred_at
        assert timedelta(days=180) < last - first < timedelta(days=365)  # inside the default retention
        assert all(locomo.parse_date(t.date_text).date() == t.occurred_at.date() for t in turns)
        assert [t.occurred_at for t in turns] == sorted(t.occurred_at for t in turns)
        assert turns[0].content.startswith(f"[{turns[0].date_text}] {turns[0].speaker}: ")
        said = [(t.session, t.speaker, t.text) for t in turns]
        assert len(set(said)) == len(said)  # no turn repeated within a session (it would be stored once)


FORMS = ("i just", "yesterday", "days ago", "week ago", "weeks ago", "last week", "last month", " on ", "of ",
         "weekend", "before last", "earlier this month", "few days back", "early ", "mid ", "late ", "last summer",
         "last winter")  # fmt: skip
PARTS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}
SEASONS = {"spring": (3, 4, 5), "summer": (6, 7, 8), "autumn": (9, 10, 11), "winter": (12, 1, 2)}
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a": 1}


def expected_day(text: str, said: date) -> date | None:
    """The event day of a told event as a reader computes it (the exact forms only)."""
    lower = text.lower()
    if "yesterday" in lower:
        return said - timedelta(days=1)
    if m := re.search(r"(\w+) days ago", lower):
        return said - timedelta(days=WORDS[m.group(1)])
    if m := re.search(r"(\w+) weeks? ago", lower):
        return said - timedelta(days=7 * WORDS[m.group(1)])
    if lower.startswith("i just "):
        return said
    return None


def test_every_event_is_told_in_its_turn_with_its_date(generated: list[temporal_data.Generated]) -> None:
    forms: Counter[str] = Counter()
    for g in generated:
        by_dia = {t.dia_id: t for t in g.conversation.turns}
        for e in g.events:
            turn = by_dia[e.dia_id]
            said = turn.occurred_at.date()
            assert turn.speaker == e.actor and e.did() in turn.text and e.on <= said
            if (want := expected_day(turn.text, said)) is not None:
                assert e.on == want, turn.text
            if m := re.search(r"last (monday|tuesday|wednesday|thursday|friday|saturday|sunday)", turn.text.lower()):
                assert e.on.strftime("%A").lower() == m.group(1) and 1 <= (said - e.on).days <= 7
            if "last month" in turn.text.lower():
                assert (e.on.year * 12 + e.on.month) == (said.year * 12 + said.month - 1)
            if m := re.search(r"on (\d+) ([A-Z][a-z]+)", turn.text):
                assert (e.on.day, e.on.strftime("%B")) == (int(m.group(1)), m.group(2))
            check_loose_forms(turn.text, said, e.on)
            forms[next((f for f in FORMS if f in turn.text.lower()), "other")] += 1
    assert all(forms[f] > 0 for f in FORMS)  # every way of dating is used


def check_loose_forms(text: str, said: date, on: date) -> None:
    """The looser ways of dating an event hold the day their words mean."""
    lower = text.lower()
    if "over the weekend" in lower:
        assert on.weekday() >= 5 and 0 <= (said - on).days <= 6
    if "the week before last" in lower:
        assert on - timedelta(days=on.weekday()) == said - timedelta(days=said.weekday() + 14)
    if "earlier this month" in lower:
        assert (on.year, on.month) == (said.year, said.month) and on < said
    if "a few days back" in lower:
        assert 2 <= (said - on).days <= 4
    if m := re.search(r"in (early|mid|late) ([a-z]+)", lower):
        first, last = PARTS[m.group(1)]
        assert on.strftime("%B").lower() == m.group(2) and first <= on.day <= last
    if m := re.search(r"last (spring|summer|autumn|winter)", lower):
        assert on.month in SEASONS[m.group(1)] and 0 < (said - on).days < 2 * 365
    if m := re.search(r"on the (\d+)(?:st|nd|rd|th) of ([a-z]+)|on ([a-z]+) (\d+)(?:st|nd|rd|th)", lower):
        number, month = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        assert (on.day, on.strftime("%B").lower()) == (int(number), month)


def test_each_question_kind_is_asked_with_evidence_that_follows_from_the_dates(
    generated: list[temporal_data.Generated],
) -> None:
    for g in generated:
        assert set(g.kinds) == set(temporal_data.QUESTION_KINDS)
        events = {e.dia_id: e for e in g.events}
        for kind, qa in zip(g.kinds, g.conversation.qas, strict=True):
            assert qa.category == 2 and qa.evidence and all(d in events for d in qa.evidence)
            told = [events[d] for d in qa.evidence]
            if kind == "when":
                assert qa.question == f"When did {told[0].actor} {told[0].do()}?"
            elif kind == "month":
                m = re.fullmatch(r"What did (\w+) do in (\w+) (\d{4})\?", qa.question)
                assert m is not None
                assert all(
                    e.actor == m.group(1) and e.on.strftime("%B %Y") == f"{m.group(2)} {m.group(3)}" for e in told
                )
                same = [
                    e
                    for e in g.events
                    if e.actor == m.group(1) and e.on.strftime("%B %Y") == f"{m.group(2)} {m.group(3)}"
                ]
                assert len(same) == len(told)  # every event of that month, no other
            elif kind == "week_before":
                anchor = told[-1]
                assert qa.question.endswith(f"the week before {anchor.noun()}?")
                assert all(anchor.on - timedelta(days=7) <= e.on < anchor.on for e in told[:-1])
            elif kind == "weeks_after":
                anchor = told[0]
                assert qa.question.endswith(f"in the two weeks after {anchor.noun()}?")
                assert all(anchor.on < e.on <= anchor.on + timedelta(days=14) for e in told[1:])
                later = [
                    e for e in g.events if e.actor == anchor.actor and anchor.on < e.on <= anchor.on + timedelta(14)
                ]
                assert len(later) == len(told) - 1  # every event of those two weeks, no other
            elif kind == "week_before_date":
                m = re.fullmatch(r"What did (\w+) do in the week before (\d+ \w+ \d{4})\?", qa.question)
                assert m is not None
                day = datetime.strptime(m.group(2), "%d %B %Y").date()
                within = [e for e in g.events if e.actor == m.group(1) and day - timedelta(days=7) <= e.on < day]
                assert sorted(e.dia_id for e in within) == sorted(qa.evidence)  # every event of that week, no other
            else:
                first, second = told
                assert qa.question == f"Did {first.actor} {first.do()} before or after {second.noun()}?"
                assert first.on != second.on


def test_scores_by_question_kind() -> None:
    hit = locomo.QAOutcome(category=2, evidence=("D1:1",), ranked=("D1:1",))
    miss = locomo.QAOutcome(category=2, evidence=("D1:1",), ranked=("D1:2",))
    out: dict[str, Any] = temporal.by_kind([hit, miss, hit], ["when", "when", "month"])
    assert out["overall"]["R@10"] == pytest.approx(0.6667, abs=1e-4)
    assert out["when"]["R@10"] == 0.5 and out["month"]["R@10"] == 1.0 and "order" not in out
    with pytest.raises(ValueError, match="2 outcomes for 1"):
        temporal.by_kind([hit, miss], ["when"])


def test_the_report_renders_a_row_per_variant() -> None:
    scores = {"overall": {"n": 2, "R@5": 0.5, "R@10": 0.75, "R@20": 1.0, "All@10": 0.5}, "when": {"n": 2, "R@10": 0.75}}
    report = {
        "conversations": 1,
        "turns": 10,
        "questions": 2,
        "seed": 1,
        "results": {"default": {"scores": scores}, "no temporal settings": {"scores": scores}},
        "examples": [{"kind": "when", "question": "When did A go?", "evidence": ["D1:1"]}],
    }
    text = temporal.render(report)
    assert "| default | 0.750 | 0.750 | 0.500 | 0.500 |" in text  # columns of the kinds asked only
    assert "questions about when (when 2)" in text and "month" not in text
    assert "- when: When did A go? (evidence D1:1)" in text
