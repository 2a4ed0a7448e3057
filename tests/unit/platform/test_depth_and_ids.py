"""The nesting-depth cap in front of msgspec, and the owner-namespaced chat ``Nats-Msg-Id``."""

from __future__ import annotations

import time

import msgspec
import pytest

from memoryd.codec import decode
from memoryd.errors import ValidationFailed
from memoryd.schemas import ChatEvent
from memoryd.schemas.depth import MAX_JSON_DEPTH, json_depth_exceeds
from memoryd.subjects import chat_msg_id

EVENT = b'{"type":"mem.v1.chat_event","event_id":"e","owner":"o","occurred_at":"2026-01-01T00:00:00Z",'
EVENT += b'"messages":[{"role":"user","content":"x"}],"metadata":{"a":%s}}'


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_msgspec_alone_raises_recursion_error_on_deep_nesting() -> None:
    """Why the cap exists: this is not a DecodeError/ValidationError."""
    with pytest.raises(RecursionError):
        msgspec.json.decode(EVENT % nested(100_000), type=ChatEvent)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH + 1, 1_000, 100_000, 1_000_000])
def test_decode_refuses_deep_nesting_with_a_typed_error(depth: int) -> None:
    data = EVENT % nested(depth)
    if depth + 3 <= MAX_JSON_DEPTH:  # the event, its metadata and its messages' list are levels too
        assert decode(data, ChatEvent).metadata["a"] is not None
        return
    with pytest.raises(ValidationFailed, match="deeper than"):
        decode(data, ChatEvent)


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert not json_depth_exceeds(b'{"a": "' + b"[" * 1000 + b'"}')
    assert not json_depth_exceeds(b'["\\"' + b"[" * 1000 + b'", "\\\\"]')
    assert json_depth_exceeds(b'["\\\\"' + b", [" * 100 + b"]" * 101)
    assert not json_depth_exceeds(b"[" + b"[1], " * 100_000 + b"[]]")  # wide is fine
    assert json_depth_exceeds(b"[" * 100 + b"}" * 100)  # brackets that never pair up
    assert json_depth_exceeds(b"[" * 70)  # unterminated


def test_depth_check_is_linear_on_hostile_shapes() -> None:
    shapes = [b"[" * 4_000_000, b'"\\"' * 1_300_000, b'"' * 4_000_000, b"[]" * 2_000_000, b"\\[" * 2_000_000]
    for data in shapes:
        started = time.perf_counter()
        json_depth_exceeds(data)
        assert time.perf_counter() - started < 10.0, data[:10]  # quadratic would take hours


def test_chat_msg_id_is_namespaced_by_owner_and_payload() -> None:
    a = chat_msg_id("alice", "evt-1", b"payload")
    assert a == chat_msg_id("alice", "evt-1", b"payload")  # a retried publish deduplicates
    assert a.startswith("chat:alice:evt-1:")
    assert a != chat_msg_id("bob", "evt-1", b"payload") and a != chat_msg_id("alice", "evt-1", b"other")
