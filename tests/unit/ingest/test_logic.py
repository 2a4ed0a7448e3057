"""Pure ingest rules: turn planning, the opt-out header, text checks, job splitting."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from memoryd.errors import ValidationFailed
from memoryd.schemas import ChatEvent, ChatMessage, Turn
from services.ingest.logic import chat as logic
from services.ingest.logic.history import StoredChange, history_entries
from shared.tokens import estimate_tokens

WHEN = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _event(*turns: tuple[str, str], **kw: object) -> ChatEvent:
    return ChatEvent(
        event_id="e1",
        owner="alice",
        occurred_at=kw.pop("occurred_at", WHEN),  # type: ignore[arg-type]
        messages=[ChatMessage(role=r, content=c) for r, c in turns],  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def test_plan_turns_dedupes_by_role_and_content_keeping_order() -> None:
    planned = logic.plan_turns(_event(("user", "hi"), ("assistant", "hi"), ("user", "hi"), ("user", "bye")))
    assert [(t.index, t.role, t.content) for t in planned] == [
        (0, "user", "hi"),
        (1, "assistant", "hi"),
        (3, "user", "bye"),
    ]
    assert [t.created_at - WHEN for t in planned] == [timedelta(microseconds=i) for i in (0, 1, 3)]
    assert planned[0].hash == logic.text_hash("hi") and len(planned[0].hash) == 64


def test_naive_and_offset_times_become_utc() -> None:
    naive = logic.plan_turns(_event(("user", "x"), occurred_at=datetime(2026, 1, 1, 12, 0)))
    shifted = logic.plan_turns(
        _event(("user", "x"), occurred_at=datetime(2026, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))))
    )
    assert naive[0].created_at == shifted[0].created_at == WHEN


def test_long_turn_is_cut_for_storage_and_tailed_for_extraction() -> None:
    text = "a" * 70_000 + "I prefer tea." + "é" * 40_000
    [turn] = logic.plan_turns(_event(("user", text)))
    assert len(turn.content) == 65_536 and turn.truncated and turn.original_chars == len(text)
    assert len(turn.extract_text.encode()) <= logic.EXTRACT_TAIL_BYTES and turn.extract_text.endswith("é")
    meta = logic.turn_metadata(_event(("user", text)), turn)
    assert meta["truncated"] is True and meta["original_chars"] == len(text)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, False),
        ({}, False),
        ({"x-memory-no-memory": "true"}, True),
        ({"X-Memory-No-Memory": " YES "}, True),
        ({"x-memory-no-memory": "1"}, True),
        ({"x-memory-no-memory": "false"}, False),
        ({"x-memory-no-memory": "0"}, False),
        ({"x-other": "true"}, False),
    ],
)
def test_no_memory_header(headers: dict[str, str] | None, expected: bool) -> None:
    assert logic.header_no_memory(headers) is expected


def test_nul_is_refused_with_its_path() -> None:
    with pytest.raises(ValidationFailed, match=r"\$\.messages\[1\]\.content"):
        logic.check_event(_event(("user", "ok"), ("user", "a\x00b")))
    with pytest.raises(ValidationFailed, match=r"\$\.metadata\.a\[0\]"):
        logic.check_text({"metadata": {"a": ["x\x00"]}})
    logic.check_text({"content": "fine", "metadata": {"k": [1, None, "ok"]}, "q": None})


def test_expiry_must_be_in_the_future() -> None:
    assert logic.check_expiry(None, WHEN) is None
    assert logic.check_expiry(WHEN + timedelta(seconds=1), WHEN) == WHEN + timedelta(seconds=1)
    with pytest.raises(ValidationFailed, match="expires_at"):
        logic.check_expiry(WHEN, WHEN)


def test_extract_jobs_split_by_size_with_stable_ids() -> None:
    event = _event(("user", "x"))
    turns = [Turn(role="user", content="y" * 400) for _ in range(10)]
    jobs = logic.extract_jobs(event, turns, max_bytes=1000)
    assert [msg_id for msg_id, _ in jobs] == [
        "extract:alice:e1",
        "extract:alice:e1:1",
        "extract:alice:e1:2",
        "extract:alice:e1:3",
        "extract:alice:e1:4",
    ]
    assert sum(len(job.turns) for _, job in jobs) == 10
    assert logic.extract_jobs(event, turns, max_bytes=1000) == jobs
    assert logic.extract_jobs(event, []) == []
    [(only, _)] = logic.extract_jobs(event, turns)
    assert only == "extract:alice:e1"


def test_listing_helpers() -> None:
    assert logic.page_offset(20, 5, None) == 5 and logic.page_offset(20, 5, 3) == 40
    assert logic.hit_rate(0, 0) == 0.0 and logic.hit_rate(1, 3) == 0.3333
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    assert logic.like_pattern("100%_\\") == "%100\\%\\_\\\\%"


def test_activity_throttle() -> None:
    throttle = logic.ActivityThrottle(interval_s=1.0)
    assert throttle.due("a", 10.0)
    throttle.mark("a", 10.0)
    assert not throttle.due("a", 10.5) and throttle.due("b", 10.5) and throttle.due("a", 11.0)


def test_turn_metadata_keeps_the_applications_metadata_under_ours() -> None:
    event = _event(("user", "hello"), metadata={"dia_id": "D1:3", "role": "spoofed", "app": {"x": 1}})
    [turn] = logic.plan_turns(event)
    meta = logic.turn_metadata(event, turn)
    assert meta["dia_id"] == "D1:3" and meta["app"] == {"x": 1}
    assert meta["role"] == "user" and meta["event_id"] == "e1"  # ours win


def test_owner_bound_event_subject_must_match_the_owner() -> None:
    import pytest

    from memoryd.errors import Forbidden

    logic.check_subject_owner("mem.v1.events.chat", "alice")  # unbound: any owner
    logic.check_subject_owner("mem.v1.events.chat.alice", "alice")
    with pytest.raises(Forbidden, match="'alice', not 'mallory'"):
        logic.check_subject_owner("mem.v1.events.chat.alice", "mallory")


def test_content_part_arrays_are_joined_and_other_parts_counted() -> None:
    raw = {
        "type": "mem.v1.chat_event",
        "event_id": "e2",
        "owner": "alice",
        "occurred_at": WHEN.isoformat(),
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "I moved to Lisbon."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "text", "text": "Here is my new street."},
                    {"type": "image_url", "image_url": {"url": "https://example.invalid/b.png"}},
                ],
            },
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}]},
            {"role": "assistant", "content": "Noted: Lisbon."},
        ],
    }
    event = msgspec.json.decode(json.dumps(raw), type=ChatEvent)
    turns = logic.plan_turns(event)
    assert [(t.index, t.content) for t in turns] == [
        (0, "I moved to Lisbon.\nHere is my new street."),
        (2, "Noted: Lisbon."),
    ]
    assert turns[0].hash == logic.text_hash("I moved to Lisbon.\nHere is my new street.")
    assert logic.turn_metadata(event, turns[0])["content_parts"] == {"image_url": 2}
    assert "content_parts" not in logic.turn_metadata(event, turns[1])
    logic.check_event(event)  # no error for parts without text


def test_a_string_and_the_same_text_as_one_part_are_one_turn() -> None:
    event = ChatEvent(
        event_id="e3",
        owner="alice",
        occurred_at=WHEN,
        messages=[
            ChatMessage(role="user", content="same words"),
            ChatMessage(role="user", content=[{"type": "text", "text": "same words"}]),
        ],
    )
    assert [t.index for t in logic.plan_turns(event)] == [0]


def test_content_parts_must_be_objects_and_text_stays_within_the_limit() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.content\[1\]"):
        msgspec.convert({"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}, ChatMessage)
    with pytest.raises(msgspec.ValidationError, match="length >= 1"):
        msgspec.convert({"role": "user", "content": []}, ChatMessage)
    huge = [{"type": "text", "text": "x" * 600_000}, {"type": "text", "text": "y" * 600_000}]
    with pytest.raises(msgspec.ValidationError, match="the limit is 1048576"):
        msgspec.convert({"role": "user", "content": huge}, ChatMessage)
    odd = msgspec.convert({"role": "user", "content": [{"type": 7}, {"text": "no type"}]}, ChatMessage)
    assert odd.text == "" and msgspec.to_builtins(odd)["content"] == [{"type": 7}, {"text": "no type"}]


def test_history_pairs_each_change_with_the_text_it_became() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    changes = [StoredChange("v1", "api_update", at), StoredChange("v2", "merge", at, run_id="r1")]
    entries = history_entries(changes, "v3")
    assert [(e.old_content, e.new_content, e.reason, e.run_id) for e in entries] == [
        ("v1", "v2", "api_update", None),
        ("v2", "v3", "merge", "r1"),
    ]
    assert history_entries([], "v1") == []
